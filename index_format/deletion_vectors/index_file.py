"""Paimon deletion-vector index files (spec §9): read and write 32-bit and 64-bit vectors, apply them.

Imports pyroaring, the standard library and index_format.errors only.
"""
from __future__ import annotations

import zlib
from collections.abc import Sequence

from pyroaring import BitMap, BitMap64

from index_format.errors import (
    ChecksumError,
    CorruptFileError,
    IndexFormatError,
    TruncatedFileError,
    UnsupportedVersionError,
)
from index_format.layout import BE_U32, LE_U32, LE_U64

__all__ = [
    "DV_VERSION", "MAGIC_32", "MAGIC_64", "apply_deletion_vector", "read_deletion_vector",
    "read_deletion_vectors", "write_deletion_vectors",
]

DV_VERSION = 1                 # spec §9: one leading version byte
MAGIC_32 = 1581511376          # 0x5E43F2D0, stored BE (spec §9.1)
MAGIC_64 = 1681511377          # 0x6439D3D1, stored LE (spec §9.2)
_MAGIC_32_BYTES = BE_U32.pack(MAGIC_32)
_MAGIC_64_BYTES = LE_U32.pack(MAGIC_64)
_MAX_POSITION_32 = (1 << 31) - 1    # spec §9.1: Java int positions
_EMPTY_32 = BitMap().serialize()    # one empty bucket of the Java 64-bit form

RangeSpec = tuple[str, int, int] | tuple[str, int, int, int | None]


def read_deletion_vectors(data: bytes | memoryview, ranges: Sequence[RangeSpec] | None = None, *,
                          path: str | None = None, verify_crc: bool = True
                          ) -> dict[str, BitMap64] | list[BitMap64]:
    """Decode a DV index file.

    Without `ranges`: every vector, in file order, as a list. With manifest ranges
    `(data_file, offset, length[, cardinality])` (spec §9: offset points at the length prefix;
    length is L for 32-bit and L + 8 for 64-bit): a dict data_file → positions.

    Raises:
        UnsupportedVersionError: first byte is not 1.
        TruncatedFileError, CorruptFileError, ChecksumError: bad framing, magic, bitmap or CRC.
    """
    view = memoryview(data)
    if len(view) < 1:
        raise TruncatedFileError("empty deletion-vector file", path=path, block="version byte")
    if view[0] != DV_VERSION:
        raise UnsupportedVersionError(f"deletion-vector version {view[0]}, expected {DV_VERSION}",
                                      path=path, block="version byte", offset=0)
    if ranges is None:
        out: list[BitMap64] = []
        pos = 1
        while pos < len(view):
            bitmap, end = _read_one(view, pos, None, path, f"deletion vector {len(out) + 1}", verify_crc)
            out.append(bitmap)
            pos = end
        return out
    result: dict[str, BitMap64] = {}
    for spec in ranges:
        name, offset, length = spec[0], spec[1], spec[2]
        cardinality = spec[3] if len(spec) > 3 else None
        block = f"deletion vector of {name!r}"
        bitmap, _ = _read_one(view, offset, length, path, block, verify_crc)
        if cardinality is not None and len(bitmap) != cardinality:
            raise CorruptFileError(f"holds {len(bitmap)} positions, the manifest says {cardinality}",
                                   path=path, block=block, offset=offset)
        result[name] = bitmap
    return result


def read_deletion_vector(data: bytes | memoryview, offset: int, length: int, *,
                         path: str | None = None) -> BitMap64:
    """One vector at a manifest (offset, length); see read_deletion_vectors."""
    return _read_one(memoryview(data), offset, length, path, "deletion vector", True)[0]


