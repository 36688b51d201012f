"""The one reader surface (index_format.index_reader.IndexReader): every family's reader implements it, and its
answers — `entries()` above all, one shape for every family — agree with a plain-Python reading of the rows
the file was written from."""
from __future__ import annotations

import inspect
import itertools
import random

import pytest
from pyroaring import BitMap64

from index_format.btree.btree_reader import BTreeIndexReader
from index_format.btree.btree_writer import write_btree_bytes
from index_format.families import FAMILIES, IndexFamily
from index_format.fm.fm_reader import FMIndexReader
from index_format.fm.fm_writer import write_fm_bytes
from index_format.global_index.multivalue_writer import write_multivalue_bytes
from index_format.global_index.reader import BitmapIndexReader
from index_format.global_index.writer import write_index_bytes
from index_format.index_reader import IndexReader
from index_format.keys import deserialize_key, sort_key
from index_format.storage import BytesSource
from index_format.types import KeyType, parse_type

KT = parse_type("bigint")
STRING = parse_type("string")   # the fm family's only type: its keys are SCALARS spelled as text
rng = random.Random(35)
SCALARS: list[int | None] = [None if rng.random() < 0.1 else rng.randint(-20, 20) for _ in range(300)]
ARRAYS: list[list[int] | None] = [None if rng.random() < 0.1 else [rng.randint(-20, 20) for _ in range(rng.randint(0, 3))]
                                  for _ in range(300)]


def _kt(name: str) -> KeyType:
    return STRING if name == "fm" else KT


def _v(name: str, v: int) -> object:
    """The key standing for `v` in family `name`'s file."""
    return f"k{v}" if name == "fm" else v


def _reader(name: str) -> IndexReader:
    fam = FAMILIES[name]
    if name == "fm":
        data, _ = write_fm_bytes([None if v is None else f"k{v}" for v in SCALARS])
        return fam.open_reader(BytesSource(data, "fm.index"), STRING)
    if name == "multivalue":
        data, _ = write_multivalue_bytes(ARRAYS, list(range(len(ARRAYS))), KT)
    else:
        write = write_btree_bytes if name == "btree" else write_index_bytes
        data, _ = write(SCALARS, list(range(len(SCALARS))), KT)
    return fam.open_reader(BytesSource(data, f"{name}.index"), KT)


def _truth(name: str) -> dict[object, BitMap64]:
    """value → rows, from the rows themselves (an array row under each of its distinct elements)."""
    out: dict[object, BitMap64] = {}
    if name == "multivalue":
        for i, arr in enumerate(ARRAYS):
            for v in set(arr or ()):
                out.setdefault(v, BitMap64()).add(i)
    else:
        for i, v in enumerate(SCALARS):
            if v is not None:
                out.setdefault(_v(name, v), BitMap64()).add(i)
    return out


def _nulls(name: str) -> BitMap64:
    return BitMap64() if name == "multivalue" else BitMap64(i for i, v in enumerate(SCALARS) if v is None)


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_every_familys_reader_is_an_index_reader(name: str) -> None:
    reader = _reader(name)
    assert isinstance(reader, IndexReader)
    assert isinstance(reader, {"btree": BTreeIndexReader, "fm": FMIndexReader}.get(name, BitmapIndexReader))
    # every member the protocol declares is there, with the protocol's parameters
    for member, declared in vars(IndexReader).items():
        if member.startswith("_") or not callable(declared):
            continue
        got = getattr(type(reader), member)
        assert list(inspect.signature(got).parameters) == list(inspect.signature(declared).parameters), member


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_entries_have_one_shape_for_every_family_in_logical_order(name: str) -> None:
    reader = _reader(name)
    entries = list(reader.entries())
    assert all(isinstance(e, tuple) and len(e) == 2 and isinstance(e[1], BitMap64) for e in entries)
    truth = _truth(name)
    assert [v for v, _ in entries] == sorted(truth, key=lambda v: sort_key(_kt(name), v))
    assert {v: rows for v, rows in entries} == truth


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_entries_desc_are_every_key_in_descending_logical_order(name: str) -> None:
    reader = _reader(name)
    truth = _truth(name)
    entries = list(reader.entries_desc())
    assert [v for v, _ in entries] == sorted(truth, key=lambda v: sort_key(_kt(name), v), reverse=True)
    assert all(isinstance(rows, BitMap64) and rows == truth[v] for v, rows in entries)


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_key_bitmaps_are_the_entries_in_the_same_order(name: str) -> None:
    truth = _truth(name)
    got = [(v, BitMap64(list(bm)) if not isinstance(bm, BitMap64) else bm)
           for v, bm in _reader(name).key_bitmaps()]
    assert [v for v, _ in got] == sorted(truth, key=lambda v: sort_key(_kt(name), v))
    assert all(rows == truth[v] for v, rows in got)


