"""The btree reader: lazy counted reads, block cache, bloom filter, range edges, statistics methods; answers
checked against plain Python over the input rows (files from pypaimon's writer and ours)."""
from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
from pyroaring import BitMap64

from index_format.btree.btree_reader import open_btree_index
from index_format.btree.btree_writer import write_btree_bytes
from index_format.errors import UnsupportedTypeError
from index_format.storage import BytesSource
from index_format.types import parse_type
from tests.unit.index_format.btree.btree_cases import pypaimon_write
from tests.unit.index_format.counting_source import CountingSource

S = parse_type("string")
BIG = parse_type("bigint")


def _strings(n: int = 4000, seed: int = 1) -> tuple[list, list]:
    rng = random.Random(seed)
    words = ["", "a", "ab", "abc", "b", "ba", "é", "éa", "\x7f", "\x7fz", "ÿ", "ÿÿ", "\U0010ffff", "\U0010ffffa"]
    words += [f"w{i:04d}" for i in range(400)]
    keys = [rng.choice(words + [None]) for _ in range(n)]
    return keys, list(range(n))


def test_lazy_reads_and_block_cache() -> None:
    keys, rids = _strings()
    data, _ = write_btree_bytes(keys, rids, S, {"btree-index.block-size": "512"})
    src = CountingSource(data)
    r = open_btree_index(src, S)
    assert len(src.calls) == 1                                   # the footer only
    assert set(r.eq("w0100")) == {i for i, k in zip(rids, keys) if k == "w0100"}
    assert len(src.calls) == 3                                   # + index block + one data block
    assert r.stats.reads == 3 and r.stats.blocks_decoded == 2 and r.stats.bytes_read == sum(n for _, n in src.calls)
    r.eq("w0101")                                                # same block: cached
    assert len(src.calls) == 3 and r.stats.block_hits == 1
    assert not r.eq("nope") and not r.eq(None)
    assert r.block_count > 20 and len(src.calls) <= 4


def test_warm_bigint_lookups_read_nothing_again() -> None:
    """Warm look-ups are answered from the decoded blocks the reader keeps (the speed itself is measured by
    bench/bench_btree.py, not here)."""
    n = 300_000
    rng = np.random.default_rng(3)
    keys = rng.permutation(n).astype(np.int64) * 7 - 1_000_000
    data, _ = write_btree_bytes(keys, np.arange(n), BIG)
    r = open_btree_index(BytesSource(data), BIG)
    for k in rng.choice(keys, 200).tolist():
        assert list(r.eq(k)) == [int(np.flatnonzero(keys == k)[0])]
        reads, decoded = r.stats.reads, r.stats.blocks_decoded
        assert list(r.eq(k)) == [int(np.flatnonzero(keys == k)[0])]   # warm: its block is kept decoded
        assert (r.stats.reads, r.stats.blocks_decoded) == (reads, decoded)


def test_isin_groups_lookups_by_block() -> None:
    keys, rids = _strings()
    data, _ = write_btree_bytes(keys, rids, S, {"btree-index.block-size": "256"})
    r = open_btree_index(BytesSource(data), S)
    values = ["w0001", "w0002", "w0399", "", "\U0010ffff", "nope", None, "w0002"]
    assert set(r.isin(values)) == {i for i, k in zip(rids, keys) if k is not None and k in values}
    assert not r.isin([]) and not r.isin([None])


def test_range_edges_at_block_boundaries() -> None:
    keys = list(range(0, 600, 3))                                # every third int: gaps to probe
    data, _ = write_btree_bytes(keys, list(range(len(keys))), BIG, {"btree-index.block-size": "64"})
    r = open_btree_index(BytesSource(data), BIG)
    last_keys = [int.from_bytes(k, "little", signed=True) for k, _, _ in r.block_info()]
    edges = last_keys[::9]
    probes = sorted({-5, 0, 1, 597, 598, 5000} | set(edges) | {k + 1 for k in edges} | {k - 1 for k in edges})
    rows = dict(enumerate(keys))
    for lo in probes[::2]:
        for hi in probes[1::2]:
            for li in (True, False):
                for hi_inc in (True, False):
                    expect = {i for i, k in rows.items()
                              if (k > lo or (li and k == lo)) and (k < hi or (hi_inc and k == hi))}
                    assert set(r.range(lo, hi, low_inclusive=li, high_inclusive=hi_inc)) == expect, (lo, hi, li, hi_inc)


def test_strings_prefixes_unicode_and_empty() -> None:
    keys, rids = _strings()
    data, _ = write_btree_bytes(keys, rids, S, {"btree-index.block-size": "128"})
    r = open_btree_index(BytesSource(data), S)
    for prefix in ["", "a", "ab", "é", "\x7f", "ÿ", "\U0010ffff", "w00", "w0399", "w04", "x"]:
        p = prefix.encode()
        expect = {i for i, k in zip(rids, keys) if k is not None and k.encode().startswith(p)}
        assert set(r.starts_with(prefix)) == expect, prefix
        assert set(r.starts_with(p)) == expect
    assert set(r.eq("")) == {i for i, k in zip(rids, keys) if k == ""}
    with pytest.raises(UnsupportedTypeError):
        open_btree_index(BytesSource(write_btree_bytes([1], [0], BIG)[0]), BIG).starts_with("1")


