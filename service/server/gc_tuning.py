"""Garbage-collector and allocator settings of a serving process (`bgix serve`, each of its workers).

Why the collector: a warm query allocates a few hundred short-lived objects, so CPython's default
first-generation threshold (700) runs a collection every few requests, and the older generations, which hold the
caches' decoded dictionaries, get scanned with them. Measured on a 10M-row point count: about 0.06 ms of the
≈0.55 ms of server CPU per query. The objects of start-up are moved out of the collector's sight once
(gc.freeze), and collections run ~70× less often; reference counting still frees almost everything at once.

Why the allocator (glibc): a request body or predicate of a megabyte is first mmapped, and freeing it raises
glibc's dynamic mmap threshold, so later ones come from the heap and fragment it; and each request thread may get
its own arena. Under 1 MB refused predicates and high-cardinality queries a worker's RSS grew 130 MiB past its
cache budgets with the defaults and stayed within them with a fixed 128 KiB threshold and two arenas
(bench/bench_memory.py, bench/RESULTS.md). `MALLOC_MMAP_THRESHOLD_` / `MALLOC_ARENA_MAX` in the environment win.
"""
from __future__ import annotations

import ctypes
import gc
import os

THRESHOLDS = (50_000, 20, 100)
_M_MMAP_THRESHOLD, _M_ARENA_MAX = -3, -8   # glibc's mallopt parameters (malloc.h)
MMAP_THRESHOLD = 128 * 1024
ARENA_MAX = 2


def tune_for_serving() -> None:
    gc.collect()
    gc.freeze()
    gc.set_threshold(*THRESHOLDS)
    tune_allocator()


def tune_allocator() -> bool:
    """Fix glibc's mmap threshold and cap its arenas, unless the environment sets them; False where the C
    library is not glibc (nothing to tune)."""
    try:
        mallopt = ctypes.CDLL("libc.so.6").mallopt
    except (OSError, AttributeError):
        return False
    if "MALLOC_MMAP_THRESHOLD_" not in os.environ:
        mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)
    if "MALLOC_ARENA_MAX" not in os.environ:
        mallopt(_M_ARENA_MAX, ARENA_MAX)
    return True
