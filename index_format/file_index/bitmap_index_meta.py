"""Heads of Paimon's bitmap file index (spec §7.5 V1, §7.6 V2): keys, bounded parsing, and packing.

Keys are in Java's internal form (values.py): UTF-8 bytes for STRING, bool for BOOLEAN, ints otherwise (FLOAT /
DOUBLE: the IEEE bits, NaN canonical). On disk every key is big-endian; a STRING key is an int32 byte length
followed by the bytes. Every count read from a file is checked against the bytes left before anything is
allocated or looped over, and every malformed head raises CorruptFileError / TruncatedFileError.
"""
from __future__ import annotations

import math
from collections.abc import Iterator
from typing import NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from index_format.errors import (
    CorruptFileError, InvalidOptionError, TruncatedFileError, UnsupportedTypeError, UnsupportedVersionError,
)
from index_format.file_index.values import DOUBLE_NAN_BITS, FLOAT_NAN_BITS, float_of_bits, java_order
from index_format.key_arrays import arrow_of, numpy_of, string_buffers
from index_format.layout import BE_I32, BE_I32_PAIR, BITMAP_INDEX_HEAD, be_i32s
from index_format.options import shown
from index_format.types import KeyType

__all__ = ["BitmapEntry", "Head", "HeadV1", "HeadV2", "KeyColumn", "check_supported", "key_json",
           "key_label", "pack_v1", "pack_v2", "parse_head", "WIDTH"]

# Encoded width of each fixed-width key (BitmapFileIndexMeta.getSerializeSizeMeasure); STRING is 4 + len.
WIDTH = {"boolean": 1, "tinyint": 1, "smallint": 2, "int": 4, "date": 4, "time": 4, "bigint": 8,
         "timestamp": 8, "timestamp_ltz": 8, "float": 4, "double": 8}
_BE = {1: ">i1", 2: ">i2", 4: ">i4", 8: ">i8"}


def check_supported(kt: KeyType) -> None:
    """BitmapTypeVisitor: DECIMAL (and binary / nested types, which have no KeyType) are refused."""
    if kt.name != "string" and kt.name not in WIDTH:
        raise UnsupportedTypeError(
            f"the bitmap file index does not support type {kt.spelling.upper()} (Paimon's BitmapTypeVisitor "
            "accepts STRING, BOOLEAN, TINYINT, SMALLINT, INT, BIGINT, FLOAT, DOUBLE, DATE, TIME, TIMESTAMP, "
            "TIMESTAMP_LTZ)")


def key_json(kt: KeyType, key: object) -> object:
    """JSON form of a key: strings as text (or {"hex": ...} if not UTF-8), floats as numbers or
    "NaN" / "Infinity" / "-Infinity", everything else as is (ints: days, millis, micros)."""
    if kt.name == "string":
        raw = bytes(key)  # type: ignore[call-overload]  # a string key: bytes
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            return {"hex": raw.hex()}
    if kt.name in ("float", "double"):
        v = float_of_bits(kt, key)  # type: ignore[arg-type]  # a float key: its bits (int)
        if math.isnan(v):
            return "NaN"
        if math.isinf(v):
            return "Infinity" if v > 0 else "-Infinity"
        return v
    return key


def key_label(kt: KeyType, key: object) -> str:
    """How an error message names a key's part of the file: bitmap of key 'x'."""
    return "null bitmap" if key is None else f"bitmap of key {shown(key_json(kt, key), 60)}"


class BitmapEntry(NamedTuple):
    """One value's entry: offset into the body (or -1 - row for a single-row value) and the stored bitmap's
    length (-1: unknown — V1 single-row values and the last V1 bitmap, read up to where it ends)."""

    key: object
    offset: int
    length: int


# ---------------------------------------------------------------- parsing

