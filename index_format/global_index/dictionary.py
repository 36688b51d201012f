"""Dictionary blocks and the dictionary block index (spec §2.5, §2.6): encode entries, decode bodies.

Imports numpy and index_format.{layout,errors,memory_cost}; knows nothing about key types or files.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypedDict

import numpy as np

from index_format.errors import CorruptFileError
from index_format.layout import read_varint, varint
from index_format.memory_cost import decoded_block_bytes

if TYPE_CHECKING:  # only the type: this module knows nothing about key types
    from index_format.keys import SortKey

_INT_MAX = (1 << 31) - 1
_LONG_MAX = (1 << 63) - 1


# The reader's per-block cache: "np" holds the bitmap offsets and lengths as int64 arrays.
BlockExtra = TypedDict("BlockExtra", {"np": tuple[np.ndarray, np.ndarray]}, total=False)


@dataclass(slots=True)
class DecodedBlock:
    """One decoded dictionary block (or the block index): parallel lists of entries."""

    keys: list[bytes]
    offsets: list[int]
    lengths: list[int]
    # filled lazily by the reader
    sort_keys: list[SortKey] | None = None
    lookup: dict[bytes, int] | None = None
    extra: BlockExtra = field(default_factory=lambda: BlockExtra())

    def __len__(self) -> int:
        return len(self.keys)

    def resident_bytes(self) -> int:
        """What this block keeps resident, with its lazily filled sort keys and arrays (memory_cost)."""
        return decoded_block_bytes(len(self.keys), sum(map(len, self.keys)))


def encode_entry(key: bytes, offset: int, length: int) -> bytes:
    """varint key length, key, varlong offset, varint length (spec §2.5 / §2.6)."""
    return varint(len(key)) + key + varint(offset) + varint(length)


_VL_STEPS = np.array([1 << (7 * j) for j in range(1, 10)], dtype=np.uint64)


def varint_lengths(v: np.ndarray) -> np.ndarray:
    """Vectorized varint_len for non-negative int64 values."""
    u = v.astype(np.uint64, copy=False)
    return 1 + np.searchsorted(_VL_STEPS, u, side="right").astype(np.int64)


def _put_varints(out: np.ndarray, pos: np.ndarray, v: np.ndarray, vlen: np.ndarray) -> None:
    """Write varint(v[i]) at out[pos[i]:] for every i (LEB128, spec §0)."""
    u = v.astype(np.uint64, copy=False)
    top = int(vlen.max()) if len(vlen) else 0
    for j in range(top):
        m = vlen > j
        if not m.all():
            pj, uj, lj = pos[m], u[m], vlen[m]
        else:
            pj, uj, lj = pos, u, vlen
        byte = (uj >> np.uint64(7 * j)) & np.uint64(0x7F)
        byte |= np.where(lj - 1 > j, np.uint64(0x80), np.uint64(0))
        out[pj + j] = byte.astype(np.uint8)


def encode_entries(kdata: np.ndarray, koffs: np.ndarray, klen: np.ndarray, kvl: np.ndarray,
                   off: np.ndarray, length: np.ndarray, lvl: np.ndarray, s: int) -> bytes:
    """Dictionary entries s.. of one block, built without a per-entry Python loop (spec §2.5)."""
    ovl = varint_lengths(off)
    e = kvl + klen + ovl + lvl
    pos = np.zeros(len(e), dtype=np.int64)
    np.cumsum(e[:-1], out=pos[1:])
    out = np.zeros(int(pos[-1] + e[-1]), dtype=np.uint8)
    _put_varints(out, pos, klen, kvl)
    c = len(e)
    src0, src1 = int(koffs[s]), int(koffs[s + c])
    if src1 > src0:
        shift = pos + kvl - koffs[s:s + c]
        dest = np.arange(src0, src1, dtype=np.int64) + np.repeat(shift, klen)
        out[dest] = kdata[src0:src1]
    p2 = pos + kvl + klen
    _put_varints(out, p2, off, ovl)
    _put_varints(out, p2 + ovl, length, lvl)
    return out.tobytes()


def decode_entries(body: bytes, *, file_size: int, path: str | None = None, block: str,
                   allow_empty: bool = False, trailer: int = 0) -> DecodedBlock:
    """Parse a decoded block body; every offset/length must lie inside `file_size`."""
    n = len(body)
    count, pos = read_varint(body, 0, limit=_INT_MAX, path=path, block=block)
    if count == 0 and not allow_empty:
        raise CorruptFileError("dictionary block without entries", path=path, block=block)
    # each entry needs at least 3 bytes: guard before allocating (absurd counts)
    if count * 3 > n - pos:
        raise CorruptFileError(f"entry count {count} does not fit in {n} bytes", path=path, block=block)
    keys: list[bytes] = []
    offsets: list[int] = []
    lengths: list[int] = []
    kapp, oapp, lapp = keys.append, offsets.append, lengths.append
    limit = file_size - trailer
    try:
        for _ in range(count):
            # varints decoded inline: this loop is the reader's cold-path hot spot
            b = body[pos]
            pos += 1
            klen = b & 0x7F
            shift = 7
            while b & 0x80:
                b = body[pos]
                pos += 1
                klen |= (b & 0x7F) << shift
                shift += 7
                if shift > 35:
                    raise CorruptFileError("key length varint too long", path=path, block=block)
            end = pos + klen
            if end > n:
                raise CorruptFileError("key runs past the end of the block", path=path, block=block)
            kapp(body[pos:end])
            b = body[end]
            pos = end + 1
            off = b & 0x7F
            shift = 7
            while b & 0x80:
                b = body[pos]
                pos += 1
                off |= (b & 0x7F) << shift
                shift += 7
                if shift > 70:
                    raise CorruptFileError("offset varint longer than 10 bytes", path=path, block=block)
            b = body[pos]
            pos += 1
            length = b & 0x7F
            shift = 7
            while b & 0x80:
                b = body[pos]
                pos += 1
                length |= (b & 0x7F) << shift
                shift += 7
                if shift > 35:
                    raise CorruptFileError("length varint too long", path=path, block=block)
            if off + length > limit:
                raise CorruptFileError(f"entry points outside the file: offset {off}, length {length}",
                                       path=path, block=block)
            oapp(off)
            lapp(length)
    except IndexError:
        raise CorruptFileError("entry runs past the end of the block", path=path, block=block) from None
    if pos != n:
        raise CorruptFileError(f"{n - pos} trailing bytes after {count} entries", path=path, block=block)
    return DecodedBlock(keys, offsets, lengths)
