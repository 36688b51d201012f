"""Key serialization (spec §3), Java logical ordering, literal coercion and JSON form per key type.

Imports numpy/pyarrow and index_format.{types,layout,errors} only; never the reader or writer.
"""
from __future__ import annotations

import datetime as dt
import decimal
import math
import struct
from collections.abc import Callable, Sequence
from typing import NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from index_format.errors import BindError, CorruptFileError, UnsupportedTypeError
from index_format.layout import read_varint, varint
from index_format.types import KeyType

EPOCH_DATE = dt.date(1970, 1, 1)
EPOCH = dt.datetime(1970, 1, 1)
UTC = dt.timezone.utc
EPOCH_UTC = dt.datetime(1970, 1, 1, tzinfo=UTC)

_INT_STRUCTS = {"tinyint": struct.Struct("<b"), "smallint": struct.Struct("<h"),
                "int": struct.Struct("<i"), "bigint": struct.Struct("<q")}
_INT_BOUNDS = {"tinyint": (-(1 << 7), (1 << 7) - 1), "smallint": (-(1 << 15), (1 << 15) - 1),
               "int": (-(1 << 31), (1 << 31) - 1), "bigint": (-(1 << 63), (1 << 63) - 1)}
_I32 = struct.Struct("<i")
_I64 = struct.Struct("<q")
_F32 = struct.Struct("<f")
_F64 = struct.Struct("<d")
_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")
# spec §3: canonical NaN bit patterns
NAN32_BITS = 0x7FC00000
NAN64_BITS = 0x7FF8000000000000
_NAN32 = _U32.pack(NAN32_BITS)
_NAN64 = _U64.pack(NAN64_BITS)
FIXED_WIDTH = {"boolean": 1, "tinyint": 1, "smallint": 2, "int": 4, "bigint": 8, "float": 4,
               "double": 8, "date": 4, "time": 4}
_NUMPY_DTYPE = {"tinyint": "<i1", "smallint": "<i2", "int": "<i4", "bigint": "<i8", "date": "<i4",
                "time": "<i4"}


# ---------------------------------------------------------------- scalar helpers

def _float_order(bits: int, width: int) -> int:
    """Map IEEE bits (canonical NaN) to an int whose order is Java Float/Double.compare (spec §3)."""
    sign = 1 << (width - 1)
    if bits & sign:
        return -((bits ^ sign) + 1)  # negatives (incl. -0.0 → -1) below all non-negatives
    return bits


def _decimal_unscaled(kt: KeyType, value: decimal.Decimal) -> int:
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


def _time_millis(value: dt.time) -> int:
    return ((value.hour * 60 + value.minute) * 60 + value.second) * 1000 + value.microsecond // 1000


