"""Paimon's dynamic-bucket hash index file (HashIndexFile over IntFileUtils): bare big-endian int32 hashes."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from index_format.bucket_index import HASH_INDEX, describe, read_hash_index, write_hash_index
from index_format.errors import CorruptFileError, IndexFormatError, TruncatedFileError

INT32 = st.integers(min_value=-(1 << 31), max_value=(1 << 31) - 1)


def test_known_bytes() -> None:
    hashes = [0, 1, -1, 0x12345678, -(1 << 31), (1 << 31) - 1]
    data = bytes.fromhex("00000000" "00000001" "ffffffff" "12345678" "80000000" "7fffffff")
    assert write_hash_index(hashes) == data
    got = read_hash_index(data)
    assert got.dtype == np.int32 and got.tolist() == hashes
    assert write_hash_index([]) == b"" and read_hash_index(b"").tolist() == []


@settings(max_examples=200, deadline=None)
@given(st.lists(INT32, max_size=300))
def test_round_trip(hashes: list[int]) -> None:
    data = write_hash_index(hashes)
    assert len(data) == 4 * len(hashes)  # no header, no count, no checksum: fileSize = 4 × rowCount
    assert read_hash_index(data, count=len(hashes)).tolist() == hashes
    assert write_hash_index(np.asarray(hashes, dtype=np.int32)) == data
    assert write_hash_index(np.asarray(hashes, dtype=np.int64)) == data
    assert read_hash_index(memoryview(bytearray(data))).tolist() == hashes


@pytest.mark.parametrize("size", [1, 2, 3, 5, 7, 401])
def test_partial_hash_is_typed(size: int) -> None:
    with pytest.raises(TruncatedFileError) as info:
        read_hash_index(b"\x01" * size, path="bucket-0.index")
    assert info.value.path == "bucket-0.index" and info.value.block == "hash list"
    assert f"length {size}" in str(info.value)


def test_count_mismatch() -> None:
    data = write_hash_index([1, 2, 3])
    with pytest.raises(CorruptFileError, match="holds 3 hashes, the manifest says 4"):
        read_hash_index(data, path="p", count=4)


@pytest.mark.parametrize("bad", [[1 << 31], [-(1 << 31) - 1], [1 << 70], np.array([1 << 32], dtype=np.int64),
                                 np.array([(1 << 32) - 1], dtype=np.uint32), [1.5], [True], np.zeros((2, 2))])
def test_values_that_are_not_java_ints(bad: object) -> None:
    with pytest.raises(IndexFormatError):
        write_hash_index(bad)  # type: ignore[arg-type]


def test_describe() -> None:
    data = write_hash_index([5, -6, 7])
    assert describe(data) == {"index_type": HASH_INDEX, "count": 3, "hashes": [5, -6, 7]}
    assert describe(data, limit=2) == {"index_type": "HASH", "count": 3, "hashes": [5, -6], "truncated": True}