def test_warm_key_bitmaps_of_a_bitmap_file_read_and_decode_nothing() -> None:
    from index_format.global_index.reader import open_index
    from index_format.lru import ByteLRU

    data, _ = write_index_bytes(SCALARS, list(range(len(SCALARS))), KT)
    cache: ByteLRU = ByteLRU(1 << 24)
    list(open_index(BytesSource(data, "warm.index"), KT, bitmap_cache=cache).key_bitmaps())
    again = open_index(BytesSource(data, "warm.index"), KT, bitmap_cache=cache)
    assert {v: BitMap64(list(bm)) for v, bm in again.key_bitmaps()} == _truth("bitmap")
    assert again.stats.bitmaps_read == 0


def test_btree_entries_desc_walk_blocks_from_the_last() -> None:
    """Many small data blocks: the descending walk crosses every block boundary, and a top-k reads few blocks."""
    values = [rng.randint(-5000, 5000) for _ in range(4000)]
    data, _ = write_btree_bytes(values, list(range(len(values))), KT, "btree-index.block-size=256 b")
    reader = FAMILIES["btree"].open_reader(BytesSource(data, "many.index"), KT)
    want = sorted(set(values), reverse=True)
    assert [v for v, _ in reader.entries_desc()] == want
    fresh = FAMILIES["btree"].open_reader(BytesSource(data, "many.index"), KT)
    first = next(iter(fresh.entries_desc()))
    assert first[0] == want[0] and first[1] == BitMap64(i for i, v in enumerate(values) if v == want[0])
    assert fresh.stats.blocks_decoded <= 2


@pytest.mark.parametrize("desc", [False, True])
@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_entries_among_are_the_keys_with_rows_among_a_filter(name: str, desc: bool) -> None:
    truth = _truth(name)
    order = sorted(truth, key=lambda v: sort_key(_kt(name), v), reverse=desc)
    for seed, size in ((1, 0), (2, 3), (3, 40), (4, 300)):
        among = BitMap64(random.Random(seed).sample(range(300), size))
        got = list(_reader(name).entries_among(among, desc=desc))
        want = [(v, truth[v] & among) for v in order if truth[v].intersect(among)]
        assert [(v, BitMap64(list(bm))) for v, bm in got] == want, (seed, size)


def test_btree_entries_among_cross_blocks_and_test_them_whole() -> None:
    """Many small data blocks, a sparse filter: each key's rows among it, both ways across every boundary."""
    values = [rng.randint(-5000, 5000) if rng.random() > 0.05 else None for _ in range(4000)]
    data, _ = write_btree_bytes(values, list(range(len(values))), KT, "btree-index.block-size=256 b")
    reader = FAMILIES["btree"].open_reader(BytesSource(data, "many.index"), KT)
    among = BitMap64(random.Random(9).sample(range(4000), 150))
    by_value: dict[int, BitMap64] = {}
    for i in among:
        if values[i] is not None:
            by_value.setdefault(values[i], BitMap64()).add(i)
    for desc in (False, True):
        want = sorted(by_value.items(), reverse=desc)
        assert list(reader.entries_among(among, desc=desc)) == want


def _counted(reader: IndexReader, **kw: object) -> dict[object, int]:
    """key_counts(**kw) as {value: count}, keys with no row left out (a file's keys are distinct)."""
    out: dict[object, int] = {}
    for keys, counts in reader.key_counts(**kw):  # type: ignore[arg-type]  # dead / among only
        if not isinstance(keys, list):
            buf, offs = keys
            keys = [buf[a:b].tobytes() for a, b in zip(offs[:-1], offs[1:])]
        assert len(keys) == len(counts)
        for k, c in zip(keys, counts.tolist()):
            v = deserialize_key(reader.kt, k)
            assert v not in out
            if c:
                out[v] = c
    return out


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_key_counts_among_count_each_keys_rows_of_a_filter_only(name: str) -> None:
    truth = _truth(name)
    for seed, size in ((1, 0), (2, 3), (3, 40), (4, 300)):
        among = BitMap64(random.Random(seed).sample(range(300), size))
        want = {v: len(rows & among) for v, rows in truth.items() if rows.intersect(among)}
        assert _counted(_reader(name), among=among) == want, (seed, size)
        dead = BitMap64(random.Random(seed + 10).sample(range(300), 50))
        want = {v: len(rows & among - dead) for v, rows in truth.items() if (rows & among) - dead}
        assert _counted(_reader(name), among=among, dead=dead) == want, (seed, size)


