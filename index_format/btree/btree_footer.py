"""The 52-byte little-endian footer of a btree index file: parse with full validation, and build.

Layout (Paimon's `BTreeFileFooter`): bloom filter (int64 offset, int32 size, int64 expected entries; all zero:
none), index block (int64 offset, int32 stored size), null bitmap (int64 offset, int32 size without its 4-byte
CRC; both zero: no nulls), int32 version, int32 magic 0x50425449. Imports index_format.{layout,errors}.
"""
from __future__ import annotations

from dataclasses import dataclass

from index_format.errors import CorruptFileError, ErrorPlace, TruncatedFileError, UnsupportedVersionError
from index_format.layout import BTREE_FOOTER, BTREE_FOOTER_SIZE, BTREE_MAGIC, TRAILER_SIZE

__all__ = ["BTreeFooter", "KNOWN_VERSIONS", "is_btree_tail", "parse_btree_footer"]

# 1: Paimon Java and pypaimon (row ids as a varint list); 2: pypaimon-rust's `btree-index.file-version` 2
# (adaptive row-id lists: single id, deltas or a roaring bitmap).
KNOWN_VERSIONS = (1, 2)
NULL_CRC_SIZE = 4


@dataclass(frozen=True, slots=True)
class BTreeFooter:
    """A btree file's footer. Zero handles mean "absent" (no bloom filter, no null rows)."""

    bloom_offset: int
    bloom_length: int
    bloom_expected: int
    index_offset: int
    index_length: int          # stored body length, trailer excluded
    null_offset: int
    null_length: int           # serialized bitmap length, CRC excluded
    version: int = 1
    magic: int = BTREE_MAGIC

    @property
    def has_bloom(self) -> bool:
        return not (self.bloom_offset == 0 and self.bloom_length == 0 and self.bloom_expected == 0)

    @property
    def has_nulls(self) -> bool:
        return not (self.null_offset == 0 and self.null_length == 0)

    @property
    def non_null_length(self) -> int:
        """Always 0: a btree file keeps no non-null bitmap (the name matches the bitmap footer's, which cache
        cost estimates read)."""
        return 0

    def to_bytes(self) -> bytes:
        return BTREE_FOOTER.pack(self.bloom_offset, self.bloom_length, self.bloom_expected, self.index_offset,
                                 self.index_length, self.null_offset, self.null_length, self.version, self.magic)

    def to_dict(self) -> dict[str, int]:
        return {"bloom_offset": self.bloom_offset, "bloom_length": self.bloom_length,
                "bloom_expected_entries": self.bloom_expected, "index_offset": self.index_offset,
                "index_length": self.index_length, "null_offset": self.null_offset,
                "null_length": self.null_length, "version": self.version, "magic": self.magic}


def is_btree_tail(tail: bytes) -> bool:
    """Do these last bytes of a file end with the btree magic?"""
    return len(tail) >= 4 and int.from_bytes(tail[-4:], "little") == BTREE_MAGIC


def parse_btree_footer(data: bytes, file_size: int, *, path: str | None = None) -> BTreeFooter:
    """Validate magic, version and that every part lies inside the file.

    Raises:
        TruncatedFileError: a file shorter than the footer. CorruptFileError: bad magic, a part outside the file.
        UnsupportedVersionError: a version other than 1 or 2.
    """
    if file_size < BTREE_FOOTER_SIZE or len(data) != BTREE_FOOTER_SIZE:
        raise TruncatedFileError(f"file of {file_size} bytes is shorter than the {BTREE_FOOTER_SIZE}-byte footer",
                                 path=path, block="footer")
    f = BTreeFooter(*BTREE_FOOTER.unpack(data))
    where: ErrorPlace = {"path": path, "block": "footer", "offset": file_size - BTREE_FOOTER_SIZE}
    if f.magic != BTREE_MAGIC:
        raise CorruptFileError(f"not a btree index file: bad magic {f.magic & 0xFFFFFFFF:08x} "
                               f"(expected {BTREE_MAGIC:08x})", **where)
    if f.version not in KNOWN_VERSIONS:
        raise UnsupportedVersionError(f"btree file version {f.version} is not supported (expected 1 or 2)", **where)
    limit = file_size - BTREE_FOOTER_SIZE
    parts = [("index block", f.index_offset, f.index_length, TRAILER_SIZE)]
    if f.has_nulls:
        parts.append(("null bitmap", f.null_offset, f.null_length, NULL_CRC_SIZE))
    if f.has_bloom:
        if f.bloom_expected <= 0 or f.bloom_length <= 0:
            raise CorruptFileError(f"bloom filter of {f.bloom_length} bytes for {f.bloom_expected} entries", **where)
        parts.append(("bloom filter", f.bloom_offset, f.bloom_length, 0))
    for name, off, length, extra in parts:
        if off < 0 or length < 0:
            raise CorruptFileError(f"negative offset/length ({off}, {length}) of the {name}", **where)
        if off + length + extra > limit:
            raise CorruptFileError(f"{name} ({off}+{length}) lies outside the file ({file_size} bytes)", **where)
    if f.index_length < 1:
        raise CorruptFileError("empty index block body", **where)
    return f