class _Cursor:
    """Big-endian reads over a buffer, each checked against the end; errors name the file and the part."""

    __slots__ = ("buf", "pos", "path", "block")

    def __init__(self, buf: memoryview, pos: int, path: str | None, block: str) -> None:
        self.buf, self.pos, self.path, self.block = buf, pos, path, block

    def corrupt(self, reason: str) -> CorruptFileError:
        return CorruptFileError(reason, path=self.path, block=self.block, offset=self.pos)

    def need(self, n: int, what: str) -> None:
        if n < 0 or self.pos + n > len(self.buf):
            raise TruncatedFileError(f"{what} needs {n} bytes, {max(len(self.buf) - self.pos, 0)} left",
                                     path=self.path, block=self.block, offset=self.pos)

    def u8(self, what: str) -> int:
        self.need(1, what)
        self.pos += 1
        return self.buf[self.pos - 1]

    def i32(self, what: str) -> int:
        self.need(4, what)
        self.pos += 4
        value: int = BE_I32.unpack_from(self.buf, self.pos - 4)[0]
        return value

    def count(self, what: str, min_size: int) -> int:
        """A non-negative int32 count whose items (at least `min_size` bytes each) fit in what is left."""
        n = self.i32(what)
        if n < 0:
            raise self.corrupt(f"negative {what} {n}")
        self.need(n * min_size, f"{what} {n}")
        return n

    def keys(self, kt: KeyType, n: int, tail: int, what: str) -> tuple[list[object], list[tuple[int, ...]]]:
        """n entries of (key, `tail` int32s)."""
        width = WIDTH.get(kt.name)
        if width is not None:
            self.need(n * (width + 4 * tail), what)
            names = ["k"] + [f"t{i}" for i in range(tail)]
            dt = np.dtype({"names": names, "formats": [_BE[width]] + [">i4"] * tail})
            rec = np.frombuffer(self.buf, dtype=dt, count=n, offset=self.pos)
            self.pos += n * dt.itemsize
            keys = _fixed_keys(kt, rec["k"])
            tails = list(zip(*(rec[f"t{i}"].tolist() for i in range(tail)))) if tail else [()] * n
            return keys, tails
        keys_s: list[object] = []
        tails_s: list[tuple[int, ...]] = []
        unpack_tail = be_i32s(tail).unpack_from
        buf = self.buf
        for _ in range(n):
            length = self.i32(f"{what}: string key length")
            if length < 0:
                raise self.corrupt(f"negative string key length {length}")
            self.need(length + 4 * tail, f"{what}: string key of {length} bytes")
            keys_s.append(bytes(buf[self.pos:self.pos + length]))
            self.pos += length
            tails_s.append(unpack_tail(buf, self.pos))
            self.pos += 4 * tail
        return keys_s, tails_s


def _fixed_keys(kt: KeyType, raw: np.ndarray) -> list[object]:
    """Keys as Java reads them: readBoolean is `byte != 0`; readFloat/readDouble then Float.equals /
    compare work on floatToIntBits, which makes every NaN the canonical one."""
    keys: list[object]
    if kt.name == "boolean":
        keys = (raw != 0).tolist()
        return keys
    if kt.name == "float":
        bits = raw.astype(np.int64)
        bits[((bits & 0x7F800000) == 0x7F800000) & ((bits & 0x007FFFFF) != 0)] = FLOAT_NAN_BITS
        keys = bits.tolist()
        return keys
    if kt.name == "double":
        bits = raw.astype(np.int64)
        exp = np.int64(0x7FF0000000000000)
        nan = ((bits & exp) == exp) & ((bits & np.int64(0x000FFFFFFFFFFFFF)) != 0)
        bits[nan] = DOUBLE_NAN_BITS
        keys = bits.tolist()
        return keys
    keys = raw.astype(np.int64).tolist()
    return keys


def _java_search(orders: list[object], probe: object) -> int:
    """Collections.binarySearch: the index of a match, else -(insertion point) - 1."""
    lo, hi = 0, len(orders) - 1
    while lo <= hi:
        mid = (lo + hi) >> 1
        v = orders[mid]
        if v < probe:  # type: ignore[operator]  # orders of one key type compare
            lo = mid + 1
        elif probe < v:  # type: ignore[operator]  # orders of one key type compare
            hi = mid - 1
        else:
            return mid
    return -(lo + 1)


class Head:
    """What both versions share; `find` gives a key's entry (None: NULL) or None when it is absent."""

    version: int
    row_count: int
    distinct: int
    has_null: bool
    null_offset: int
    body_start: int

    def __init__(self, kt: KeyType, path: str | None) -> None:
        self.kt = kt
        self.path = path

    def null_entry(self) -> BitmapEntry | None:
        raise NotImplementedError

    def find(self, key: object) -> BitmapEntry | None:
        raise NotImplementedError

    def columns(self) -> tuple[list[object], list[int], list[int]]:
        """Keys, offsets and lengths of every entry, in `entries` order (cheaper than the tuples)."""
        raise NotImplementedError

    def entries(self) -> Iterator[BitmapEntry]:
        return map(BitmapEntry, *self.columns())


