"""Range-bitmap payloads against Paimon's Java output (tests/data/file_index/range-bitmap).

Every `.java.idx` is rebuilt byte for byte from its `.tsv` (Arrow array, chunked array, Python list, and
from codes), and every `.queries.tsv` line is answered exactly by the reader over Java's bytes and ours.
Also: corrupt and truncated payloads raise CorruptFileError, never IndexError/struct.error.
"""
from __future__ import annotations

import hashlib
import random
import struct
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from pyroaring import BitMap64

from index_format.errors import BgixError, CorruptFileError, TruncatedFileError, UnsupportedVersionError
from index_format.key_arrays import arrow_type
from index_format.range_bitmap import (
    RangeBitmapReader, decode_key, default_chunk_size, encode_key, supports, write_from_codes,
    write_range_bitmap,
)
from index_format.storage import BytesSource
from index_format.types import KeyType, parse_type
from tests.file_index_vectors import Query, VectorEntry, load_queries, load_rows, load_vectors

VECTORS = load_vectors(index_type="range-bitmap")
QUERY_FILES = sorted({v.queries for v in VECTORS if v.queries is not None})


def _kt(v: VectorEntry) -> KeyType:
    return parse_type(v.data_type.lower())


@cache
def _rows_of(path: Path, data_type: str) -> list[object]:
    return load_rows(path, data_type)


def _rows(v: VectorEntry) -> list[object]:
    return _rows_of(v.input, v.data_type)


def _java_key(kt: KeyType, value: object) -> object:
    """Plain-Python Java order (independent of the library): floats by Double.compare, strings by UTF-8."""
    if kt.name == "string":
        return str(value).encode("utf-8")
    if kt.name == "double":
        bits = struct.unpack(">q", struct.pack(">d", value))[0]
        if value != value:
            bits = 0x7FF8000000000000
        return bits ^ 0x7FFFFFFFFFFFFFFF if bits < 0 else bits
    return value


def _codes(kt: KeyType, values: list[object]) -> tuple[list[object], np.ndarray]:
    distinct: dict[object, object] = {}
    for x in values:
        if x is not None:
            distinct.setdefault(_java_key(kt, x), x)
    order = sorted(distinct)
    code_of = {k: i for i, k in enumerate(order)}
    codes = np.array([-1 if x is None else code_of[_java_key(kt, x)] for x in values], dtype=np.int64)
    return [distinct[k] for k in order], codes


def test_every_vector_is_listed_and_untouched() -> None:
    assert len(VECTORS) == 12
    for v in VECTORS:
        data = v.file.read_bytes()
        assert len(data) == v.size
        assert hashlib.sha256(data).hexdigest() == v.sha256, v.id


@pytest.mark.parametrize("v", VECTORS, ids=lambda v: v.id)
def test_write_matches_java(v: VectorEntry) -> None:
    kt = _kt(v)
    java = v.file.read_bytes()
    values = _rows(v)
    chunk = v.options.get("chunk-size")
    arr = pa.array(values, type=arrow_type(kt))
    assert write_range_bitmap(kt, arr, chunk_size=chunk) == java
    assert write_range_bitmap(kt, values, chunk_size=chunk) == java
    half = len(values) // 2
    chunked = pa.chunked_array([arr.slice(0, half), arr.slice(half)], type=arr.type)
    assert write_range_bitmap(kt, chunked, chunk_size=chunk) == java
    if chunk is None:
        assert write_range_bitmap(kt, values, chunk_size=default_chunk_size(kt)) == java
    keys, codes = _codes(kt, values)
    assert write_from_codes(kt, keys, codes, len(values), chunk_size=chunk) == java
    assert write_from_codes(kt, keys, codes.astype(np.int32), len(values), chunk_size=chunk) == java
    assert write_from_codes(kt, pa.array(keys, type=arrow_type(kt)), codes, len(values), chunk_size=chunk) == java


