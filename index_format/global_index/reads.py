"""Counted, bounds-checked reads of one index file through its RangeSource.

Every read names the part of the file it serves (footer, block index, a block, a bitmap), so a
short or out-of-range read becomes a typed error that says where. Storage only via RangeSource.
"""
from __future__ import annotations

from dataclasses import dataclass

from pyroaring import BitMap64

from index_format import bitmaps
from index_format.errors import CorruptFileError, TruncatedFileError
from index_format.storage import RangeSource


@dataclass
class ReadStats:
    """What a reader has fetched and decoded so far (tests assert on these)."""

    bytes_read: int = 0
    reads: int = 0
    blocks_decoded: int = 0
    bitmaps_read: int = 0


class FileReads:
    """Reads of one file of `source.size` bytes, counted in `stats`."""

    def __init__(self, source: RangeSource, stats: ReadStats) -> None:
        self.source = source
        self.path: str = source.name
        self.size: int = source.size
        self.stats = stats

    def read(self, offset: int, length: int, block: str) -> bytes:
        """Exactly `length` bytes at `offset` for the part named `block`.

        Raises:
            CorruptFileError: the range lies outside the file.
            TruncatedFileError: the source returned fewer bytes.
        """
        if offset < 0 or length < 0 or offset + length > self.size:
            raise CorruptFileError(f"{block} ({offset}+{length}) lies outside the file ({self.size} bytes)",
                                   path=self.path, block=block, offset=offset)
        try:
            data = self.source.read(offset, length)
        except TruncatedFileError as exc:
            raise TruncatedFileError(exc.reason, path=self.path, block=block, offset=offset) from None
        if len(data) != length:
            raise TruncatedFileError(f"short read: {len(data)} of {length} bytes", path=self.path,
                                     block=block, offset=offset)
        self.stats.reads += 1
        self.stats.bytes_read += length
        return data

    def named_bitmap(self, offset: int, length: int, name: str) -> BitMap64:
        """The bitmap stored at (offset, length), its errors naming `name`."""
        data = self.read(offset, length, name)
        return bitmaps.deserialize(data, path=self.path, block=name, offset=offset)

    def bitmap_at(self, offset: int, length: int) -> BitMap64:
        """One key's bitmap (counted in stats.bitmaps_read)."""
        block = f"bitmap at offset {offset}"
        data = self.read(offset, length, block)
        self.stats.bitmaps_read += 1
        return bitmaps.deserialize(data, path=self.path, block=block, offset=offset)
