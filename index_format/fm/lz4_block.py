"""The LZ4 block encoder pypaimon-rust uses (the Rust crate lz4_flex's greedy hash-table compressor), re-implemented
so an fm file compressed with lz4 is byte-identical to pypaimon-rust's. liblz4 (the `lz4` package) writes valid
blocks too, but picks other matches; any LZ4 decoder reads either.

Written from the algorithm, for inputs under 64 KiB (every fm block but an oversized directory; longer inputs
fall back to liblz4): one 16-bit position per slot of a table sized to the input, a 4-byte multiplicative hash,
a search step that grows by one every 32 misses, matches extended backwards over pending literals and forwards
up to the last 5 bytes, the position two bytes before a match's end re-hashed, the last 12 bytes always literals.
Two implementations of that one algorithm, giving the same bytes (tests/unit/index_format/fm/test_lz4_block.py):
the loop compiled by numba (`nogil`, so fm partitions compress in parallel on threads; ~40× faster: the Python
loop was half an fm build's time) when numba is installed, else the plain-Python loop (hashes and 4-byte words of
every position computed up front with numpy). `BGIX_FM_LZ4=python` forces the Python one.
"""
from __future__ import annotations

import os
import threading
from collections.abc import Callable

import numpy as np

__all__ = ["compress_block", "compress_block_python", "native_encoder"]

_MIN_LENGTH = 13        # shorter inputs are one literal run
_MFLIMIT = 12           # no match may start within the last 12 bytes
_END_OFFSET = 6         # a match ends at least 6 bytes before the end
_MINMATCH = 4
_SKIP_SHIFT = 5         # the search step grows by one every 2^5 misses


def _lsic(out: bytearray, n: int) -> None:
    """LZ4's length continuation: 255s, then the remainder."""
    out += b"\xff" * (n // 255)
    out.append(n % 255)


def _last_literals(out: bytearray, data: bytes, start: int) -> None:
    n = len(data) - start
    out.append(min(n, 15) << 4)
    if n >= 15:
        _lsic(out, n - 15)
    out += data[start:]


def _common(data: bytes, a: int, b: int, limit: int) -> int:
    """Equal bytes at a and b (a > b), at most `limit`: galloping slice compares, then a binary search."""
    if limit <= 0 or data[a] != data[b]:
        return 0
    lo, step = 1, 8
    while lo < limit:
        hi = min(limit, lo + step)
        if data[a + lo:a + hi] != data[b + lo:b + hi]:
            while hi - lo > 1:   # the mismatch lies in [lo, hi)
                mid = (lo + hi) // 2
                if data[a + lo:a + mid] == data[b + lo:b + mid]:
                    lo = mid
                else:
                    hi = mid
            return lo
        lo, step = hi, step * 2
    return limit


def _table(n: int) -> tuple[int, int]:
    """(slots, hash shift) of the position table for an input of n bytes."""
    return 4096, 4


def compress_block(data: bytes) -> bytes:
    """`data` as one raw LZ4 block (no size header), as lz4_flex's `block::compress` writes it."""
    n = len(data)
    native = native_encoder()
    if native is None or n >= 0xFFFF:
        return compress_block_python(data)
    src = np.frombuffer(data, dtype=np.uint8)
    out = np.empty(n + n // 255 + 16, dtype=np.uint8)
    return out[:int(native(src, out))].tobytes()


def compress_block_python(data: bytes) -> bytes:
    """compress_block's plain-Python loop (the same bytes)."""
    n = len(data)
    if n >= 0xFFFF:
        import lz4.block
        return bytes(lz4.block.compress(data, store_size=False))
    out = bytearray()
    if n < _MIN_LENGTH:
        _last_literals(out, data, 0)
        return bytes(out)
    size, shift = _table(n)
    words_np = np.empty(n - 3, dtype=np.uint32)   # the little-endian 4 bytes at every position
    for r in range(4):
        k = (n - 3 - r + 3) // 4
        words_np[r::4] = np.frombuffer(data, dtype="<u4", count=k, offset=r)
    slots_np = (words_np * np.uint32(2654435761)) >> np.uint32(16 + shift)
    words = words_np.data.cast("B").cast("I")   # indexed as Python ints, no list built
    slots = np.ascontiguousarray(slots_np, dtype=np.uint32).data.cast("B").cast("I")
    table = [0] * size
    end_check = n - _MFLIMIT
    literal_start = 0
    table[slots[0]] = 0
    cur = 1
    append = out.append
    while True:
        misses = 1 << _SKIP_SHIFT
        next_cur = cur
        while True:   # find a 4-byte match through the table, stepping faster after every 32 misses
            cur = next_cur
            next_cur += misses >> _SKIP_SHIFT
            misses += 1
            if cur > end_check:
                _last_literals(out, data, literal_start)
                return bytes(out)
            slot = slots[cur]
            cand = table[slot]
            table[slot] = cur
            if words[cand] == words[cur]:
                break
        offset = cur - cand
        while cand > 0 and cur > literal_start and data[cur - 1] == data[cand - 1]:
            cur -= 1
            cand -= 1
        lit = cur - literal_start
        cur += _MINMATCH
        cand += _MINMATCH
        limit = n - _END_OFFSET - cur
        if limit > n - cand:
            limit = n - cand
        dup = 0
        while dup + 4 <= limit and words[cur + dup] == words[cand + dup]:
            dup += 4
            if dup == 32:
                dup = _common(data, cur, cand, limit)
                break
        else:
            while dup < limit and data[cur + dup] == data[cand + dup]:
                dup += 1
        cur += dup
        table[slots[cur - 2]] = cur - 2
        if lit < 15:
            append((lit << 4) | (dup if dup < 15 else 15))
            out += data[literal_start:cur - dup - _MINMATCH]
        else:
            append(0xF0 | (dup if dup < 15 else 15))
            _lsic(out, lit - 15)
            out += data[literal_start:literal_start + lit]
        append(offset & 0xFF)
        append(offset >> 8)
        if dup >= 15:
            _lsic(out, dup - 15)
        literal_start = cur


# ---- the compiled loop ------------------------------------------------------------------------------

_NATIVE: list[Callable[[np.ndarray, np.ndarray], int] | None] = []
_NATIVE_LOCK = threading.Lock()


def native_encoder() -> Callable[[np.ndarray, np.ndarray], int] | None:
    """The numba-compiled loop `(src uint8[n], out uint8[n + n // 255 + 16]) -> bytes written` for inputs under
    64 KiB, compiled (or loaded from numba's cache beside this file) on first use; None without numba or with
    BGIX_FM_LZ4=python."""
    if not _NATIVE:
        with _NATIVE_LOCK:
            if not _NATIVE:
                _NATIVE.append(None if os.environ.get("BGIX_FM_LZ4") == "python" else _compile())
    return _NATIVE[0]


def _compile() -> Callable[[np.ndarray, np.ndarray], int] | None:
    try:
        from index_format.fm.lz4_native import compress_into
    except ImportError:   # numba is not installed
        return None
    return compress_into
