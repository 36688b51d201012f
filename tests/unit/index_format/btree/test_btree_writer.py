"""The btree writer: byte-identical to pypaimon's BTreeIndexWriter (the same layout as Paimon Java's) for the same
sorted rows; the null bitmap as Java serializes it; files cut at records_per_file; input errors."""
from __future__ import annotations

import datetime as dt
import decimal
import math
import random
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from index_format.btree.btree_reader import open_btree_index
from index_format.btree.btree_writer import write_btree_bytes, write_btree_files
from index_format.errors import InvalidOptionError
from index_format.global_index.filemeta import parse_meta
from index_format.global_index.footer import parse_footer
from index_format.layout import FOOTER_SIZE
from index_format.storage import BytesSource, Storage
from index_format.types import parse_type
from index_format.written_files import WriterInputError
from tests.compat.vectors import load_rows as load_java_rows
from tests.data import GLOBAL_INDEX
from tests.unit.index_format.btree.btree_cases import identity, java_order, pypaimon_write, truth


def _values(type_name: str, rng: random.Random, n: int) -> list[object]:
    """Random keys of a type, with duplicates and nulls (no -0.0 beside 0.0: pypaimon's comparator merges them)."""
    def one() -> object:
        if type_name == "string":
            return rng.choice(["", "a", "ab", "é", "日本語", "😀", "\x7f", "z" * 40, f"k{rng.randint(0, 300)}"])
        if type_name == "bigint":
            return rng.choice([-(1 << 63), (1 << 63) - 1, -1, 0, 1 << 33]) if rng.random() < 0.1 else \
                rng.randint(-(1 << 62), 1 << 62) if rng.random() < 0.5 else rng.randint(-40, 40)
        if type_name == "int":
            return rng.randint(-(1 << 31), (1 << 31) - 1) if rng.random() < 0.3 else rng.randint(-9, 9)
        if type_name == "smallint":
            return rng.randint(-(1 << 15), (1 << 15) - 1)
        if type_name == "tinyint":
            return rng.randint(-128, 127)
        if type_name == "boolean":
            return rng.random() < 0.5
        if type_name in ("double", "float"):
            return rng.choice([math.nan, math.inf, -math.inf, 1.5, -1.5]) if rng.random() < 0.2 else \
                float(rng.randint(-500, 500)) / 4
        if type_name == "date":
            return dt.date(1970, 1, 1) + dt.timedelta(days=rng.randint(-30000, 30000))
        if type_name == "timestamp(3)":
            return dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=rng.randint(-10**12, 10**12))
        if type_name == "timestamp(6)":
            return dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=rng.randint(-10**13, 10**13))
        if type_name == "decimal(10,2)":
            return decimal.Decimal(rng.randint(-10**9, 10**9)).scaleb(-2)
        if type_name == "decimal(20,3)":
            return decimal.Decimal(rng.randint(-10**19, 10**19)).scaleb(-3)
        raise AssertionError(type_name)
    return [None if rng.random() < 0.1 else one() for _ in range(n)]


TYPES = ["string", "bigint", "int", "smallint", "tinyint", "boolean", "double", "float", "date", "timestamp(3)",
         "timestamp(6)", "decimal(10,2)", "decimal(20,3)"]


@pytest.mark.parametrize("type_name", TYPES)
@pytest.mark.parametrize("block_size", [64 * 1024, 300, 16])
def test_bytes_equal_pypaimon_writer(tmp_path: Path, type_name: str, block_size: int) -> None:
    rng = random.Random(f"{type_name}-{block_size}")
    n = 700
    keys = _values(type_name, rng, n)
    rids = rng.sample(range(5 * n), n)        # local ids in any order, with gaps (no runs in the null bitmap)
    rows = list(zip(rids, keys))
    expected, meta = pypaimon_write(tmp_path, type_name, rows, block_size)
    data, written = write_btree_bytes(keys, rids, parse_type(type_name), {"btree-index.block-size": str(block_size)})
    assert data == expected
    assert written.meta == meta
    sets, nulls, _ = truth(type_name, rows)
    assert written.value_count == len(sets) and written.has_nulls == bool(nulls) and written.row_count == n


