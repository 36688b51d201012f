"""Keep freed memory in the process heap while a large build runs, so its temporaries reuse pages.

Why: glibc serves every allocation over 32 MiB (a 10M-row int64 array is 80 MiB) with a fresh mmap and
unmaps it on free, so each temporary of a writer pays first-touch page faults again; on this kind of
machine that was 0.4–0.9 s of kernel time in a 10M-row build. With mmap off and no heap trimming while
`reuse_freed_pages()` is active, a freed temporary's pages serve the next one. On exit the thresholds go
to the values glibc's own dynamic rule settles at for large arrays (mmap over 32 MiB, trim over 64 MiB)
and free heap memory is returned to the system (malloc_trim). Elsewhere than glibc it does nothing.
"""
from __future__ import annotations

import ctypes
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
_M_MMAP_MAX = -4
# "never trim", as large as mallopt's C int argument holds (ctypes masks a wider int: 1 << 40 would be 0,
# which trims on every free and gives back the very pages this module is here to keep)
_NEVER = (1 << 31) - 1
_LOCK = threading.Lock()
_ACTIVE = 0


_UNLOADED = object()
_LIBC: object = _UNLOADED


def _load_libc() -> ctypes.CDLL | None:
    # glibc's soname first: ctypes.util.find_library would import subprocess and run ldconfig (a few ms of
    # every command-line build)
    libc: ctypes.CDLL | None
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        from ctypes.util import find_library
        name = find_library("c")
        try:
            libc = ctypes.CDLL(name) if name else None
        except OSError:
            libc = None
    if libc is None or not (hasattr(libc, "mallopt") and hasattr(libc, "malloc_trim")):  # glibc only
        return None
    return libc


def _libc() -> ctypes.CDLL | None:
    """glibc, loaded on first use (None elsewhere)."""
    global _LIBC
    if _LIBC is _UNLOADED:
        _LIBC = _load_libc()
    return _LIBC  # type: ignore[return-value]  # loaded above


@contextmanager
def reuse_freed_pages() -> Iterator[None]:
    """While active (nesting and threads allowed), freed memory stays in the heap for reuse."""
    global _ACTIVE
    libc = _libc()
    if libc is None:
        yield
        return
    with _LOCK:
        _ACTIVE += 1
        if _ACTIVE == 1:
            libc.mallopt(_M_MMAP_MAX, 0)
            libc.mallopt(_M_TRIM_THRESHOLD, _NEVER)
    try:
        yield
    finally:
        with _LOCK:
            _ACTIVE -= 1
            if _ACTIVE == 0:
                libc.mallopt(_M_MMAP_THRESHOLD, 32 << 20)
                libc.mallopt(_M_TRIM_THRESHOLD, 64 << 20)
                libc.mallopt(_M_MMAP_MAX, 65536)
                libc.malloc_trim(0)
