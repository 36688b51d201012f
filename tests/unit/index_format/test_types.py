"""Type spellings and Arrow mappings (spec §3)."""
from __future__ import annotations

import pyarrow as pa
import pytest

from index_format.errors import UnsupportedTypeError
from index_format.types import KeyType, from_arrow, parse_type


@pytest.mark.parametrize("text,spelling", [
    ("string", "string"), ("VARCHAR(20)", "string"), ("char(3)", "string"), ("bool", "boolean"),
    ("byte", "tinyint"), ("short", "smallint"), ("integer", "int"), ("long", "bigint"),
    ("float", "float"), ("double", "double"), ("decimal(10,2)", "decimal(10,2)"),
    ("DECIMAL(38, 10)", "decimal(38,10)"), ("decimal", "decimal(10,0)"), ("date", "date"),
    ("time", "time(0)"), ("timestamp", "timestamp(6)"), ("timestamp(3)", "timestamp(3)"),
    ("timestamp_ltz(9)", "timestamp_ltz(9)"), ("timestamp with local time zone", "timestamp_ltz(6)"),
])
def test_parse_type_spellings(text: str, spelling: str) -> None:
    kt = parse_type(text)
    assert kt.spelling == spelling
    assert parse_type(kt.spelling) == kt


@pytest.mark.parametrize("text", ["binary", "array<int>", "map<string,int>", "decimal(40,2)",
                                  "decimal(5,6)", "timestamp(12)", "int(3)", "", "varbinary(4)"])
def test_unsupported_types(text: str) -> None:
    with pytest.raises(UnsupportedTypeError):
        parse_type(text)


def test_keytype_rejects_unknown_name() -> None:
    with pytest.raises(UnsupportedTypeError):
        KeyType("blob")


@pytest.mark.parametrize("arrow,spelling", [
    (pa.string(), "string"), (pa.large_string(), "string"), (pa.bool_(), "boolean"),
    (pa.int8(), "tinyint"), (pa.int16(), "smallint"), (pa.int32(), "int"), (pa.int64(), "bigint"),
    (pa.float32(), "float"), (pa.float64(), "double"), (pa.decimal128(12, 3), "decimal(12,3)"),
    (pa.date32(), "date"), (pa.time32("ms"), "time(3)"), (pa.timestamp("us"), "timestamp(6)"),
    (pa.timestamp("ms", tz="UTC"), "timestamp_ltz(3)"), (pa.timestamp("ns"), "timestamp(9)"),
    (pa.dictionary(pa.int32(), pa.string()), "string"),
])
def test_from_arrow(arrow: pa.DataType, spelling: str) -> None:
    assert from_arrow(arrow).spelling == spelling


def test_from_arrow_rejects_binary_and_lists() -> None:
    for t in (pa.binary(), pa.list_(pa.int32()), pa.struct([("a", pa.int32())])):
        with pytest.raises(UnsupportedTypeError):
            from_arrow(t)


def test_byte_order_types() -> None:
    assert parse_type("string").byte_order_is_logical and parse_type("boolean").byte_order_is_logical
    assert not parse_type("int").byte_order_is_logical
