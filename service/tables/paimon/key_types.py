"""Paimon column types → the index_format KeyType a bitmap index holds them as (None: not indexable).

Works on Paimon's type spelling ('VARCHAR(20) NOT NULL', 'TIMESTAMP(3) WITH LOCAL TIME ZONE',
'DECIMAL(10, 2)'), the form pypaimon's AtomicType carries, so this module needs no pypaimon import.
"""
from __future__ import annotations

import re

from index_format.errors import UnsupportedTypeError
from index_format.types import KeyType

__all__ = ["key_type_of_spelling"]

_SPELLING = re.compile(
    r"^\s*([A-Z_]+(?: [A-Z_]+)*?)\s*(?:\(\s*(\d+)\s*(?:,\s*(\d+)\s*)?\))?"
    r"\s*(WITH LOCAL TIME ZONE)?\s*(?:NOT NULL)?\s*$")

# Paimon type name → bitmap key type name (spec §3). BYTES/BINARY/VARBINARY, VARIANT, BLOB and the
# nested types (ARRAY, MAP, ROW, MULTISET) have no key serializer in Paimon's bitmap index.
_NAMES = {
    "STRING": "string", "VARCHAR": "string", "CHAR": "string", "CHARACTER": "string",
    "BOOLEAN": "boolean",
    "TINYINT": "tinyint", "SMALLINT": "smallint", "INT": "int", "INTEGER": "int", "BIGINT": "bigint",
    "FLOAT": "float", "DOUBLE": "double", "DOUBLE PRECISION": "double",
    "DECIMAL": "decimal", "NUMERIC": "decimal", "DEC": "decimal",
    "DATE": "date", "TIME": "time", "TIME WITHOUT TIME ZONE": "time",
    "TIMESTAMP": "timestamp", "TIMESTAMP WITHOUT TIME ZONE": "timestamp",
    "TIMESTAMP_LTZ": "timestamp_ltz",
}
_DEFAULT_PRECISION = {"time": 0, "timestamp": 6, "timestamp_ltz": 6}  # Paimon's defaults


def key_type_of_spelling(spelling: str) -> KeyType | None:
    """The KeyType for a Paimon atomic type spelling, or None if a bitmap index cannot hold it.

    Nullability ('NOT NULL') does not matter to the key type. Precision and scale are kept for
    DECIMAL, TIME and TIMESTAMP, since they decide the key encoding (spec §3).
    """
    m = _SPELLING.match(spelling.upper())
    if m is None:
        return None
    word, p, s, ltz = m.group(1), m.group(2), m.group(3), m.group(4)
    name = _NAMES.get(word)
    if name is None:
        return None
    if ltz:
        if name != "timestamp":
            return None
        name = "timestamp_ltz"
    try:
        if name == "decimal":
            return KeyType("decimal", int(p) if p else 10, int(s) if s else 0)
        if s is not None:
            return None
        if name in _DEFAULT_PRECISION:
            return KeyType(name, int(p) if p else _DEFAULT_PRECISION[name])
        return KeyType(name)
    except UnsupportedTypeError:
        return None
