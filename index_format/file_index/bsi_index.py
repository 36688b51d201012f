"""Paimon's bit-sliced index file index (`indexType = "bsi"`, spec §3 and §10): writer and reader.

Payload (Paimon's integers big-endian, bitmaps portable RoaringBitmap32, run-optimized, no length prefix):

    byte version = 1 · int rowCount · byte hasPositive · [BSI of v >= 0] · byte hasNegative · [BSI of |v|, v < 0]
    BSI: byte version = 1 · long min (always 0) · long max · roaring EBM · int S · roaring slice 0 .. S-1

Values are the Java longs of BitSliceIndexBitmapFileIndex.getValueMapper: integers, DATE days, TIME millis,
TIMESTAMP millis (p <= 3) or micros, DECIMAL unscaled. The reader answers exactly as Java's Reader, quirks
included: comparisons, `!=` and NOT IN never include nulls; a Long.MIN_VALUE literal is special-cased; BETWEEN
is `>= low` AND `<= high`; IN () is an empty bitmap. Two deliberate departures, both "cannot prune" where Java
fails or would answer from a wrapped value: a NULL literal (a NullPointerException in Java) and a literal
outside a Java long (a DECIMAL(p > 18) literal; Java's toUnscaledLong wraps it) answer REMAIN. The writer refuses
Long.MIN_VALUE (Java's writer throws too) and values outside a long (Java would wrap DECIMAL ones silently).
"""
from __future__ import annotations

import struct
from array import array
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyroaring import BitMap

from index_format.errors import (CorruptFileError, InvalidOptionError, TruncatedFileError, UnsupportedTypeError,
                                 UnsupportedVersionError)
from index_format.file_index.payload_reader import PayloadReader
from index_format.file_index.result import REMAIN, FileIndexResult, Rows, all_rows
from index_format.file_index.values import java_value
from index_format.key_arrays import rescale_epoch
from index_format.layout import BE_I8, BE_I32, BE_I64, BE_U8, BSI_INDEX_HEAD, BSI_SLICES_HEAD, LE_U32_PAIR
from index_format.types import KeyType

__all__ = ["BsiReader", "SUPPORTED", "column_keys", "write_bsi"]

VERSION = 1
LONG_MIN = -(1 << 63)
LONG_MAX = (1 << 63) - 1
# Types Java's getValueMapper accepts, with the bit width of their Java value.
SUPPORTED = {"tinyint": 8, "smallint": 16, "int": 32, "date": 32, "time": 32, "bigint": 64,
             "timestamp": 64, "timestamp_ltz": 64, "decimal": 64}
_COOKIE_NO_RUNS, _COOKIE_RUNS = 12346, 12347
_EMPTY_ROARING = LE_U32_PAIR.pack(_COOKIE_NO_RUNS, 0)     # what Java writes for an empty RoaringBitmap32
_ARRAY_MAX = 4096


def check_supported(kt: KeyType) -> None:
    if kt.name not in SUPPORTED:
        raise UnsupportedTypeError(
            f"{kt.spelling.upper()} type is not supported by the bsi file index (Paimon supports TINYINT, "
            "SMALLINT, INT, BIGINT, DATE, TIME, TIMESTAMP, TIMESTAMP_LTZ and DECIMAL)")


# ---------------------------------------------------------------- values → Java longs

def _wrap64(v: int) -> int:
    """Java long overflow (two's complement wrap)."""
    return ((v + (1 << 63)) & ((1 << 64) - 1)) - (1 << 63)


def _arrow_keys(kt: KeyType, arr: pa.Array) -> tuple[np.ndarray, np.ndarray] | None:
    """Java longs and validity of an Arrow array without a per-row Python step, or None (use the slow path)."""
    t = arr.type
    if pa.types.is_dictionary(t):
        return _arrow_keys(kt, arr.dictionary_decode())
    valid = arr.is_valid().to_numpy(zero_copy_only=False)
    name = kt.name
    if pa.types.is_integer(t) and name in ("tinyint", "smallint", "int", "bigint", "date", "time"):
        if pa.types.is_uint64(t) and (pc.max(arr).as_py() or 0) > LONG_MAX:
            return None   # the slow path names the value that does not fit
        raw = pc.fill_null(arr, 0).to_numpy(zero_copy_only=False).astype(np.int64)
        return raw, valid
    if pa.types.is_date(t) and name == "date":
        if pa.types.is_date32(t):
            return pc.fill_null(arr.cast(pa.int32()), 0).to_numpy(zero_copy_only=False).astype(np.int64), valid
        ms = pc.fill_null(arr.cast(pa.int64()), 0).to_numpy(zero_copy_only=False)
        return np.floor_divide(ms, 86_400_000), valid
    if pa.types.is_time(t) and name == "time":
        raw = pc.fill_null(arr.cast(pa.int64() if t.bit_width == 64 else pa.int32()), 0)
        return _rescale(raw.to_numpy(zero_copy_only=False).astype(np.int64), t.unit, 1_000_000), valid
    if pa.types.is_timestamp(t) and name in ("timestamp", "timestamp_ltz"):
        # Arrow stores a naive timestamp as its wall clock read as UTC and an aware one as the instant:
        # both are the epoch value Paimon indexes.
        raw = pc.fill_null(arr.cast(pa.int64()), 0).to_numpy(zero_copy_only=False)
        target = 1_000_000 if kt.time_precision <= 3 else 1_000
        return _rescale(raw, t.unit, target), valid
    return None


