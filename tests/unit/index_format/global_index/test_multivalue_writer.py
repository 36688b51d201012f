"""Multivalue writer (spec §8): byte-identical to pypaimon-rust's create_global_index for the same shard rows.

pypaimon-rust builds each table and indexes it (tests/multivalue_tables.py); its files, manifest metadata and row
counts are the ground truth, and plain Python sets over the source arrays judge what our reader finds in its
files and ours.
"""
from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
import zstandard
from pyroaring import BitMap64

from index_format.bitmaps import serialize
from index_format.global_index.filemeta import parse_meta
from index_format.global_index.multivalue_writer import write_multivalue_bytes, write_multivalue_files
from index_format.global_index.reader import IndexReader, open_index
from index_format.global_index.writer import WriterInputError
from index_format.layout import read_varint
from index_format.storage import BytesSource, Storage
from index_format.types import parse_type
from tests.multivalue_tables import MultivalueTable, Shard

_WORDS = ["", "a", "b", "é", "🙂", "it's", "x" * 40, "tag-7", "A"]
_LONGS = [0, 1, -1, 256, -5, (1 << 63) - 1, -(1 << 63), 1 << 40, -(1 << 33)]


def _rows(rnd: random.Random, n: int, pool: list[object], *, max_len: int = 4) -> list[list[object] | None]:
    """Null arrays, empty arrays, null elements and repeated elements, in random mixes."""
    out: list[list[object] | None] = []
    for _ in range(n):
        if rnd.random() < 0.1:
            out.append(None)
        else:
            out.append([None if rnd.random() < 0.08 else rnd.choice(pool) for _ in range(rnd.randint(0, max_len))])
    return out


def _truth(rows: list[list[object] | None]) -> dict[object, set[int]]:
    """element → the rows whose array holds it, in plain Python."""
    sets: dict[object, set[int]] = {}
    for i, a in enumerate(rows):
        for v in a or ():
            if v is not None:
                sets.setdefault(v, set()).add(i)
    return sets


def _reader(data: bytes, kt: str) -> IndexReader:
    return open_index(BytesSource(data), parse_type(kt))


def _rnd_ints(seed: int) -> list[list[object] | None]:
    rnd = random.Random(seed)
    return _rows(rnd, 2000, list(range(-3000, 3000)), max_len=3)


# (name, SQL element type, bgix type, rows, pypaimon-rust options) — each one table, one create_global_index
CASES = [
    ("strings", "STRING", "string", _rows(random.Random(1), 300, _WORDS), None),
    ("bigints", "BIGINT", "bigint", _rows(random.Random(2), 300, _LONGS), None),
    ("ints-blocks", "INT", "int", _rnd_ints(3), {"multivalue-index.dictionary-block-size": "64"}),
    ("ints-zstd", "INT", "int", _rnd_ints(4), {"multivalue-index.compression": "zstd",
                                               "multivalue-index.dictionary-block-size": "256"}),
    ("ints-zstd-9", "INT", "int", _rnd_ints(5), {"multivalue-index.compression": "zstd",
                                                 "multivalue-index.compression-level": "9"}),
    ("ints-lz4", "INT", "int", _rnd_ints(6), {"multivalue-index.compression": "lz4",
                                              "multivalue-index.dictionary-block-size": "512"}),
    ("no-element", "STRING", "string", [None, [], [None], [None, None], None], None),
    # containers over 4096 ids and long runs of consecutive rows: bitset containers, no run containers
    ("dense", "STRING", "string", [["a"] if i % 7 < 3 else ["b", "a", "b"] for i in range(9000)], None),
    ("booleans", "BOOLEAN", "boolean", _rows(random.Random(7), 400, [True, False]), None),
]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[str, list[Shard]]]:
    out = {}
    for name, sql_type, kt, rows, options in CASES:
        table = MultivalueTable(tmp_path_factory.mktemp(name), sql_type)
        table.insert(rows)
        out[name] = (kt, table.index(options))
    return out


@pytest.mark.parametrize("case", [c[0] for c in CASES])
def test_files_equal_pypaimon_rust(built: dict[str, tuple[str, list[Shard]]], case: str) -> None:
    kt, shards = built[case]
    options = next(c[4] for c in CASES if c[0] == case)
    assert shards, "pypaimon-rust wrote no multivalue file"
    for shard in shards:
        n = shard.range_end - shard.range_start + 1
        data, written = write_multivalue_bytes(shard.rows, list(range(n)), kt, options)
        assert data == shard.data
        assert written.meta == shard.meta
        assert written.row_count == shard.row_count == n   # spec §8: the shard's source rows, not entries
        assert not written.has_nulls and written.file_size == len(shard.data)


