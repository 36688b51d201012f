"""Paimon's bitmap file index (`indexType = "bitmap"`, spec §7): writer (V1 and V2, byte-identical to Java)
and reader (Java's BitmapFileIndex.Reader answers).

Writer: every row's key in Java's internal form, grouped with numpy; one bitmap per value with two or more
rows, laid out in java.util.HashMap iteration order (java_hashmap); single-row values and a single null are
stored as `-1 - row` in the head. Bitmaps are RoaringBitmap32 run-optimized portable bytes, made by
index_format.bitmaps.serialize_groups (Java-exact run_optimize) without its 64-bit 12-byte prefix.

Reader: `=`/IN are the OR of the values' bitmaps (a NULL literal → the null rows), `!=`/NOT IN flip that
over [0, rowCount) so nulls are included, IS NULL / IS NOT NULL likewise; everything else is REMAIN.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyroaring import BitMap

from index_format.bitmaps import serialize_groups
from index_format.errors import CorruptFileError, InvalidOptionError, TruncatedFileError, UnsupportedTypeError
from index_format.file_index.bitmap_index_meta import (
    BitmapEntry, Head, HeadV2, KeyColumn, check_supported, key_json, key_label, pack_v1, pack_v2,
    parse_head,
)
from index_format.file_index.java_hash import key_hashes
from index_format.file_index.java_hashmap import computeifabsent_order
from index_format.file_index.payload_reader import PayloadReader
from index_format.file_index.result import FileIndexResult, Rows, all_rows
from index_format.file_index.values import DOUBLE_NAN_BITS, FLOAT_NAN_BITS, java_order, java_value
from index_format.key_arrays import arrow_of, numpy_of, rescale_epoch
from index_format.options import parse_size, shown
from index_format.types import KeyType

__all__ = ["BitmapEntry", "BitmapReader", "write_bitmap"]

OPTIONS = ("version", "index-block-size")
DEFAULT_BLOCK_SIZE = 16 * 1024
_PREFIX64 = 12   # portable 64-bit form of ids < 2^32: bucket count (u64) + high key 0 (u32), then 32-bit bytes
_INT_BOUNDS = {"tinyint": 7, "smallint": 15, "int": 31, "bigint": 63, "date": 31, "time": 31}


# ---------------------------------------------------------------- options

def parse_bitmap_options(options: Mapping[str, str]) -> tuple[int, int]:
    """(version, index block size in bytes); Java's defaults are 2 and 16kb."""
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise InvalidOptionError(f"bitmap file index has no option {unknown[0]!r}; options: {', '.join(OPTIONS)}")
    raw_version = options.get("version", "2")
    try:
        version = int(str(raw_version).strip())
    except ValueError:
        version = -1
    if version not in (1, 2):
        raise InvalidOptionError(f"bitmap option 'version' must be 1 or 2, got {shown(raw_version)}")
    raw_size = options.get("index-block-size", DEFAULT_BLOCK_SIZE)
    try:
        block_size = parse_size(raw_size)
    except ValueError as exc:
        raise InvalidOptionError(f"bitmap option 'index-block-size': {exc}") from None
    return version, block_size


# ---------------------------------------------------------------- writer: keys

class _Column:
    """Non-null rows (None: every row) and their keys in Java's internal form, as an Arrow array without
    nulls: int64 (FLOAT/DOUBLE: IEEE bits, NaN canonical; BOOLEAN 0/1) or large_binary (UTF-8)."""

    def __init__(self, n: int, valid_rows: np.ndarray | None, keys: pa.Array) -> None:
        self.n = n
        self.valid_rows = valid_rows
        self.keys = keys


def _java_keys(kt: KeyType, values: object) -> _Column:
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks() if values.num_chunks != 1 else values.chunk(0)
    if isinstance(values, np.ndarray) and values.dtype.kind in "iufb" and kt.name != "string":
        values = pa.array(values)
    if not isinstance(values, pa.Array):
        return _python_keys(kt, values)
    arr = values
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    n = len(arr)
    valid_rows = None
    if arr.null_count:
        valid_rows = numpy_of(pc.indices_nonzero(arr.is_valid())).astype(np.int64)
        arr = pc.drop_null(arr)
    return _Column(n, valid_rows, _arrow_keys(kt, arr))


