"""Column types the bitmap index can hold (spec §3) and their spellings / Arrow mappings.

Imports only pyarrow and index_format.errors.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import pyarrow as pa

from index_format.errors import UnsupportedTypeError

NAMES = (
    "string", "boolean", "tinyint", "smallint", "int", "bigint", "float", "double",
    "decimal", "date", "time", "timestamp", "timestamp_ltz",
)
INTEGER_NAMES = ("tinyint", "smallint", "int", "bigint")
FLOAT_NAMES = ("float", "double")

_ALIASES = {
    "string": "string", "varchar": "string", "char": "string", "text": "string", "str": "string",
    "boolean": "boolean", "bool": "boolean",
    "tinyint": "tinyint", "byte": "tinyint", "int8": "tinyint",
    "smallint": "smallint", "short": "smallint", "int16": "smallint",
    "int": "int", "integer": "int", "int32": "int",
    "bigint": "bigint", "long": "bigint", "int64": "bigint",
    "float": "float", "real": "float", "float32": "float",
    "double": "double", "float64": "double",
    "decimal": "decimal", "numeric": "decimal", "dec": "decimal",
    "date": "date",
    "time": "time",
    "timestamp": "timestamp", "timestamp_ntz": "timestamp", "datetime": "timestamp",
    "timestamp_ltz": "timestamp_ltz", "timestamptz": "timestamp_ltz",
    "timestamp with local time zone": "timestamp_ltz",
    "timestamp with time zone": "timestamp_ltz",
}

_SPELLING = re.compile(r"^\s*([a-z_ ]+?)\s*(?:\(\s*(\d+)\s*(?:,\s*(\d+)\s*)?\))?\s*$")


@dataclass(frozen=True, slots=True)
class KeyType:
    """One indexable column type; `precision`/`scale` only where the type has them."""

    name: str
    precision: int | None = None
    scale: int | None = None

    def __post_init__(self) -> None:
        if self.name not in NAMES:
            raise UnsupportedTypeError(f"type {self.name!r} cannot be indexed by a bitmap index")

    @property
    def spelling(self) -> str:
        if self.name == "decimal":
            return f"decimal({self.decimal_precision},{self.decimal_scale})"
        if self.name in ("timestamp", "timestamp_ltz", "time"):
            return f"{self.name}({self.time_precision})"
        return self.name

    @property
    def decimal_precision(self) -> int:
        return 10 if self.precision is None else self.precision

    @property
    def decimal_scale(self) -> int:
        return 0 if self.scale is None else self.scale

    @property
    def time_precision(self) -> int:
        # Paimon defaults: TIMESTAMP → 6, TIME → 0
        if self.precision is not None:
            return self.precision
        return 0 if self.name == "time" else 6

    @property
    def is_string(self) -> bool:
        return self.name == "string"

    @property
    def byte_order_is_logical(self) -> bool:
        """True where serialized byte order equals logical order (spec §2.7): strings, booleans."""
        return self.name in ("string", "boolean")

    def __str__(self) -> str:
        return self.spelling


def parse_type(text: str) -> KeyType:
    """Parse a type spelling ('int', 'decimal(10,2)', 'timestamp(3)', 'varchar(20)', ...)."""
    if isinstance(text, KeyType):
        return text
    m = _SPELLING.match(str(text).lower())
    if not m:
        raise UnsupportedTypeError(f"cannot parse column type {text!r}")
    word, p, s = m.group(1).strip(), m.group(2), m.group(3)
    word = re.sub(r"\s+", " ", word)
    name = _ALIASES.get(word)
    if name is None:
        raise UnsupportedTypeError(f"type {text!r} cannot be indexed by a bitmap index (spec §3)")
    if name == "decimal":
        precision = int(p) if p is not None else 10
        scale = int(s) if s is not None else 0
        if not 1 <= precision <= 38 or not 0 <= scale <= precision:
            raise UnsupportedTypeError(f"invalid decimal precision/scale in {text!r}")
        return KeyType("decimal", precision, scale)
    if s is not None:
        raise UnsupportedTypeError(f"type {text!r} takes at most one parameter")
    if name in ("timestamp", "timestamp_ltz", "time"):
        precision = int(p) if p is not None else (0 if name == "time" else 6)
        if not 0 <= precision <= 9:
            raise UnsupportedTypeError(f"invalid precision in {text!r}")
        return KeyType(name, precision)
    if p is not None and name != "string":
        raise UnsupportedTypeError(f"type {text!r} takes no parameter")
    return KeyType(name)


_UNIT_PRECISION = {"s": 0, "ms": 3, "us": 6, "ns": 9}


def from_arrow(t: pa.DataType) -> KeyType:
    """Map an Arrow type to the key type it is indexed as; anything else → UnsupportedTypeError."""
    if pa.types.is_dictionary(t):
        return from_arrow(t.value_type)
    if pa.types.is_string(t) or pa.types.is_large_string(t) or getattr(pa.types, "is_string_view", lambda _: False)(t):
        return KeyType("string")
    if pa.types.is_boolean(t):
        return KeyType("boolean")
    for test, name in ((pa.types.is_int8, "tinyint"), (pa.types.is_int16, "smallint"),
                       (pa.types.is_int32, "int"), (pa.types.is_int64, "bigint"),
                       (pa.types.is_float32, "float"), (pa.types.is_float64, "double")):
        if test(t):
            return KeyType(name)
    if pa.types.is_decimal(t):
        return KeyType("decimal", t.precision, t.scale)
    if pa.types.is_date(t):
        return KeyType("date")
    if pa.types.is_time(t):
        return KeyType("time", min(_UNIT_PRECISION[t.unit], 3))
    if pa.types.is_timestamp(t):
        return KeyType("timestamp_ltz" if t.tz else "timestamp", _UNIT_PRECISION[t.unit])
    raise UnsupportedTypeError(f"Arrow type {t} cannot be indexed by a bitmap index (spec §3)")
