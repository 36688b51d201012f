"""The one thread pool of index_format's data-parallel loops (numpy and pyarrow release the GIL).

Work is split into parts of whole containers or row ranges; a part runs on this pool only when there is
more than one, so small inputs never pay a thread hand-off.
"""
from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")

THREADS = max(1, min(4, os.cpu_count() or 1))
_POOL: ThreadPoolExecutor | None = None
_LOCK = threading.Lock()


def pool() -> ThreadPoolExecutor:
    global _POOL
    with _LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(THREADS, thread_name_prefix="bgix-part")
        return _POOL


def map_parts(fn: Callable[[T], R], parts: Sequence[T]) -> list[R]:
    """fn over every part, in order; parts beyond the first run on the pool, the first in this thread."""
    if len(parts) <= 1:
        return [fn(p) for p in parts]
    rest = [pool().submit(fn, p) for p in parts[1:]]
    first = fn(parts[0])
    return [first] + [f.result() for f in rest]