def _rescale(raw: np.ndarray, unit: str, target: int) -> np.ndarray:
    try:
        return rescale_epoch(raw, unit, target, checked=True)
    except OverflowError:
        raise UnsupportedTypeError("a timestamp is out of the range of a Java long in the index's unit") from None


def _python_keys(kt: KeyType, values: Sequence[object]) -> tuple[np.ndarray, np.ndarray]:
    name = kt.name
    if name in ("tinyint", "smallint", "int", "bigint") and all(v is None or type(v) is int for v in values):
        try:  # plain ints: one C conversion instead of java_value per row
            arr = pa.array(values, type=pa.int64())
            return pc.fill_null(arr, 0).to_numpy(zero_copy_only=False), arr.is_valid().to_numpy(zero_copy_only=False)
        except (OverflowError, pa.ArrowException):
            pass
    keys = [java_value(kt, v) for v in values]
    valid = np.fromiter((k is not None for k in keys), dtype=bool, count=len(keys))
    ints = [0 if k is None else k for k in keys]
    try:
        return np.array(ints, dtype=np.int64).reshape(len(ints)), valid
    except OverflowError:
        bad = next(k for k in ints if not LONG_MIN <= k <= LONG_MAX)  # type: ignore[operator]  # java_values: ints
        why = " (its unscaled value; Paimon's toUnscaledLong would silently wrap it)" if name == "decimal" else ""
        raise UnsupportedTypeError(
            f"value {bad} of a {kt.spelling.upper()} column does not fit a Java long{why}") from None


def column_keys(kt: KeyType, values: object) -> tuple[np.ndarray, np.ndarray]:
    """(int64 Java values, validity) of a column: a pyarrow (chunked) array or a sequence of canonical values."""
    check_supported(kt)
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks() if values.num_chunks != 1 else values.chunk(0)
    keys: tuple[np.ndarray, np.ndarray] | None = None
    if isinstance(values, pa.Array):
        keys = _arrow_keys(kt, values)
        if keys is None:
            values = values.to_pylist()
    if keys is None:
        if not isinstance(values, Sequence):
            values = list(values)  # type: ignore[call-overload]  # any iterable of values
        keys = _python_keys(kt, values)  # type: ignore[arg-type]  # listed above
    vals, valid = keys
    bits = SUPPORTED[kt.name]
    if bits < 64 and len(vals):
        lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
        live = vals[valid]
        if len(live) and (int(live.min()) < lo or int(live.max()) > hi):
            bad = int(live[(live < lo) | (live > hi)][0])
            raise UnsupportedTypeError(f"value {bad} does not fit a {kt.spelling.upper()} column")
    return vals, valid


# ---------------------------------------------------------------- writing

def _roaring(rows: np.ndarray) -> bytes:
    """Portable RoaringBitmap32 bytes of ascending uint32 row ids after runOptimize, as Java writes them.

    Built from an id array (never from ranges), CRoaring's 32-bit run_optimize picks the same containers as
    Java's (the difference noted in index_format.bitmaps only arises for containers that start as runs).
    """
    if len(rows) == 0:
        return _EMPTY_ROARING
    bm = BitMap(array("I", rows.tobytes()))
    bm.run_optimize()
    return bm.serialize()