@pytest.mark.parametrize("v", VECTORS, ids=lambda v: v.id)
def test_reader_facts(v: VectorEntry) -> None:
    kt = _kt(v)
    r = RangeBitmapReader(BytesSource(v.file.read_bytes(), name=v.id), kt)
    values = _rows(v)
    present = [x for x in values if x is not None]
    assert r.row_count == v.rows == len(values)
    assert r.cardinality == v.distinct
    card_text, chunks_text = v.detail.split(", ")
    assert card_text == f"cardinality {v.distinct}"
    assert f"{r.chunk_count} chunk(s)" == chunks_text
    if present:
        keys, _ = _codes(kt, values)
        lo, hi = r.min, r.max
        assert _java_key(kt, lo) == _java_key(kt, keys[0])
        assert _java_key(kt, hi) == _java_key(kt, keys[-1])
        assert r.slice_count == max((len(keys) - 1).bit_length(), 1)
        rng = random.Random(7)
        for row in rng.sample(range(len(values)), min(50, len(values))):
            got = r.get(row)
            want = values[row]
            assert (got is None) == (want is None)
            if want is not None:
                assert _java_key(kt, got) == _java_key(kt, want)
    else:
        assert r.min is None and r.max is None
        assert r.slice_count == 64
    assert len(r.is_null()) == v.nulls
    assert (r.nbytes_cached > 0) == (r.cardinality > 0)


def _answer(r: RangeBitmapReader, q: Query, data_type: str) -> BitMap64:
    lits = q.values(data_type)
    op = q.op
    if op == "TOPK":
        return r.topk(q.k, nulls_first=q.nulls_first, strict=q.strict)  # type: ignore[arg-type]
    if op == "BOTTOMK":
        return r.bottomk(q.k, nulls_first=q.nulls_first, strict=q.strict)  # type: ignore[arg-type]
    one = {"=": r.eq, "!=": r.not_eq, "<": r.lt, "<=": r.le, ">": r.gt, ">=": r.ge}
    if op in one:
        return one[op](lits[0])
    if op == "IN":
        return r.isin(lits)
    if op == "NOT IN":
        return r.not_in(lits)
    if op == "BETWEEN":
        return r.between(lits[0], lits[1])
    if op == "IS NULL":
        return r.is_null()
    if op == "IS NOT NULL":
        return r.is_not_null()
    raise AssertionError(f"unknown op {op}")


@pytest.mark.parametrize("which", ["java", "ours"])
@pytest.mark.parametrize("v", VECTORS, ids=lambda v: v.id)
def test_queries_match_java(v: VectorEntry, which: str) -> None:
    kt = _kt(v)
    if which == "java":
        data = v.file.read_bytes()
    else:
        data = write_range_bitmap(kt, _rows(v), chunk_size=v.options.get("chunk-size"))
    r = RangeBitmapReader(data, kt)
    assert v.queries is not None
    queries = load_queries(v.queries)
    assert len(queries) == v.query_count
    assert {"=", "<", "<=", ">", ">=", "IN", "BETWEEN", "IS NULL"} <= {q.op for q in queries}
    for q in queries:
        assert q.outcome == "ROWS", q.label
        got = _answer(r, q, v.data_type)
        assert isinstance(got, BitMap64)
        assert list(got) == q.rows, q.label


def test_query_files_cover_every_op() -> None:
    every = {"=", "!=", "<", "<=", ">", ">=", "IN", "NOT IN", "BETWEEN", "IS NULL", "IS NOT NULL", "TOPK", "BOTTOMK"}
    for path in QUERY_FILES:
        ops = {q.op for q in load_queries(path)}
        assert ops <= every, path.name
        if "bigint_large" not in path.name:
            assert ops == every, path.name


def test_found_set_restricts_topk() -> None:
    v = next(x for x in VECTORS if x.file.name == "int_mixed.default.java.idx")
    kt = _kt(v)
    r = RangeBitmapReader(v.file.read_bytes(), kt)
    values = _rows(v)
    found = BitMap64(range(0, len(values), 3))
    top = r.topk(10, nulls_first=False, strict=True, found=found)
    assert len(top) == 10 and top <= found
    present = sorted((values[i], i) for i in found if values[i] is not None)
    threshold = present[-10][0]
    assert all(values[i] is not None and values[i] >= threshold for i in top)
    assert r.topk(5, nulls_first=True, strict=True, found=BitMap64()) == BitMap64()
    bottom = r.bottomk(5, nulls_first=True, strict=False, found=found)
    nulls = [i for i in found if values[i] is None]
    assert list(bottom) == nulls if len(nulls) >= 5 else set(nulls) <= set(bottom)