class HeadV1(Head):
    """V1: every entry in the head, in HashMap order; bitmap lengths are differences of offsets."""

    version = 1

    def __init__(self, kt: KeyType, cur: _Cursor, path: str | None) -> None:
        super().__init__(kt, path)
        self.row_count, self.distinct, self.has_null = _common(cur)
        self.null_offset = cur.i32("null offset") if self.has_null else 0
        cur.block = "V1 entries"
        n = self.distinct   # nonNullBitmapNumber is the entry count
        cur.need(n * (WIDTH.get(kt.name, 4) + 4), f"{n} entries")
        keys, tails = cur.keys(kt, n, 1, "V1 entries")
        self.keys = keys
        self.offsets = [t[0] for t in tails]
        self.body_start = cur.pos
        # BitmapFileIndexMeta.deserialize: the running "last offset" starts at the null offset (0 when
        # there is no null) with key null; a stored bitmap's length is the next stored offset minus its own
        lengths: dict[object, int] = {}
        last_key: object = None
        last_off = self.null_offset
        for key, off in zip(keys, self.offsets):
            if off >= 0:
                if last_off >= 0:
                    lengths[last_key] = off - last_off
                last_key, last_off = key, off
        self._lengths = lengths
        self._index: dict[object, int] | None = None

    def null_entry(self) -> BitmapEntry | None:
        if not self.has_null:
            return None
        return BitmapEntry(None, self.null_offset, self._lengths.get(None, -1))

    def find(self, key: object) -> BitmapEntry | None:
        if key is None:
            return self.null_entry()
        if self._index is None:
            self._index = {k: i for i, k in enumerate(self.keys)}  # duplicates: the last wins, like put()
        i = self._index.get(key)
        if i is None:
            return None
        return BitmapEntry(key, self.offsets[i], self._lengths.get(key, -1))

    def columns(self) -> tuple[list[object], list[int], list[int]]:
        get = self._lengths.get
        return self.keys, self.offsets, [get(k, -1) if off >= 0 else -1 for k, off in zip(self.keys, self.offsets)]


class HeadV2(Head):
    """V2: block first keys in the head; each index block (sorted entries) decoded on first use."""

    version = 2

    def __init__(self, kt: KeyType, cur: _Cursor, path: str | None) -> None:
        super().__init__(kt, path)
        self.row_count, self.distinct, self.has_null = _common(cur)
        self.null_offset, self.null_length = 0, -1
        if self.has_null:
            self.null_offset = cur.i32("null offset")
            self.null_length = cur.i32("null bitmap length")
        cur.block = "V2 block index"
        nb = cur.count("index block count", WIDTH.get(kt.name, 4) + 4)
        keys, tails = cur.keys(kt, nb, 1, "V2 block index")
        self.block_keys = keys
        self.block_orders = _orders(kt, keys)
        self.block_offsets = [t[0] for t in tails]
        body_offset = cur.i32("bitmap body offset")
        self.index_start = cur.pos
        if body_offset < 0:
            raise cur.corrupt(f"negative bitmap body offset {body_offset}")
        cur.need(body_offset, "index block region")
        self.body_start = self.index_start + body_offset
        self._buf = cur.buf
        self._blocks: dict[int, tuple[list[object], list[object], list[tuple[int, ...]]]] = {}

    def block(self, i: int) -> tuple[list[object], list[object], list[tuple[int, ...]]]:
        """Block i's (keys, their Java order, (offset, length) pairs), decoded once."""
        got = self._blocks.get(i)
        if got is None:
            label = f"V2 index block {i}"
            off = self.block_offsets[i]
            cur = _Cursor(self._buf, self.index_start, self.path, label)
            if off < 0:
                raise cur.corrupt(f"negative index block offset {off}")
            cur.need(off, "index block offset")
            cur.pos += off
            n = cur.count("entry count", WIDTH.get(self.kt.name, 4) + 8)
            keys, tails = cur.keys(self.kt, n, 2, label)
            got = (keys, _orders(self.kt, keys), tails)
            self._blocks[i] = got
        return got

    def null_entry(self) -> BitmapEntry | None:
        return BitmapEntry(None, self.null_offset, self.null_length) if self.has_null else None

    def find(self, key: object) -> BitmapEntry | None:
        if key is None:
            return self.null_entry()
        probe = java_order(self.kt, key)
        b = _java_search(self.block_orders, probe)
        b = b if b >= 0 else -2 - b     # the last block whose first key <= probe
        if b < 0:
            return None
        keys, orders, tails = self.block(b)
        i = _java_search(orders, probe)
        if i < 0:
            return None
        return BitmapEntry(keys[i], *tails[i])

    def columns(self) -> tuple[list[object], list[int], list[int]]:
        keys: list[object] = []
        offsets: list[int] = []
        lengths: list[int] = []
        for b in range(len(self.block_keys)):
            bkeys, _, tails = self.block(b)
            keys.extend(bkeys)
            offsets.extend(t[0] for t in tails)
            lengths.extend(t[1] for t in tails)
        return keys, offsets, lengths