@pytest.mark.parametrize("case", [c[0] for c in CASES])
def test_reader_answers_pypaimon_rust_files(built: dict[str, tuple[str, list[Shard]]], case: str) -> None:
    kt, shards = built[case]
    for shard in shards:
        truth = _truth(shard.rows)
        r = _reader(shard.data, kt)
        assert r.null_rows() == BitMap64() and r.non_null_rows() == BitMap64()   # spec §8: always empty
        meta = parse_meta(parse_type(kt), shard.meta)
        assert not meta.has_nulls and meta.only_nulls == (not truth)
        assert {v: set(r.bitmap_at(o, n)) for v, o, n in r.located_entries()} == truth
        for v, rows in truth.items():
            assert set(r.eq(v)) == rows
        values = list(truth)[:5]
        assert set(r.isin(values + [None])) == set().union(*(truth[v] for v in values))


def test_a_second_build_indexes_the_new_rows_with_local_ids(tmp_path: Path) -> None:
    table = MultivalueTable(tmp_path, "STRING")
    rnd = random.Random(11)
    table.insert(_rows(rnd, 50, _WORDS))
    first = table.index()
    table.insert(_rows(rnd, 30, _WORDS))
    shards = table.index()
    assert len(shards) == 2 and shards[0] == first[0] and (shards[1].range_start, shards[1].range_end) == (50, 79)
    data, written = write_multivalue_bytes(shards[1].rows, list(range(30)), "string")
    assert data == shards[1].data and written.meta == shards[1].meta and written.row_count == 30


def test_java_flavor_holds_the_same_keys_and_rows_in_java_layout(built: dict[str, tuple[str, list[Shard]]]) -> None:
    for case in ("strings", "dense", "ints-zstd"):
        kt, (shard, *_) = built[case]
        options = next(c[4] for c in CASES if c[0] == case)
        n = len(shard.rows)
        data, written = write_multivalue_bytes(shard.rows, list(range(n)), kt, options, flavor="java")
        assert written.meta == shard.meta and written.row_count == n
        ours, theirs = _reader(data, kt), _reader(shard.data, kt)
        assert [(v, set(ours.bitmap_at(o, m))) for v, o, m in ours.located_entries()] == \
            [(v, set(theirs.bitmap_at(o, m))) for v, o, m in theirs.located_entries()]
        # spec §2.1: current Java writes the null-rows and non-null-rows bitmaps after the dictionary
        f = ours.footer
        assert f.null_offset > 0 and f.non_null_offset == f.null_offset + f.null_length
        assert f.index_offset == f.non_null_offset + f.non_null_length
        # spec §1: Java run-optimizes every bitmap (pypaimon-rust does not)
        for _, o, m in ours.located_entries():
            assert data[o:o + m] == serialize(ours.bitmap_at(o, m))
        if case == "ints-zstd":
            # spec §2.4: Java's zstd stream has no content size (frame header descriptor 0x00)
            _, off, length = ours.block_info()[0]
            assert data[off + length] == 1
            _, pos = read_varint(data[off:off + length], 0)
            frame = data[off + pos:off + length]
            assert frame[:4] == b"\x28\xb5\x2f\xfd" and frame[4] == 0x00
            assert zstandard.ZstdDecompressor().decompressobj().decompress(frame)


def test_input_forms_agree() -> None:
    rnd = random.Random(5)
    rows = _rows(rnd, 400, _LONGS)
    base, _ = write_multivalue_bytes(rows, range(400), "bigint")
    arr = pa.array(rows, pa.list_(pa.int64()))
    assert write_multivalue_bytes(arr, np.arange(400), "bigint")[0] == base
    assert write_multivalue_bytes(arr.cast(pa.large_list(pa.int64())), pa.array(range(400)), "bigint")[0] == base
    assert write_multivalue_bytes(pa.chunked_array([arr[:150], arr[150:]]), range(400), "bigint")[0] == base
    fixed = pa.array([[1, 2], None, [2, None]], pa.list_(pa.int64(), 2))
    assert write_multivalue_bytes(fixed, [0, 1, 2], "bigint")[0] == \
        write_multivalue_bytes([[1, 2], None, [2, None]], [0, 1, 2], "bigint")[0]


def test_null_slots_that_span_child_values_add_nothing() -> None:
    # Arrow lets a null array slot point at child values; they are not elements of any row
    offsets = pa.array([0, 2, 4, 5], pa.int32())
    arr = pa.ListArray.from_arrays(offsets, pa.array(["a", "b", "c", "d", "e"]), mask=pa.array([False, True, False]))
    expected, _ = write_multivalue_bytes([["a", "b"], None, ["e"]], [0, 1, 2], "string")
    assert write_multivalue_bytes(arr, [0, 1, 2], "string")[0] == expected
    sliced = arr.slice(1)
    got, written = write_multivalue_bytes(sliced, [0, 1], "string")
    assert got == write_multivalue_bytes([None, ["e"]], [0, 1], "string")[0]
    assert {v: set(_reader(got, "string").bitmap_at(o, n)) for v, o, n in _reader(got, "string").located_entries()} == \
        {"e": {1}} and written.row_count == 2


