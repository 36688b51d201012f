"""Blocks of Paimon's SST file (`org.apache.paimon.sst`) as the btree global index stores them.

A block body is its entries — varint key length, key, varint value length, value — followed by a tail:
ALIGNED (every entry the same size): int32 LE entry size, byte 0; UNALIGNED: one int32 LE start position per
entry, int32 LE entry count, byte 1. On disk a body may be compressed and is followed by the 5-byte trailer
(compression byte, CRC-32 LE of stored body + that byte), exactly the trailed blocks of index_format.codecs.
Data blocks map key → row-id list; the index block maps each data block's LAST key → its block handle
(varlong offset, varint stored size). Imports numpy and index_format.{btree.btree_varints,errors,layout}.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypedDict

import numpy as np

from index_format.btree.btree_varints import INT_BYTES, LONG_BYTES, read_varints_at
from index_format.errors import CorruptFileError
from index_format.layout import BTREE_BLOCK_TAIL, varint

if TYPE_CHECKING:
    from pyroaring import BitMap64

    from index_format.btree.btree_search import Reps

__all__ = ["ALIGNED", "UNALIGNED", "SstBlock", "block_tail", "decode_block_body", "decode_handles",
           "encode_handle"]

ALIGNED = 0
UNALIGNED = 1


class SstExtra(TypedDict, total=False):
    """What the reader caches with a block."""

    keys: list[bytes]   # every key as bytes
    reps: Reps          # the search column
    cost: int           # bytes the search column (and the rows, when kept) hold
    rows: tuple[np.ndarray, np.ndarray, BitMap64]   # every entry's ids as stored, each id's entry, the ids' map


@dataclass(slots=True)
class SstBlock:
    """One decoded block: its entries region and where each entry's key and value lie in it."""

    data: np.ndarray          # uint8 view of the entries region
    raw: bytes                # the same bytes (keys are sliced from it)
    key_start: np.ndarray     # int64 per entry
    key_len: np.ndarray
    val_start: np.ndarray
    val_len: np.ndarray
    aligned: bool
    # filled lazily by the reader: keys as bytes, search column, block-level caches
    extra: SstExtra = field(default_factory=lambda: SstExtra())

    def __len__(self) -> int:
        return len(self.key_start)

    def key(self, i: int) -> bytes:
        s = int(self.key_start[i])
        return self.raw[s:s + int(self.key_len[i])]

    def keys(self) -> list[bytes]:
        """Every key as bytes, in block order (built once)."""
        ks = self.extra.get("keys")
        if ks is None:
            raw = self.raw
            ks = [raw[s:s + n] for s, n in zip(self.key_start.tolist(), self.key_len.tolist())]
            self.extra["keys"] = ks
        return ks

    @property
    def nbytes(self) -> int:
        """Approximate memory held (for the reader's byte-budgeted block cache)."""
        return 256 + 2 * len(self.raw) + 40 * len(self.key_start) + int(self.extra.get("cost", 0))

    def resident_bytes(self) -> int:
        """What a shared block cache charges this block (BlockCache)."""
        return self.nbytes


def block_tail(entry_sizes: np.ndarray) -> bytes:
    """The tail Paimon's BlockWriter.finish appends after entries of these sizes (at least one entry)."""
    first = int(entry_sizes[0])
    if bool((entry_sizes == first).all()):
        return BTREE_BLOCK_TAIL.pack(first, ALIGNED)
    starts = np.zeros(len(entry_sizes), dtype="<i4")
    np.cumsum(entry_sizes[:-1], out=starts[1:])
    return starts.tobytes() + BTREE_BLOCK_TAIL.pack(len(entry_sizes), UNALIGNED)


EMPTY_BLOCK_TAIL = BTREE_BLOCK_TAIL.pack(0, UNALIGNED)   # a block without entries (an all-null file's index)


def decode_block_body(body: bytes, *, path: str | None, block: str) -> SstBlock:
    """Parse a decoded (decompressed, CRC-checked) block body.

    Raises:
        CorruptFileError: a bad tail, entry positions or lengths outside the block.
    """
    n = len(body)
    if n < BTREE_BLOCK_TAIL.size:
        raise CorruptFileError(f"block of {n} bytes is shorter than its 5-byte tail", path=path, block=block)
    value, kind = BTREE_BLOCK_TAIL.unpack_from(body, n - BTREE_BLOCK_TAIL.size)
    if kind == ALIGNED:
        end = n - BTREE_BLOCK_TAIL.size
        if value <= 0 or end % value:
            raise CorruptFileError(f"aligned entry size {value} does not divide the {end} entry bytes",
                                   path=path, block=block)
        count = end // value
        pos = np.arange(count, dtype=np.int64) * value
        bound = pos + value
    elif kind == UNALIGNED:
        if value < 0 or 4 * value > n - BTREE_BLOCK_TAIL.size:
            raise CorruptFileError(f"entry count {value} does not fit in the {n}-byte block", path=path, block=block)
        end = n - BTREE_BLOCK_TAIL.size - 4 * value
        pos = np.frombuffer(body, dtype="<i4", count=value, offset=end).astype(np.int64)
        bound = np.empty_like(pos)
        bound[:-1] = pos[1:]
        if value:
            bound[-1] = end
        if value and (int(pos[0]) != 0 or bool((bound <= pos).any())):
            raise CorruptFileError("entry positions are not increasing from 0", path=path, block=block)
    else:
        raise CorruptFileError(f"unknown block alignment byte {kind}", path=path, block=block)
    data = np.frombuffer(body, dtype=np.uint8, count=end)
    klen, kvl = read_varints_at(data, pos, INT_BYTES, path=path, block=block)
    kstart = pos + kvl
    klen_i = klen.astype(np.int64)
    vpos = kstart + klen_i
    if len(vpos) and bool((vpos >= bound).any()):
        raise CorruptFileError("key runs past its entry", path=path, block=block)
    vlen, vvl = read_varints_at(data, vpos, INT_BYTES, path=path, block=block)
    vstart = vpos + vvl
    vlen_i = vlen.astype(np.int64)
    if len(vstart) and bool((vstart + vlen_i != bound).any()):
        raise CorruptFileError("value does not end where its entry does", path=path, block=block)
    return SstBlock(data, body, kstart, klen_i, vstart, vlen_i, kind == ALIGNED)


def encode_handle(offset: int, size: int) -> bytes:
    """A block handle: varlong offset, varint stored size."""
    return varint(offset) + varint(size)


def decode_handles(blk: SstBlock, *, file_limit: int, path: str | None, block: str
                   ) -> tuple[np.ndarray, np.ndarray]:
    """(offsets, stored sizes) of the block handles an index block holds; every block and its 5-byte trailer
    must end by `file_limit`.

    Raises:
        CorruptFileError: malformed handles, or a block outside the file.
    """
    offs, osz = read_varints_at(blk.data, blk.val_start, LONG_BYTES, path=path, block=block)
    sizes, ssz = read_varints_at(blk.data, blk.val_start + osz, INT_BYTES, path=path, block=block)
    if len(offs) and bool((osz + ssz != blk.val_len).any()):
        raise CorruptFileError("block handle has trailing bytes", path=path, block=block)
    o = offs.astype(np.int64)
    s = sizes.astype(np.int64)
    if len(o) and bool((o + s + 5 > file_limit).any()):
        i = int(np.flatnonzero(o + s + 5 > file_limit)[0])
        raise CorruptFileError(f"data block {i} ({int(o[i])}+{int(s[i])}) lies outside the data region "
                               f"({file_limit} bytes)", path=path, block=block)
    return o, s
