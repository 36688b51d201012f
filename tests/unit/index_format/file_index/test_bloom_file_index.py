"""The bloom-filter file index (index_format.file_index.bloom) against Paimon's Java writer and reader.

(a) every reference payload rebuilt byte for byte; (b) every reference might-contain answer, over Java's
bytes and ours; (c) round trips per type: never a false negative, Arrow and Python inputs agree, the
vectorized hash equals the scalar one; (d) damaged payloads decode or raise a typed error naming the file
and the part; (e) unsupported types and bad options.
"""
from __future__ import annotations

import datetime as dt
import math
import struct
import time
from functools import cache
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from index_format.errors import (CorruptFileError, IndexFormatError, InvalidOptionError, TruncatedFileError,
                                 UnsupportedTypeError)
from index_format.file_index.bloom import (BloomFilterReader, _wang_hash_array, bloom_sizing, hash_value,
                                           wang_hash, write_bloom_filter)
from index_format.file_index.formats import open_payload, write_payload
from index_format.file_index.result import REMAIN, SKIP
from index_format.file_index.values import paimon_type
from index_format.types import KeyType, parse_type
from tests.file_index_vectors import VectorEntry, load_queries, load_rows, load_vectors

VECTORS = load_vectors(index_type="bloom-filter")
LONG_MIN, LONG_MAX = -(1 << 63), (1 << 63) - 1


@cache
def _rows(path: Path, data_type: str) -> list[object]:
    return load_rows(path, data_type)


def test_reference_set_is_complete() -> None:
    assert len(VECTORS) == 6


# ---------------------------------------------------------------- (a) bytes

@pytest.mark.parametrize("v", VECTORS, ids=lambda v: v.id)
def test_rebuilds_reference_bytes(v: VectorEntry) -> None:
    kt = paimon_type(v.data_type)
    rows = _rows(v.input, v.data_type)
    java = v.file.read_bytes()
    assert write_bloom_filter(kt, rows, v.options) == java
    assert write_payload("bloom-filter", kt, rows, v.options) == java
    arrow_type = {"string": pa.string(), "int": pa.int32(), "bigint": pa.int64(), "double": pa.float64()}[kt.name]
    assert write_bloom_filter(kt, pa.array(rows, type=arrow_type), v.options) == java


@pytest.mark.parametrize("v", VECTORS, ids=lambda v: v.id)
def test_sizing_and_describe_match_vector_detail(v: VectorEntry) -> None:
    kt = paimon_type(v.data_type)
    d = BloomFilterReader(v.file.read_bytes(), kt, path=str(v.file)).describe()
    assert f"{d['hash_functions']} hash functions, {d['bits']} bits" == v.detail
    items = int(v.options.get("items", 1_000_000))
    fpp = float(v.options.get("fpp", 0.1))
    assert bloom_sizing(items, fpp) == (d["bits"], d["hash_functions"])
    bits = np.unpackbits(np.frombuffer(v.file.read_bytes()[4:], np.uint8)).sum()
    assert d["bits_set"] == bits


def test_sizing_rules() -> None:
    assert bloom_sizing(1_000_000, 0.1) == (4_792_536, 3)   # 599,071-byte payload whatever the rows
    assert bloom_sizing(100, 0.5) == (152, 1)               # nb = 144, a multiple of 8, still gains 8 bits
    assert bloom_sizing(1, 1e-40)[1] == 133


# ---------------------------------------------------------------- (b) answers

