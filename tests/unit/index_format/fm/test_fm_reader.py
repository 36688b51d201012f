"""The fm reader's own surface beyond the golden files: LIKE escapes, multi-byte `_`, bytes literals, counts
with deleted rows, entries in byte order, and one decode per partition."""
from __future__ import annotations

import numpy as np
import pytest
from pyroaring import BitMap64

from index_format.fm.fm_reader import FMIndexReader, open_fm_index
from index_format.fm.fm_writer import write_fm_bytes
from index_format.storage import BytesSource

ROWS = ["50%", "5_0", "a\\b", "é", "ab", "", None, "abé", "a!b", "50% off"]


def _reader(rows: list[str | None] = ROWS, **opts: str) -> FMIndexReader:
    return open_fm_index(BytesSource(write_fm_bytes(rows, 0, opts)[0], "t.index"), "string")


def test_like_escapes_and_multibyte_underscore() -> None:
    r = _reader()
    assert list(r.like("50\\%")) == [0]
    assert list(r.like("50\\%%")) == [0, 9]
    assert list(r.like("5\\_0")) == [1]
    assert list(r.like("a\\\\b")) == [2]
    assert list(r.like("_")) == [3]                 # one character, two bytes
    assert list(r.like("ab_")) == [7]
    assert list(r.like("50!%", escape="!")) == [0]  # another escape character
    assert list(r.like("a!!b", escape="!")) == [8]
    assert list(r.like("a\\b", escape=None)) == [2]  # no escape: the backslash is literal
    assert list(r.like("%")) == [0, 1, 2, 3, 4, 5, 7, 8, 9]
    assert list(r.like("")) == [5]
    with pytest.raises(ValueError):
        r.like("abc\\")


def test_bytes_literals_and_counts() -> None:
    r = _reader()
    assert r.contains(b"\xc3\xa9") == BitMap64([3, 7])
    assert r.contains("\xff") == BitMap64() and r.eq(None) == BitMap64()
    assert r.count_keys(["ab", "é", "zz"]) == 2
    keys, counts = next(r.key_counts(dead=BitMap64([4])))
    assert dict(zip(keys, counts.tolist()))[b"ab"] == 0
    assert [v for v, _ in r.entries()] == sorted({v for v in ROWS if v is not None}, key=lambda v: v.encode())
    assert r.value_count == 9 and r.non_null_count() == 9
    assert list(r.value_counts("50")) == [("50%", 1), ("50% off", 1)]


def test_each_partition_is_decoded_once_and_only_when_needed() -> None:
    rows = [f"row-{i}" for i in range(1000)]
    r = _reader(rows, **{"fm-index.partition-row-count": "100"})
    assert len(r.partitions) == 10 and r.stats.partitions_decoded == 0
    assert r.contains("row-99") == BitMap64([99, *range(990, 1000)])
    assert r.stats.partitions_decoded == 10
    reads = r.stats.reads
    assert r.starts_with("row-5") == BitMap64([5, *range(50, 60), *range(500, 600)])
    assert r.stats.reads == reads
    assert r.cache_cost() > 4096 and np.all(np.diff(np.array([p.first_row_id for p in r.partitions])) == 100)


def test_every_byte_value_a_258_symbol_alphabet() -> None:
    """Raw bytes (not UTF-8) use all 256 byte symbols: the suffix array is sorted over 16-bit symbols, and
    libdivsufsort's order equals a plain sort of the suffixes."""
    from index_format.fm.fm_writer import _suffix_array
    rng = np.random.default_rng(2)
    for alphabet in (3, 258):
        text = np.append(rng.integers(1, alphabet, 2000), 0).astype(np.uint16)
        t = text.tolist()
        assert _suffix_array(text, alphabet).tolist() == sorted(range(len(t)), key=lambda i: t[i:])
    rows: list[bytes | None] = [bytes([b, (b * 7) % 256]) for b in range(256)] + [bytes(range(256)), None]
    r = open_fm_index(BytesSource(write_fm_bytes(rows)[0]), "string")
    assert r.values() == rows
    assert list(r.contains(bytes([255]))) == [i for i, v in enumerate(rows) if v and 255 in v]
    assert list(r.eq(bytes([1, 7]))) == [1] and list(r.starts_with(b"\x00")) == [0, 256]


def test_a_shared_block_cache_keeps_the_decoded_partitions_within_its_budget() -> None:
    """With the service's block cache the reader holds no partition itself: they are charged to the cache, a
    budget smaller than the file's partitions keeps some and answers stay the same (the rest decoded again)."""
    from index_format.global_index.block_index import BlockCache
    rows = [f"row {i} {'vip' if i % 7 == 0 else 'x'}" for i in range(4000)]
    data = write_fm_bytes(rows, 0, {"fm-index.partition-row-count": "500"})[0]
    want = BitMap64(i for i in range(4000) if i % 7 == 0)
    own = open_fm_index(BytesSource(data, "t.index"), "string")
    assert own.contains("vip") == want and own.cache_cost() > 8 * 4000
    one = own._part(0).resident_bytes()
    for budget, kept in ((100 << 20, 8), (3 * one + one // 2, 3), (one // 2, 0)):
        cache = BlockCache(budget)
        r = open_fm_index(BytesSource(data, "t.index"), "string", cache=cache)
        assert r.cache_cost() < 4096 + 64 * 9
        for _ in range(2):
            assert r.contains("vip") == want and r.like("row 1%vip") == own.like("row 1%vip")
        assert len(cache) == kept and cache.bytes <= budget
        # all kept: each decoded once; else some again by each question (4 passes of 8 partitions at most)
        assert r.stats.partitions_decoded == 8 if kept == 8 else 8 < r.stats.partitions_decoded <= 32
