"""The 48-byte big-endian footer (spec §2.2): parse with full validation, and build.

Imports only index_format.{layout,errors}.
"""
from __future__ import annotations

from dataclasses import dataclass

from index_format.errors import CorruptFileError, ErrorPlace, TruncatedFileError, UnsupportedVersionError
from index_format.layout import FOOTER_SIZE, FOOTER_STRUCT, MAGIC, TRAILER_SIZE, VERSION


@dataclass(frozen=True, slots=True)
class Footer:
    null_offset: int
    null_length: int
    non_null_offset: int
    non_null_length: int
    index_offset: int
    index_length: int      # body length, trailer excluded (spec §2.2)
    value_count: int
    version: int = VERSION
    magic: int = MAGIC

    def to_bytes(self) -> bytes:
        return FOOTER_STRUCT.pack(self.null_offset, self.null_length, self.non_null_offset,
                                  self.non_null_length, self.index_offset, self.index_length,
                                  self.value_count, self.version, self.magic)

    def to_dict(self) -> dict[str, int]:
        return {"null_offset": self.null_offset, "null_length": self.null_length,
                "non_null_offset": self.non_null_offset, "non_null_length": self.non_null_length,
                "index_offset": self.index_offset, "index_length": self.index_length,
                "value_count": self.value_count, "version": self.version, "magic": self.magic}


def parse_footer(data: bytes, file_size: int, *, path: str | None = None) -> Footer:
    """Validate magic, version and that every block lies inside the file (spec §2.2)."""
    if file_size < FOOTER_SIZE or len(data) != FOOTER_SIZE:
        raise TruncatedFileError(f"file of {file_size} bytes is shorter than the 48-byte footer",
                                 path=path, block="footer")
    fields = FOOTER_STRUCT.unpack(data)
    f = Footer(*fields)
    where: ErrorPlace = {"path": path, "block": "footer", "offset": file_size - FOOTER_SIZE}
    if f.magic != MAGIC:
        raise CorruptFileError(f"bad magic {f.magic & 0xFFFFFFFF:08x} (expected {MAGIC:08x})", **where)
    if f.version != VERSION:
        raise UnsupportedVersionError(f"footer version {f.version} is not supported (expected 1)", **where)
    if f.value_count < 0:
        raise CorruptFileError(f"negative value count {f.value_count}", **where)
    limit = file_size - FOOTER_SIZE
    for name, off, length, extra in (("null-rows bitmap", f.null_offset, f.null_length, 0),
                                     ("non-null-rows bitmap", f.non_null_offset, f.non_null_length, 0),
                                     ("block index", f.index_offset, f.index_length, TRAILER_SIZE)):
        if off < 0 or length < 0:
            raise CorruptFileError(f"negative offset/length ({off}, {length}) of the {name}", **where)
        if off + length + extra > limit:
            raise CorruptFileError(f"{name} ({off}+{length}) lies outside the file ({file_size} bytes)",
                                   **where)
    if f.index_length < 1:
        raise CorruptFileError("empty block index body", **where)
    return f
