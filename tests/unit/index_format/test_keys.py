"""Key bytes (spec §3), Java order, literal coercion and JSON form — expectations from struct/Java semantics."""
from __future__ import annotations

import datetime as dt
import decimal
import math
import struct

import numpy as np
import pyarrow as pa
import pytest

from index_format.errors import BindError
from index_format.key_arrays import arrow_of, encode_arrow_keys, numpy_of
from index_format.keys import deserialize_key, serialize_key, sort_key, sort_key_of_bytes
from index_format.literals import coerce_literal, to_json
from index_format.types import parse_type

D = decimal.Decimal


@pytest.mark.parametrize("type_text,value,hexbytes", [
    ("string", "even", "6576656e"), ("string", "", ""), ("string", "😀", "f09f9880"),
    ("boolean", True, "01"), ("boolean", False, "00"),
    ("tinyint", -1, "ff"), ("smallint", 256, "0001"), ("int", -1, "ffffffff"), ("int", 256, "00010000"),
    ("bigint", 1 << 32, "0000000001000000"),
    ("float", float("nan"), "0000c07f"), ("double", float("nan"), "000000000000f87f"),
    ("double", -0.0, "0000000000000080"), ("float", 1.5, "0000c03f"),
    ("decimal(10,2)", D("1.25"), "7d00000000000000"),
    ("decimal(20,0)", D(128), "0080"), ("decimal(20,0)", D(-129), "ff7f"), ("decimal(20,0)", D(-128), "80"),
    ("decimal(20,0)", D(0), "00"),
    ("date", dt.date(1970, 1, 2), "01000000"), ("date", dt.date(1969, 12, 31), "ffffffff"),
    ("time", dt.time(0, 0, 1), "e8030000"),
    ("timestamp(3)", dt.datetime(1970, 1, 1, 0, 0, 1), "e803000000000000"),
    ("timestamp(6)", dt.datetime(1970, 1, 1, 0, 0, 0, 1500), "0100000000000000" + "a0c21e"),
    ("timestamp(6)", dt.datetime(1969, 12, 31, 23, 59, 59, 999999), "ffffffffffffffff" + "d8fc3c"),
    ("timestamp_ltz(3)", dt.datetime(1970, 1, 1, 1, tzinfo=dt.timezone(dt.timedelta(hours=1))),
     "0000000000000000"),
])
def test_serialize_examples(type_text: str, value: object, hexbytes: str) -> None:
    kt = parse_type(type_text)
    assert serialize_key(kt, value).hex() == hexbytes
    back = deserialize_key(kt, bytes.fromhex(hexbytes))
    assert serialize_key(kt, back) == bytes.fromhex(hexbytes)


def test_negative_nan_is_canonical() -> None:
    neg_nan = struct.unpack("<d", bytes.fromhex("000000000000f8ff"))[0]
    assert serialize_key(parse_type("double"), neg_nan).hex() == "000000000000f87f"


def test_double_compare_order() -> None:
    kt = parse_type("double")
    values = [float("-inf"), -1e300, -1.0, -5e-324, -0.0, 0.0, 5e-324, 1.0, float("inf"), float("nan")]
    keys = [sort_key(kt, v) for v in values]
    assert keys == sorted(keys) and len(set(keys)) == len(keys)
    assert [sort_key_of_bytes(kt, serialize_key(kt, v)) for v in values] == keys


@pytest.mark.parametrize("type_text,values", [
    ("int", [-(1 << 31), -256, -1, 0, 1, 255, 256, (1 << 31) - 1]),
    ("decimal(30,2)", [D("-1e20"), D("-1.5"), D("0"), D("0.01"), D("1e20")]),
    ("timestamp(9)", [-1, 0, 1, 999, 1000, 10**18]),
    ("string", ["", "a", "a\x00", "ab", "b", "é", "😀"]),
])
def test_sort_key_is_logical_order(type_text: str, values: list) -> None:
    kt = parse_type(type_text)
    vals = [coerce_literal(kt, v) for v in values]
    keys = [sort_key(kt, v) for v in vals]
    assert keys == sorted(keys)
    assert [sort_key_of_bytes(kt, serialize_key(kt, v)) for v in vals] == keys


@pytest.mark.parametrize("type_text,literal,expected", [
    ("tinyint", "12", 12), ("int", 2.0, 2), ("bigint", "-9223372036854775808", -(1 << 63)),
    ("boolean", "TRUE", True), ("boolean", 0, False), ("double", "NaN", None), ("double", "-Infinity", -math.inf),
    ("float", 0.1, float(np.float32(0.1))), ("decimal(5,2)", "1.5", D("1.50")), ("decimal(5,2)", 3, D("3.00")),
    ("date", "2024-02-29", dt.date(2024, 2, 29)), ("time", "12:30:00.250", dt.time(12, 30, 0, 250000)),
    ("timestamp(6)", "2024-01-01 10:00:00.5", dt.datetime(2024, 1, 1, 10, 0, 0, 500000)),
    ("timestamp_ltz(3)", "2024-01-01T10:00:00+02:00", dt.datetime(2024, 1, 1, 8, tzinfo=dt.timezone.utc)),
    ("timestamp(9)", 1_000_000_001, 1_000_000_001), ("string", "x", "x"),
])
def test_coerce_literal(type_text: str, literal: object, expected: object) -> None:
    got = coerce_literal(parse_type(type_text), literal)
    if expected is None:
        assert isinstance(got, float) and math.isnan(got)
    else:
        assert got == expected and type(got) is type(expected)