@pytest.mark.parametrize("which", ["java", "ours"])
@pytest.mark.parametrize("v", VECTORS, ids=lambda v: v.id)
def test_reference_answers(v: VectorEntry, which: str) -> None:
    kt = paimon_type(v.data_type)
    data = v.file.read_bytes() if which == "java" else write_bloom_filter(kt, _rows(v.input, v.data_type), v.options)
    r = open_payload("bloom-filter", data, kt, path=str(v.file))
    assert isinstance(r, BloomFilterReader)
    assert v.queries is not None
    queries = load_queries(v.queries)
    assert len(queries) >= v.query_count
    answers = {False: 0, True: 0}
    for q in queries:
        assert q.op == "=" and q.might_contain is not None, q.label
        value = q.values(v.data_type)[0]
        assert r.might_contain(value) is q.might_contain, q.label
        assert r.eq(value) is (REMAIN if q.might_contain else SKIP), q.label
        answers[q.might_contain] += 1
    assert answers[True] > 0 and (answers[False] > 0 or v.file.name.startswith("str_defaults"))


def test_predicates_java_does_not_override() -> None:
    kt = KeyType("int")
    r = BloomFilterReader(write_bloom_filter(kt, [1, 2, 3, None], {"items": "100", "fpp": "0.001"}), kt)
    absent = next(x for x in range(100, 10_000) if not r.might_contain(x))
    assert r.eq(None) is REMAIN and r.might_contain(None)
    assert r.eq(absent) is SKIP
    assert r.isin([absent, absent + 1000 * 0]) is SKIP          # the base: OR of `=`
    assert r.isin([absent, 2]) is REMAIN
    assert r.isin([absent, None]) is REMAIN
    for res in (r.ne(absent), r.not_in([absent]), r.lt(absent), r.le(absent), r.gt(absent), r.ge(absent),
                r.between(0, absent), r.is_null(), r.is_not_null()):
        assert res is REMAIN


# ---------------------------------------------------------------- (c) round trips

def _ints(bits: int) -> st.SearchStrategy[int]:
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    return st.one_of(st.sampled_from([lo, -1, 0, 1, hi]), st.integers(lo, hi))