def test_unordered_row_ids() -> None:
    rnd = random.Random(9)
    rows = _rows(rnd, 500, _WORDS)
    rids = list(range(0, 1500, 3))
    rnd.shuffle(rids)
    data, written = write_multivalue_bytes(rows, rids, "string")
    r = _reader(data, "string")
    want = {v: {rids[i] for i in s} for v, s in _truth(rows).items()}
    assert {v: set(r.bitmap_at(o, n)) for v, o, n in r.located_entries()} == want
    assert written.row_count == 500 and written.first_key == min(want) and written.last_key == max(want)


def test_multivalue_options_shape_the_file_and_bitmap_options_do_not() -> None:
    rows = [[f"k{i:04d}", f"j{i:04d}"] for i in range(400)]
    plain, _ = write_multivalue_bytes(rows, range(400), "string")
    assert write_multivalue_bytes(rows, range(400), "string",
                                  {"bitmap-index.dictionary-block-size": "64", "bitmap-index.compression": "zstd"}
                                  )[0] == plain
    small, _ = write_multivalue_bytes(rows, range(400), "string", {"multivalue-index.dictionary-block-size": "64"})
    assert _reader(plain, "string").block_count == 1 < _reader(small, "string").block_count
    zipped, _ = write_multivalue_bytes(rows, range(400), "string", "multivalue-index.compression=zstd")
    assert len(zipped) < len(plain) and _reader(zipped, "string").block_codec(0) == 1


def test_files_one_per_call_through_storage(tmp_path: Path) -> None:
    storage = Storage(str(tmp_path))
    rows = [["a", "b", "a"], None, [], ["b"], [None]]
    names = iter(range(10))
    files = write_multivalue_files(rows, range(5), parse_type("string"), records_per_file=1,
                                   new_path=lambda: str(tmp_path / f"multivalue-global-index-{next(names)}.index"),
                                   storage=storage, keep_rows=True)
    assert len(files) == 1   # records_per_file is ignored: one shard, one file
    (f,) = files
    data = (tmp_path / "multivalue-global-index-0.index").read_bytes()
    assert f.path.endswith("multivalue-global-index-0.index") and f.file_size == len(data)
    assert data == write_multivalue_bytes(rows, range(5), "string")[0] and f.row_count == 5
    assert f.rows is not None
    # (element, row) entries by element, then row id: a → {0}, b → {0, 3}
    assert f.rows.rows.tolist() == [0, 0, 3] and f.rows.row_ids.tolist() == [0, 0, 3]
    assert f.rows.key_starts.tolist() == [0, 1]
    assert write_multivalue_files([], [], "string", new_path=lambda: "never", storage=storage) == []


def test_bad_input_is_a_writer_input_error() -> None:
    with pytest.raises(WriterInputError, match="row ids"):
        write_multivalue_bytes([["a"], ["b"]], [0], "string")
    with pytest.raises(WriterInputError, match="≥ 0"):
        write_multivalue_bytes([["a"], ["b"]], [0, -1], "string")
    with pytest.raises(WriterInputError, match="ARRAY column"):
        write_multivalue_bytes(pa.array(["a", "b"]), [0, 1], "string")
    with pytest.raises(WriterInputError, match="not lists of int"):
        write_multivalue_bytes([["a"]], [0], "int")
    with pytest.raises(WriterInputError, match="flavor"):
        write_multivalue_bytes([["a"]], [0], "string", flavor="spark")


def test_a_large_shard_sorted_in_parts_holds_every_row() -> None:
    # ≥ 2 Mi elements with row ids in order: the sort and the bitmaps run in parts on the thread pool
    n = 750_000
    rng = np.random.default_rng(3)
    codes = rng.integers(0, 40, 3 * n)
    codes[::97] = 40 + rng.integers(0, 5, len(codes[::97]))   # a few rarer tags
    codes[1::3][::5] = codes[0::3][::5]                       # repeats inside one array
    tags = pa.array([f"t{i}" for i in range(45)]).take(pa.array(codes))
    lists = pa.ListArray.from_arrays(pa.array(np.arange(0, 3 * n + 1, 3, dtype=np.int32)), tags)
    data, written = write_multivalue_bytes(lists, np.arange(n), "string")
    r = _reader(data, "string")
    rows = np.repeat(np.arange(n), 3)
    got = {v: r.bitmap_at(o, m) for v, o, m in r.located_entries()}
    assert sorted(got) == sorted(f"t{i}" for i in range(45)) and written.row_count == n
    for i in range(45):
        want = np.unique(rows[codes == i])
        assert np.array_equal(np.array(got[f"t{i}"].to_array(), dtype=np.int64), want)