def _bsi_bytes(rows: np.ndarray, mags: np.ndarray) -> bytes:
    """One BitSliceIndexRoaringBitmap.Appender (min 0) over uint32 row ids and non-negative int64 values."""
    vmax = int(mags.max())
    nslices = vmax.bit_length()   # 64 - numberOfLeadingZeros(max - min) with min = 0
    parts = [BSI_SLICES_HEAD.pack(VERSION, 0, vmax), _roaring(rows), BE_I32.pack(nslices)]
    if nslices <= 32:   # narrower words: half the memory traffic per slice
        mags = mags.astype(np.uint32)
    bit = np.empty(len(mags), dtype=mags.dtype)
    mask = np.empty(len(mags), dtype=bool)
    for i in range(nslices):
        np.bitwise_and(mags, mags.dtype.type(1 << i), out=bit)
        np.not_equal(bit, 0, out=mask)
        parts.append(_roaring(np.compress(mask, rows)))  # several times faster than rows[mask]
    return b"".join(parts)


def write_bsi(kt: KeyType, values: object, options: Mapping[str, str]) -> bytes:
    """The payload Java's BitSliceIndexBitmapFileIndex.Writer writes for these rows (None = NULL)."""
    if options:
        raise InvalidOptionError(f"the bsi file index takes no options, got {sorted(options)[0]!r}")
    vals, valid = column_keys(kt, values)
    n = len(vals)
    if n > 0x7FFFFFFF:
        raise UnsupportedTypeError(f"{n} rows: a Paimon file index counts rows in a Java int")
    if bool(np.any((vals == LONG_MIN) & valid)):
        row = int(np.flatnonzero((vals == LONG_MIN) & valid)[0])
        raise UnsupportedTypeError(
            f"row {row} holds {LONG_MIN} (Long.MIN_VALUE), which Paimon's bsi index cannot store: Math.abs "
            "overflows and Java's writer fails with 'values should be non-negative'. Use a bitmap or "
            "range-bitmap index for this column, or keep that value out of it.")
    rows = np.arange(n, dtype="<u4")
    pos = valid & (vals >= 0)
    neg = valid & (vals < 0)
    out = [BSI_INDEX_HEAD.pack(VERSION, n)]
    for sel, flip in ((pos, False), (neg, True)):
        if bool(sel.any()):
            mags = -vals[sel] if flip else vals[sel]
            out.append(b"\x01" + _bsi_bytes(np.compress(sel, rows), mags))
        else:
            out.append(b"\x00")
    return b"".join(out)


# ---------------------------------------------------------------- reading