def test_concurrent_readers_share_one_object() -> None:
    v = next(x for x in VECTORS if x.file.name == "bigint_large.default.java.idx")
    kt = _kt(v)
    r = RangeBitmapReader(v.file.read_bytes(), kt)
    values = _rows(v)
    present = sorted(x for x in values if x is not None)
    bounds = [(present[i], present[i + 700]) for i in range(0, len(present) - 701, 997)]
    expected = [sum(1 for x in values if x is not None and a <= x <= b) for a, b in bounds]
    with ThreadPoolExecutor(max_workers=8) as pool:
        got = list(pool.map(lambda ab: len(r.range(*ab)), bounds))
        counts = list(pool.map(lambda ab: r.count_range(*ab), bounds))
    assert got == expected
    assert counts == expected


# ---------------------------------------------------------------- keys and types

def test_supports_and_default_chunk_size() -> None:
    assert supports(parse_type("decimal(18,2)")) and not supports(parse_type("decimal(19,2)"))
    assert supports(parse_type("timestamp(6)")) and not supports(parse_type("timestamp(9)"))
    assert supports(parse_type("timestamp_ltz(3)")) and not supports(parse_type("timestamp_ltz(7)"))
    for name in ("string", "boolean", "tinyint", "smallint", "int", "bigint", "float", "double", "date", "time"):
        assert supports(parse_type(name))
    assert [default_chunk_size(parse_type(n)) for n in ("boolean", "tinyint", "smallint")] == [0, 0, 0]
    assert default_chunk_size(parse_type("int")) == default_chunk_size(parse_type("string")) == 16384


def test_unsupported_types_are_refused() -> None:
    from index_format.errors import UnsupportedTypeError
    kt = parse_type("decimal(20,2)")
    with pytest.raises(UnsupportedTypeError):
        write_range_bitmap(kt, [None])
    with pytest.raises(UnsupportedTypeError):
        RangeBitmapReader(b"\x00" * 64, kt)
    with pytest.raises(UnsupportedTypeError):
        encode_key(parse_type("timestamp(9)"), 0)


def test_key_encoding() -> None:
    import datetime as dt
    import decimal
    assert encode_key(parse_type("string"), "ab") == b"\x00\x00\x00\x02ab"
    assert encode_key(parse_type("string"), "") == b"\x00\x00\x00\x00"
    assert encode_key(parse_type("int"), -2) == b"\xff\xff\xff\xfe"
    assert encode_key(parse_type("smallint"), 258) == b"\x01\x02"
    assert encode_key(parse_type("boolean"), True) == b"\x01"
    assert encode_key(parse_type("double"), float("nan")) == bytes.fromhex("7ff8000000000000")
    assert encode_key(parse_type("float"), float("nan")) == bytes.fromhex("7fc00000")
    assert encode_key(parse_type("double"), -0.0) == bytes.fromhex("8000000000000000")
    assert encode_key(parse_type("date"), dt.date(1970, 1, 3)) == b"\x00\x00\x00\x02"
    assert encode_key(parse_type("decimal(10,2)"), decimal.Decimal("-1.5")) == (-150).to_bytes(8, "big", signed=True)
    ts = dt.datetime(1970, 1, 1, 0, 0, 1, 2500)
    assert encode_key(parse_type("timestamp(3)"), ts) == (1002).to_bytes(8, "big")
    assert encode_key(parse_type("timestamp(6)"), ts) == (1_002_500).to_bytes(8, "big")
    before = dt.datetime(1969, 12, 31, 23, 59, 59, 999_500)
    assert encode_key(parse_type("timestamp(3)"), before) == (-1).to_bytes(8, "big", signed=True)
    for name, value in (("string", "héllo\U0001F600"), ("int", -7), ("bigint", 1 << 62), ("double", -0.0),
                        ("date", dt.date(2001, 2, 3)), ("timestamp(6)", dt.datetime(2020, 5, 6, 7, 8, 9, 123456)),
                        ("decimal(12,3)", decimal.Decimal("12.345")), ("time(3)", dt.time(1, 2, 3, 4000)),
                        ("boolean", False), ("float", 1.5)):
        kt = parse_type(name)
        back = decode_key(kt, encode_key(kt, value))
        assert back == value and type(back) is type(value), name
    with pytest.raises(CorruptFileError):
        decode_key(parse_type("bigint"), b"\x00")
    with pytest.raises(CorruptFileError):
        decode_key(parse_type("string"), b"\x00\x00\x00\x05ab")