@pytest.mark.parametrize("type_name", ["string", "bigint", "double"])
def test_bloom_filter_bytes_equal_pypaimon(tmp_path: Path, type_name: str) -> None:
    rng = random.Random(type_name)
    keys = _values(type_name, rng, 3000)
    rids = list(range(3000))
    rng.shuffle(rids)
    rows = list(zip(rids, keys))
    expected, meta = pypaimon_write(tmp_path, type_name, rows, 512, bloom=True)
    data, written = write_btree_bytes(pa.array(keys, type=None if type_name != "double" else pa.float64()), rids,
                                      parse_type(type_name),
                                      {"btree-index.block-size": "512", "btree-index.bloom-filter.enabled": "true"})
    assert data == expected and written.meta == meta
    r = open_btree_index(BytesSource(data), parse_type(type_name))
    assert r.has_bloom_filter
    sets, _, rep = truth(type_name, rows)
    for ident, value in rep.items():
        assert set(r.eq(value)) == sets[ident]
    assert r.stats.bloom_skips == 0   # present keys always pass


@pytest.mark.parametrize("type_name", ["string", "bigint"])
def test_only_nulls_file_equals_pypaimon(tmp_path: Path, type_name: str) -> None:
    rows = [(rid, None) for rid in range(0, 40, 3)]
    expected, meta = pypaimon_write(tmp_path, type_name, rows, 4096)
    data, written = write_btree_bytes([None] * len(rows), [r for r, _ in rows], parse_type(type_name))
    assert data == expected and written.meta == meta
    assert parse_meta(parse_type(type_name), written.meta).only_nulls
    r = open_btree_index(BytesSource(data), parse_type(type_name))
    assert set(r.null_rows()) == {rid for rid, _ in rows} and not r.non_null_rows() and r.block_count == 0
    assert not r.eq(1 if type_name == "bigint" else "x") and not r.range(None, None) and r.value_count == 0


def test_null_bitmap_is_serialized_like_java() -> None:
    """Paimon Java run-optimizes the null bitmap (pypaimon does not): compare with the null bitmap Paimon Java
    wrote into a bitmap-index file for the same rows (both are RoaringNavigableMap64.serialize())."""
    rows = load_java_rows(GLOBAL_INDEX / "java" / "all_null.tsv", "string")
    java = (GLOBAL_INDEX / "java" / "all_null.none1.b16384.java.idx").read_bytes()
    f = parse_footer(java[-FOOTER_SIZE:], len(java))
    java_nulls = java[f.null_offset:f.null_offset + f.null_length]
    data, _ = write_btree_bytes([v for _, v in rows], [r for r, _ in rows], parse_type("string"))
    r = open_btree_index(BytesSource(data), parse_type("string"))
    ours = data[r.footer.null_offset:r.footer.null_offset + r.footer.null_length]
    assert ours == java_nulls and set(r.null_rows()) == {rid for rid, _ in rows}


class _Store(Storage):
    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}

    def write_atomic(self, path: str, data: bytes) -> None:
        self.files[path] = data