def _python_keys(kt: KeyType, values: object) -> _Column:
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise UnsupportedTypeError(f"expected a column of values, got {type(values).__name__}")
    seq = values if isinstance(values, Sequence) else list(values)
    n = len(seq)
    valid = np.fromiter((v is not None for v in seq), dtype=bool, count=n)
    valid_rows = None if bool(valid.all()) else np.flatnonzero(valid)
    present = [v for v in seq if v is not None] if valid_rows is not None else list(seq)
    if kt.name in ("float", "double"):
        try:
            arr = pa.array(present, type=pa.float64(), from_pandas=False)
        except (pa.ArrowException, TypeError, ValueError) as exc:
            raise UnsupportedTypeError(f"values for {kt.spelling.upper()} must be numbers: {exc}") from None
        return _Column(n, valid_rows, _arrow_keys(kt, arr))
    if kt.name == "string":
        return _Column(n, valid_rows, pa.array([_utf8(v) for v in present], type=pa.large_binary()))
    try:
        jv = [java_value(kt, v) for v in present]
    except UnsupportedTypeError:
        raise
    except (TypeError, ValueError, AttributeError, OverflowError) as exc:
        raise UnsupportedTypeError(f"a value does not fit {kt.spelling.upper()}: {exc}") from None
    ints = [int(v) for v in jv]  # type: ignore[call-overload]  # the keys' java_values are ints
    _check_range(kt, min(ints, default=0), max(ints, default=0))
    return _Column(n, valid_rows, pa.array(ints, type=pa.int64()))


def _utf8(value: object) -> bytes:
    if isinstance(value, str):
        try:
            return value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise UnsupportedTypeError(f"string {shown(value)} is not valid Unicode: {exc.reason}") from None
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    raise UnsupportedTypeError(f"expected a string for STRING, got {type(value).__name__}")


def _check_range(kt: KeyType, lo: int, hi: int) -> None:
    bits = _INT_BOUNDS.get(kt.name)
    if bits is not None and (lo < -(1 << bits) or hi >= (1 << bits)):
        raise UnsupportedTypeError(f"values outside the {kt.spelling.upper()} range")


def _ints(arr: pa.Array) -> np.ndarray:
    """Raw int64 storage of a temporal or integer array (time32/date32 only cast to int32 directly)."""
    if arr.type.bit_width == 32 and not pa.types.is_integer(arr.type):
        arr = arr.cast(pa.int32())
    return numpy_of(arr.cast(pa.int64())).astype(np.int64, copy=False)


def _arrow_keys(kt: KeyType, arr: pa.Array) -> pa.Array:
    """Non-null Arrow values → Java internal keys (see _Column)."""
    name, t = kt.name, arr.type
    try:
        if name == "string":
            if not (pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t)
                    or pa.types.is_large_binary(t) or str(t) in ("string_view", "binary_view")):
                raise UnsupportedTypeError(f"expected strings for {kt.spelling.upper()}, got {t}")
            return arr.cast(pa.large_binary())
        if name == "boolean":
            if not pa.types.is_boolean(t):
                raise UnsupportedTypeError(f"expected booleans for BOOLEAN, got {t}")
            return arr.cast(pa.int64())
        if name in ("float", "double"):
            if not (pa.types.is_floating(t) or pa.types.is_integer(t)):
                raise UnsupportedTypeError(f"expected numbers for {kt.spelling.upper()}, got {t}")
            return arrow_of(_float_bits(kt, numpy_of(arr.cast(pa.float64()))))
        if name == "date":
            if pa.types.is_date(t):
                arr = arr.cast(pa.date32()).cast(pa.int32())
            elif not pa.types.is_integer(t):
                raise UnsupportedTypeError(f"expected dates for DATE, got {t}")
        elif name == "time":
            if pa.types.is_time(t):
                raw = _ints(arr)   # TIME keys are millis of the day
                millis = raw * 1000 if t.unit == "s" else raw // {"ms": 1, "us": 1000, "ns": 1_000_000}[t.unit]
                return arrow_of(millis)
            if not pa.types.is_integer(t):
                raise UnsupportedTypeError(f"expected times for {kt.spelling.upper()}, got {t}")
        elif name in ("timestamp", "timestamp_ltz"):
            if pa.types.is_date(t):
                arr = arr.cast(pa.timestamp("ms"))
                t = arr.type
            if not pa.types.is_timestamp(t):
                raise UnsupportedTypeError(f"expected timestamps for {kt.spelling.upper()}, got {t}")
            # Timestamp.getMillisecond (p <= 3) / toMicros (p > 3)
            return arrow_of(rescale_epoch(_ints(arr), t.unit, 1_000_000 if kt.time_precision <= 3 else 1_000))
        elif not pa.types.is_integer(t):
            raise UnsupportedTypeError(f"expected integers for {kt.spelling.upper()}, got {t}")
        if len(arr):
            mm = pc.min_max(arr)
            _check_range(kt, int(mm["min"].as_py()), int(mm["max"].as_py()))
        return arr.cast(pa.int64())
    except pa.ArrowException as exc:
        raise UnsupportedTypeError(f"values do not fit {kt.spelling.upper()}: {exc}") from None


