"""Range-bitmap keys (spec 2.2): which types qualify, how a key is written, and how keys order.

Paimon's range-bitmap index writes its own key encoding (big-endian, strings with an int32 length prefix,
timestamps as millis or micros), different from the global index's key bytes in `index_format.keys`. This
module turns canonical values (what `index_format.keys.deserialize_key` returns) and whole columns into
that encoding and into *order representations* ("reps"): Python ints for fixed-width keys (floats mapped
so that int order is Java's `Double.compare` order) and UTF-8 bytes for strings.
"""
from __future__ import annotations

import datetime as dt
import decimal
import math
import numbers
from fractions import Fraction
from typing import Any, NamedTuple, cast

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from index_format.errors import CorruptFileError, UnsupportedTypeError
from index_format.key_arrays import arrow_type, rescale_epoch, to_arrow_array
from index_format.keys import EPOCH, EPOCH_UTC, decimal_unscaled, sort_key
from index_format.layout import BE_F32, BE_F64, BE_I32, BE_I64
from index_format.types import KeyType

__all__ = [
    "KeyColumn", "Rep", "decode_key", "default_chunk_size", "encode_column", "encode_key", "exact_rep", "java_rep",
    "key_width", "rep_of_bytes", "reps_of_fixed_block", "supports",
]

# A key's order representation (rep_of_bytes, java_rep, exact_rep): an int, a string's bytes, or a Fraction
# for a bound between two ints. Any: one dictionary's reps compare with <, which mypy cannot see of a union.
Rep = Any

# Width in bytes of each fixed-width key; strings are variable (None).
WIDTH = {"boolean": 1, "tinyint": 1, "smallint": 2, "int": 4, "date": 4, "time": 4, "bigint": 8,
          "decimal": 8, "timestamp": 8, "timestamp_ltz": 8, "float": 4, "double": 8}
BE_DTYPE = {1: ">i1", 2: ">i2", 4: ">i4", 8: ">i8"}
_NAN32 = 0x7FC00000
_NAN64 = 0x7FF8000000000000
_MASK63 = 0x7FFFFFFFFFFFFFFF
_MASK31 = 0x7FFFFFFF


def supports(kt: KeyType) -> bool:
    """Can Paimon's range-bitmap index hold this type (decimal p <= 18, timestamps p <= 6)?"""
    if kt.name == "decimal":
        return kt.decimal_precision <= 18
    if kt.name in ("timestamp", "timestamp_ltz"):
        return kt.time_precision <= 6
    return kt.name in WIDTH or kt.name == "string"


def check_supported(kt: KeyType) -> None:
    if not supports(kt):
        raise UnsupportedTypeError(
            f"type {kt.spelling} cannot be indexed by range-bitmap (decimal p <= 18, timestamp p <= 6)")


def default_chunk_size(kt: KeyType) -> int:
    """Paimon's default `chunk-size`: 0 bytes (one key per chunk) for boolean/tinyint/smallint, else 16 KiB."""
    check_supported(kt)
    return 0 if kt.name in ("boolean", "tinyint", "smallint") else 16 * 1024


def key_width(kt: KeyType) -> int | None:
    """Bytes of one encoded key, None for strings (int32 length + UTF-8)."""
    return WIDTH.get(kt.name)


def _is_float(kt: KeyType) -> bool:
    return kt.name in ("float", "double")


# ---------------------------------------------------------------- scalars

def _float_bits(kt: KeyType, value: float) -> int:
    """Signed IEEE bits of `value` in the key's width, NaN canonical (Java floatToIntBits/doubleToLongBits)."""
    v = float(value)
    if kt.name == "double":
        if v != v:
            return _NAN64
        bits: int = BE_I64.unpack(BE_F64.pack(v))[0]
        return bits
    if v != v:
        return _NAN32
    bits32: int = BE_I32.unpack(BE_F32.pack(_to_f32(v)))[0]
    return bits32


def _to_f32(v: float) -> float:
    """Java's (float) cast: nearest float32, overflowing to ±Infinity."""
    try:
        f32: float = BE_F32.unpack(BE_F32.pack(v))[0]
        return f32
    except OverflowError:
        return math.copysign(math.inf, v)


def _order_of_bits(kt: KeyType, bits: int) -> int:
    """Float bits → an int whose order is Java's Float/Double.compare (negatives flip their magnitude bits)."""
    if kt.name == "double":
        return bits ^ _MASK63 if bits < 0 else bits
    return bits ^ _MASK31 if bits < 0 else bits


