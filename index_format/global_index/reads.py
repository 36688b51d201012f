"""Counted, bounds-checked reads of one index file through its RangeSource.

Every read names the part of the file it serves (footer, block index, a block, a bitmap), so a
short or out-of-range read becomes a typed error that says where. Storage only via RangeSource.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Union

from pyroaring import BitMap64, FrozenBitMap, FrozenBitMap64

from index_format import bitmaps
from index_format.errors import CorruptFileError
from index_format.layout import BITMAP64_ONE_BUCKET_HIGH0
from index_format.lru import ByteLRU
from index_format.memory_cost import bitmap_bytes
from index_format.storage import RangeSource
from index_format.storage.sources import read_exact

# A decoded bitmap as the cache keeps it: 32-bit when every id is below 2^32 (unions of those are several
# times faster), else 64-bit; frozen, so no caller can change a cached answer.
Decoded = Union[FrozenBitMap, FrozenBitMap64]
BitmapCache = ByteLRU[Decoded]


@dataclass
class ReadStats:
    """What a reader has fetched and decoded so far (tests assert on these)."""

    bytes_read: int = 0
    reads: int = 0
    blocks_decoded: int = 0
    bitmaps_read: int = 0


class FileReads:
    """Reads of one file of `source.size` bytes, counted in `stats`."""

    def __init__(self, source: RangeSource, stats: ReadStats, cache: BitmapCache | None = None) -> None:
        self.source = source
        self.path: str = source.name
        self.size: int = source.size
        self.stats = stats
        self.cache = cache

    def read(self, offset: int, length: int, block: str) -> bytes:
        """Exactly `length` bytes at `offset` for the part named `block`.

        Raises:
            CorruptFileError: the range lies outside the file.
            TruncatedFileError: the source returned fewer bytes.
        """
        data = read_exact(self.source, offset, length, block)
        self.stats.reads += 1
        self.stats.bytes_read += length
        return data

    def named_bitmap(self, offset: int, length: int, name: str) -> BitMap64:
        """The bitmap stored at (offset, length), its errors naming `name`."""
        data = self.read(offset, length, name)
        return bitmaps.deserialize(data, path=self.path, block=name, offset=offset)

    def bitmap_at(self, offset: int, length: int) -> BitMap64:
        """One key's bitmap (counted in stats.bitmaps_read unless it came from the cache)."""
        if self.cache is not None:
            hit = self.cached(offset)
            if hit is not None:
                return as_bitmap64(hit)
        block = f"bitmap at offset {offset}"
        data = self.read(offset, length, block)
        self.stats.bitmaps_read += 1
        bm = bitmaps.deserialize(data, path=self.path, block=block, offset=offset)
        if self.cache is not None:
            self.keep(offset, decode_piece(self, memoryview(data), offset), length)
        return bm

    # ------------------------------------------------------------ decoded-bitmap cache
    def cached(self, offset: int) -> Decoded | None:
        return self.cache.get((self.path, self.size, offset)) if self.cache is not None else None

    def keep(self, offset: int, bm: Decoded, length: int) -> None:
        if self.cache is not None:
            # charged what it keeps resident, not its stored `length` (a one-row bitmap: ~500 bytes, not 18)
            self.cache.put((self.path, self.size, offset), bm, bitmap_bytes(bm))


def decode_piece(reads: FileReads, piece: memoryview, offset: int) -> Decoded:
    """A stored 64-bit bitmap decoded the way the cache keeps it (32-bit when it has a single high-0 bucket)."""
    block = f"bitmap at offset {offset}"
    if len(piece) > 12 and piece[:12] == BITMAP64_ONE_BUCKET_HIGH0:
        try:
            return FrozenBitMap.deserialize(piece[12:])  # type: ignore[arg-type]  # pyroaring reads any buffer
        except Exception:
            raise CorruptFileError("malformed roaring bitmap", path=reads.path, block=block, offset=offset) from None
    bm = bitmaps.deserialize(piece, path=reads.path, block=block, offset=offset)
    return FrozenBitMap64(bm)


def as_bitmap64(bm: Decoded) -> BitMap64:
    """A cached bitmap as a (frozen) 64-bit one; 32-bit ones go through their portable bytes (fast)."""
    if isinstance(bm, FrozenBitMap64):
        return bm  # type: ignore[return-value]  # frozen: same read API, safe to share
    portable = BITMAP64_ONE_BUCKET_HIGH0 + bm.serialize()
    return FrozenBitMap64.deserialize(portable)  # type: ignore[return-value]  # frozen: same read API