def _float_bits(kt: KeyType, vals: np.ndarray) -> np.ndarray:
    """Float.floatToIntBits / Double.doubleToLongBits (NaN canonical); FLOAT rounds like Java's (float)."""
    if kt.name == "double":
        bits = vals.view(np.int64).copy()
        bits[np.isnan(vals)] = DOUBLE_NAN_BITS
        return bits
    with np.errstate(over="ignore"):
        f32 = vals.astype(np.float32)
    bits = f32.view(np.int32).astype(np.int64)
    bits[np.isnan(f32)] = FLOAT_NAN_BITS
    return bits


# ---------------------------------------------------------------- writer: order and body

class _LazyOrder:
    """Java compareTo sort keys of the distinct keys, computed only for the few a tree bin compares."""

    def __init__(self, kt: KeyType, dictionary: pa.Array) -> None:
        self.kt = kt
        self.dictionary = dictionary

    def __len__(self) -> int:
        return len(self.dictionary)

    def __getitem__(self, i: int) -> object:
        return java_order(self.kt, self.dictionary[i].as_py())


def _hash_order(kt: KeyType, dictionary: pa.Array, trailing: bool) -> np.ndarray:
    """Distinct keys (first-insertion order) → their java.util.HashMap iteration order (spec §7.7)."""
    if kt.name == "string":
        hashes = key_hashes(kt, dictionary.to_pylist())
    else:
        hashes = key_hashes(kt, numpy_of(dictionary).astype(np.int64, copy=False))
    return computeifabsent_order(hashes, _LazyOrder(kt, dictionary), trailing_call=trailing)


def _stable_argsort(codes: np.ndarray, nk: int) -> np.ndarray:
    """np.argsort(codes, kind="stable") for codes in [0, nk): numpy radix-sorts 16-bit ints, so one or two
    16-bit passes beat its merge sort on wider ints about 3x."""
    if nk <= 1 << 16:
        return np.argsort(codes.astype(np.uint16), kind="stable")
    low = np.argsort((codes & 0xFFFF).astype(np.uint16), kind="stable")
    return low[np.argsort((codes[low] >> 16).astype(np.uint16), kind="stable")]


def _strip64(data: bytes, offs: np.ndarray) -> tuple[bytes, np.ndarray]:
    """serialize_groups output (64-bit portable, one bucket each) → the 32-bit portable bytes and sizes."""
    nk = len(offs) - 1
    sizes = np.diff(offs) - _PREFIX64
    if nk == 0:
        return b"", sizes
    buf = np.frombuffer(data, dtype=np.uint8)
    keep = np.ones(len(buf), dtype=bool)
    keep[(offs[:-1, None] + np.arange(_PREFIX64)).ravel()] = False
    return buf[keep].tobytes(), sizes


def _bitmaps32(rows: np.ndarray, bounds: np.ndarray) -> tuple[bytes, np.ndarray]:
    data, offs = serialize_groups(rows.astype(np.int64, copy=False), bounds)
    return _strip64(data, offs)