def _epoch_nanos(value: object) -> int:
    """Epoch nanoseconds of a datetime (naive = UTC wall clock) or of an int (already epoch nanos)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if not isinstance(value, dt.datetime):
        raise UnsupportedTypeError(f"expected a timestamp, got {type(value).__name__}")
    delta = value - (EPOCH_UTC if value.tzinfo is not None else EPOCH)
    micros = (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
    return micros * 1000 + int(getattr(value, "nanosecond", 0))


def _timestamp_key(kt: KeyType, value: object) -> int:
    """Epoch millis (p <= 3) or micros (p 4..6) like Timestamp.getMillisecond / toMicros (floor)."""
    nanos = _epoch_nanos(value)
    return nanos // 1_000_000 if kt.time_precision <= 3 else nanos // 1_000


def key_int(kt: KeyType, value: object) -> int:
    """The integer Java writes for a fixed-width key (float keys: the IEEE bits)."""
    name = kt.name
    if _is_float(kt):
        return _float_bits(kt, value)  # type: ignore[arg-type]  # a float key's canonical value
    if name in ("timestamp", "timestamp_ltz"):
        return _timestamp_key(kt, value)
    if name == "decimal":
        return decimal_unscaled(kt, decimal.Decimal(value))  # type: ignore[arg-type]  # a decimal key's canonical value
    if name == "boolean":
        return 1 if value else 0
    if name in ("date", "time") and isinstance(value, (dt.date, dt.time)):
        return int(sort_key(kt, value))
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise UnsupportedTypeError(f"expected an integer for {kt.spelling}, got {type(value).__name__}")
    return int(value)


def encode_key(kt: KeyType, value: object) -> bytes:
    """Range-bitmap key bytes of a canonical value (spec 2.2)."""
    check_supported(kt)
    if kt.name == "string":
        data = value if isinstance(value, bytes) else str(value).encode("utf-8")
        return BE_I32.pack(len(data)) + data
    width = WIDTH[kt.name]
    n = key_int(kt, value)
    lo, hi = -(1 << (8 * width - 1)), (1 << (8 * width - 1)) - 1
    if not lo <= n <= hi:
        raise ValueError(f"value {value!r} does not fit a {kt.spelling} key")
    return n.to_bytes(width, "big", signed=True)


def decode_key(kt: KeyType, data: bytes | memoryview) -> object:
    """Canonical value of range-bitmap key bytes (timestamps as datetime, naive for TIMESTAMP)."""
    check_supported(kt)
    data = bytes(data)
    name = kt.name
    if name == "string":
        if len(data) < 4:
            raise CorruptFileError("string key shorter than its length prefix", block="range-bitmap key")
        n = BE_I32.unpack_from(data)[0]
        if n < 0 or 4 + n != len(data):
            raise CorruptFileError(f"string key length {n} does not match {len(data) - 4} bytes",
                                   block="range-bitmap key")
        return data[4:].decode("utf-8", "surrogateescape")
    width = WIDTH[name]
    if len(data) != width:
        raise CorruptFileError(f"{kt.spelling} key of {len(data)} bytes, expected {width}", block="range-bitmap key")
    n = int.from_bytes(data, "big", signed=True)
    if name == "boolean":
        return n == 1
    if name == "double":
        return BE_F64.unpack(data)[0]
    if name == "float":
        return BE_F32.unpack(data)[0]
    if name == "decimal":
        return decimal.Decimal(n).scaleb(-kt.decimal_scale)
    if name == "date":
        return dt.date(1970, 1, 1) + dt.timedelta(days=n)
    if name == "time":
        h, rem = divmod(n, 3_600_000)
        m, rem = divmod(rem, 60_000)
        s, ms = divmod(rem, 1000)
        try:
            return dt.time(h, m, s, ms * 1000)
        except ValueError:
            return n
    if name in ("timestamp", "timestamp_ltz"):
        micros = n * 1000 if kt.time_precision <= 3 else n
        base = EPOCH_UTC if name == "timestamp_ltz" else EPOCH
        try:
            return base + dt.timedelta(microseconds=micros)
        except OverflowError:
            return micros * 1000  # epoch nanos, the canonical form when datetime cannot hold it
    return n


def rep_of_bytes(kt: KeyType, data: bytes) -> Rep:
    """Order representation of encoded key bytes: UTF-8 bytes for strings, an int otherwise."""
    if kt.name == "string":
        return data[4:]
    n = int.from_bytes(data, "big", signed=True)
    if _is_float(kt):
        if math.isnan((BE_F64 if kt.name == "double" else BE_F32).unpack(data)[0]):
            n = _NAN64 if kt.name == "double" else _NAN32
        return _order_of_bits(kt, n)
    return n


def reps_of_fixed_block(kt: KeyType, data: bytes | memoryview, count: int) -> np.ndarray:
    """Order representations (int64) of `count` consecutive fixed-width keys."""
    width = WIDTH[kt.name]
    raw = np.frombuffer(data, dtype=BE_DTYPE[width], count=count).astype(np.int64)
    if _is_float(kt):
        return _order_of_bits_array(kt, _canonical_nan(kt, raw))
    return raw


def _canonical_nan(kt: KeyType, bits: np.ndarray) -> np.ndarray:
    if kt.name == "double":
        nan = (bits & _MASK63) > 0x7FF0000000000000
        return np.where(nan, np.int64(_NAN64), bits)
    nan = (bits & _MASK31) > 0x7F800000
    return np.where(nan, np.int64(_NAN32), bits)


def _order_of_bits_array(kt: KeyType, bits: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    mask = np.int64(_MASK63 if kt.name == "double" else _MASK31)
    shift = 63 if kt.name == "double" else 31
    return bits ^ ((bits >> shift) & mask)


def java_rep(kt: KeyType, value: object) -> Rep:
    """Order representation of a literal as Paimon's converter sees it (timestamps/decimals truncated)."""
    check_supported(kt)
    if kt.name == "string":
        return value if isinstance(value, bytes) else str(value).encode("utf-8")
    if _is_float(kt):
        return _order_of_bits(kt, _float_bits(kt, value))  # type: ignore[arg-type]  # a float key's canonical value
    return key_int(kt, value)


