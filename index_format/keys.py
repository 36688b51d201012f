"""Key serialization (spec §3) and Java logical ordering per key type.

Imports numpy/pyarrow and index_format.{types,layout,errors} only; never the reader or writer.
"""
from __future__ import annotations

import datetime as dt
import decimal
from collections.abc import Sequence

import numpy as np

from index_format.errors import CorruptFileError, UnsupportedTypeError
from index_format.layout import LE_F32, LE_F64, LE_I16, LE_I32, LE_I64, LE_I8, LE_U32, LE_U64, read_varint, varint
from index_format.types import KeyType

EPOCH_DATE = dt.date(1970, 1, 1)
EPOCH = dt.datetime(1970, 1, 1)
UTC = dt.timezone.utc
EPOCH_UTC = dt.datetime(1970, 1, 1, tzinfo=UTC)

INT_STRUCTS = {"tinyint": LE_I8, "smallint": LE_I16, "int": LE_I32, "bigint": LE_I64}
INT_BOUNDS = {"tinyint": (-(1 << 7), (1 << 7) - 1), "smallint": (-(1 << 15), (1 << 15) - 1),
               "int": (-(1 << 31), (1 << 31) - 1), "bigint": (-(1 << 63), (1 << 63) - 1)}
# spec §3: canonical NaN bit patterns
NAN32_BITS = 0x7FC00000
NAN64_BITS = 0x7FF8000000000000
_NAN32 = LE_U32.pack(NAN32_BITS)
_NAN64 = LE_U64.pack(NAN64_BITS)
FIXED_WIDTH = {"boolean": 1, "tinyint": 1, "smallint": 2, "int": 4, "bigint": 8, "float": 4,
               "double": 8, "date": 4, "time": 4}
NUMPY_DTYPE = {"tinyint": "<i1", "smallint": "<i2", "int": "<i4", "bigint": "<i8", "date": "<i4",
                "time": "<i4"}


# ---------------------------------------------------------------- scalar helpers

def _float_order(bits: int, width: int) -> int:
    """Map IEEE bits (canonical NaN) to an int whose order is Java Float/Double.compare (spec §3)."""
    sign = 1 << (width - 1)
    if bits & sign:
        return -((bits ^ sign) + 1)  # negatives (incl. -0.0 → -1) below all non-negatives
    return bits


def decimal_unscaled(kt: KeyType, value: decimal.Decimal) -> int:
    return int(value.scaleb(kt.decimal_scale).to_integral_value(rounding=decimal.ROUND_DOWN))