def write_bitmap(kt: KeyType, values: object, options: Mapping[str, str]) -> bytes:
    """The bitmap file index payload Paimon's Java writer produces for these rows (spec §7)."""
    check_supported(kt)
    version, block_size = parse_bitmap_options(options)
    col = _java_keys(kt, values)
    n = col.n
    if n >= 1 << 31:
        raise UnsupportedTypeError(f"{n} rows: Paimon's row numbers are Java ints")
    enc = pc.dictionary_encode(col.keys)
    dictionary = enc.dictionary
    nk = len(dictionary)
    codes = numpy_of(enc.indices).astype(np.int64, copy=False)
    rows = col.valid_rows if col.valid_rows is not None else np.arange(n, dtype=np.int64)

    # nulls: stored in the body only with 2 or more rows; one null is `-1 - row`
    null_rows = rows[:0]
    if col.valid_rows is not None:
        is_null = np.ones(n, dtype=bool)
        is_null[rows] = False
        null_rows = np.flatnonzero(is_null)
    null_bytes, null_len = b"", 0
    null_offset: int | None = None
    if len(null_rows):
        null_bytes, nsize = _bitmaps32(null_rows, np.array([0, len(null_rows)], dtype=np.int64))
        null_len = int(nsize[0])
        null_offset = 0 if len(null_rows) > 1 else -1 - int(null_rows[0])
    stored_null = null_bytes if len(null_rows) > 1 else b""

    # group rows by key (stable: ascending rows within a key)
    card = np.bincount(codes, minlength=nk).astype(np.int64)
    bounds = np.zeros(nk + 1, dtype=np.int64)
    np.cumsum(card, out=bounds[1:])
    grouped = rows[_stable_argsort(codes, nk)]
    first_row = grouped[bounds[:-1]] if nk else rows[:0]
    trailing = bool(nk) and int(rows[-1]) > int(first_row[nk - 1])
    order = _hash_order(kt, dictionary, trailing) if nk else np.zeros(0, dtype=np.int64)

    # body: the bitmaps of multi-row values in HashMap order
    body_keys = order[card[order] >= 2]
    bcard = card[body_keys]
    sub = np.zeros(len(body_keys) + 1, dtype=np.int64)
    np.cumsum(bcard, out=sub[1:])
    gather = np.repeat(bounds[body_keys] - sub[:-1], bcard) + np.arange(int(sub[-1]), dtype=np.int64)
    body, sizes = _bitmaps32(grouped[gather], sub)
    offsets = -1 - first_row                         # single-row values
    lengths = np.full(nk, -1, dtype=np.int64)
    pos = np.zeros(len(body_keys), dtype=np.int64)
    if len(body_keys):
        np.cumsum(sizes[:-1], out=pos[1:])
    offsets[body_keys] = len(stored_null) + pos
    lengths[body_keys] = sizes

    keys = _key_column(kt, dictionary)
    if version == 1:
        head = pack_v1(n, null_offset, keys.take(order), offsets[order])
    else:
        head = pack_v2(n, null_offset, null_len, keys, offsets, lengths, block_size)
    return b"".join((head, stored_null, body))


def _key_column(kt: KeyType, dictionary: pa.Array) -> KeyColumn:
    if kt.name == "string":
        return KeyColumn(kt, strings=dictionary)
    return KeyColumn(kt, ints=numpy_of(dictionary).astype(np.int64, copy=False))


# ---------------------------------------------------------------- reader

def _literal_key(kt: KeyType, value: object) -> object:
    """A canonical literal → the key Java's reader looks up (None stays None)."""
    if value is None:
        return None
    if kt.name in ("float", "double"):
        v = float(value)  # type: ignore[arg-type]  # a float key's canonical value
        return int(_float_bits(kt, np.array([v], dtype=np.float64))[0])
    key = java_value(kt, value)
    if kt.name == "boolean":
        return bool(key)
    return key


