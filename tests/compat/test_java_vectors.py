"""Every Java reference file (copied into tests/data/global_index) reads back to its input rows; `none` files are reproduced byte for byte."""
from __future__ import annotations

import math
from pathlib import Path

import pytest

from index_format import open_index, parse_type, write_index_bytes
from index_format.options import IndexOptions

from .oracle import expected_sets, identity, java_order
from .vectors import Vector, load_rows, load_vectors
from tests.data import GLOBAL_INDEX

_VECTORS = load_vectors(GLOBAL_INDEX)


def _ids(v: Vector) -> str:
    return v.id


@pytest.mark.parametrize("vec", _VECTORS, ids=_ids)
def test_reads_every_key_null_and_non_null_set(vec: Vector) -> None:
    rows = load_rows(vec.input, vec.type)
    sets, nulls, non_null, rep = expected_sets(vec.type, rows)
    kt = parse_type(vec.type)
    reader = open_index(str(vec.file), kt)
    assert set(reader.null_rows()) == nulls
    assert set(reader.non_null_rows()) == non_null
    assert reader.value_count == len(sets)
    got = {}
    order = []
    for value, off, length in reader.located_entries():
        got[identity(vec.type, value)] = set(reader.bitmap_at(off, length))
        order.append(java_order(vec.type, value))
    assert got == sets
    # current Java writes logical order (spec §2.7)
    assert order == sorted(order)
    assert reader.key_order == "logical"
    for ident, value in rep.items():
        assert set(reader.eq(value)) == sets[ident], value
    assert set(reader.isin(list(rep.values()) + [None])) == non_null
    counts = {identity(vec.type, v): c for v, c in reader.value_counts()}
    assert counts == {k: len(s) for k, s in sets.items()}


@pytest.mark.parametrize("vec", [v for v in _VECTORS if v.type not in ("string", "boolean")], ids=_ids)
def test_range_matches_python_filter(vec: Vector) -> None:
    rows = load_rows(vec.input, vec.type)
    kt = parse_type(vec.type)
    reader = open_index(str(vec.file), kt)
    values = sorted({java_order(vec.type, v): v for _, v in rows if v is not None}.items())
    picks = [values[0][1], values[len(values) // 2][1], values[-1][1]]
    for low in picks:
        for high in picks:
            for li in (True, False):
                for hi in (True, False):
                    lo_k, hi_k = java_order(vec.type, low), java_order(vec.type, high)
                    expect = {r for r, v in rows if v is not None
                              and (lo_k < java_order(vec.type, v) or (li and lo_k == java_order(vec.type, v)))
                              and (java_order(vec.type, v) < hi_k or (hi and hi_k == java_order(vec.type, v)))}
                    got = reader.range(low, high, low_inclusive=li, high_inclusive=hi)
                    assert set(got) == expect, (low, high, li, hi)
    mid = picks[1]
    assert set(reader.range(mid, None)) == {r for r, v in rows if v is not None
                                            and java_order(vec.type, v) >= java_order(vec.type, mid)}


@pytest.mark.parametrize("vec", [v for v in _VECTORS if v.compression in ("none", "zstd", "lz4")], ids=_ids)
def test_writer_reproduces_reference(vec: Vector) -> None:
    rows = load_rows(vec.input, vec.type)
    kt = parse_type(vec.type)
    opts = IndexOptions(dictionary_block_size=vec.block_size, compression=vec.compression,
                        compression_level=vec.level)
    data, written = write_index_bytes([v for _, v in rows], [r for r, _ in rows], kt, opts)
    assert written.meta.hex() == vec.meta_hex
    assert written.row_count == vec.row_count
    assert written.file_size == len(data)
    if vec.compression == "none":
        assert data == vec.file.read_bytes()


def test_golden_file_answers(vectors_dir: Path) -> None:
    # spec §12.1: expected answers of Paimon's Java reader and pypaimon
    r = open_index(str(vectors_dir / "golden" / "category.bitmap.java.idx"), parse_type("string"), size=179)
    assert set(r.eq("odd")) == {0, 2}
    assert set(r.eq("even")) == {1, 3}
    assert set(r.eq("x")) == set()
    assert set(r.isin(["odd", "x"])) == {0, 2}
    assert set(r.null_rows()) == set()
    assert set(r.non_null_rows()) == {0, 1, 2, 3}
    assert set(r.starts_with("o")) == {0, 2}
    assert set(r.range(None, "odd", high_inclusive=False)) == {1, 3}
    assert set(r.range("odd", None)) == {0, 2}
    assert set(r.range("a", "f")) == {1, 3}
    assert set(r.scan_bytes(lambda k: k.endswith(b"d"))) == {0, 2}
    assert set(r.scan(lambda v: "ve" in v)) == {1, 3}
    f = r.footer
    assert (f.null_offset, f.null_length, f.non_null_offset, f.non_null_length) == (83, 8, 91, 27)
    assert (f.index_offset, f.index_length, f.value_count) == (118, 8, 2)


def test_spec_int_example_bytes() -> None:
    # spec §12.2: rows 0→256, 1→1, 2→NULL, 3→−1, 4→1 (current Java, 246 bytes)
    expected = bytes.fromhex(
        "0100000000000000000000003a300000"
        "0100000000000000100000000300 0100".replace(" ", "")
        + "00000000000000000000 3a300000 0100".replace(" ", "")
        + "000000000100100000000100 0400 0100".replace(" ", "")
        + "000000000000000000003a3000000100"
        + "000000000000100000000000 0304ffff".replace(" ", "")
        + "ffff001e04010000001e200400010000"
        + "3e1e00cfe1fd39010000000000000000"
        + "0000003a300000010000000000000010"
        + "00000002000100000000000000000000"
        + "003a3000000100000000000300100000"
        + "000000010003000400010 4ffffffff5c".replace(" ", "")
        + "1600954c956e00000000000000770000"
        + "001e0000000000000095000000240000"
        + "00000000 00b900000008000000030000".replace(" ", "")
        + "0001 42474958".replace(" ", ""))
    assert len(expected) == 246
    data, written = write_index_bytes([256, 1, None, -1, 1], [0, 1, 2, 3, 4], parse_type("int"))
    assert data == expected
    assert written.meta.hex() == "04000000ffffffff0400000000010000010100"
    assert (written.first_key, written.last_key, written.has_nulls) == (-1, 256, True)


def test_nan_and_signed_zero_lookups(vectors_dir: Path) -> None:
    r = open_index(str(vectors_dir / "java" / "double_special.none1.b16384.java.idx"), parse_type("double"))
    rows = load_rows(vectors_dir / "java" / "double_special.tsv", "double")
    zero = {rid for rid, v in rows if v == 0.0 and math.copysign(1, v) > 0}
    neg_zero = {rid for rid, v in rows if v == 0.0 and math.copysign(1, v) < 0}
    nan = {rid for rid, v in rows if v is not None and math.isnan(v)}
    assert set(r.eq(0.0)) == zero
    assert set(r.eq(-0.0)) == neg_zero
    assert set(r.eq(float("nan"))) == nan
    assert set(r.eq(-float("nan"))) == nan  # every NaN is the canonical one (spec §3)