class _Cursor:
    """Sequential big-endian reads with typed errors naming the file and the part being read."""

    def __init__(self, data: bytes, path: str | None) -> None:
        self.data = data
        self.pos = 0
        self.path = path

    def need(self, n: int, block: str) -> None:
        if n > len(self.data) - self.pos:
            raise TruncatedFileError(f"needs {n} bytes, {len(self.data) - self.pos} left",
                                     path=self.path, block=block, offset=self.pos)

    def unpack(self, fmt: struct.Struct, block: str) -> tuple[int, ...]:
        self.need(fmt.size, block)
        out = fmt.unpack_from(self.data, self.pos)
        self.pos += fmt.size
        return out

    def roaring(self, block: str) -> BitMap:
        """A portable RoaringBitmap32 whose size comes from its own header (no length prefix, spec §3)."""
        start = self.pos
        data = self.data
        self.need(4, block)
        cookie = int.from_bytes(data[start:start + 4], "little")
        pos = start + 4
        if cookie & 0xFFFF == _COOKIE_RUNS:
            n = (cookie >> 16) + 1
            self.pos = pos
            self.need((n + 7) // 8, block)
            runs = np.unpackbits(np.frombuffer(data, np.uint8, (n + 7) // 8, pos), bitorder="little")[:n]
            pos += (n + 7) // 8
            has_offsets = n >= 4
        elif cookie == _COOKIE_NO_RUNS:
            self.pos = pos
            self.need(4, block)
            n = int.from_bytes(data[pos:pos + 4], "little")
            pos += 4
            if n > 65536:
                raise CorruptFileError(f"roaring bitmap claims {n} containers (at most 65536)",
                                       path=self.path, block=block, offset=start)
            runs = np.zeros(n, dtype=np.uint8)
            has_offsets = True
        else:
            raise CorruptFileError(f"not a portable roaring bitmap (cookie {cookie:#x})",
                                   path=self.path, block=block, offset=start)
        self.pos = pos
        self.need(4 * n * (2 if has_offsets else 1), block)   # before reading n headers
        cards = np.frombuffer(data, "<u2", 2 * n, pos)[1::2].astype(np.int64) + 1
        pos += 4 * n * (2 if has_offsets else 1)
        for i in range(n):
            self.pos = pos
            if runs[i]:
                self.need(2, block)
                pos += 2 + 4 * int.from_bytes(data[pos:pos + 2], "little")
            else:
                pos += 8192 if cards[i] > _ARRAY_MAX else 2 * int(cards[i])
            if pos > len(data):
                raise TruncatedFileError(f"container {i} of {n} runs past the end",
                                         path=self.path, block=block, offset=start)
        self.pos = pos
        try:
            return BitMap.deserialize(data[start:pos])
        except Exception as exc:  # pyroaring validates and raises ValueError on malformed containers
            raise CorruptFileError(f"malformed roaring bitmap: {exc}", path=self.path, block=block,
                                   offset=start) from None


class _Bsi:
    """One BitSliceIndexRoaringBitmap: min, max, EBM and slices, compared as Java's compare()."""

    def __init__(self, vmin: int, vmax: int, ebm: BitMap, slices: list[BitMap]) -> None:
        self.min, self.max, self.ebm, self.slices = vmin, vmax, ebm, slices

    @classmethod
    def read(cls, cur: _Cursor, name: str) -> _Bsi:
        (version,) = cur.unpack(BE_I8, f"{name} BSI header")
        if version > VERSION:
            raise UnsupportedVersionError(f"bsi bitmap version {version} (this reader knows {VERSION})",
                                          path=cur.path, block=f"{name} BSI header", offset=cur.pos - 1)
        vmin, = cur.unpack(BE_I64, f"{name} BSI header")
        vmax, = cur.unpack(BE_I64, f"{name} BSI header")
        ebm = cur.roaring(f"{name} BSI existence bitmap")
        (count,) = cur.unpack(BE_I32, f"{name} BSI slice count")
        if count < 0:
            raise CorruptFileError(f"negative slice count {count}", path=cur.path,
                                   block=f"{name} BSI slice count", offset=cur.pos - 4)
        # nothing is allocated per count: each slice consumes at least 8 bytes, so a count larger than the
        # payload can hold stops at the first slice that runs past the end
        slices = [cur.roaring(f"{name} BSI slice {i}") for i in range(count)]
        return cls(vmin, vmax, ebm, slices)

    def compare(self, op: str, predicate: int) -> BitMap:
        short = self._min_max(op, predicate)
        return short if short is not None else self._oneil(op, _wrap64(predicate - self.min))

    def _min_max(self, op: str, p: int) -> BitMap | None:
        lo, hi = self.min, self.max
        if op == "eq":
            if lo == hi == p:
                return self.ebm.copy()
            if p < lo or p > hi:
                return BitMap()
        elif op == "ge":
            if p <= lo:
                return self.ebm.copy()
            if p > hi:
                return BitMap()
        elif op == "gt":
            if p < lo:
                return self.ebm.copy()
            if p >= hi:
                return BitMap()
        elif op == "le":
            if p >= hi:
                return self.ebm.copy()
            if p < lo:
                return BitMap()
        elif op == "lt":
            if p > hi:
                return self.ebm.copy()
            if p <= lo:
                return BitMap()
        return None

    def _oneil(self, op: str, p: int) -> BitMap:
        """O'Neil & Quass comparison over the slices, most significant first (found set = EBM)."""
        gt, lt, eq = BitMap(), BitMap(), self.ebm
        want_gt, want_lt = op in ("gt", "ge"), op in ("lt", "le")
        for i in range(len(self.slices) - 1, -1, -1):
            s = self.slices[i]
            if (p >> (i & 63)) & 1:   # Java's long shift uses the low 6 bits of the count
                if want_lt:
                    lt |= eq - s
                eq = eq & s
            else:
                if want_gt:
                    gt |= eq & s
                eq = eq - s
        eq = self.ebm & eq
        if op == "eq":
            return eq
        if op == "gt":
            return gt & self.ebm
        if op == "lt":
            return lt & self.ebm
        if op == "le":
            return (lt | eq) & self.ebm
        return (gt | eq) & self.ebm

    def describe(self) -> dict[str, object]:
        return {"present": True, "min": self.min, "max": self.max, "slices": len(self.slices),
                "ebm_cardinality": len(self.ebm)}


_ABSENT = _Bsi(0, 0, BitMap(), [])   # Java's BitSliceIndexRoaringBitmap.EMPTY


class BsiReader(PayloadReader):
    """Java's BitSliceIndexBitmapFileIndex.Reader over one payload (decoded and validated up front)."""

    index_type = "bsi"

    def __init__(self, data: bytes | memoryview, kt: KeyType, *, path: str | None = None) -> None:
        check_supported(kt)
        self.kt = kt
        self.path = path
        cur = _Cursor(bytes(data), path)
        (version,) = cur.unpack(BE_I8, "bsi header")
        if version > VERSION:   # Java rejects only versions above 1 (signed byte)
            raise UnsupportedVersionError(f"bsi index version {version} (this reader knows {VERSION})",
                                          path=path, block="bsi header", offset=0)
        (self.row_count,) = cur.unpack(BE_I32, "bsi header")
        (has,) = cur.unpack(BE_U8, "bsi header")
        self.positive = _Bsi.read(cur, "positive") if has else _ABSENT   # readBoolean: any non-zero byte
        (has,) = cur.unpack(BE_U8, "negative BSI flag")
        self.negative = _Bsi.read(cur, "negative") if has else _ABSENT
        self.trailing_bytes = len(cur.data) - cur.pos   # Java reads from a stream and ignores the rest

    # -- literals

    def _long(self, value: object) -> int | None:
        """The literal as Java's value mapper gives it; None when it cannot be one (→ REMAIN)."""
        if value is None:
            return None
        v = java_value(self.kt, value)
        if not isinstance(v, int) or not LONG_MIN <= v <= LONG_MAX:
            return None
        return v

    def _not_null(self) -> BitMap:
        return self.positive.ebm | self.negative.ebm

    def _eq_bitmap(self, v: int) -> BitMap:
        if v == LONG_MIN:   # the writer cannot store it, so no row matches
            return BitMap()
        return self.negative.compare("eq", -v) if v < 0 else self.positive.compare("eq", v)

    def _in_bitmap(self, values: Sequence[object]) -> BitMap | None:
        longs = [self._long(v) for v in values]
        if any(v is None for v in longs):
            return None
        out = BitMap()
        for v in longs:
            out |= self._eq_bitmap(v)  # type: ignore[arg-type]  # no None: checked above
        return out

    # -- predicates (Java's visit* methods)

    def eq(self, value: object) -> FileIndexResult:
        return self.isin([value])

    def ne(self, value: object) -> FileIndexResult:
        return self.not_in([value])

    def isin(self, values: Sequence[object]) -> FileIndexResult:
        bm = self._in_bitmap(values)
        return REMAIN if bm is None else Rows(bm)

    def not_in(self, values: Sequence[object]) -> FileIndexResult:
        bm = self._in_bitmap(values)
        return REMAIN if bm is None else Rows(self._not_null() - bm)

    def _lt(self, v: int) -> BitMap:
        if v == LONG_MIN:
            return BitMap()
        if v < 0:
            return self.negative.compare("gt", -v)
        return self.positive.compare("lt", v) | self.negative.ebm

    def _le(self, v: int) -> BitMap:
        if v == LONG_MIN:
            return BitMap()
        if v < 0:
            return self.negative.compare("ge", -v)
        return self.positive.compare("le", v) | self.negative.ebm

    def _gt(self, v: int) -> BitMap:
        if v == LONG_MIN:
            return self._not_null()
        if v < 0:
            return self.positive.ebm | self.negative.compare("lt", -v)
        return self.positive.compare("gt", v)

    def _ge(self, v: int) -> BitMap:
        if v == LONG_MIN:
            return self._not_null()
        if v < 0:
            return self.positive.ebm | self.negative.compare("le", -v)
        return self.positive.compare("ge", v)

    def _cmp(self, fn: Callable[[int], BitMap], value: object) -> FileIndexResult:
        v = self._long(value)
        return REMAIN if v is None else Rows(fn(v))

    def lt(self, value: object) -> FileIndexResult:
        return self._cmp(self._lt, value)

    def le(self, value: object) -> FileIndexResult:
        return self._cmp(self._le, value)

    def gt(self, value: object) -> FileIndexResult:
        return self._cmp(self._gt, value)

    def ge(self, value: object) -> FileIndexResult:
        return self._cmp(self._ge, value)

    def between(self, low: object, high: object) -> FileIndexResult:
        lo, hi = self._long(low), self._long(high)
        if lo is None or hi is None:
            return REMAIN
        return Rows(self._ge(lo) & self._le(hi))

    def is_null(self) -> FileIndexResult:
        # Java flips [0, rowCount) of the union: rows past rowCount (only in a damaged file) stay as they are
        return Rows(self._not_null() ^ all_rows(self.row_count))

    def is_not_null(self) -> FileIndexResult:
        return Rows(self._not_null())

    def describe(self) -> dict[str, object]:
        def part(b: _Bsi) -> dict[str, object]:
            return b.describe() if b is not _ABSENT else {"present": False}
        out = {**super().describe(), "row_count": self.row_count, "positive": part(self.positive),
               "negative": part(self.negative)}
        if self.trailing_bytes:
            out["trailing_bytes"] = self.trailing_bytes
        return out