def _read_one(view: memoryview, offset: int, manifest_length: int | None, path: str | None,
              block: str, verify_crc: bool) -> tuple[BitMap64, int]:
    """(positions, end offset) of the vector whose length prefix is at `offset`."""
    size = len(view)
    if offset < 1 or offset + 8 > size:
        raise TruncatedFileError(f"offset {offset} leaves no room for a length prefix and magic "
                                 f"in a {size}-byte file", path=path, block=block, offset=offset)
    (body_len,) = BE_U32.unpack_from(view, offset)
    end = offset + 4 + body_len + 4
    if body_len < 4 or end > size:
        raise TruncatedFileError(f"length prefix {body_len} runs past the end of the {size}-byte file",
                                 path=path, block=block, offset=offset)
    magic = bytes(view[offset + 4:offset + 8])
    if magic == _MAGIC_32_BYTES:
        expected = body_len          # spec §9.1: manifest length = L
    elif magic == _MAGIC_64_BYTES:
        expected = body_len + 8      # spec §9.2: manifest length = whole record
    else:
        raise CorruptFileError(f"unknown deletion-vector magic {magic.hex()}", path=path, block=block,
                               offset=offset + 4)
    if manifest_length is not None and manifest_length != expected:
        raise CorruptFileError(f"length prefix {body_len} does not match the manifest length "
                               f"{manifest_length}", path=path, block=block, offset=offset)
    body = view[offset + 4:offset + 4 + body_len]
    if verify_crc:
        (stored,) = BE_U32.unpack_from(view, offset + 4 + body_len)
        actual = zlib.crc32(body)
        if stored != actual:
            raise ChecksumError(f"CRC-32 {stored:#010x} stored, {actual:#010x} computed", path=path,
                                block=block, offset=offset + 4 + body_len)
    payload = body[4:]
    try:
        if magic == _MAGIC_32_BYTES:
            bitmap = _widen(BitMap.deserialize(payload))  # type: ignore[arg-type]  # pyroaring reads any buffer
        else:
            bitmap = BitMap64.deserialize(payload)  # type: ignore[arg-type]  # pyroaring reads any buffer
    except ValueError as exc:
        raise CorruptFileError(f"roaring bitmap does not decode: {exc}", path=path, block=block,
                               offset=offset + 8) from exc
    return bitmap, end


def _widen(bitmap: BitMap) -> BitMap64:
    # spec §1: for ids < 2^32 the 64-bit portable form is the 32-bit one behind a 12-byte prefix.
    if not bitmap:
        return BitMap64()
    return BitMap64.deserialize(LE_U64.pack(1) + LE_U32.pack(0) + bitmap.serialize())


def write_deletion_vectors(vectors: Sequence[BitMap | BitMap64], bitmap64: bool
                           ) -> tuple[bytes, list[tuple[int, int]]]:
    """Encode vectors into one DV index file; returns (bytes, [(offset, manifest length)]).

    32-bit flavour: positions must be ≤ 2^31 − 1 (spec §9.1). 64-bit flavour writes, like Java,
    one bucket for every high key from 0 to the largest (spec §9.2).

    Raises:
        IndexFormatError: a position does not fit the 32-bit flavour.
    """
    out = bytearray([DV_VERSION])
    ranges: list[tuple[int, int]] = []
    for i, vector in enumerate(vectors):
        if bitmap64:
            body = _MAGIC_64_BYTES + _serialize_64_java(vector)
        else:
            body = _MAGIC_32_BYTES + _serialize_32(vector, i)
        offset = len(out)
        out += BE_U32.pack(len(body))
        out += body
        out += BE_U32.pack(zlib.crc32(body))
        ranges.append((offset, len(body) + 8 if bitmap64 else len(body)))
    return bytes(out), ranges


def _serialize_32(vector: BitMap | BitMap64, index: int) -> bytes:
    if vector and vector.max() > _MAX_POSITION_32:
        raise IndexFormatError(f"position {vector.max()} exceeds {_MAX_POSITION_32}; write a 64-bit "
                               f"deletion vector instead", block=f"deletion vector {index + 1}")
    bitmap = vector.copy() if isinstance(vector, BitMap) else BitMap(vector)
    bitmap.run_optimize()
    return bytes(bitmap.serialize())


def _serialize_64_java(vector: BitMap | BitMap64) -> bytes:
    """Portable 64-bit form with an entry for every high key 0..max (empty ones included)."""
    bitmap = vector if isinstance(vector, BitMap64) else BitMap64(vector)
    if not bitmap:
        return LE_U64.pack(0)
    top = bitmap.max() >> 32
    if top == 0:  # the common case: one bucket, exactly pyroaring's own form
        single = bitmap.copy()
        single.run_optimize()
        return bytes(single.serialize())
    parts = [LE_U64.pack(top + 1)]
    for high in range(top + 1):
        lo, hi = high << 32, (high + 1) << 32
        parts.append(LE_U32.pack(high))
        if bitmap.range_cardinality(lo, hi) == 0:
            parts.append(_EMPTY_32)
            continue
        bucket = bitmap & BitMap64(range(lo, hi))
        bucket.run_optimize()
        # a one-bucket 64-bit serialization is count (8) + high key (4) + the 32-bit bytes
        parts.append(bytes(bucket.serialize())[12:])
    return b"".join(parts)


def apply_deletion_vector(result: BitMap64, dv: BitMap | BitMap64 | None) -> BitMap64:
    """Rows of `result` not deleted by `dv` (a new bitmap; `result` is left untouched)."""
    if not dv:
        return BitMap64(result) if not isinstance(result, BitMap64) else result.copy()
    if not isinstance(dv, BitMap64):
        dv = _widen(dv)
    return result - dv