def _timestamp_parts(kt: KeyType, value: object) -> tuple[int, int]:
    """(epoch millis, nano of milli) of a canonical timestamp value (naive = UTC wall clock)."""
    if isinstance(value, int) and not isinstance(value, bool):
        millis, nanos = divmod(value, 1_000_000)
    else:
        assert isinstance(value, dt.datetime)
        if value.tzinfo is not None:
            delta = value - EPOCH_UTC
        else:
            delta = value - EPOCH
        micros = (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
        millis, sub = divmod(micros, 1000)
        nanos = sub * 1000 + int(getattr(value, "nanosecond", 0))
    if kt.time_precision <= 3:
        nanos = 0
    return millis, nanos


def _date_days(value: dt.date) -> int:
    return (value - EPOCH_DATE).days


MILLIS_PER_DAY = 86_400_000
# What sort_key gives: UTF-8 bytes for strings, an int for every other type (one key type never mixes them).
SortKey = bytes | int


def time_of_millis(ms: int) -> dt.time:
    """TIME as Paimon stores it (milliseconds of the day, 0 <= ms < MILLIS_PER_DAY) → datetime.time."""
    h, rem = divmod(ms, 3_600_000)
    m, rem = divmod(rem, 60_000)
    sec, ms = divmod(rem, 1000)
    return dt.time(h, m, sec, ms * 1000)


def _time_millis(value: dt.time) -> int:
    return ((value.hour * 60 + value.minute) * 60 + value.second) * 1000 + value.microsecond // 1000


def serialize_key(kt: KeyType, value: object) -> bytes:
    """Serialized key bytes of a canonical value (spec §3)."""
    name = kt.name
    if name == "string":
        return value if isinstance(value, bytes) else str(value).encode("utf-8")
    if name == "boolean":
        return b"\x01" if value else b"\x00"
    s = INT_STRUCTS.get(name)
    if s is not None:
        return s.pack(value)
    if name == "double":
        v = float(value)  # type: ignore[arg-type]  # a double key's canonical value
        return _NAN64 if v != v else LE_F64.pack(v)
    if name == "float":
        v = float(value)  # type: ignore[arg-type]  # a float key's canonical value
        return _NAN32 if v != v else LE_F32.pack(v)
    if name == "decimal":
        unscaled = decimal_unscaled(kt, decimal.Decimal(value))  # type: ignore[arg-type]  # a canonical decimal
        if kt.decimal_precision <= 18:
            return LE_I64.pack(unscaled)
        # spec §3: Java BigInteger.toByteArray, minimal big-endian two's complement
        m = unscaled if unscaled >= 0 else ~unscaled
        return unscaled.to_bytes(m.bit_length() // 8 + 1, "big", signed=True)
    if name == "date":
        days = value if isinstance(value, int) else _date_days(value)  # type: ignore[arg-type]  # else a date
        return LE_I32.pack(days)
    if name == "time":
        millis = value if isinstance(value, int) else _time_millis(value)  # type: ignore[arg-type]  # else a time
        return LE_I32.pack(millis)
    if name in ("timestamp", "timestamp_ltz"):
        millis, nanos = _timestamp_parts(kt, value)
        if kt.time_precision <= 3:
            return LE_I64.pack(millis)
        return LE_I64.pack(millis) + varint(nanos)
    raise UnsupportedTypeError(f"cannot serialize keys of type {kt.spelling}")


def _bad(kt: KeyType, data: bytes | memoryview, why: str) -> CorruptFileError:
    return CorruptFileError(f"bad {kt.spelling} key {bytes(data).hex()}: {why}", block="key")


def deserialize_key(kt: KeyType, data: bytes | memoryview) -> object:
    """Canonical value of serialized key bytes; wrong widths → CorruptFileError."""
    name = kt.name
    if name == "string":
        try:
            return bytes(data).decode("utf-8")
        except UnicodeDecodeError:
            # Keys are UTF-8 by spec; keep undecodable bytes visible rather than failing a scan.
            return bytes(data).decode("utf-8", "surrogateescape")
    width = FIXED_WIDTH.get(name)
    if width is not None and len(data) != width:
        raise _bad(kt, data, f"expected {width} bytes")
    if name == "boolean":
        return data[0] == 1
    s = INT_STRUCTS.get(name)
    if s is not None:
        return s.unpack(data)[0]
    if name == "double":
        return LE_F64.unpack(data)[0]
    if name == "float":
        return LE_F32.unpack(data)[0]
    if name == "decimal":
        if kt.decimal_precision <= 18:
            if len(data) != 8:
                raise _bad(kt, data, "expected 8 bytes")
            unscaled = LE_I64.unpack(data)[0]
        else:
            if len(data) == 0:
                raise _bad(kt, data, "empty decimal")
            unscaled = int.from_bytes(data, "big", signed=True)
        return decimal.Decimal(unscaled).scaleb(-kt.decimal_scale)
    if name == "date":
        return EPOCH_DATE + dt.timedelta(days=LE_I32.unpack(data)[0])
    if name == "time":
        ms = LE_I32.unpack(data)[0]
        if not 0 <= ms < MILLIS_PER_DAY:
            raise _bad(kt, data, "time of day out of range")
        return time_of_millis(ms)
    if name in ("timestamp", "timestamp_ltz"):
        millis, nanos = _timestamp_key_parts(kt, data)
        if nanos % 1000:
            return millis * 1_000_000 + nanos  # not representable by datetime: epoch nanos
        base = EPOCH_UTC if name == "timestamp_ltz" else EPOCH
        try:
            return base + dt.timedelta(milliseconds=millis, microseconds=nanos // 1000)
        except OverflowError:
            return millis * 1_000_000 + nanos
    raise UnsupportedTypeError(f"cannot deserialize keys of type {kt.spelling}")


def _timestamp_key_parts(kt: KeyType, data: bytes | memoryview) -> tuple[int, int]:
    if kt.time_precision <= 3:
        if len(data) != 8:
            raise _bad(kt, data, "expected 8 bytes")
        return LE_I64.unpack(data)[0], 0
    if len(data) < 9:
        raise _bad(kt, data, "expected 8 bytes + varint")
    nanos, end = read_varint(data, 8, limit=999_999)
    if end != len(data):
        raise _bad(kt, data, "trailing bytes")
    return LE_I64.unpack(data[:8])[0], nanos


def sort_key(kt: KeyType, value: object) -> SortKey:
    """A Python-comparable stand-in for a canonical value in Java logical order (spec §3).

    Strings → UTF-8 bytes; everything else → int (floats via Double.compare bit mapping,
    decimals as unscaled, dates as days, times as millis, timestamps as epoch nanos).
    """
    name = kt.name
    if name == "string":
        return value if isinstance(value, bytes) else str(value).encode("utf-8")
    if name == "boolean":
        return 1 if value else 0
    if name in INT_STRUCTS:
        as_int: int = int(value)  # type: ignore[call-overload]  # an integer key's canonical value
        return as_int
    if name == "double":
        v = float(value)  # type: ignore[arg-type]  # a double key's canonical value
        return _float_order(NAN64_BITS if v != v else LE_U64.unpack(LE_F64.pack(v))[0], 64)
    if name == "float":
        v = float(value)  # type: ignore[arg-type]  # a float key's canonical value
        return _float_order(NAN32_BITS if v != v else LE_U32.unpack(LE_F32.pack(v))[0], 32)
    if name == "decimal":
        return decimal_unscaled(kt, decimal.Decimal(value))  # type: ignore[arg-type]  # a decimal key's canonical value
    if name == "date":
        return value if isinstance(value, int) else _date_days(value)  # type: ignore[arg-type]  # else a date
    if name == "time":
        return value if isinstance(value, int) else _time_millis(value)  # type: ignore[arg-type]  # else a time
    millis, nanos = _timestamp_parts(kt, value)
    return millis * 1_000_000 + nanos


def sort_key_of_bytes(kt: KeyType, data: bytes) -> SortKey:
    """sort_key(kt, deserialize_key(kt, data)) without building the value (hot in the reader)."""
    name = kt.name
    if name == "string":
        return data
    if name in ("tinyint", "smallint", "int", "bigint", "date", "time"):
        width = FIXED_WIDTH[name]
        if len(data) != width:
            raise _bad(kt, data, f"expected {width} bytes")
        return int.from_bytes(data, "little", signed=True)
    if name == "boolean":
        if len(data) != 1:
            raise _bad(kt, data, "expected 1 byte")
        return 1 if data[0] == 1 else 0
    if name == "double":
        if len(data) != 8:
            raise _bad(kt, data, "expected 8 bytes")
        v = LE_F64.unpack(data)[0]
        return _float_order(NAN64_BITS if v != v else LE_U64.unpack(data)[0], 64)
    if name == "float":
        if len(data) != 4:
            raise _bad(kt, data, "expected 4 bytes")
        v = LE_F32.unpack(data)[0]
        return _float_order(NAN32_BITS if v != v else LE_U32.unpack(data)[0], 32)
    if name in ("timestamp", "timestamp_ltz"):
        millis, nanos = _timestamp_key_parts(kt, data)
        return millis * 1_000_000 + nanos
    return sort_key(kt, deserialize_key(kt, data))


def sort_keys_of_bytes(kt: KeyType, keys: Sequence[bytes]) -> list[SortKey]:
    """sort_key_of_bytes over many keys; vectorized for fixed-width integer types."""
    dtype = NUMPY_DTYPE.get(kt.name)
    if dtype is not None and keys:
        width = FIXED_WIDTH[kt.name]
        joined = b"".join(keys)
        if len(joined) == width * len(keys):
            ints: list[SortKey] = np.frombuffer(joined, dtype=dtype).tolist()
            return ints
    return [sort_key_of_bytes(kt, k) for k in keys]


def prefix_upper_bound(prefix: bytes) -> bytes | None:
    """Exclusive upper bound of the byte strings starting with `prefix` (drop trailing 0xFF, increment the
    last byte; spec §2.10); None when every string from `prefix` on starts with it."""
    trimmed = prefix.rstrip(b"\xff")
    if not trimmed:
        return None
    return trimmed[:-1] + bytes((trimmed[-1] + 1,))