def exact_rep(kt: KeyType, value: object) -> Rep:
    """Order representation of a literal for exact range bounds: a Fraction where the literal lies between
    two representable keys (sub-unit timestamps, decimals beyond the scale, doubles on a float column)."""
    check_supported(kt)
    name = kt.name
    if name == "string" or name == "boolean":
        return java_rep(kt, value)
    if name == "float":
        v = float(value)  # type: ignore[arg-type]  # a float key's canonical value
        r = _order_of_bits(kt, _float_bits(kt, v))
        if v != v or math.isinf(v):
            return r
        f32 = _to_f32(v)
        if f32 == v:
            return r
        return Fraction(2 * r - 1, 2) if f32 > v else Fraction(2 * r + 1, 2)
    if name == "double":
        return java_rep(kt, value)
    if name in ("timestamp", "timestamp_ltz"):
        nanos = _epoch_nanos(value)
        unit = 1_000_000 if kt.time_precision <= 3 else 1_000
        return Fraction(nanos, unit) if nanos % unit else nanos // unit
    if name == "decimal":
        scaled = Fraction(decimal.Decimal(value)) * 10 ** kt.decimal_scale  # type: ignore[arg-type]  # a decimal
        return int(scaled) if scaled.denominator == 1 else scaled
    if isinstance(value, numbers.Real) and not isinstance(value, (numbers.Integral, Fraction, decimal.Decimal)):
        value = float(value)
        if math.isnan(value):
            raise ValueError(f"NaN cannot bound a {kt.spelling} range")
        if math.isinf(value):
            return value
        f = Fraction(value)
        return int(f) if f.denominator == 1 else f
    if isinstance(value, (decimal.Decimal, Fraction)):
        f = Fraction(value)
        return int(f) if f.denominator == 1 else f
    return key_int(kt, value)


# ---------------------------------------------------------------- columns

class KeyColumn(NamedTuple):
    """One column encoded for the writer.

    Fixed-width types: `ints` holds, per row, the integer Java writes (float keys: IEEE bits, NaN canonical)
    and `order` its Java-order representation (int64). Strings: `order` is the dense rank of each row's
    string among the distinct strings (bytes order), and `strings` those distinct strings, sorted, as a
    binary Arrow array. `valid` is None when there are no nulls; entries at null rows are arbitrary.
    """

    order: np.ndarray
    valid: np.ndarray | None
    ints: np.ndarray | None
    strings: pa.Array | None


def encode_column(kt: KeyType, values: object) -> KeyColumn:
    """Vectorized encoding of a column (Arrow array, chunked array, numpy array or Python sequence)."""
    check_supported(kt)
    if isinstance(values, (list, tuple)) and kt.name in ("timestamp", "timestamp_ltz"):
        values = _timestamps_to_arrow(kt, values)
    arr = to_arrow_array(kt, values)
    valid = None
    if arr.null_count:
        valid = arr.is_valid().to_numpy(zero_copy_only=False)
    name = kt.name
    if name == "string":
        return _encode_strings(kt, arr, valid)
    if _is_float(kt):
        if not (pa.types.is_floating(arr.type) or pa.types.is_integer(arr.type)):
            raise UnsupportedTypeError(f"expected floating point values for {kt.spelling}, got {arr.type}")
        if name == "double":
            vals = arr.cast(pa.float64()).fill_null(0.0).to_numpy(zero_copy_only=False)
            bits = vals.view(np.int64).copy()
        else:
            vals = arr.cast(pa.float32()).fill_null(0.0).to_numpy(zero_copy_only=False)
            bits = vals.view(np.int32).astype(np.int64)
        bits[np.isnan(vals)] = _NAN64 if name == "double" else _NAN32
        return KeyColumn(_order_of_bits_array(kt, bits), valid, bits, None)
    ints = _column_ints(kt, arr)
    return KeyColumn(ints, valid, ints, None)