# ---------------------------------------------------------------- corrupt input

def _small() -> tuple[KeyType, bytes]:
    v = next(x for x in VECTORS if x.file.name == "str_mixed.c32b.java.idx")
    return _kt(v), v.file.read_bytes()


def _exercise(r: RangeBitmapReader, probe: object) -> None:
    r.is_null()
    r.eq(probe)
    r.range(probe, None)
    r.lt(probe)
    r.topk(3, nulls_first=False, strict=True)
    r.get(0)
    _ = r.chunk_count, r.slice_count, r.min, r.max


@pytest.mark.parametrize("cut", [0, 3, 4, 10, 20, 60, 300, 1500, 3000, 20000, -1])
def test_truncated_payload_raises_corrupt(cut: int) -> None:
    kt, data = _small()
    short = data[:cut]
    with pytest.raises(CorruptFileError):
        _exercise(RangeBitmapReader(BytesSource(short, name="cut.idx"), kt), "m")


def test_errors_name_the_source_and_part() -> None:
    kt, data = _small()
    with pytest.raises(TruncatedFileError) as info:
        _exercise(RangeBitmapReader(BytesSource(data[:-1], name="short.idx"), kt), "m")
    assert info.value.path == "short.idx"
    assert info.value.block is not None and "range-bitmap" in info.value.block


def test_version_above_one_is_refused() -> None:
    kt, data = _small()
    bad = data[:4] + b"\x02" + data[5:]
    with pytest.raises(UnsupportedVersionError):
        RangeBitmapReader(bad, kt)


def test_garbage_raises_corrupt() -> None:
    kt, data = _small()
    for junk in (b"\xff" * 40, b"\x00\x00\x00\x0d" + b"\x01" * 60, bytes(range(256)) * 3):
        with pytest.raises(CorruptFileError):
            _exercise(RangeBitmapReader(junk, kt), "m")
    # a garbage EBM and a garbage dictionary header
    hl = struct.unpack_from(">i", data)[0]
    dict_at = 4 + hl
    dlen = struct.unpack_from(">i", data, 4 + hl - 4)[0]
    bsi_at = dict_at + dlen
    bhl = struct.unpack_from(">i", data, bsi_at)[0]
    ebm_at = bsi_at + 4 + bhl
    bad_ebm = data[:ebm_at] + b"\xee" * 16 + data[ebm_at + 16:]
    with pytest.raises(CorruptFileError) as info:
        RangeBitmapReader(bad_ebm, kt).is_null()
    assert "existence bitmap" in (info.value.block or "")
    bad_dict = data[:dict_at] + b"\x00\x00\x00\x0c" + data[dict_at + 4:]
    with pytest.raises(CorruptFileError) as info:
        RangeBitmapReader(bad_dict, kt).eq("m")
    assert "dictionary" in (info.value.block or "")
    bad_chunk = bytearray(data)
    struct.pack_into(">i", bad_chunk, dict_at + 17 + 4 * 3, 10 ** 6)  # offset of chunk 3's header
    with pytest.raises(CorruptFileError) as info:
        RangeBitmapReader(bytes(bad_chunk), kt).eq("m")
    assert "range-bitmap dictionary chunk 2" == info.value.block  # its header would end inside chunk 3


@pytest.mark.parametrize("name", ["str_mixed.c32b.java.idx", "int_mixed.c8b.java.idx", "double_special.c16b.java.idx"])
def test_mutated_bytes_never_escape_as_other_errors(name: str) -> None:
    v = next(x for x in VECTORS if x.file.name == name)
    kt = _kt(v)
    data = v.file.read_bytes()
    probe = _rows(v)[0] if _rows(v)[0] is not None else _rows(v)[2]
    rng = random.Random(name)
    for _ in range(150):
        buf = bytearray(data)
        for _ in range(rng.randint(1, 4)):
            pos = rng.randrange(min(len(buf), 400)) if rng.random() < 0.7 else rng.randrange(len(buf))
            buf[pos] = rng.randrange(256)
        try:
            _exercise(RangeBitmapReader(bytes(buf), kt), probe)
        except BgixError:
            pass  # CorruptFileError / UnsupportedVersionError: fine; anything else fails the test