class BitmapReader(PayloadReader):
    """Reads a V1 or V2 bitmap payload; answers like Java's BitmapFileIndex.Reader. The head is parsed on
    construction; V2 index blocks and bitmaps are decoded on first use and cached."""

    index_type = "bitmap"

    def __init__(self, data: bytes | memoryview, kt: KeyType, *, path: str | None = None) -> None:
        check_supported(kt)
        self.kt = kt
        self.path = path
        self._data = memoryview(data).cast("B") if not isinstance(data, bytes) else memoryview(data)
        self.head: Head = parse_head(self._data, kt, path)
        self._cache: dict[object, BitMap] = {}

    # -- bitmaps

    def _bitmap(self, key: object) -> BitMap:
        """The rows of one key (None: the null rows); empty if the file has no such key. Cached; do not mutate."""
        bm = self._cache.get(key)
        if bm is None:
            entry = self.head.find(key)
            bm = BitMap() if entry is None else self._read(entry)
            self._cache[key] = bm
        return bm

    def _read(self, entry: BitmapEntry) -> BitMap:
        offset, length = entry.offset, entry.length
        if offset < 0:
            return BitMap([-1 - offset])
        block = key_label(self.kt, entry.key)
        start = self.head.body_start + offset
        size = len(self._data)
        if start >= size:
            raise TruncatedFileError(f"bitmap at body offset {offset} starts past the end ({size} bytes)",
                                     path=self.path, block=block, offset=start)
        if length == -1:
            piece = self._data[start:]          # V1 / unknown length: read until the bitmap ends
        elif length < 0:
            raise CorruptFileError(f"negative bitmap length {length}", path=self.path, block=block, offset=start)
        elif start + length > size:
            raise TruncatedFileError(f"bitmap of {length} bytes runs past the end ({size} bytes)",
                                     path=self.path, block=block, offset=start)
        else:
            piece = self._data[start:start + length]
        try:
            return BitMap.deserialize(piece)  # type: ignore[arg-type]  # pyroaring reads any buffer
        except Exception as exc:  # pyroaring raises ValueError (or others) on malformed input
            raise CorruptFileError(f"malformed roaring bitmap: {exc}", path=self.path, block=block,
                                   offset=start) from None

    def _union(self, literals: Sequence[object]) -> BitMap:
        keys = [_literal_key(self.kt, v) for v in literals]
        maps = [self._bitmap(k) for k in dict.fromkeys(keys)]
        if not maps:
            return BitMap()
        return BitMap.union(*maps) if len(maps) > 1 else BitMap(maps[0])

    def _flip(self, bm: BitMap) -> BitMap:
        return all_rows(self.head.row_count) ^ bm if bm else all_rows(self.head.row_count)

    # -- predicates (Java: visitEqual = visitIn([v]), visitNotEqual = visitNotIn([v]))

    def eq(self, value: object) -> FileIndexResult:
        return Rows(self._union([value]))

    def isin(self, values: Sequence[object]) -> FileIndexResult:
        return Rows(self._union(values))

    def ne(self, value: object) -> FileIndexResult:
        return Rows(self._flip(self._union([value])))

    def not_in(self, values: Sequence[object]) -> FileIndexResult:
        return Rows(self._flip(self._union(values)))

    def is_null(self) -> FileIndexResult:
        return Rows(self._union([None]))

    def is_not_null(self) -> FileIndexResult:
        return Rows(self._flip(self._union([None])))

    # -- inspection

    def entries(self) -> Iterator[BitmapEntry]:
        """Every value's entry: V1 in file (HashMap) order, V2 in key order (decodes every block)."""
        return self.head.entries()

    def describe(self, max_entries: int | None = None) -> dict[str, object]:
        h = self.head
        out: dict[str, object] = {**super().describe(), "version": h.version, "row_count": h.row_count,
                                  "distinct": h.distinct, "has_null": h.has_null, "body_start": h.body_start}
        null = h.null_entry()
        if null is not None:
            out["null"] = {"offset": null.offset, "length": null.length, "rows": len(self._read(null))}
        if isinstance(h, HeadV2):
            out["blocks"] = [{"first_key": key_json(self.kt, k), "offset": off, "entries": len(h.block(i)[0])}
                             for i, (k, off) in enumerate(zip(h.block_keys, h.block_offsets))]
        keys, offsets, lengths = h.columns()
        if max_entries is not None and len(keys) > max_entries:
            keys, offsets, lengths = keys[:max_entries], offsets[:max_entries], lengths[:max_entries]
            out["entries_truncated"] = True
        shown_keys = [key_json(self.kt, k) for k in keys] if self.kt.name in ("string", "float", "double") else keys
        out["entries"] = [
            {"key": sk, "offset": off, "length": length,
             "rows": 1 if off < 0 else len(self._read(BitmapEntry(k, off, length)))}
            for k, sk, off, length in zip(keys, shown_keys, offsets, lengths)]
        return out