def test_a_warm_btree_top_k_walk_decodes_and_gathers_nothing() -> None:
    """The first blocks of an entries_among walk are kept with their gathered rows: the same walk again (every
    DESC top-k starts at the last blocks) reads, decodes and gathers nothing, and answers the same."""
    values = [rng.randint(-5000, 5000) for _ in range(4000)]
    data, _ = write_btree_bytes(values, list(range(len(values))), KT, "btree-index.block-size=256 b")
    reader = FAMILIES["btree"].open_reader(BytesSource(data, "warm.index"), KT)
    assert isinstance(reader, BTreeIndexReader)
    among = BitMap64(random.Random(5).sample(range(4000), 400))
    first = list(itertools.islice(reader.entries_among(among, desc=True), 30))
    stats = reader.stats
    before = (stats.reads, stats.blocks_decoded, stats.postings_read)
    assert list(itertools.islice(reader.entries_among(among, desc=True), 30)) == first
    assert (stats.reads, stats.blocks_decoded, stats.postings_read) == before
    by_value: dict[int, BitMap64] = {}
    for i in among:
        by_value.setdefault(values[i], BitMap64()).add(i)
    assert first == sorted(by_value.items(), reverse=True)[:30]


def test_btree_key_counts_among_cross_blocks() -> None:
    """Many small data blocks, keys repeated across rows, a sparse filter: every block's ids met with it at once."""
    values = [rng.randint(-500, 500) if rng.random() > 0.05 else None for _ in range(4000)]
    data, _ = write_btree_bytes(values, list(range(len(values))), KT, "btree-index.block-size=256 b")
    reader = FAMILIES["btree"].open_reader(BytesSource(data, "many.index"), KT)
    among = BitMap64(random.Random(11).sample(range(4000), 700))
    want: dict[object, int] = {}
    for i in among:
        if values[i] is not None:
            want[values[i]] = want.get(values[i], 0) + 1
    assert _counted(reader, among=among) == want


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_rows_and_counts_agree_with_the_rows_written(name: str) -> None:
    reader = _reader(name)
    truth = _truth(name)
    every = BitMap64().union(*truth.values())
    assert reader.null_rows() == _nulls(name)
    # a multivalue file's footer bitmaps are empty (spec §8): its rows are known only through its keys
    non_null = BitMap64() if name == "multivalue" else every
    assert reader.non_null_rows() == non_null and reader.non_null_count() == len(non_null)
    assert reader.value_count == len(truth)
    three = _v(name, 3)
    assert reader.eq(three) == truth.get(three, BitMap64())
    some = [_v(name, v) for v in (3, -7, 19, 99)]
    want = BitMap64().union(*(truth.get(v, BitMap64()) for v in some))
    assert reader.isin(some) == want and reader.count_keys(some) == len(want)
    low, high = _v(name, -5), _v(name, 8)
    kt = _kt(name)
    between = BitMap64().union(*(rows for v, rows in truth.items()
                                 if sort_key(kt, low) <= sort_key(kt, v) < sort_key(kt, high)))  # type: ignore[operator]  # one key type: all bytes
    assert reader.range(low, high, high_inclusive=False) == between
    assert reader.count_range(low, high, high_inclusive=False) == len(between)
    assert dict(reader.value_counts()) == {v: len(rows) for v, rows in truth.items()}
    assert reader.scan(lambda v: v == three) == truth.get(three, BitMap64())
    assert [(deserialize_key(kt, k), ids.tolist()) for k, ids in reader.key_rows()] == \
        [(v, list(rows)) for v, rows in reader.entries()]
    stats = reader.stats
    assert stats.reads > 0 and stats.bytes_read > 0 and reader.cache_cost() > 0


def test_a_family_entry_names_an_opener_returning_the_protocol() -> None:
    hints = inspect.get_annotations(IndexFamily.open_reader.fget)  # type: ignore[attr-defined]
    assert "IndexReader" in str(hints["return"])
