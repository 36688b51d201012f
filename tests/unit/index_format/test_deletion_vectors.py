"""Deletion-vector index files (spec §9) against Paimon's fixtures dvindex-32 / dvindex-64 (spec §9.3)."""
from __future__ import annotations

import struct
import zlib
from pathlib import Path

import pytest
from pyroaring import BitMap, BitMap64

from index_format.deletion_vectors import (
    apply_deletion_vector,
    read_deletion_vector,
    read_deletion_vectors,
    write_deletion_vectors,
)
from index_format.errors import (
    ChecksumError,
    CorruptFileError,
    IndexFormatError,
    TruncatedFileError,
    UnsupportedVersionError,
)
from tests.data import DELETION_VECTORS


@pytest.fixture(scope="module")
def dv32() -> bytes:
    return (DELETION_VECTORS / "dvindex-32").read_bytes()


@pytest.fixture(scope="module")
def dv64() -> bytes:
    return (DELETION_VECTORS / "dvindex-64").read_bytes()


def test_fixture_sizes(dv32: bytes, dv64: bytes) -> None:
    assert (len(dv32), len(dv64)) == (63, 87)  # spec §12.4


def test_read_32_sequential(dv32: bytes) -> None:
    assert [set(v) for v in read_deletion_vectors(dv32)] == [{2, 3}, {1}]


def test_read_64_sequential(dv64: bytes) -> None:
    assert [set(v) for v in read_deletion_vectors(dv64)] == [{2, 3}, {1}]


def test_read_by_manifest_ranges(dv32: bytes, dv64: bytes) -> None:
    # spec §9.3: offsets and manifest lengths as Paimon's index manifest records them
    got32 = read_deletion_vectors(dv32, [("f1.parquet", 1, 24), ("f2.parquet", 33, 22, 1)])
    got64 = read_deletion_vectors(dv64, [("f1.parquet", 1, 44, 2), ("f2.parquet", 45, 42)])
    for got in (got32, got64):
        assert isinstance(got, dict)
        assert {k: set(v) for k, v in got.items()} == {"f1.parquet": {2, 3}, "f2.parquet": {1}}
        assert all(isinstance(v, BitMap64) for v in got.values())
    assert set(read_deletion_vector(dv64, 45, 42)) == {1}


def test_manifest_length_rules_are_enforced(dv32: bytes, dv64: bytes) -> None:
    with pytest.raises(CorruptFileError, match="manifest length"):
        read_deletion_vectors(dv32, [("f", 1, 32)])  # the 64-bit rule applied to a 32-bit DV
    with pytest.raises(CorruptFileError, match="manifest length"):
        read_deletion_vectors(dv64, [("f", 1, 36)])  # the 32-bit rule applied to a 64-bit DV
    with pytest.raises(CorruptFileError, match="manifest says 5"):
        read_deletion_vectors(dv32, [("f", 1, 24, 5)])


def test_write_32_is_byte_exact(dv32: bytes) -> None:
    data, ranges = write_deletion_vectors([BitMap([2, 3]), BitMap64([1])], bitmap64=False)
    assert data == dv32
    assert ranges == [(1, 24), (33, 22)]


def test_write_64_is_byte_exact(dv64: bytes) -> None:
    data, ranges = write_deletion_vectors([BitMap64([2, 3]), BitMap([1])], bitmap64=True)
    assert data == dv64
    assert ranges == [(1, 44), (45, 42)]


def test_64_bit_writes_empty_buckets_like_java() -> None:
    positions = {5, (2 << 32) + 7}
    data, ranges = write_deletion_vectors([BitMap64(positions)], bitmap64=True)
    (length,) = struct.unpack_from(">I", data, 1)
    body = data[5:5 + length]
    assert body[:4] == bytes.fromhex("d1d33964")
    (buckets,) = struct.unpack_from("<Q", body, 4)
    assert buckets == 3  # high keys 0, 1 (empty), 2 — spec §9.2
    empty_bucket = struct.pack("<I", 1) + bytes.fromhex("3a30000000000000")
    assert empty_bucket in body
    assert struct.unpack_from(">I", data, 5 + length)[0] == zlib.crc32(body)
    assert ranges == [(1, length + 8)]
    assert set(read_deletion_vectors(data)[0]) == positions
    # pyroaring's own form (no empty bucket) is read too
    alt = BitMap64(positions).serialize()
    body2 = bytes.fromhex("d1d33964") + alt
    framed = b"\x01" + struct.pack(">I", len(body2)) + body2 + struct.pack(">I", zlib.crc32(body2))
    assert set(read_deletion_vectors(framed)[0]) == positions


