"""lz4_block's encoder loop compiled by numba (nogil, cached beside this file): the same algorithm and bytes as
lz4_block.compress_block_python, for inputs under 64 KiB. Imported only by lz4_block.native_encoder, and only
where numba is installed (ImportError otherwise). Imports numba and numpy.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, cast

import numba
import numpy as np

__all__ = ["compress_into", "nogil_jit"]

_MIN_LENGTH = 13        # shorter inputs are one literal run
_MFLIMIT = 12           # no match may start within the last 12 bytes
_END_OFFSET = 6         # a match ends at least 6 bytes before the end
_MINMATCH = 4
_SKIP_SHIFT = 5         # the search step grows by one every 2^5 misses

F = TypeVar("F", bound=Callable[..., Any])


def nogil_jit(fn: F) -> F:
    """numba's njit(nogil, cache), typed as the function it compiles."""
    return cast(F, numba.njit(nogil=True, cache=True)(fn))


@nogil_jit
def _word(d: Any, i: int) -> Any:
    """The little-endian 4 bytes at i."""
    return (np.uint32(d[i]) | (np.uint32(d[i + 1]) << np.uint32(8)) | (np.uint32(d[i + 2]) << np.uint32(16))
            | (np.uint32(d[i + 3]) << np.uint32(24)))


@nogil_jit
def _slot(w: Any) -> Any:
    """The 12-bit multiplicative hash of a word (in 64 bits: numba widens a u32 product)."""
    return ((np.uint64(w) * np.uint64(2654435761)) & np.uint64(0xFFFFFFFF)) >> np.uint64(20)


@nogil_jit
def _lsic(out: Any, o: int, n: int) -> int:
    """LZ4's length continuation: 255s, then the remainder."""
    while n >= 255:
        out[o] = 255
        o += 1
        n -= 255
    out[o] = n
    return o + 1


@nogil_jit
def _last_literals(d: Any, start: int, out: Any, o: int) -> int:
    n = d.shape[0] - start
    out[o] = (15 if n >= 15 else n) << 4
    o += 1
    if n >= 15:
        o = _lsic(out, o, n - 15)
    for i in range(start, d.shape[0]):
        out[o] = d[i]
        o += 1
    return o


@nogil_jit
def compress_into(d: Any, out: Any) -> int:
    """`d` (uint8, under 64 KiB) as one raw LZ4 block written to `out` (at least n + n // 255 + 16 bytes);
    returns the bytes written."""
    n = d.shape[0]
    if n < _MIN_LENGTH:
        return _last_literals(d, 0, out, 0)
    table = np.zeros(4096, np.int64)
    end_check = n - _MFLIMIT
    literal_start = 0
    o = 0
    table[_slot(_word(d, 0))] = 0
    cur = 1
    while True:
        misses = 1 << _SKIP_SHIFT
        next_cur = cur
        while True:   # find a 4-byte match through the table, stepping faster after every 32 misses
            cur = next_cur
            next_cur += misses >> _SKIP_SHIFT
            misses += 1
            if cur > end_check:
                return _last_literals(d, literal_start, out, o)
            w = _word(d, cur)
            s = _slot(w)
            cand = table[s]
            table[s] = cur
            if _word(d, cand) == w:
                break
        offset = cur - cand
        while cand > 0 and cur > literal_start and d[cur - 1] == d[cand - 1]:
            cur -= 1
            cand -= 1
        lit = cur - literal_start
        cur += _MINMATCH
        cand += _MINMATCH
        limit = n - _END_OFFSET - cur
        if limit > n - cand:
            limit = n - cand
        dup = 0
        while dup < limit and d[cur + dup] == d[cand + dup]:
            dup += 1
        cur += dup
        table[_slot(_word(d, cur - 2))] = cur - 2
        out[o] = ((15 if lit >= 15 else lit) << 4) | (15 if dup >= 15 else dup)
        o += 1
        if lit >= 15:
            o = _lsic(out, o, lit - 15)
        for i in range(literal_start, literal_start + lit):
            out[o] = d[i]
            o += 1
        out[o] = offset & 0xFF
        out[o + 1] = offset >> 8
        o += 2
        if dup >= 15:
            o = _lsic(out, o, dup - 15)
        literal_start = cur