TYPES: dict[str, st.SearchStrategy[object]] = {
    "string": st.text(st.characters(exclude_categories=("Cs",)), max_size=12),
    "tinyint": _ints(8), "smallint": _ints(16), "int": _ints(32), "bigint": _ints(64),
    "float": st.floats(width=32), "double": st.floats(),
    "date": st.dates(), "time(3)": st.times().map(lambda t: t.replace(microsecond=t.microsecond // 1000 * 1000)),
    "timestamp(3)": st.datetimes(min_value=dt.datetime(1000, 1, 1)),
    "timestamp(6)": st.datetimes(min_value=dt.datetime(1000, 1, 1)),
    "timestamp_ltz(6)": st.datetimes(min_value=dt.datetime(1000, 1, 1)).map(
        lambda d: d.replace(tzinfo=dt.timezone.utc)),
}
ARROW = {"string": pa.string(), "tinyint": pa.int8(), "smallint": pa.int16(), "int": pa.int32(),
         "bigint": pa.int64(), "float": pa.float32(), "double": pa.float64(), "date": pa.date32(),
         "time(3)": pa.time32("ms"), "timestamp(3)": pa.timestamp("us"), "timestamp(6)": pa.timestamp("us"),
         "timestamp_ltz(6)": pa.timestamp("us", tz="UTC")}


@pytest.mark.parametrize("spelling", sorted(TYPES))
@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_no_false_negatives(spelling: str, data: st.DataObject) -> None:
    kt = parse_type(spelling)
    values = data.draw(st.one_of(st.lists(st.one_of(st.none(), TYPES[spelling]), max_size=50),
                                 st.lists(st.none(), min_size=1, max_size=3)), label="values")
    items = data.draw(st.integers(1, 200), label="items")
    fpp = data.draw(st.sampled_from(["0.5", "0.1", "0.01", "1e-5"]), label="fpp")
    options = {"items": str(items), "fpp": fpp}
    payload = write_bloom_filter(kt, values, options)
    assert write_bloom_filter(kt, pa.array(values, type=ARROW[spelling]), options) == payload
    r = BloomFilterReader(payload, kt, path="mem")
    assert (r.num_bits, r.num_hash_functions) == bloom_sizing(items, float(fpp))
    for x in values:
        assert r.eq(x) is REMAIN, x
    if all(x is None for x in values):
        assert r.describe()["bits_set"] == 0


@settings(max_examples=300, deadline=None)
@given(keys=st.lists(st.integers(LONG_MIN, LONG_MAX), min_size=1, max_size=30))
def test_vectorized_long_hash_equals_scalar(keys: list[int]) -> None:
    assert _wang_hash_array(np.array(keys, dtype=np.int64)).tolist() == [wang_hash(k) for k in keys]


def test_hash_known_answers() -> None:
    # FLOAT hashes Float.floatToIntBits sign-extended; -1.0f is 0xBF800000
    assert hash_value(KeyType("float"), -1.0) == wang_hash(-0x40800000)
    assert hash_value(KeyType("float"), math.nan) == wang_hash(0x7FC00000)
    assert hash_value(KeyType("double"), -0.0) == wang_hash(LONG_MIN)
    assert hash_value(KeyType("double"), math.nan) == wang_hash(0x7FF8000000000000)
    # STRING: XXH64 seed 0 of the UTF-8 bytes, signed (the published XXH64("") = 0xEF46DB3751D8E999)
    assert hash_value(KeyType("string"), "") == 0xEF46DB3751D8E999 - (1 << 64)
    # TIMESTAMP: millis for p <= 3, micros above
    t = dt.datetime(1970, 1, 1, 0, 0, 1, 500)
    assert hash_value(parse_type("timestamp(3)"), t) == wang_hash(1000)
    assert hash_value(parse_type("timestamp(6)"), t) == wang_hash(1_000_500)


def test_float_nan_payloads_hash_canonically_from_arrow() -> None:
    odd_nan = np.array([0x7FC00001, 0xFFC00000], dtype=np.uint32).view(np.float32)
    kt = KeyType("float")
    options = {"items": "10", "fpp": "0.01"}
    assert write_bloom_filter(kt, pa.array(odd_nan), options) == write_bloom_filter(kt, [math.nan], options)


def test_write_timing_one_million_int_rows() -> None:
    rng = np.random.default_rng(7)
    col = pa.array(rng.integers(-(1 << 31), 1 << 31, 1_000_000).astype(np.int32), mask=rng.random(1_000_000) < 0.02)
    start = time.perf_counter()
    payload = write_bloom_filter(KeyType("int"), col, {})
    assert time.perf_counter() - start < 10
    r = BloomFilterReader(payload, KeyType("int"))
    assert all(r.might_contain(x) for x in col.slice(0, 1000).to_pylist() if x is not None)


# ---------------------------------------------------------------- (d) damaged payloads

SMALL = [v for v in VECTORS if v.size <= 4096]


@pytest.mark.parametrize("v", SMALL, ids=lambda v: v.id)
@pytest.mark.slow
def test_every_flip_and_truncation_is_typed(v: VectorEntry) -> None:
    data = v.file.read_bytes()
    kt = paimon_type(v.data_type)
    name = str(v.file)
    probes = [x for x in _rows(v.input, v.data_type)[:5] if x is not None]
    failures: list[str] = []
    blobs = [(f"cut@{n}", data[:n]) for n in range(len(data))]
    blobs += [(f"flip{m:#x}@{p}", data[:p] + bytes([data[p] ^ m]) + data[p + 1:])
              for p in range(len(data)) for m in (0x01, 0x80, 0xFF)]
    for case, blob in blobs:
        start = time.perf_counter()
        try:
            r = BloomFilterReader(blob, kt, path=name)
            r.describe()
            for x in probes:
                r.eq(x)
        except CorruptFileError as exc:
            if exc.path != name or not exc.block:
                failures.append(f"{case}: error lacks path or block: {exc!r}")
        except Exception as exc:  # noqa: BLE001 - any other kind is the failure being looked for
            failures.append(f"{case}: {type(exc).__name__}: {exc}")
        if time.perf_counter() - start > 2:
            failures.append(f"{case}: took {time.perf_counter() - start:.1f} s")
    assert not failures, "\n".join(failures[:20])


def test_header_errors() -> None:
    kt = KeyType("int")
    for n in range(4):
        with pytest.raises(TruncatedFileError) as info:
            BloomFilterReader(b"\0\0\0\1"[:n], kt, path="b.idx")
        assert info.value.path == "b.idx" and info.value.block == "bloom-filter header"
    with pytest.raises(CorruptFileError, match="no bit set") as cinfo:
        BloomFilterReader(b"\0\0\0\1", kt, path="b.idx")
    assert cinfo.value.block == "bloom-filter bit set"
    with pytest.raises(CorruptFileError, match="hash functions"):
        BloomFilterReader(struct.pack(">i", 17) + b"\xff\xff", kt, path="b.idx")   # 17 functions, 16 bits


def test_java_signed_byte_quirk() -> None:
    # Java rebuilds numHashFunctions from signed bytes: 0x00000085 reads as -123, so testHash checks
    # nothing and every `=` is REMAIN; 0x000001C8 (456) reads as 256 - 56 = 200
    kt = KeyType("int")
    r = BloomFilterReader(struct.pack(">i", 0x85) + bytes(64), kt, path="q")
    assert r.num_hash_functions == -123 and r.eq(5) is REMAIN
    assert r.describe()["stored_hash_functions"] == 0x85
    assert BloomFilterReader(struct.pack(">i", 456) + bytes(64), kt).num_hash_functions == 200
    # and the writer really produces such counts for a tiny `items` and a tiny fpp
    payload = write_bloom_filter(kt, [7], {"items": "1", "fpp": "1e-40"})
    assert struct.unpack(">i", payload[:4])[0] == 133
    assert BloomFilterReader(payload, kt).eq(8) is REMAIN


@settings(max_examples=300, deadline=None)
@given(blob=st.binary(max_size=40))
def test_random_bytes_decode_or_raise_typed(blob: bytes) -> None:
    try:
        r = BloomFilterReader(blob, KeyType("string"), path="r")
        r.eq("x")
        r.describe()
    except IndexFormatError as exc:
        assert exc.path == "r"


# ---------------------------------------------------------------- (e) types and options

@pytest.mark.parametrize("spelling", ["boolean", "decimal(10,2)"])
def test_unsupported_types(spelling: str) -> None:
    kt = parse_type(spelling)
    with pytest.raises(UnsupportedTypeError):
        write_bloom_filter(kt, [None], {})
    with pytest.raises(UnsupportedTypeError):
        BloomFilterReader(b"\0\0\0\1\0", kt)


@pytest.mark.parametrize("options", [
    {"items": "abc"}, {"items": "0"}, {"items": "-5"}, {"items": "1.5"}, {"items": ""}, {"items": "2147483648"},
    {"fpp": "0"}, {"fpp": "1"}, {"fpp": "1.5"}, {"fpp": "-0.1"}, {"fpp": "nan"}, {"fpp": "inf"}, {"fpp": "x"},
    {"fpp": "1_0"}, {"item": "10"}, {"items": "2000000000", "fpp": "1e-9"},
])
def test_bad_options(options: dict[str, str]) -> None:
    with pytest.raises(InvalidOptionError):
        write_bloom_filter(KeyType("int"), [1], options)


def test_option_spellings_java_accepts() -> None:
    kt = KeyType("int")
    base = write_bloom_filter(kt, [1], {"items": "100", "fpp": "0.01"})
    assert write_bloom_filter(kt, [1], {"items": "+100", "fpp": " 1e-2 "}) == base


@pytest.mark.parametrize("spelling, value", [("tinyint", 200), ("int", 1 << 40), ("bigint", 1 << 64), ("int", 2.5)])
def test_values_the_type_cannot_hold(spelling: str, value: object) -> None:
    with pytest.raises(UnsupportedTypeError):
        write_bloom_filter(parse_type(spelling), [value], {"items": "10"})