def serialize_key(kt: KeyType, value: object) -> bytes:
    """Serialized key bytes of a canonical value (spec §3)."""
    name = kt.name
    if name == "string":
        return value if isinstance(value, bytes) else str(value).encode("utf-8")
    if name == "boolean":
        return b"\x01" if value else b"\x00"
    s = _INT_STRUCTS.get(name)
    if s is not None:
        return s.pack(value)
    if name == "double":
        v = float(value)  # type: ignore[arg-type]
        return _NAN64 if v != v else _F64.pack(v)
    if name == "float":
        v = float(value)  # type: ignore[arg-type]
        return _NAN32 if v != v else _F32.pack(v)
    if name == "decimal":
        unscaled = _decimal_unscaled(kt, decimal.Decimal(value))  # type: ignore[arg-type]
        if kt.decimal_precision <= 18:
            return _I64.pack(unscaled)
        # spec §3: Java BigInteger.toByteArray, minimal big-endian two's complement
        m = unscaled if unscaled >= 0 else ~unscaled
        return unscaled.to_bytes(m.bit_length() // 8 + 1, "big", signed=True)
    if name == "date":
        return _I32.pack(value if isinstance(value, int) else _date_days(value))  # type: ignore[arg-type]
    if name == "time":
        return _I32.pack(value if isinstance(value, int) else _time_millis(value))  # type: ignore[arg-type]
    if name in ("timestamp", "timestamp_ltz"):
        millis, nanos = _timestamp_parts(kt, value)
        if kt.time_precision <= 3:
            return _I64.pack(millis)
        return _I64.pack(millis) + varint(nanos)
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
    s = _INT_STRUCTS.get(name)
    if s is not None:
        return s.unpack(data)[0]
    if name == "double":
        return _F64.unpack(data)[0]
    if name == "float":
        return _F32.unpack(data)[0]
    if name == "decimal":
        if kt.decimal_precision <= 18:
            if len(data) != 8:
                raise _bad(kt, data, "expected 8 bytes")
            unscaled = _I64.unpack(data)[0]
        else:
            if len(data) == 0:
                raise _bad(kt, data, "empty decimal")
            unscaled = int.from_bytes(data, "big", signed=True)
        return decimal.Decimal(unscaled).scaleb(-kt.decimal_scale)
    if name == "date":
        return EPOCH_DATE + dt.timedelta(days=_I32.unpack(data)[0])
    if name == "time":
        ms = _I32.unpack(data)[0]
        if not 0 <= ms < 86_400_000:
            raise _bad(kt, data, "time of day out of range")
        h, rem = divmod(ms, 3_600_000)
        m, rem = divmod(rem, 60_000)
        sec, ms = divmod(rem, 1000)
        return dt.time(h, m, sec, ms * 1000)
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
        return _I64.unpack(data)[0], 0
    if len(data) < 9:
        raise _bad(kt, data, "expected 8 bytes + varint")
    nanos, end = read_varint(data, 8, limit=999_999)
    if end != len(data):
        raise _bad(kt, data, "trailing bytes")
    return _I64.unpack(data[:8])[0], nanos


def sort_key(kt: KeyType, value: object) -> object:
    """A Python-comparable stand-in for a canonical value in Java logical order (spec §3).

    Strings → UTF-8 bytes; everything else → int (floats via Double.compare bit mapping,
    decimals as unscaled, dates as days, times as millis, timestamps as epoch nanos).
    """
    name = kt.name
    if name == "string":
        return value if isinstance(value, bytes) else str(value).encode("utf-8")
    if name == "boolean":
        return 1 if value else 0
    if name in _INT_STRUCTS:
        return int(value)  # type: ignore[call-overload]
    if name == "double":
        v = float(value)  # type: ignore[arg-type]
        return _float_order(NAN64_BITS if v != v else _U64.unpack(_F64.pack(v))[0], 64)
    if name == "float":
        v = float(value)  # type: ignore[arg-type]
        return _float_order(NAN32_BITS if v != v else _U32.unpack(_F32.pack(v))[0], 32)
    if name == "decimal":
        return _decimal_unscaled(kt, decimal.Decimal(value))  # type: ignore[arg-type]
    if name == "date":
        return value if isinstance(value, int) else _date_days(value)  # type: ignore[arg-type]
    if name == "time":
        return value if isinstance(value, int) else _time_millis(value)  # type: ignore[arg-type]
    millis, nanos = _timestamp_parts(kt, value)
    return millis * 1_000_000 + nanos


def sort_key_of_bytes(kt: KeyType, data: bytes) -> object:
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
        v = _F64.unpack(data)[0]
        return _float_order(NAN64_BITS if v != v else _U64.unpack(data)[0], 64)
    if name == "float":
        if len(data) != 4:
            raise _bad(kt, data, "expected 4 bytes")
        v = _F32.unpack(data)[0]
        return _float_order(NAN32_BITS if v != v else _U32.unpack(data)[0], 32)
    if name in ("timestamp", "timestamp_ltz"):
        millis, nanos = _timestamp_key_parts(kt, data)
        return millis * 1_000_000 + nanos
    return sort_key(kt, deserialize_key(kt, data))


def sort_keys_of_bytes(kt: KeyType, keys: Sequence[bytes]) -> list:
    """sort_key_of_bytes over many keys; vectorized for fixed-width integer types."""
    dtype = _NUMPY_DTYPE.get(kt.name)
    if dtype is not None and keys:
        width = FIXED_WIDTH[kt.name]
        joined = b"".join(keys)
        if len(joined) == width * len(keys):
            return np.frombuffer(joined, dtype=dtype).tolist()
    return [sort_key_of_bytes(kt, k) for k in keys]


# ---------------------------------------------------------------- literal coercion

def _bind(kt: KeyType, value: object, why: str) -> BindError:
    return BindError(f"literal {value!r} does not fit column type {kt.spelling}: {why}")


_TRUE = {"true", "t", "1", "yes", "y"}
_FALSE = {"false", "f", "0", "no", "n"}
_FLOAT_WORDS = {"nan": math.nan, "+nan": math.nan, "-nan": math.nan, "infinity": math.inf,
                "+infinity": math.inf, "inf": math.inf, "+inf": math.inf,
                "-infinity": -math.inf, "-inf": -math.inf}


def coerce_literal(kt: KeyType, value: object) -> object:
    """Turn a JSON/SQL literal into the canonical value of `kt`; BindError if it cannot fit."""
    if value is None:
        return None
    name = kt.name
    if name == "string":
        if isinstance(value, str):
            return value
        if isinstance(value, bytes):
            try:
                return value.decode("utf-8")
            except UnicodeDecodeError:
                raise _bind(kt, value, "not UTF-8") from None
        raise _bind(kt, value, "expected a string")
    if name == "boolean":
        if isinstance(value, bool):
            return value
        if isinstance(value, int) and value in (0, 1):
            return bool(value)
        if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
            return value.strip().lower() in _TRUE
        raise _bind(kt, value, "expected true or false")
    if name in _INT_STRUCTS:
        return _coerce_int(kt, value)
    if name in ("float", "double"):
        return _coerce_float(kt, value)
    if name == "decimal":
        return _coerce_decimal(kt, value)
    if name == "date":
        return _coerce_date(kt, value)
    if name == "time":
        return _coerce_time(kt, value)
    return _coerce_timestamp(kt, value)


def _coerce_int(kt: KeyType, value: object) -> int:
    if isinstance(value, bool):
        raise _bind(kt, value, "boolean is not an integer")
    if isinstance(value, (int, np.integer)):
        out = int(value)
    elif isinstance(value, (float, np.floating)):
        if not math.isfinite(value) or value != int(value):
            raise _bind(kt, value, "not an integral number")
        out = int(value)
    elif isinstance(value, decimal.Decimal):
        if not value.is_finite() or value != value.to_integral_value():
            raise _bind(kt, value, "not an integral number")
        out = int(value)
    elif isinstance(value, str):
        try:
            out = int(value.strip())
        except ValueError:
            try:
                d = decimal.Decimal(value.strip())
            except decimal.InvalidOperation:
                raise _bind(kt, value, "not a number") from None
            return _coerce_int(kt, d)
    else:
        raise _bind(kt, value, "expected an integer")
    lo, hi = _INT_BOUNDS[kt.name]
    if not lo <= out <= hi:
        raise _bind(kt, value, f"outside [{lo}, {hi}]")
    return out


def _coerce_float(kt: KeyType, value: object) -> float:
    if isinstance(value, bool):
        raise _bind(kt, value, "boolean is not a number")
    if isinstance(value, str):
        word = value.strip().lower()
        if word in _FLOAT_WORDS:
            out = _FLOAT_WORDS[word]
        else:
            try:
                out = float(word)
            except ValueError:
                raise _bind(kt, value, "not a number") from None
    elif isinstance(value, (int, float, decimal.Decimal, np.integer, np.floating)):
        try:
            out = float(value)
        except OverflowError:
            raise _bind(kt, value, "out of range") from None
    else:
        raise _bind(kt, value, "expected a number")
    if out != out:
        return math.nan
    if kt.name == "float" and math.isfinite(out):
        f32 = float(np.float32(out)) if abs(out) <= 3.4028234663852886e38 else math.inf
        if not math.isfinite(f32):
            raise _bind(kt, value, "outside the FLOAT range")
        out = f32
    return out


def _coerce_decimal(kt: KeyType, value: object) -> decimal.Decimal:
    if isinstance(value, bool):
        raise _bind(kt, value, "boolean is not a number")
    try:
        if isinstance(value, float):
            if not math.isfinite(value):
                raise _bind(kt, value, "not finite")
            d = decimal.Decimal(repr(value))
        elif isinstance(value, (int, decimal.Decimal, np.integer)):
            d = decimal.Decimal(int(value)) if isinstance(value, np.integer) else decimal.Decimal(value)
        elif isinstance(value, str):
            d = decimal.Decimal(value.strip())
        else:
            raise _bind(kt, value, "expected a decimal number")
    except decimal.InvalidOperation:
        raise _bind(kt, value, "not a number") from None
    if not d.is_finite():
        raise _bind(kt, value, "not finite")
    scale = kt.decimal_scale
    q = decimal.Decimal(1).scaleb(-scale)
    with decimal.localcontext() as ctx:
        ctx.prec = 80
        quantized = d.quantize(q)
        if quantized != d:
            raise _bind(kt, value, f"more than {scale} fractional digits")
        unscaled = int(quantized.scaleb(scale))
    if abs(unscaled) >= 10 ** kt.decimal_precision:
        raise _bind(kt, value, f"more than {kt.decimal_precision} digits")
    return quantized


def _coerce_date(kt: KeyType, value: object) -> dt.date:
    if isinstance(value, dt.datetime):
        if value.time() != dt.time(0) or value.tzinfo is not None:
            raise _bind(kt, value, "has a time of day")
        return value.date()
    if isinstance(value, dt.date):
        return value
    if isinstance(value, str):
        try:
            return dt.date.fromisoformat(value.strip())
        except ValueError:
            raise _bind(kt, value, "expected YYYY-MM-DD") from None
    if isinstance(value, int) and not isinstance(value, bool):
        try:
            return EPOCH_DATE + dt.timedelta(days=value)
        except OverflowError:
            raise _bind(kt, value, "out of range") from None
    raise _bind(kt, value, "expected a date")


def _coerce_time(kt: KeyType, value: object) -> dt.time:
    if isinstance(value, dt.time):
        out = value
    elif isinstance(value, str):
        try:
            out = dt.time.fromisoformat(value.strip())
        except ValueError:
            raise _bind(kt, value, "expected HH:MM:SS[.fff]") from None
    elif isinstance(value, int) and not isinstance(value, bool):
        if not 0 <= value < 86_400_000:
            raise _bind(kt, value, "milliseconds of day out of range")
        h, rem = divmod(value, 3_600_000)
        m, rem = divmod(rem, 60_000)
        s, ms = divmod(rem, 1000)
        return dt.time(h, m, s, ms * 1000)
    else:
        raise _bind(kt, value, "expected a time")
    if out.tzinfo is not None:
        raise _bind(kt, value, "time zones are not allowed")
    if out.microsecond % 1000:
        raise _bind(kt, value, "TIME keys hold milliseconds")
    return out


def _coerce_timestamp(kt: KeyType, value: object) -> object:
    ltz = kt.name == "timestamp_ltz"
    if isinstance(value, int) and not isinstance(value, bool):
        # epoch nanoseconds (contract: accepted for every precision, canonical only for p > 6)
        if value % 1000 == 0:
            base = EPOCH_UTC if ltz else EPOCH
            try:
                value = base + dt.timedelta(microseconds=value // 1000)
            except OverflowError:
                raise _bind(kt, value, "out of range") from None
        else:
            if kt.time_precision <= 6:
                raise _bind(kt, value, f"sub-microsecond value for {kt.spelling}")
            return value
    elif isinstance(value, str):
        text = value.strip()
        if text.endswith("Z"):
            text = text[:-1] + "+00:00"
        try:
            value = dt.datetime.fromisoformat(text)
        except ValueError:
            raise _bind(kt, value, "expected an ISO timestamp") from None
    elif isinstance(value, dt.date) and not isinstance(value, dt.datetime):
        value = dt.datetime(value.year, value.month, value.day)
    if not isinstance(value, dt.datetime):
        raise _bind(kt, value, "expected a timestamp")
    if ltz:
        if value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        value = value.astimezone(UTC)
    elif value.tzinfo is not None:
        value = value.astimezone(UTC).replace(tzinfo=None)
    return value


# ---------------------------------------------------------------- JSON form

def to_json(kt: KeyType, value: object) -> object:
    """JSON-able form of a canonical value (NaN/±Infinity as strings; ISO dates; decimal strings)."""
    if value is None:
        return None
    name = kt.name
    if name in ("float", "double"):
        v = float(value)  # type: ignore[arg-type]
        if v != v:
            return "NaN"
        if v == math.inf:
            return "Infinity"
        if v == -math.inf:
            return "-Infinity"
        return v
    if name == "decimal":
        return str(value)
    if name in ("date", "time"):
        return value.isoformat()  # type: ignore[attr-defined]
    if name in ("timestamp", "timestamp_ltz"):
        if isinstance(value, int):
            secs, nanos = divmod(value, 1_000_000_000)
            base = (EPOCH_UTC if name == "timestamp_ltz" else EPOCH) + dt.timedelta(seconds=secs)
            text = base.replace(microsecond=0).isoformat()
            tz = ""
            if name == "timestamp_ltz":
                text, tz = text[:-6], text[-6:]
            return f"{text}.{nanos:09d}{tz}"
        return value.isoformat()  # type: ignore[attr-defined]
    return value


# ---------------------------------------------------------------- vectorized encoding (writer)

def arrow_type(kt: KeyType) -> pa.DataType:
    """The Arrow type a column of `kt` is converted to before encoding."""
    name = kt.name
    simple = {"string": pa.string(), "boolean": pa.bool_(), "tinyint": pa.int8(),
              "smallint": pa.int16(), "int": pa.int32(), "bigint": pa.int64(),
              "float": pa.float32(), "double": pa.float64(), "date": pa.date32()}
    if name in simple:
        return simple[name]
    if name == "decimal":
        return pa.decimal128(kt.decimal_precision, kt.decimal_scale)
    if name == "time":
        return pa.time32("ms")
    unit = "ms" if kt.time_precision <= 3 else ("us" if kt.time_precision <= 6 else "ns")
    return pa.timestamp(unit, tz="UTC" if name == "timestamp_ltz" else None)


class EncodedKeys(NamedTuple):
    """Per-row logical sort representation plus a way to serialize chosen rows' keys.

    `sort_rep[i]` orders rows exactly like Java's comparator on their keys and is equal iff the
    serialized keys are equal; entries at null rows are arbitrary (see `valid`).
    """

    sort_rep: np.ndarray
    valid: np.ndarray | None          # bool mask, None when there are no nulls
    key_bytes: Callable[[np.ndarray], list[bytes]]   # row indices → serialized keys
    values: Callable[[np.ndarray], list[object]]     # row indices → canonical values
    # row indices → (concatenated key bytes as uint8, int64 offsets of len(rows) + 1); vectorized
    key_buffer: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]] | None = None

    def buffer(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if self.key_buffer is not None:
            return self.key_buffer(rows)
        keys = self.key_bytes(rows)
        offsets = np.zeros(len(keys) + 1, dtype=np.int64)
        if keys:
            np.cumsum(np.fromiter(map(len, keys), dtype=np.int64, count=len(keys)), out=offsets[1:])
        return np.frombuffer(b"".join(keys), dtype=np.uint8), offsets


def to_arrow_array(kt: KeyType, keys: object) -> pa.Array:
    """Accept an Arrow (chunked) array, numpy array or Python sequence of canonical values."""
    if isinstance(keys, pa.ChunkedArray):
        keys = keys.combine_chunks() if keys.num_chunks != 1 else keys.chunk(0)
    if isinstance(keys, pa.Array):
        if pa.types.is_dictionary(keys.type):
            keys = keys.dictionary_decode()
        return keys
    if isinstance(keys, np.ndarray) and keys.dtype.kind in "iufb" and kt.name not in ("string",):
        return pa.array(keys)
    target = arrow_type(kt)
    seq = list(keys)  # type: ignore[call-overload]
    if kt.name in ("float", "double"):
        return pa.array(seq, type=target, from_pandas=False)
    return pa.array(seq, type=target)


def _split_fixed(buf: bytes, width: int) -> list[bytes]:
    return [buf[i:i + width] for i in range(0, len(buf), width)]


def encode_arrow_keys(kt: KeyType, arr: object) -> EncodedKeys:
    """Vectorized: the logical sort representation of every row and serializers for chosen rows."""
    a = to_arrow_array(kt, arr)
    valid = None
    if a.null_count:
        valid = a.is_valid().to_numpy(zero_copy_only=False)
    name = kt.name
    if name == "string":
        return _encode_strings(kt, a, valid)
    if name == "boolean":
        rep = a.fill_null(False).to_numpy(zero_copy_only=False).astype(np.int8)
        return EncodedKeys(rep, valid, lambda rows: [b"\x01" if rep[i] else b"\x00" for i in rows],
                           lambda rows: [bool(rep[i]) for i in rows])
    if name in _INT_STRUCTS or name in ("date", "time"):
        return _encode_ints(kt, a, valid)
    if name in ("float", "double"):
        return _encode_floats(kt, a, valid)
    if name == "decimal":
        return _encode_decimals(kt, a, valid)
    if name in ("timestamp", "timestamp_ltz"):
        return _encode_timestamps(kt, a, valid)
    raise UnsupportedTypeError(f"cannot encode keys of type {kt.spelling}")


def _encode_strings(kt: KeyType, a: pa.Array, valid: np.ndarray | None) -> EncodedKeys:
    if not (pa.types.is_string(a.type) or pa.types.is_large_string(a.type)):
        if pa.types.is_binary(a.type) or pa.types.is_large_binary(a.type):
            a = a.cast(pa.string())
        else:
            raise UnsupportedTypeError(f"expected strings for {kt.spelling}, got {a.type}")
    enc = pc.dictionary_encode(a)
    dictionary = enc.dictionary
    # Arrow orders strings by unsigned bytes = UTF-8 code-point order = Java order (spec §3)
    order = pc.array_sort_indices(dictionary).to_numpy()
    # dense ranks in the narrowest dtype: the writer sorts 16-bit keys by radix (perf notes)
    rdt = np.uint16 if len(order) <= (1 << 16) else np.int32
    rank = np.empty(len(order), dtype=rdt)
    rank[order] = np.arange(len(order), dtype=rdt)
    ind = enc.indices if enc.indices.null_count == 0 else enc.indices.fill_null(0)
    idx = ind.to_numpy(zero_copy_only=False)
    rep = rank[idx] if len(rank) else np.zeros(len(idx), dtype=np.int64)
    binary = dictionary.cast(pa.large_binary() if pa.types.is_large_string(a.type) else pa.binary())

    def key_bytes(rows: np.ndarray) -> list[bytes]:
        return binary.take(pa.array(idx[rows])).to_pylist()

    def values(rows: np.ndarray) -> list[object]:
        return dictionary.take(pa.array(idx[rows])).to_pylist()

    def key_buffer(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        b = binary.take(pa.array(idx[rows]))
        _, obuf, dbuf = b.buffers()
        odt = np.int64 if pa.types.is_large_binary(b.type) else np.int32
        offsets = np.frombuffer(obuf, dtype=odt)[b.offset:b.offset + len(b) + 1].astype(np.int64)
        data = np.frombuffer(dbuf, dtype=np.uint8) if dbuf is not None else np.zeros(0, np.uint8)
        return data, offsets

    return EncodedKeys(rep, valid, key_bytes, values, key_buffer)


def _encode_ints(kt: KeyType, a: pa.Array, valid: np.ndarray | None) -> EncodedKeys:
    name = kt.name
    if name == "date":
        if not pa.types.is_date(a.type):
            raise UnsupportedTypeError(f"expected dates for {kt.spelling}, got {a.type}")
        raw = a.cast(pa.date32()).cast(pa.int32())
    elif name == "time":
        if not pa.types.is_time(a.type):
            raise UnsupportedTypeError(f"expected times for {kt.spelling}, got {a.type}")
        raw = a.cast(pa.time32("ms"), safe=False).cast(pa.int32())  # spec §3: millis of day
    else:
        if not pa.types.is_integer(a.type):
            raise UnsupportedTypeError(f"expected integers for {kt.spelling}, got {a.type}")
        raw = a
    rep = raw.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
    dtype = _NUMPY_DTYPE[name]
    width = FIXED_WIDTH[name]
    if len(rep):
        lo, hi = _INT_BOUNDS.get(name, _INT_BOUNDS["int"])
        vmin, vmax = int(rep.min()), int(rep.max())
        if vmin < lo or vmax > hi:
            raise UnsupportedTypeError(f"values outside the {kt.spelling} range")

    def key_bytes(rows: np.ndarray) -> list[bytes]:
        return _split_fixed(rep[rows].astype(dtype).tobytes(), width)

    def values(rows: np.ndarray) -> list[object]:
        return [deserialize_key(kt, b) for b in key_bytes(rows)]

    def key_buffer(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return (np.frombuffer(rep[rows].astype(dtype).tobytes(), dtype=np.uint8),
                np.arange(len(rows) + 1, dtype=np.int64) * width)

    return EncodedKeys(rep, valid, key_bytes, values, key_buffer)


def _encode_floats(kt: KeyType, a: pa.Array, valid: np.ndarray | None) -> EncodedKeys:
    if not pa.types.is_floating(a.type) and not pa.types.is_integer(a.type):
        raise UnsupportedTypeError(f"expected floating point for {kt.spelling}, got {a.type}")
    if kt.name == "double":
        vals = a.cast(pa.float64()).fill_null(0.0).to_numpy(zero_copy_only=False)
        bits = vals.view(np.int64).copy()
        bits[np.isnan(vals)] = NAN64_BITS  # spec §3: one canonical NaN
        width, dtype = 8, "<i8"
        rep = bits ^ ((bits >> 63) & np.int64(0x7FFFFFFFFFFFFFFF))
    else:
        vals = a.cast(pa.float32()).fill_null(0.0).to_numpy(zero_copy_only=False)
        bits = vals.view(np.int32).copy()
        bits[np.isnan(vals)] = NAN32_BITS
        width, dtype = 4, "<i4"
        bits32 = bits.astype(np.int64)
        rep = bits32 ^ ((bits32 >> 31) & np.int64(0x7FFFFFFF))

    def key_bytes(rows: np.ndarray) -> list[bytes]:
        return _split_fixed(bits[rows].astype(dtype).tobytes(), width)

    def values(rows: np.ndarray) -> list[object]:
        return [deserialize_key(kt, b) for b in key_bytes(rows)]

    def key_buffer(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return (np.frombuffer(bits[rows].astype(dtype).tobytes(), dtype=np.uint8),
                np.arange(len(rows) + 1, dtype=np.int64) * width)

    return EncodedKeys(rep, valid, key_bytes, values, key_buffer)


def _encode_decimals(kt: KeyType, a: pa.Array, valid: np.ndarray | None) -> EncodedKeys:
    if not pa.types.is_decimal(a.type):
        a = a.cast(arrow_type(kt))
    if a.type.scale != kt.decimal_scale:
        a = a.cast(pa.decimal128(38, kt.decimal_scale))
    pyvals = a.to_pylist()
    unscaled = [0 if v is None else _decimal_unscaled(kt, v) for v in pyvals]
    if kt.decimal_precision <= 18:
        rep = np.array(unscaled, dtype=np.int64)
    else:
        distinct = sorted(set(unscaled))
        pos = {v: i for i, v in enumerate(distinct)}
        rep = np.array([pos[v] for v in unscaled], dtype=np.int64)

    def values(rows: np.ndarray) -> list[object]:
        return [decimal.Decimal(unscaled[i]).scaleb(-kt.decimal_scale) for i in rows]

    def key_bytes(rows: np.ndarray) -> list[bytes]:
        return [serialize_key(kt, v) for v in values(rows)]

    return EncodedKeys(rep, valid, key_bytes, values)


_UNIT_NANOS = {"s": 1_000_000_000, "ms": 1_000_000, "us": 1_000, "ns": 1}


def _encode_timestamps(kt: KeyType, a: pa.Array, valid: np.ndarray | None) -> EncodedKeys:
    if pa.types.is_date(a.type):
        a = a.cast(pa.timestamp("ms"))
    if not pa.types.is_timestamp(a.type):
        raise UnsupportedTypeError(f"expected timestamps for {kt.spelling}, got {a.type}")
    unit_nanos = _UNIT_NANOS[a.type.unit]
    raw = a.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
    # spec §3: epoch millis + nano-of-milli (dropped for p ≤ 3)
    if unit_nanos >= 1_000_000:
        millis = raw * (unit_nanos // 1_000_000)
        nanos = np.zeros_like(raw)
    else:
        per_milli = 1_000_000 // unit_nanos
        millis = np.floor_divide(raw, per_milli)
        nanos = (raw - millis * per_milli) * unit_nanos
    if kt.time_precision <= 3:
        nanos = np.zeros_like(raw)
        rep = millis
    else:
        rep = raw if unit_nanos < 1_000_000 else millis

    def key_bytes(rows: np.ndarray) -> list[bytes]:
        ms = _split_fixed(millis[rows].astype("<i8").tobytes(), 8)
        if kt.time_precision <= 3:
            return ms
        return [m + varint(int(n)) for m, n in zip(ms, nanos[rows].tolist())]

    def values(rows: np.ndarray) -> list[object]:
        return [deserialize_key(kt, b) for b in key_bytes(rows)]

    return EncodedKeys(rep, valid, key_bytes, values)
