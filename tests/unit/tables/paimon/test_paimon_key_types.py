"""Paimon type spellings → index_format KeyType; pypaimon's own key serializer judges which types index."""
from __future__ import annotations

import pytest
from pypaimon.globalindex.key_serializer import create_serializer
from pypaimon.schema.data_types import DataTypeParser

from index_format.types import KeyType
from service.tables.paimon import key_type_of_spelling

EXPECTED = {
    "STRING": KeyType("string"), "VARCHAR(20)": KeyType("string"), "CHAR(3)": KeyType("string"),
    "BOOLEAN": KeyType("boolean"), "TINYINT": KeyType("tinyint"), "SMALLINT": KeyType("smallint"),
    "INT": KeyType("int"), "INT NOT NULL": KeyType("int"), "BIGINT": KeyType("bigint"),
    "FLOAT": KeyType("float"), "DOUBLE": KeyType("double"),
    "DECIMAL(10, 2)": KeyType("decimal", 10, 2), "DECIMAL(38,18)": KeyType("decimal", 38, 18),
    "DATE": KeyType("date"), "TIME(0)": KeyType("time", 0),
    "TIMESTAMP(3)": KeyType("timestamp", 3), "TIMESTAMP(6)": KeyType("timestamp", 6),
    "TIMESTAMP(3) WITH LOCAL TIME ZONE": KeyType("timestamp_ltz", 3),
    "BYTES": None, "VARBINARY(10)": None, "BINARY(4)": None, "ARRAY<INT>": None, "MAP<STRING, INT>": None,
}


@pytest.mark.parametrize("spelling,expected", list(EXPECTED.items()))
def test_key_type_of_spelling(spelling: str, expected: KeyType | None) -> None:
    assert key_type_of_spelling(spelling) == expected


@pytest.mark.parametrize("spelling", [s for s in EXPECTED if "<" not in s])
def test_indexable_exactly_where_pypaimon_has_a_key_serializer(spelling: str) -> None:
    paimon_type = DataTypeParser.parse_data_type(spelling)
    try:
        create_serializer(paimon_type)
        pypaimon_indexes = True
    except ValueError:
        pypaimon_indexes = False
    assert (key_type_of_spelling(str(paimon_type)) is not None) == pypaimon_indexes
