"""Keys in Java's internal form, as Paimon's file-index writers and readers see them.

Paimon hands its index writers `InternalRow` values: BinaryString, Integer for INT/DATE (days)/TIME (millis),
Long for BIGINT and TIMESTAMP (epoch millis if p <= 3, else micros), Float/Double, Boolean. Here:

- STRING → the UTF-8 bytes; integer types, DATE, TIME, TIMESTAMP, DECIMAL (unscaled) → int; BOOLEAN → bool;
- FLOAT / DOUBLE → the IEEE bits as a signed int (Float.floatToIntBits / Double.doubleToLongBits: NaN
  canonical), because Java's equals, hashCode and compareTo all work on the bits (-0.0 ≠ 0.0, NaN = NaN),
  which Python floats do not.

`java_value` takes canonical values (index_format.literals.coerce_literal's output); `java_column` takes a
pyarrow array or a Python sequence of them.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import pyarrow as pa

from index_format.errors import UnsupportedTypeError
from index_format.layout import BE_F32, BE_F64, BE_I32, BE_I64
from index_format.range_bitmap.range_keys import key_int
from index_format.types import KeyType, parse_type

__all__ = ["FLOAT_NAN_BITS", "DOUBLE_NAN_BITS", "float_of_bits", "java_column", "java_order", "java_value",
           "paimon_type", "paimon_spelling"]

FLOAT_NAN_BITS = 0x7FC00000
DOUBLE_NAN_BITS = 0x7FF8000000000000


def paimon_type(text: str) -> KeyType:
    """A column type spelled as Paimon prints it (`STRING`, `TIMESTAMP(3)`, `INT`) → KeyType."""
    try:
        return parse_type(text.strip().lower())
    except UnsupportedTypeError:
        raise
    except ValueError as exc:
        raise UnsupportedTypeError(f"unknown column type {text!r}: {exc}") from None


def paimon_spelling(kt: KeyType) -> str:
    """KeyType → Paimon's spelling (`TIMESTAMP(3)`, `DECIMAL(10,2)`, `STRING`)."""
    return kt.spelling.upper()


def _float_bits(value: float) -> int:
    if math.isnan(value):
        return FLOAT_NAN_BITS
    bits: int = BE_I32.unpack(BE_F32.pack(value))[0]
    return bits


def _double_bits(value: float) -> int:
    if math.isnan(value):
        return DOUBLE_NAN_BITS
    bits: int = BE_I64.unpack(BE_F64.pack(value))[0]
    return bits


def float_of_bits(kt: KeyType, bits: int) -> float:
    """The float a FLOAT/DOUBLE key's bits stand for (for printing)."""
    value: float = (BE_F32.unpack(BE_I32.pack(bits)) if kt.name == "float" else BE_F64.unpack(BE_I64.pack(bits)))[0]
    return value


def java_value(kt: KeyType, value: object) -> object:
    """One canonical value → its Java internal form (None stays None)."""
    if value is None:
        return None
    name = kt.name
    if name == "string":
        if isinstance(value, str):
            return value.encode("utf-8")
        return bytes(value)  # type: ignore[call-overload]  # a string key's other form: bytes-like
    if name == "boolean":
        return bool(value)
    if name == "float":
        return _float_bits(float(value))  # type: ignore[arg-type]  # a float key's canonical value
    if name == "double":
        return _double_bits(float(value))  # type: ignore[arg-type]  # a double key's canonical value
    return key_int(kt, value)


def java_column(kt: KeyType, values: object) -> list[object]:
    """Every row's Java internal form (None for NULL) from a pyarrow (chunked) array or a sequence."""
    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        values = values.to_pylist()
    rows = values if isinstance(values, Sequence) else list(values)  # type: ignore[call-overload]  # an iterable
    return [java_value(kt, v) for v in rows]


def java_order(kt: KeyType, jv: object) -> object:
    """Sort key giving Java's compareTo order on internal values: unsigned bytes then length for strings
    (Python bytes order), Float/Double.compare (total order on bits) for floats, false < true."""
    if kt.name in ("float", "double"):
        bits = jv
        mask = 0x7FFFFFFF if kt.name == "float" else 0x7FFFFFFFFFFFFFFF
        return bits ^ mask if bits < 0 else bits  # type: ignore[operator]  # a float's internal form: its bits (int)
    return jv