@pytest.mark.parametrize("records_per_file", [1, 7, 100, 10_000])
def test_files_cut_at_records_per_file(records_per_file: int) -> None:
    rng = random.Random(records_per_file)
    n = 700
    keys = [None if rng.random() < 0.15 else rng.randint(-30, 30) for _ in range(n)]
    rids = list(range(n))
    rng.shuffle(rids)
    store = _Store()
    names = iter(range(10**6))
    kt = parse_type("int")
    files = write_btree_files(keys, rids, kt, records_per_file=records_per_file,
                              new_path=lambda: f"btree-global-index-{next(names)}.index", storage=store)
    assert len(files) == math.ceil(n / records_per_file)
    assert [w.row_count for w in files] == [min(records_per_file, n - i) for i in range(0, n, records_per_file)]
    # global order: nulls (by row id), then (key, row id); file i holds the next records_per_file of it
    order = sorted(rids[i] for i in range(n) if keys[i] is None)
    flat = [(None, rid) for rid in order] + sorted((k, r) for r, k in zip(rids, keys) if k is not None)
    for i, w in enumerate(files):
        part = flat[i * records_per_file:(i + 1) * records_per_file]
        r = open_btree_index(BytesSource(store.files[w.path], w.path), kt)
        assert set(r.null_rows()) == {rid for k, rid in part if k is None}
        got = {(k, int(rid)) for k, ids in r.entries() for rid in ids}
        assert got == {(k, rid) for k, rid in part if k is not None}
        meta = parse_meta(kt, w.meta)
        present = [k for k, _ in part if k is not None]
        assert (meta.first_key, meta.last_key) == ((min(present), max(present)) if present else (None, None))
        assert w.has_nulls == any(k is None for k, _ in part) and w.value_count == len(set(present))
        assert w.file_size == len(store.files[w.path])


def test_keep_rows_says_which_input_rows_each_file_holds() -> None:
    keys = ["b", None, "a", "b", "c", None, "a"]
    rids = [10, 11, 12, 13, 14, 15, 16]
    store = _Store()
    names = iter("xyz")
    files = write_btree_files(keys, rids, parse_type("string"), records_per_file=3, new_path=lambda: next(names),
                              storage=store, keep_rows=True)
    assert [f.rows.row_ids.tolist() for f in files] == [[12], [16, 10, 13], [14]]
    assert [keys[i] for i in files[1].rows.rows.tolist()] == ["a", "b", "b"]


def test_input_errors() -> None:
    kt = parse_type("bigint")
    with pytest.raises(WriterInputError):
        write_btree_bytes([1, 2], [0], kt)
    with pytest.raises(WriterInputError):
        write_btree_bytes([1, 2], [0, -1], kt)
    with pytest.raises(WriterInputError):
        write_btree_bytes([], [], kt)
    with pytest.raises(WriterInputError):
        write_btree_files([1], [0], kt, records_per_file=0, new_path=lambda: "x", storage=_Store())
    with pytest.raises(InvalidOptionError):
        write_btree_bytes([1], [0], kt, {"btree-index.compression": "lzo"})
    with pytest.raises(InvalidOptionError):
        write_btree_bytes([1], [0], kt, {"btree-index.block-size": "0 b"})


@pytest.mark.parametrize("codec", ["zstd", "lz4"])
def test_compressed_files_read_back(codec: str) -> None:
    rng = np.random.default_rng(5)
    keys = [f"customer-account-{x:06d}" for x in rng.integers(0, 4000, 20_000).tolist()]
    kt = parse_type("string")
    data, _ = write_btree_bytes(keys, np.arange(20_000), kt,
                                {"btree-index.compression": codec, "btree-index.block-size": "2 kb"})
    plain, _ = write_btree_bytes(keys, np.arange(20_000), kt, {"btree-index.block-size": "2 kb"})
    assert len(data) < len(plain)
    r = open_btree_index(BytesSource(data), kt)
    code = 1 if codec == "zstd" else 2
    assert r.index_codec() == code and {r.block_codec(i) for i in range(r.block_count)} == {code}
    for k in ("customer-account-000000", keys[7], keys[-1], "customer-account-x"):
        assert set(r.eq(k)) == {i for i, x in enumerate(keys) if x == k}
    assert set(r.starts_with("customer-account-0001")) == {i for i, x in enumerate(keys)
                                                           if x.startswith("customer-account-0001")}