def test_roundtrip_large_and_empty() -> None:
    big = BitMap(range(0, 200_000, 3)) | BitMap(range(1_000_000, 1_100_000))
    for flag in (False, True):
        data, ranges = write_deletion_vectors([big, BitMap(), BitMap([7])], bitmap64=flag)
        got = read_deletion_vectors(data, [(str(i), o, n) for i, (o, n) in enumerate(ranges)])
        assert isinstance(got, dict)
        assert set(got["0"]) == set(big) and len(got["1"]) == 0 and set(got["2"]) == {7}


def test_32_bit_rejects_positions_over_int_max() -> None:
    with pytest.raises(IndexFormatError, match="64-bit"):
        write_deletion_vectors([BitMap64([1 << 31])], bitmap64=False)
    data, _ = write_deletion_vectors([BitMap64([(1 << 31) - 1])], bitmap64=False)
    assert set(read_deletion_vectors(data)[0]) == {(1 << 31) - 1}


def test_bad_version(dv32: bytes) -> None:
    with pytest.raises(UnsupportedVersionError, match="version 2"):
        read_deletion_vectors(b"\x02" + dv32[1:], path="x/dv")
    with pytest.raises(TruncatedFileError):
        read_deletion_vectors(b"")


def test_crc_mismatch_names_file_and_block(dv32: bytes) -> None:
    bad = bytearray(dv32)
    bad[32] ^= 0xFF  # last byte of DV1's CRC (bytes 29..32)
    with pytest.raises(ChecksumError) as info:
        read_deletion_vectors(bytes(bad), [("f1", 1, 24)], path="idx/dv-1")
    assert "idx/dv-1" in str(info.value) and "'f1'" in str(info.value)
    assert [set(v) for v in read_deletion_vectors(bytes(bad), verify_crc=False)] == [{2, 3}, {1}]


def test_bad_magic_and_bounds(dv32: bytes) -> None:
    bad = bytearray(dv32)
    bad[5] = 0
    with pytest.raises(CorruptFileError, match="magic"):
        read_deletion_vectors(bytes(bad))
    with pytest.raises(TruncatedFileError):
        read_deletion_vectors(dv32[:40])
    huge = bytearray(dv32)
    huge[1:5] = b"\x7f\xff\xff\xff"
    with pytest.raises(TruncatedFileError, match="length prefix"):
        read_deletion_vectors(bytes(huge))
    with pytest.raises(TruncatedFileError):
        read_deletion_vectors(dv32, [("f", 60, 24)])
    with pytest.raises(TruncatedFileError):
        read_deletion_vectors(dv32, [("f", -3, 24)])


def test_garbage_bitmap_is_corrupt() -> None:
    body = bytes.fromhex("5e43f2d0") + b"garbage!"
    data = b"\x01" + struct.pack(">I", len(body)) + body + struct.pack(">I", zlib.crc32(body))
    with pytest.raises(CorruptFileError, match="roaring"):
        read_deletion_vectors(data)


def test_apply_deletion_vector() -> None:
    result = BitMap64([1, 2, 3, 10, 1 << 40])
    assert set(apply_deletion_vector(result, BitMap([2, 10, 99]))) == {1, 3, 1 << 40}
    assert set(apply_deletion_vector(result, BitMap64([1 << 40]))) == {1, 2, 3, 10}
    assert set(apply_deletion_vector(result, None)) == set(result)
    assert len(result) == 5  # untouched


def test_pypaimon_reads_our_32_bit_file(tmp_path: Path) -> None:
    # an independent reader: pypaimon 2.1.0 reads the 32-bit flavour through the manifest ranges
    from pypaimon.deletionvectors.deletion_vector import DeletionVector
    from pypaimon.filesystem.local_file_io import LocalFileIO
    from pypaimon.table.source.deletion_file import DeletionFile

    vectors = [BitMap([0, 5, 70_000, 1 << 20]), BitMap(range(100, 5000, 7)), BitMap([3])]
    data, ranges = write_deletion_vectors(vectors, bitmap64=False)
    path = tmp_path / "index-dv-0"
    path.write_bytes(data)
    for vector, (offset, length) in zip(vectors, ranges):
        dv = DeletionVector.read(LocalFileIO(), DeletionFile(str(path), offset, length, len(vector)))
        assert all(dv.is_deleted(p) for p in vector)
        assert dv.get_cardinality() == len(vector)