@pytest.mark.parametrize("type_text,literal", [
    ("tinyint", 300), ("tinyint", -129), ("int", "abc"), ("int", 1.5), ("int", True), ("bigint", 1 << 63),
    ("boolean", "maybe"), ("decimal(5,2)", "1.234"), ("decimal(3,0)", 1000), ("date", "2024-13-01"),
    ("float", 1e39), ("string", 5), ("time", "25:00"), ("timestamp(6)", 1_000_000_001), ("double", "x"),
])
def test_coerce_literal_rejects(type_text: str, literal: object) -> None:
    with pytest.raises(BindError):
        coerce_literal(parse_type(type_text), literal)


def test_to_json() -> None:
    assert to_json(parse_type("double"), float("nan")) == "NaN"
    assert to_json(parse_type("float"), float("inf")) == "Infinity"
    assert to_json(parse_type("double"), -math.inf) == "-Infinity"
    assert to_json(parse_type("decimal(5,2)"), D("1.50")) == "1.50"
    assert to_json(parse_type("date"), dt.date(2024, 1, 2)) == "2024-01-02"
    assert to_json(parse_type("timestamp(9)"), 1_000_000_001) == "1970-01-01T00:00:01.000000001"
    assert to_json(parse_type("timestamp_ltz(9)"), 1_000_000_001) == "1970-01-01T00:00:01.000000001+00:00"
    assert to_json(parse_type("int"), 3) == 3


@pytest.mark.parametrize("type_text,arrow", [
    ("int", pa.array([3, None, -1, 3, 256], pa.int32())),
    ("double", pa.array([0.0, -0.0, float("nan"), None, -math.inf, 1.5])),
    ("float", pa.array([0.0, -0.0, float("nan"), None, 2.5], pa.float32())),
    ("string", pa.array(["b", None, "a", "é", "", "b"])),
    ("boolean", pa.array([True, None, False])),
    ("decimal(5,2)", pa.array([D("1.50"), None, D("-2.25")], pa.decimal128(5, 2))),
    ("decimal(25,2)", pa.array([D("1.50"), None, D("-2.25")], pa.decimal128(25, 2))),
    ("date", pa.array([dt.date(2020, 1, 1), None, dt.date(1960, 1, 1)])),
    ("time(3)", pa.array([1000, None, 5], pa.time32("ms"))),
    ("timestamp(6)", pa.array([dt.datetime(2020, 1, 1, 0, 0, 0, 7), None, dt.datetime(1960, 1, 1)])),
    ("timestamp(3)", pa.array([1500, None, -1], pa.timestamp("ms"))),
    ("timestamp_ltz(9)", pa.array([1, None, -1_000_000_001], pa.timestamp("ns", tz="UTC"))),
])
def test_vectorized_encoding_matches_scalar(type_text: str, arrow: pa.Array) -> None:
    kt = parse_type(type_text)
    enc = encode_arrow_keys(kt, arrow)
    rows = np.array([i for i, v in enumerate(arrow.to_pylist()) if v is not None])
    got = enc.key_bytes(rows)
    values = enc.values(rows)
    for i, b, v in zip(rows, got, values):
        assert deserialize_key(kt, b) == v or (isinstance(v, float) and math.isnan(v))
        assert serialize_key(kt, v) == b
    # the row representation orders rows exactly like the serialized keys' Java order
    sk = [sort_key_of_bytes(kt, b) for b in got]
    rep = enc.sort_rep[rows].tolist()
    for a in range(len(rows)):
        for c in range(len(rows)):
            assert (rep[a] < rep[c]) == (sk[a] < sk[c])
            assert (rep[a] == rep[c]) == (sk[a] == sk[c])


@pytest.mark.parametrize("arrow_type", ["int8", "uint16", "int32", "uint64", "int64", "float32", "float64"])
def test_numpy_of_reads_arrow_buffers_like_to_numpy(arrow_type: str) -> None:
    """key_arrays.numpy_of skips pyarrow's to_numpy (which imports pandas) for null-free numbers: same values,
    also for sliced and chunked arrays; arrays with nulls or other types still take to_numpy."""
    t = getattr(pa, arrow_type)()
    base = pa.array(list(range(1, 100)), type=t)
    for arr in (base, base.slice(7, 50), pa.chunked_array([base.slice(0, 10), base.slice(40, 5)])):
        want = arr.to_numpy()
        got = numpy_of(arr)
        assert got.dtype == want.dtype and got.tolist() == want.tolist()
    with_nulls = pa.array([1, None, 3], type=t)
    assert numpy_of(with_nulls).tolist()[::2] == [1, 3]
    ids = np.array([5, 0, 17], dtype=np.int64)
    assert base.take(arrow_of(ids)).to_pylist() == base.take(pa.array(ids)).to_pylist()