def _timestamps_to_arrow(kt: KeyType, values: list[object] | tuple[object, ...]) -> pa.Array:
    """Python timestamps (datetime or epoch-nanos ints) → an Arrow timestamp array in the key's unit."""
    if any(isinstance(v, int) and not isinstance(v, bool) for v in values):
        keys = [None if v is None else _timestamp_key(kt, v) for v in values]
        unit = "ms" if kt.time_precision <= 3 else "us"
        return pa.array(keys, type=pa.int64()).cast(pa.timestamp(unit))
    return pa.array(list(values), type=arrow_type(kt))


def _column_ints(kt: KeyType, arr: pa.Array) -> np.ndarray:
    name = kt.name
    if name == "boolean":
        if not pa.types.is_boolean(arr.type):
            raise UnsupportedTypeError(f"expected booleans for {kt.spelling}, got {arr.type}")
        return cast(np.ndarray, arr.fill_null(False).to_numpy(zero_copy_only=False).astype(np.int64))
    if name in ("tinyint", "smallint", "int", "bigint"):
        if not pa.types.is_integer(arr.type):
            raise UnsupportedTypeError(f"expected integers for {kt.spelling}, got {arr.type}")
        ints: np.ndarray = arr.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
        width = WIDTH[name]
        if len(ints) and width < 8:
            lo, hi = -(1 << (8 * width - 1)), (1 << (8 * width - 1)) - 1
            if int(ints.min()) < lo or int(ints.max()) > hi:
                raise ValueError(f"values outside the {kt.spelling} range")
        return ints
    if name == "date":
        if pa.types.is_integer(arr.type):
            arr = arr.cast(pa.int32())
        elif pa.types.is_date(arr.type):
            arr = arr.cast(pa.date32()).cast(pa.int32())
        else:
            raise UnsupportedTypeError(f"expected dates for {kt.spelling}, got {arr.type}")
        return cast(np.ndarray, arr.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64))
    if name == "time":
        if pa.types.is_time(arr.type):
            arr = arr.cast(pa.time32("ms"), safe=False).cast(pa.int32())
        elif not pa.types.is_integer(arr.type):
            raise UnsupportedTypeError(f"expected times for {kt.spelling}, got {arr.type}")
        return cast(np.ndarray, arr.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64))
    if name == "decimal":
        if not pa.types.is_decimal(arr.type):
            arr = arr.cast(arrow_type(kt))
        unscaled = [0 if v is None else decimal_unscaled(kt, v) for v in arr.to_pylist()]
        return np.array(unscaled, dtype=np.int64)
    # timestamps: epoch millis (p <= 3) or micros (p 4..6), floored like Paimon's Timestamp
    if pa.types.is_date(arr.type):
        arr = arr.cast(pa.timestamp("ms"))
    if not pa.types.is_timestamp(arr.type):
        raise UnsupportedTypeError(f"expected timestamps for {kt.spelling}, got {arr.type}")
    raw = arr.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
    return rescale_epoch(raw, arr.type.unit, 1_000_000 if kt.time_precision <= 3 else 1_000)


def _encode_strings(kt: KeyType, arr: pa.Array, valid: np.ndarray | None) -> KeyColumn:
    if pa.types.is_binary(arr.type) or pa.types.is_large_binary(arr.type):
        arr = arr.cast(pa.large_binary())
    elif pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type):
        arr = arr.cast(pa.large_binary())
    else:
        raise UnsupportedTypeError(f"expected strings for {kt.spelling}, got {arr.type}")
    enc = pc.dictionary_encode(arr)
    dictionary = enc.dictionary
    # Arrow sorts binary values as unsigned bytes: Paimon's BinaryString order
    order = pc.array_sort_indices(dictionary).to_numpy()
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order), dtype=np.int64)
    idx = enc.indices.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
    rep = rank[idx] if len(rank) else np.zeros(len(idx), dtype=np.int64)
    return KeyColumn(rep, valid, None, dictionary.take(pa.array(order)))


def ints_of_order(kt: KeyType, order: np.ndarray) -> np.ndarray:
    """Inverse of the column encoding's order mapping: the Java integers (float keys: IEEE bits)."""
    if _is_float(kt):
        return _order_of_bits_array(kt, order)  # the mapping is its own inverse
    return order


def fixed_key_bytes(kt: KeyType, ints: np.ndarray) -> bytes:
    """Big-endian bytes of consecutive fixed-width keys given as Java integers."""
    return ints.astype(BE_DTYPE[WIDTH[kt.name]]).tobytes()