def test_identity_of_float_keys() -> None:
    """-0.0 and 0.0 are two keys, every NaN one key (Java's Double.compare)."""
    keys = [0.0, -0.0, math.nan, float.fromhex("0x1.8p1"), -0.0, math.nan]
    data, written = write_btree_bytes(keys, list(range(len(keys))), parse_type("double"))
    r = open_btree_index(BytesSource(data), parse_type("double"))
    got = {identity("double", v): sorted(ids) for v, ids in r.entries()}
    assert got == {(0.0, 1.0): [0], (-0.0, -1.0): [1, 4], ("NaN",): [2, 5], (3.0, 1.0): [3]}
    assert [java_order("double", v) for v, _ in r.entries()] == [java_order("double", k)
                                                                  for k in (-0.0, 0.0, 3.0, math.nan)]
    assert written.value_count == 4


@pytest.mark.parametrize("shape", ["distinct", "one_heavy_key", "few_keys", "wide_strings"])
def test_every_layout_path_equals_pypaimon(tmp_path: Path, shape: str) -> None:
    """The writer lays entries out per row record (mostly distinct fixed-width keys, with or without one key
    whose row list needs a 2-byte length) or field by field (few keys, strings): all equal pypaimon's bytes."""
    rng = random.Random(shape)
    if shape == "distinct":
        type_name, keys = "bigint", rng.sample(range(-(1 << 40), 1 << 40), 3000)
    elif shape == "one_heavy_key":
        type_name, keys = "int", [7] * 150 + rng.sample(range(10_000, 20_000), 600)
    elif shape == "few_keys":
        type_name, keys = "date", [dt.date(2020, 1, 1) + dt.timedelta(days=rng.randint(0, 5)) for _ in range(3000)]
    else:
        type_name, keys = "string", [("x" * rng.randint(0, 300)) + str(i % 700) for i in range(2000)]
    rids = rng.sample(range(1 << 22, 1 << 23), len(keys))   # 4-byte row-id varints
    rows = list(zip(rids, keys))
    expected, meta = pypaimon_write(tmp_path, type_name, rows, 4096)
    data, written = write_btree_bytes(keys, rids, parse_type(type_name), {"btree-index.block-size": "4 kb"})
    assert data == expected and written.meta == meta


def _java_block_ends(sizes: list[int], block_size: int) -> list[tuple[int, bool]]:
    """Paimon's SstFileWriter/BlockWriter closing rule, entry by entry (the reference for the vectorized cuts)."""
    ends, count, nbytes, aligned_size, aligned = [], 0, 0, 0, True
    for i, size in enumerate(sizes):
        count += 1
        nbytes += size
        if aligned:
            if aligned_size == 0:
                aligned_size = size
            else:
                aligned = aligned_size == size
        if nbytes + 5 + (0 if aligned else 4 * count) > block_size:
            ends.append((i + 1, aligned))
            count, nbytes, aligned_size, aligned = 0, 0, 0, True
    if count:
        ends.append((len(sizes), aligned))
    return ends


@pytest.mark.parametrize("window", [1 << 20, 7, 64])
@pytest.mark.parametrize("block_size", [1, 16, 100, 4096])
def test_block_cuts_follow_java_entry_by_entry(monkeypatch: pytest.MonkeyPatch, window: int, block_size: int) -> None:
    import index_format.btree.btree_writer as writer
    monkeypatch.setattr(writer, "_CUT_WINDOW", window)
    rng = random.Random(f"{window}-{block_size}")
    for shape in ("mixed", "runs", "same"):
        if shape == "mixed":
            sizes = [rng.randint(4, 40) for _ in range(3000)]
        elif shape == "runs":
            sizes = [s for s in (rng.choice([11, 12, 13]) for _ in range(200)) for _ in range(rng.randint(1, 40))]
        else:
            sizes = [12] * 2000
        assert writer._block_ends(np.array(sizes, dtype=np.int32), block_size) == _java_block_ends(sizes, block_size)