def _orders(kt: KeyType, keys: list[object]) -> list[object]:
    """Java compareTo sort keys; only floats need mapping (their bits do not sort like the numbers)."""
    if kt.name in ("float", "double"):
        return [java_order(kt, k) for k in keys]
    return keys


def _common(cur: _Cursor) -> tuple[int, int, bool]:
    rows = cur.i32("row count")
    if rows < 0:
        raise cur.corrupt(f"negative row count {rows}")
    distinct = cur.i32("distinct value count")
    if distinct < 0:
        raise cur.corrupt(f"negative distinct value count {distinct}")
    return rows, distinct, cur.u8("has-null flag") != 0   # DataInput.readBoolean: any non-zero byte


def parse_head(data: memoryview, kt: KeyType, path: str | None) -> Head:
    """The head of a bitmap payload; version other than 1 and 2 → UnsupportedVersionError."""
    cur = _Cursor(data, 0, path, "head")
    version = cur.u8("version")
    if version == 1:
        return HeadV1(kt, cur, path)
    if version == 2:
        return HeadV2(kt, cur, path)
    raise UnsupportedVersionError(f"bitmap file index version {version}; this reader knows versions 1 and 2",
                                  path=path, block="head", offset=0)


# ---------------------------------------------------------------- packing (writer)

class KeyColumn:
    """Distinct keys for the writer: Java ints (fixed width) or a binary Arrow array (STRING)."""

    def __init__(self, kt: KeyType, ints: np.ndarray | None = None, strings: pa.Array | None = None) -> None:
        self.kt = kt
        self.ints = ints
        self.strings = strings

    def __len__(self) -> int:
        return len(self.ints) if self.ints is not None else len(self.strings)  # type: ignore[arg-type]  # else strings

    def take(self, idx: np.ndarray) -> KeyColumn:
        if self.ints is not None:
            return KeyColumn(self.kt, ints=self.ints[idx])
        return KeyColumn(self.kt, strings=self.strings.take(arrow_of(idx)))  # type: ignore[union-attr]  # else strings

    def java_sort(self) -> np.ndarray:
        """Indices in Java compareTo order (V2 entries): unsigned bytes then length; Float/Double.compare."""
        if self.ints is None:
            return numpy_of(pc.array_sort_indices(self.strings)).astype(np.int64)
        rep = self.ints
        if self.kt.name in ("float", "double"):
            mask = np.int64(0x7FFFFFFF if self.kt.name == "float" else 0x7FFFFFFFFFFFFFFF)
            rep = np.where(rep < 0, rep ^ mask, rep)
        return np.argsort(rep, kind="stable")

    def sizes(self) -> np.ndarray:
        """Encoded size of each key."""
        if self.ints is not None:
            return np.full(len(self.ints), WIDTH[self.kt.name], dtype=np.int64)
        _, offs = string_buffers(self.strings)
        return 4 + np.diff(offs)

    def label(self, i: int) -> str:
        if self.ints is not None:
            key: object = bool(self.ints[i]) if self.kt.name == "boolean" else int(self.ints[i])
        else:
            key = self.strings[i].as_py()  # type: ignore[index]  # strings when not ints
        return shown(key_json(self.kt, key), 60)

    def pack(self, tails: list[np.ndarray]) -> bytes:
        """Each key (big-endian; strings length-prefixed) followed by its big-endian int32 tails."""
        n = len(self)
        if self.ints is not None:
            width = WIDTH[self.kt.name]
            dt = np.dtype({"names": ["k"] + [f"t{i}" for i in range(len(tails))],
                           "formats": [_BE[width]] + [">i4"] * len(tails)})
            rec = np.empty(n, dtype=dt)
            rec["k"] = self.ints
            for i, t in enumerate(tails):
                rec[f"t{i}"] = t
            return rec.tobytes()
        arr = self.strings
        data, offs = string_buffers(arr)
        lens = np.diff(offs)
        sizes = 4 + lens + 4 * len(tails)
        starts = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(sizes, out=starts[1:])
        out = np.empty(int(starts[-1]), dtype=np.uint8)
        s = starts[:-1]
        _put_i32(out, s, lens)
        total = int(offs[-1] - offs[0])
        if total:
            pos = np.repeat(s + 4 - (offs[:-1] - offs[0]), lens) + np.arange(total, dtype=np.int64)
            out[pos] = data[int(offs[0]):int(offs[-1])]
        for i, t in enumerate(tails):
            _put_i32(out, s + 4 + lens + 4 * i, t)
        return out.tobytes()