def test_statistics_methods() -> None:
    keys, rids = _strings(1500, seed=4)
    data, written = write_btree_bytes(keys, rids, S, {"btree-index.block-size": "200"})
    r = open_btree_index(BytesSource(data), S)
    truth: dict[str, list[int]] = {}
    for k, i in zip(keys, rids):
        if k is not None:
            truth.setdefault(k, []).append(i)
    order = sorted(truth, key=lambda k: k.encode())
    assert [k for k, _ in r.entries()] == order
    assert [(k, c) for k, c in r.value_counts()] == [(k, len(truth[k])) for k in order]
    assert [(k, c) for k, c in r.value_counts("w01")] == [(k, len(truth[k])) for k in order if k.startswith("w01")]
    assert [(k.decode(), ids.tolist()) for k, ids in r.key_rows()] == [(k, sorted(truth[k])) for k in order]
    assert r.value_count == written.value_count == len(truth)
    batches = list(r.key_counts())
    assert [k.decode() for ks, _ in batches for k in ks] == order
    assert np.concatenate([c for _, c in batches]).tolist() == [len(truth[k]) for k in order]
    dead = BitMap64(range(0, 1500, 2))
    counts = np.concatenate([c for _, c in r.key_counts(dead)]).tolist()
    assert counts == [sum(1 for i in truth[k] if i % 2) for k in order]
    assert set(r.scan_bytes(lambda b: b.endswith(b"7"))) == {i for i, k in zip(rids, keys) if k and k.endswith("7")}
    assert set(r.scan(lambda v: len(v) == 2)) == {i for i, k in zip(rids, keys) if k is not None and len(k) == 2}
    assert r.first_key() == order[0] and r.last_key() == order[-1]
    assert r.cache_cost() > r.footer.index_length


def test_bloom_filter_skips_absent_keys(tmp_path: Path) -> None:
    rng = random.Random(9)
    rows = [(i, rng.randint(0, 10_000) * 2) for i in range(2000)]   # even keys only
    data, _ = pypaimon_write(tmp_path, "bigint", rows, 1024, bloom=True)
    src = CountingSource(data)
    r = open_btree_index(src, BIG)
    assert r.has_bloom_filter
    for k in range(1, 2001, 2):                                  # odd: never present
        assert not r.eq(k)
    assert r.stats.bloom_skips > 900                             # 5% false positives at most, about
    assert not r.isin(list(range(1, 200, 2)))
    present = rows[5][1]
    assert set(r.eq(present)) == {i for i, k in rows if k == present}
    assert set(r.isin([present, 3, 5])) == {i for i, k in rows if k == present}


def test_a_shared_block_cache_serves_every_reader_of_a_file() -> None:
    from index_format.global_index.reader import BlockCache
    keys, rids = _strings()
    data, _ = write_btree_bytes(keys, rids, S, {"btree-index.block-size": "512"})
    cache = BlockCache(max_blocks=64)
    first = open_btree_index(BytesSource(data, name="f.index"), S, cache=cache)
    assert set(first.eq("w0007")) == {i for i, k in zip(rids, keys) if k == "w0007"}
    assert first.cache_cost() < 1 << 20 and len(cache) == 1
    second = open_btree_index(BytesSource(data, name="f.index"), S, cache=cache)
    assert set(second.eq("w0007")) == set(first.eq("w0007"))
    assert second.stats.blocks_decoded == 1 and second.stats.block_hits == 1   # its index block only


def test_counts_equal_the_rows_they_count_without_decoding_them() -> None:
    rng = np.random.default_rng(2)
    keys = [None if rng.random() < 0.1 else int(x) for x in rng.integers(-50, 50, 5000)]
    data, _ = write_btree_bytes(keys, list(range(5000)), BIG, {"btree-index.block-size": "512"})
    r = open_btree_index(BytesSource(data), BIG)
    for lo, hi, li, hi_incl in [(None, None, True, True), (-10, 10, True, False), (3, 3, True, True),
                                (20, None, False, True), (None, -49, True, True), (60, None, True, True)]:
        want = sum(1 for k in keys if k is not None and (lo is None or (k >= lo if li else k > lo))
                   and (hi is None or (k <= hi if hi_incl else k < hi)))
        assert r.count_range(lo, hi, low_inclusive=li, high_inclusive=hi_incl) == want
    postings = r.stats.postings_read
    assert r.count_keys([1, 2, 2, None, 99]) == sum(1 for k in keys if k in (1, 2))
    assert r.non_null_count() == sum(1 for k in keys if k is not None)
    assert r.stats.postings_read == postings   # counts come from the lists' count prefixes only
