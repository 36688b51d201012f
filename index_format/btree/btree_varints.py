"""Unsigned LEB128 varints (Paimon's `writeVarLenInt` / `writeVarLenLong`) over whole numpy arrays at once.

The btree writer lays out millions of entries and the reader decodes whole blocks of row-id lists: both without
a Python loop per value. Imports numpy and index_format.errors only.
"""
from __future__ import annotations

import numpy as np
import numpy.typing as npt

from index_format.errors import CorruptFileError

__all__ = ["INT_BYTES", "LONG_BYTES", "put_varints", "read_varints_at", "varint_sizes", "varint_stream",
           "varint_words"]

INT_BYTES = 5    # a Java int (≤ 2^31 - 1) takes at most 5 bytes
LONG_BYTES = 9   # a non-negative Java long (< 2^63) takes at most 9 bytes
_STEPS = np.array([1 << (7 * j) for j in range(1, 10)], dtype=np.uint64)
_INT_MAX = (1 << 31) - 1
# The continuation bits of a varint of n bytes (n = 0..8), as a little-endian uint64.
_CONTINUATION = np.array([sum(0x80 << (8 * j) for j in range(n - 1)) for n in range(9)], dtype=np.uint64)


def varint_sizes(v: np.ndarray, dtype: type = np.int64) -> np.ndarray:
    """Encoded size of each non-negative value (int64, or `dtype`)."""
    out: np.ndarray = np.ones(len(v), dtype=dtype)
    if not len(v):
        return out
    u = v.astype(np.uint64, copy=False)
    top = int(u.max())
    for step in _STEPS.tolist():   # one comparison per byte the largest value needs
        if top < step:
            break
        out += u >= np.uint64(step)
    return out


def varint_words(v: np.ndarray, sizes: np.ndarray | int) -> npt.NDArray[np.uint64]:
    """Each value's varint bytes (sizes ≤ 8; one int: all the same) packed little-endian into a uint64; bytes
    past its size are 0."""
    u = v.astype(np.uint64, copy=False)
    word: npt.NDArray[np.uint64] = u & np.uint64(0x7F)
    top = sizes if isinstance(sizes, int) else (int(sizes.max()) if len(sizes) else 0)
    for j in range(1, top):   # a value's 7-bit groups past its size are 0 already
        word |= ((u >> np.uint64(7 * j)) & np.uint64(0x7F)) << np.uint64(8 * j)
    continuation: npt.NDArray[np.uint64] | np.uint64 = _CONTINUATION[sizes]
    return word | continuation


def put_varints(out: np.ndarray, pos: np.ndarray, v: np.ndarray, sizes: np.ndarray) -> None:
    """Write varint(v[i]) (sizes[i] bytes) at out[pos[i]:] for every i."""
    if not len(v):
        return
    u = v.astype(np.uint64, copy=False)
    top = int(sizes.max())
    for j in range(top):
        if j == 0 or bool((sizes > j).all()):
            pj, uj, sj = pos, u, sizes
        else:
            m = sizes > j
            pj, uj, sj = pos[m], u[m], sizes[m]
        byte = ((uj >> np.uint64(7 * j)) & np.uint64(0x7F)).astype(np.uint8)
        byte |= (sj - 1 > j).astype(np.uint8) << np.uint8(7)
        out[pj + j] = byte


def read_varints_at(buf: np.ndarray, pos: np.ndarray, max_bytes: int, *, path: str | None, block: str
                    ) -> tuple[np.ndarray, np.ndarray]:
    """(values as uint64, sizes) of the varints starting at each `pos` in `buf` (uint8).

    Raises:
        CorruptFileError: a varint running past the end of `buf` or longer than `max_bytes`
            (an int varint of more than 2^31 - 1 too).
    """
    n = len(pos)
    vals = np.zeros(n, dtype=np.uint64)
    sizes = np.zeros(n, dtype=np.int64)
    if n == 0:
        return vals, sizes
    end = len(buf)
    if end == 0 or int(pos.min()) < 0 or int(pos.max()) >= end:
        raise CorruptFileError("varint starts outside the block", path=path, block=block)
    active = np.ones(n, dtype=bool)
    idx = np.arange(n)
    p = pos
    for j in range(max_bytes):
        b = buf[p]
        vals[idx] |= (b & 0x7F).astype(np.uint64) << np.uint64(7 * j)
        done = b < 0x80
        sizes[idx[done]] = j + 1
        active[idx[done]] = False
        if done.all():
            break
        keep = ~done
        idx, p = idx[keep], p[keep] + 1
        if int(p.max()) >= end:
            raise CorruptFileError("varint runs past the end of the block", path=path, block=block)
    if active.any():
        raise CorruptFileError(f"varint longer than {max_bytes} bytes", path=path, block=block)
    if max_bytes == INT_BYTES and bool((vals > _INT_MAX).any()):
        raise CorruptFileError("int varint out of range", path=path, block=block)
    return vals, sizes


def varint_stream(buf: np.ndarray, *, path: str | None, block: str) -> np.ndarray:
    """Every value of a run of back-to-back long varints filling `buf` exactly (uint64).

    Raises:
        CorruptFileError: the run ends inside a varint, or a varint is longer than 9 bytes.
    """
    if not len(buf):
        return np.zeros(0, dtype=np.uint64)
    last = buf < 0x80
    if not last[-1]:
        raise CorruptFileError("row-id list ends inside a varint", path=path, block=block)
    ends = np.flatnonzero(last)
    if len(ends) == len(buf):   # every value below 128: one byte each (the common dense case)
        return buf.astype(np.uint64)
    starts = np.empty(len(ends), dtype=np.int64)
    starts[0] = 0
    starts[1:] = ends[:-1] + 1
    lens = ends - starts + 1
    if int(lens.max()) > LONG_BYTES:
        raise CorruptFileError(f"varint longer than {LONG_BYTES} bytes", path=path, block=block)
    shift = (np.arange(len(buf), dtype=np.int64) - np.repeat(starts, lens)) * 7
    payload = (buf & 0x7F).astype(np.uint64) << shift.astype(np.uint64)
    return np.bitwise_or.reduceat(payload, starts)
