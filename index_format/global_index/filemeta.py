"""Per-file manifest metadata `SortedIndexFileMeta` (spec §4): build and parse, with the legacy rules; and the
DEIX marker Paimon Java puts in a global index file's `source_meta`.

Imports only index_format.{keys,types,errors,layout,written_files} (the bytes are built in written_files, shared
with the btree writer).
"""
from __future__ import annotations

from dataclasses import dataclass

from index_format.errors import CorruptFileError
from index_format.keys import deserialize_key, serialize_key
from index_format.layout import DEIX_SOURCE_META, LE_I32
from index_format.types import KeyType
from index_format.written_files import META_VERSION, build_meta_bytes

__all__ = ["FileMeta", "build_meta", "build_meta_bytes", "deix_scan_snapshot", "deix_source_meta", "parse_meta",
           "parse_meta_raw"]


@dataclass(frozen=True)
class FileMeta:
    first_key: object | None
    last_key: object | None
    has_nulls: bool
    only_nulls: bool


def build_meta(kt: KeyType, first_key: object | None, last_key: object | None, has_nulls: bool) -> bytes:
    """spec §4 bytes from canonical first/last keys."""
    return build_meta_bytes(None if first_key is None else serialize_key(kt, first_key),
                            None if last_key is None else serialize_key(kt, last_key), has_nulls)


def parse_meta_raw(data: bytes) -> tuple[bytes | None, bytes | None, bool]:
    """(first key bytes | None, last key bytes | None, has_nulls) with the legacy rules of spec §4."""
    data = bytes(data)
    pos = 0

    def take_key() -> bytes:
        nonlocal pos
        if pos + 4 > len(data):
            raise CorruptFileError("index metadata truncated", block="manifest metadata")
        n = LE_I32.unpack_from(data, pos)[0]
        pos += 4
        if n < 0 or pos + n > len(data):
            raise CorruptFileError(f"index metadata key length {n} out of range", block="manifest metadata")
        key = data[pos:pos + n]
        pos += n
        return key

    first = take_key()
    last = take_key()
    if pos >= len(data):
        raise CorruptFileError("index metadata lacks the has-nulls byte", block="manifest metadata")
    has_nulls = data[pos] != 0
    pos += 1
    first_k: bytes | None = first
    last_k: bytes | None = last
    if len(data) - pos >= 2 and data[pos] == META_VERSION:
        flags = data[pos + 1]
        if flags & 1:
            first_k = None
        if flags & 2:
            last_k = None
    elif not first and not last and has_nulls:
        first_k = last_k = None  # legacy all-null file
    return first_k, last_k, has_nulls


def parse_meta(kt: KeyType, data: bytes) -> FileMeta:
    """The spec §4 metadata of a sorted-index file (bitmap, btree, multivalue). An fm file's manifest metadata is
    its partition directory instead ("FMME": no key bounds), read as "may hold any key, and nulls"."""
    if bytes(data[:4]) == b"FMME":
        return FileMeta(None, None, True, False)
    first, last, has_nulls = parse_meta_raw(data)
    fk = None if first is None else deserialize_key(kt, first)
    lk = None if last is None else deserialize_key(kt, last)
    return FileMeta(fk, lk, has_nulls, first is None and last is None)


DEIX_MAGIC = 0x44454958   # "DEIX"
_DEIX_VERSION = 1


def deix_source_meta(snapshot_id: int) -> bytes:
    """Paimon Java's marker of a data-evolution index: int magic, int version, long scanned snapshot id (BE)."""
    return DEIX_SOURCE_META.pack(DEIX_MAGIC, _DEIX_VERSION, int(snapshot_id))


def deix_scan_snapshot(source_meta: bytes | None) -> int | None:
    """The scanned snapshot id a DEIX marker names; None when `source_meta` is no DEIX marker."""
    if source_meta is None or len(source_meta) < DEIX_SOURCE_META.size:
        return None
    magic, _version, sid = DEIX_SOURCE_META.unpack_from(source_meta)
    return int(sid) if magic == DEIX_MAGIC else None