def _put_i32(out: np.ndarray, pos: np.ndarray, values: np.ndarray) -> None:
    v = values.astype(np.int64) & 0xFFFFFFFF
    for j in range(4):
        out[pos + j] = (v >> (24 - 8 * j)) & 0xFF


def _head(version: int, row_count: int, distinct: int, null_offset: int | None) -> bytes:
    return BITMAP_INDEX_HEAD.pack(version, row_count, distinct, null_offset is not None)


def pack_v1(row_count: int, null_offset: int | None, keys: KeyColumn, offsets: np.ndarray) -> bytes:
    """V1 head (spec §7.5): entries in the given (HashMap) order; the body follows."""
    out = _head(1, row_count, len(keys), null_offset)
    if null_offset is not None:
        out += BE_I32.pack(null_offset)   # nullOffset
    return out + keys.pack([offsets])


def pack_v2(row_count: int, null_offset: int | None, null_length: int, keys: KeyColumn, offsets: np.ndarray,
            lengths: np.ndarray, block_size: int) -> bytes:
    """V2 head and index blocks (spec §7.6): entries sorted in Java order, packed greedily into blocks of at
    most `block_size` bytes (BitmapIndexBlock.tryAdd)."""
    out = [_head(2, row_count, len(keys), null_offset)]
    if null_offset is not None:
        out.append(BE_I32_PAIR.pack(null_offset, null_length))   # nullOffset, nullBitmapLength
    order = keys.java_sort()
    skeys = keys.take(order)
    entry_sizes = skeys.sizes() + 8
    bounds = _blocks(skeys, entry_sizes, block_size)
    packed = skeys.pack([offsets[order], lengths[order]])
    pos = np.zeros(len(order) + 1, dtype=np.int64)
    np.cumsum(entry_sizes, out=pos[1:])
    out.append(BE_I32.pack(len(bounds) - 1 if len(order) else 0))
    blocks: list[bytes] = []
    block_off = 0
    firsts = skeys.take(np.asarray(bounds[:-1], dtype=np.int64)) if len(order) else None
    block_offsets = np.zeros(max(len(bounds) - 1, 0), dtype=np.int64)
    for b in range(len(bounds) - 1 if len(order) else 0):
        lo, hi = bounds[b], bounds[b + 1]
        block_offsets[b] = block_off
        blocks.append(BE_I32.pack(hi - lo) + packed[int(pos[lo]):int(pos[hi])])
        block_off += 4 + int(pos[hi] - pos[lo])
    if firsts is not None:
        out.append(firsts.pack([block_offsets]))
    out.append(BE_I32.pack(block_off))
    out.extend(blocks)
    return b"".join(out)


def _blocks(keys: KeyColumn, entry_sizes: np.ndarray, limit: int) -> list[int]:
    """Start index of every block, then len(keys): an entry joins the current block while
    4 + (entries so far) + entry <= limit; an entry that fits no block fails like Java's "index fail"."""
    n = len(entry_sizes)
    if n == 0:
        return [0]
    biggest = int(entry_sizes.max())
    if 4 + biggest > limit:
        i = int(np.argmax(entry_sizes))
        raise InvalidOptionError(
            f"index-block-size {limit} bytes cannot hold the entry of key {keys.label(i)} ({4 + biggest} "
            "bytes with the block's entry count); Paimon's writer fails with 'index fail'")
    if keys.ints is not None:
        per = (limit - 4) // biggest
        return list(range(0, n, per)) + [n]
    starts = [0]
    used = 4
    for i, s in enumerate(entry_sizes.tolist()):
        if used + s > limit:
            starts.append(i)
            used = 4
        used += s
    return starts + [n]
