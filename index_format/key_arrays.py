"""Vectorized key encoding for the writer: Arrow/numpy columns → sortable representations and key bytes.

Imports numpy/pyarrow and index_format.{keys,types,errors} only; never the reader.
"""
from __future__ import annotations

import decimal
from collections.abc import Callable
from typing import Any, NamedTuple, cast

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from index_format.errors import UnsupportedTypeError
from index_format.keys import (
    FIXED_WIDTH, INT_BOUNDS, INT_STRUCTS, NAN32_BITS, NAN64_BITS, NUMPY_DTYPE, decimal_unscaled, deserialize_key,
    serialize_key,
)
from index_format.layout import varint
from index_format.parallel import THREADS, map_parts
from index_format.types import KeyType


def numpy_of(arr: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """A null-free fixed-width integer or float arrow array as numpy, read straight from its data buffer.

    Why not to_numpy: pyarrow's to_numpy imports pandas on first use, about 0.25 s, which is a fifth of a
    command-line build. Other arrays (nulls, booleans, other types) still go through to_numpy.
    """
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    t = arr.type
    if arr.null_count == 0 and (pa.types.is_integer(t) or pa.types.is_floating(t)) and t.bit_width >= 8:
        kind = "f" if pa.types.is_floating(t) else ("i" if pa.types.is_signed_integer(t) else "u")
        dtype = np.dtype(f"<{kind}{t.bit_width // 8}")
        return np.frombuffer(arr.buffers()[1], dtype=dtype, count=len(arr), offset=arr.offset * dtype.itemsize)
    return cast(np.ndarray, arr.to_numpy(zero_copy_only=False))


def arrow_of(values: np.ndarray) -> pa.Array:
    """A numpy integer array as an arrow array over the same memory (pa.array imports pandas; see numpy_of)."""
    values = np.ascontiguousarray(values, dtype=np.int64)
    return pa.Array.from_buffers(pa.int64(), len(values), [None, pa.py_buffer(values)])


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
    seq = list(keys)  # type: ignore[call-overload]  # any iterable of keys
    if kt.name in ("float", "double"):
        return pa.array(seq, type=target, from_pandas=False)
    return pa.array(seq, type=target)


def _split_fixed(buf: bytes, width: int) -> list[bytes]:
    return [buf[i:i + width] for i in range(0, len(buf), width)]


def encode_arrow_keys(kt: KeyType, arr: object) -> EncodedKeys:
    """Vectorized: the logical sort representation of every row and serializers for chosen rows."""
    name = kt.name
    if name == "string":
        return _encode_strings(kt, arr)
    a = to_arrow_array(kt, arr)
    valid = None
    if a.null_count:
        valid = _valid_of(a)
    if name == "boolean":
        rep = a.fill_null(False).to_numpy(zero_copy_only=False).astype(np.int8)
        return EncodedKeys(rep, valid, lambda rows: [b"\x01" if rep[i] else b"\x00" for i in rows],
                           lambda rows: [bool(rep[i]) for i in rows])
    if name in INT_STRUCTS or name in ("date", "time"):
        return _encode_ints(kt, a, valid)
    if name in ("float", "double"):
        return _encode_floats(kt, a, valid)
    if name == "decimal":
        return _encode_decimals(kt, a, valid)
    if name in ("timestamp", "timestamp_ltz"):
        return _encode_timestamps(kt, a, valid)
    raise UnsupportedTypeError(f"cannot encode keys of type {kt.spelling}")


# A string column of at least twice this many rows is hashed in parts on the thread pool
PART_ROWS = 1 << 20


def _string_segments(kt: KeyType, arr: object) -> list[pa.Array]:
    """The column as arrays to encode independently: a dictionary column's chunks as they are (no hashing),
    a large plain column cut into one slice per thread, otherwise the whole column."""
    if isinstance(arr, pa.ChunkedArray) and arr.num_chunks and pa.types.is_dictionary(arr.type):
        segs = list(arr.chunks)
    elif isinstance(arr, pa.Array) and pa.types.is_dictionary(arr.type):
        segs = [arr]
    else:
        a = to_arrow_array(kt, arr)
        k = min(THREADS, len(a) // PART_ROWS)
        segs = [a] if k < 2 else [a.slice(len(a) * i // k, len(a) * (i + 1) // k - len(a) * i // k)
                                  for i in range(k)]
    out = []
    for seg in segs:
        t = seg.type.value_type if pa.types.is_dictionary(seg.type) else seg.type
        if not (pa.types.is_string(t) or pa.types.is_large_string(t)):
            if not (pa.types.is_binary(t) or pa.types.is_large_binary(t)):
                raise UnsupportedTypeError(f"expected strings for {kt.spelling}, got {t}")
            target = pa.large_string() if pa.types.is_large_binary(t) else pa.string()
            seg = (pa.DictionaryArray.from_arrays(seg.indices, seg.dictionary.cast(target))
                   if pa.types.is_dictionary(seg.type) else seg.cast(target))  # checks UTF-8
        out.append(seg)
    return out


def _valid_of(arr: pa.Array) -> np.ndarray:
    """Row validity from the validity bitmap (pyarrow's is_valid would import pyarrow.compute)."""
    n = len(arr)
    bitmap = arr.buffers()[0]
    if arr.null_count == 0 or bitmap is None:
        return np.ones(n, dtype=bool)
    bits = np.unpackbits(np.frombuffer(bitmap, dtype=np.uint8), bitorder="little")
    return bits[arr.offset:arr.offset + n].astype(bool)


def _codes(seg: pa.Array) -> tuple[np.ndarray, pa.Array]:
    """(dictionary index of every row, 0 at nulls; the dictionary) of one segment."""
    if pa.types.is_dictionary(seg.type):
        ind = seg.indices
        if ind.null_count == 0:
            return numpy_of(ind), seg.dictionary
        width = ind.type.bit_width // 8
        raw = np.frombuffer(ind.buffers()[1], dtype=f"<i{width}", count=len(ind), offset=ind.offset * width)
        return np.where(_valid_of(ind), raw, 0), seg.dictionary  # slots under nulls hold anything
    import pyarrow.compute as pc   # hashing: only plain string columns need it
    enc = pc.dictionary_encode(seg)
    ind = enc.indices if enc.indices.null_count == 0 else enc.indices.fill_null(0)
    return numpy_of(ind), enc.dictionary


def string_buffers(arr: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(bytes, int64 offsets of len + 1) of a string or binary array, without copying the bytes."""
    _, obuf, dbuf = arr.buffers()
    large = pa.types.is_large_string(arr.type) or pa.types.is_large_binary(arr.type)
    offsets = np.frombuffer(obuf, dtype=np.int64 if large else np.int32)[arr.offset:arr.offset + len(arr) + 1]
    data = np.frombuffer(dbuf, dtype=np.uint8) if dbuf is not None else np.zeros(0, np.uint8)
    return data, offsets.astype(np.int64)


# Dictionaries up to this size are ranked in Python (no pyarrow.compute import: 40 ms of a command-line build)
_PY_RANK_MAX = 1 << 16


def _string_ranks(dictionary: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(rank of every dictionary entry among the distinct strings; those strings in order as UTF-8
    bytes and int64 offsets). Ranks use the narrowest dtype: the writer sorts 16-bit keys by radix.

    Equal strings share a rank: segments' dictionaries overlap, and a given dictionary may repeat values.
    Python and Arrow both order strings by code point = unsigned UTF-8 bytes = Java's order (spec §3).
    """
    if len(dictionary) <= _PY_RANK_MAX:
        # the strings as bytes, sliced from the array's own buffers: to_pylist builds an Arrow scalar per
        # value, several times slower; byte order is the order wanted, so nothing is decoded
        data, offs = string_buffers(dictionary)
        raw, at_off = data.tobytes(), offs.tolist()
        values: list[bytes | None] = [raw[at_off[i]:at_off[i + 1]] for i in range(len(dictionary))]
        if dictionary.null_count:
            for i in np.flatnonzero(~_valid_of(dictionary)).tolist():
                values[i] = None
        distinct = sorted({v for v in values if v is not None})
        rdt = np.uint16 if len(distinct) <= (1 << 16) else np.int32
        at: dict[bytes | None, int] = {v: i for i, v in enumerate(distinct)}
        at[None] = 0   # a null slot's rank is never read (its rows are null)
        rank = np.fromiter(map(at.__getitem__, values), dtype=rdt, count=len(values))
        offsets = np.zeros(len(distinct) + 1, dtype=np.int64)
        np.cumsum(np.fromiter(map(len, distinct), dtype=np.int64, count=len(distinct)), out=offsets[1:])
        return rank, np.frombuffer(b"".join(distinct), dtype=np.uint8), offsets
    import pyarrow.compute as pc
    uniq = pc.dictionary_encode(dictionary)
    order = numpy_of(pc.array_sort_indices(uniq.dictionary))
    rdt = np.uint16 if len(order) <= (1 << 16) else np.int32
    rank = np.empty(len(order), dtype=rdt)
    rank[order] = np.arange(len(order), dtype=rdt)
    ind = uniq.indices if uniq.indices.null_count == 0 else uniq.indices.fill_null(0)
    data, offsets = string_buffers(uniq.dictionary.take(arrow_of(order)))
    return rank[numpy_of(ind)], data, offsets


def _take_strings(data: np.ndarray, offsets: np.ndarray, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The strings at idx of (data, offsets), as (bytes, offsets) again."""
    starts = offsets[idx]
    lens = offsets[idx + 1] - starts
    out = np.zeros(len(idx) + 1, dtype=np.int64)
    np.cumsum(lens, out=out[1:])
    return data[np.repeat(starts - out[:-1], lens) + np.arange(int(out[-1]))], out


def _encode_strings(kt: KeyType, arr: object) -> EncodedKeys:
    segs = _string_segments(kt, arr)
    valid = None
    if any(seg.null_count for seg in segs):
        valid = np.concatenate([_valid_of(seg.indices if pa.types.is_dictionary(seg.type) else seg)
                                for seg in segs])
    coded = map_parts(_codes, segs)
    dicts = [d for _, d in coded]
    if len({d.type for d in dicts}) > 1:
        dicts = [d.cast(pa.large_string()) for d in dicts]
    rank, ddata, doffs = _string_ranks(pa.concat_arrays(dicts) if len(dicts) > 1 else dicts[0])
    rep = np.empty(sum(len(seg) for seg in segs), dtype=rank.dtype)
    starts = np.cumsum([0] + [len(seg) for seg in segs]).tolist()
    dstarts = np.cumsum([0] + [len(d) for d in dicts]).tolist()

    def ranks_of(i: int) -> None:
        # the rank of every row of segment i: its dictionary's slice of the ranks, taken by its codes
        codes, out = coded[i][0], rep[starts[i]:starts[i + 1]]
        if dstarts[i + 1] > dstarts[i]:
            np.take(rank[dstarts[i]:dstarts[i + 1]], codes, out=out)
        else:
            out.fill(0)  # an all-null segment

    map_parts(ranks_of, range(len(segs)))
    del coded

    def key_buffer(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return _take_strings(ddata, doffs, rep[rows].astype(np.int64))

    def key_bytes(rows: np.ndarray) -> list[bytes]:
        data, offsets = key_buffer(rows)
        raw, at = data.tobytes(), offsets.tolist()
        return [raw[at[i]:at[i + 1]] for i in range(len(rows))]

    def values(rows: np.ndarray) -> list[object]:
        return [k.decode() for k in key_bytes(rows)]

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
    rep = _int_values(raw)
    dtype = NUMPY_DTYPE[name]
    width = FIXED_WIDTH[name]
    if len(rep):
        lo, hi = INT_BOUNDS.get(name, INT_BOUNDS["int"])
        vmin, vmax = int(rep.min()), int(rep.max())
        if vmin < lo or vmax > hi:
            raise UnsupportedTypeError(f"values outside the {kt.spelling} range")

    return _fixed_width_keys(kt, rep, valid, rep, dtype, width)


def _int_values(a: pa.Array) -> np.ndarray:
    """An integer array as int64, 0 at nulls; a plain integer array straight from its buffers (fill_null would
    import pyarrow.compute, and with it pandas: most of a small command-line build's time)."""
    t = a.type
    if pa.types.is_integer(t) and a.null_count:
        width = t.bit_width // 8
        kind = "i" if pa.types.is_signed_integer(t) else "u"
        raw = np.frombuffer(a.buffers()[1], dtype=f"<{kind}{width}", count=len(a), offset=a.offset * width)
        return np.where(_valid_of(a), raw, 0).astype(np.int64)
    return numpy_of(a if a.null_count == 0 else a.fill_null(0)).astype(np.int64)


def _fixed_width_keys(kt: KeyType, rep: np.ndarray, valid: np.ndarray | None, stored: np.ndarray,
                      dtype: str, width: int) -> EncodedKeys:
    """Keys of one fixed width: `rep` orders them, `stored` cast to little-endian `dtype` is each key's bytes."""

    def key_bytes(rows: np.ndarray) -> list[bytes]:
        return _split_fixed(stored[rows].astype(dtype).tobytes(), width)

    def values(rows: np.ndarray) -> list[object]:
        return [deserialize_key(kt, b) for b in key_bytes(rows)]

    def key_buffer(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        # the gather makes a new array: converted in place when the dtype already fits, viewed as bytes
        taken = stored[rows].astype(dtype, copy=False)
        return taken.view(np.uint8), np.arange(0, (len(rows) + 1) * width, width, dtype=np.int64)

    return EncodedKeys(rep, valid, key_bytes, values, key_buffer)


def _encode_floats(kt: KeyType, a: pa.Array, valid: np.ndarray | None) -> EncodedKeys:
    if not pa.types.is_floating(a.type) and not pa.types.is_integer(a.type):
        raise UnsupportedTypeError(f"expected floating point for {kt.spelling}, got {a.type}")
    bits: npt.NDArray[np.signedinteger[Any]]
    if kt.name == "double":
        vals = numpy_of(a.cast(pa.float64()).fill_null(0.0))
        bits = vals.view(np.int64).copy()
        bits[np.isnan(vals)] = NAN64_BITS  # spec §3: one canonical NaN
        width, dtype = 8, "<i8"
        rep = bits ^ ((bits >> 63) & np.int64(0x7FFFFFFFFFFFFFFF))
    else:
        vals = numpy_of(a.cast(pa.float32()).fill_null(0.0))
        bits = vals.view(np.int32).copy()
        bits[np.isnan(vals)] = NAN32_BITS
        width, dtype = 4, "<i4"
        bits32 = bits.astype(np.int64)
        rep = bits32 ^ ((bits32 >> 31) & np.int64(0x7FFFFFFF))

    return _fixed_width_keys(kt, rep, valid, bits, dtype, width)


def _encode_decimals(kt: KeyType, a: pa.Array, valid: np.ndarray | None) -> EncodedKeys:
    if not pa.types.is_decimal(a.type):
        a = a.cast(arrow_type(kt))
    if a.type.scale != kt.decimal_scale:
        a = a.cast(pa.decimal128(38, kt.decimal_scale))
    pyvals = a.to_pylist()
    unscaled = [0 if v is None else decimal_unscaled(kt, v) for v in pyvals]
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


UNIT_NANOS = {"s": 1_000_000_000, "ms": 1_000_000, "us": 1_000, "ns": 1}   # Arrow time units
_LONG_MIN, _LONG_MAX = -(1 << 63), (1 << 63) - 1


def rescale_epoch(raw: np.ndarray, unit: str, target_nanos: int, *, checked: bool = False) -> np.ndarray:
    """Integers in Arrow time unit `unit` → multiples of `target_nanos` ns, floored like Paimon's Timestamp
    (getMillisecond, toMicros) and its TIME millis. checked: OverflowError when a value leaves a Java long."""
    unit_nanos = UNIT_NANOS[unit]
    if unit_nanos >= target_nanos:
        factor = unit_nanos // target_nanos
        if checked and factor > 1 and len(raw) and (int(raw.max()) > _LONG_MAX // factor
                                                     or int(raw.min()) < _LONG_MIN // factor):
            raise OverflowError("a time value is out of the range of a Java long in the index's unit")
        return raw * factor
    floored: np.ndarray = np.floor_divide(raw, target_nanos // unit_nanos)
    return floored


def _encode_timestamps(kt: KeyType, a: pa.Array, valid: np.ndarray | None) -> EncodedKeys:
    if pa.types.is_date(a.type):
        a = a.cast(pa.timestamp("ms"))
    if not pa.types.is_timestamp(a.type):
        raise UnsupportedTypeError(f"expected timestamps for {kt.spelling}, got {a.type}")
    unit_nanos = UNIT_NANOS[a.type.unit]
    raw = numpy_of(a.cast(pa.int64()).fill_null(0)).astype(np.int64)
    # spec §3: epoch millis + nano-of-milli (dropped for p ≤ 3)
    millis = rescale_epoch(raw, a.type.unit, 1_000_000)
    if unit_nanos >= 1_000_000:
        nanos = np.zeros_like(raw)
    else:
        nanos = (raw - millis * (1_000_000 // unit_nanos)) * unit_nanos
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
