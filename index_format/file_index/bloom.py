"""Paimon's bloom-filter file index (`indexType = "bloom-filter"`, spec §8): writer and reader.

Payload: int32 BE numHashFunctions, then the bit set (bit i = bit i & 7 of byte i >> 3); nothing else, so
numBits = (length - 4) * 8. A value's 64-bit hash is FastHash's: XXH64 (seed 0) of a string's UTF-8 bytes,
else Thomas Wang's 64-bit mix of the Java long (integers sign-extended, FLOAT/DOUBLE IEEE bits with NaN
canonical, DATE days, TIME millis, TIMESTAMP millis if p <= 3 else micros). BloomFilter64 then sets or tests
bit (h1 + i * h2, negated if negative) % numBits for i = 1..k, with h1/h2 the low/high 32 bits.

Options `items` (Java int, default 1000000) and `fpp` (default 0.1) size the filter exactly as BloomFilter64
does; values Java would accept but that make no filter (items <= 0, fpp outside (0, 1)) are refused here.

The reader answers only `=` (REMAIN if the value might be present, else SKIP; a NULL literal is REMAIN); IN
is the base class's OR of `=`, everything else REMAIN, as in Java — including Java's reading of the hash
count from signed bytes (a stored count of 128..255 reads as negative: every probe then says "might contain").
"""
from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import xxhash

from index_format.errors import CorruptFileError, InvalidOptionError, TruncatedFileError, UnsupportedTypeError
from index_format.file_index.payload_reader import PayloadReader
from index_format.file_index.result import REMAIN, SKIP, FileIndexResult
from index_format.file_index.values import DOUBLE_NAN_BITS, FLOAT_NAN_BITS, java_value
from index_format.key_arrays import rescale_epoch
from index_format.layout import BE_I32
from index_format.types import KeyType

__all__ = ["BloomFilterReader", "bloom_sizing", "hash_value", "wang_hash", "write_bloom_filter"]

DEFAULT_ITEMS = 1_000_000
DEFAULT_FPP = 0.1
_OPTIONS = ("items", "fpp")
# FastHash supports these; BOOLEAN and DECIMAL throw UnsupportedOperationException in Java.
_LONG_TYPES = ("tinyint", "smallint", "int", "bigint", "date", "time", "timestamp", "timestamp_ltz")
SUPPORTED = ("string", "float", "double", *_LONG_TYPES)
_M64 = (1 << 64) - 1
_LN2 = math.log(2)
_PROBE_CHUNK = 1024
_BOOL_MASK_MAX = 1 << 26     # bits; larger filters are set in place to bound the writer's memory


def check_supported(kt: KeyType) -> None:
    if kt.name not in SUPPORTED:
        raise UnsupportedTypeError(
            f"{kt.spelling.upper()} type is not supported by the bloom-filter file index (Paimon's FastHash "
            "throws UnsupportedOperationException for BOOLEAN and DECIMAL)")


# ---------------------------------------------------------------- options and sizing

def _java_int_cast(x: float) -> int:
    """Java's (int) of a double: NaN → 0, truncation toward zero, saturating."""
    if math.isnan(x):
        return 0
    if x >= 2**31 - 1:
        return 2**31 - 1
    if x <= -(2**31):
        return -(2**31)
    return int(x)


def _wrap32(v: int) -> int:
    return ((v + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)


def _java_round(x: float) -> int:
    """Java's Math.round(double) (floor(x + 0.5), saturating to a long, NaN → 0)."""
    if math.isnan(x):
        return 0
    if math.isinf(x):
        return (1 << 63) - 1 if x > 0 else -(1 << 63)
    return max(-(1 << 63), min((1 << 63) - 1, math.floor(x + 0.5)))


def bloom_sizing(items: int, fpp: float) -> tuple[int, int]:
    """(numBits, numHashFunctions) of Java's BloomFilter64(items, fpp), or InvalidOptionError."""
    nb = _java_int_cast(-items * math.log(fpp) / (_LN2 * _LN2))
    rem = int(math.fmod(nb, 8))                   # Java's % keeps the dividend's sign
    num_bits = _wrap32(nb + (8 - rem))            # always 1..8 bits more, even for a multiple of 8
    if num_bits <= 0:
        raise InvalidOptionError(
            f"bloom-filter items={items}, fpp={fpp!r} give {num_bits} bits; Paimon cannot build that filter "
            "(at most 2^31 - 1 bits)")
    k = max(1, _wrap32(_java_round(num_bits / items * _LN2)))
    return num_bits, k


_INT_RE = re.compile(r"^[+-]?[0-9]+$")


def _parse_options(options: Mapping[str, str]) -> tuple[int, float]:
    unknown = sorted(set(options) - set(_OPTIONS))
    if unknown:
        raise InvalidOptionError(f"bloom-filter has no option {unknown[0]!r}; options: {', '.join(_OPTIONS)}")
    items_text = str(options.get("items", DEFAULT_ITEMS))
    if not _INT_RE.match(items_text) or not 1 <= int(items_text) <= 2**31 - 1:
        raise InvalidOptionError(f"bloom-filter items must be an int from 1 to 2147483647, got {items_text[:40]!r}")
    fpp_text = str(options.get("fpp", DEFAULT_FPP)).strip()
    try:
        fpp = float(fpp_text) if "_" not in fpp_text else math.nan
    except ValueError:
        fpp = math.nan
    if not 0.0 < fpp < 1.0:
        raise InvalidOptionError(f"bloom-filter fpp must be a number between 0 and 1 (exclusive), "
                                 f"got {fpp_text[:40]!r}")
    return int(items_text), fpp


# ---------------------------------------------------------------- hashing

def wang_hash(key: int) -> int:
    """FastHash.getLongHash (not Long.hashCode, which is java_hash.long_hash): Thomas Wang's 64-bit mix in Java long arithmetic (signed result)."""
    k = key & _M64

    def sar(x: int, n: int) -> int:   # Java's >> on a long
        return ((x - (1 << 64) if x >> 63 else x) >> n) & _M64

    k = (~k + (k << 21)) & _M64
    k ^= sar(k, 24)
    k = (k + (k << 3) + (k << 8)) & _M64
    k ^= sar(k, 14)
    k = (k + (k << 2) + (k << 4)) & _M64
    k ^= sar(k, 28)
    k = (k + (k << 31)) & _M64
    return k - (1 << 64) if k >> 63 else k


def _wang_hash_array(k: np.ndarray) -> np.ndarray:
    """wang_hash over an int64 array (numpy int64 shifts and sums wrap like Java longs; >> is arithmetic)."""
    k = k.astype(np.int64, copy=True)
    with np.errstate(over="ignore"):
        k = ~k + (k << 21)
        k ^= k >> 24
        k = k + (k << 3) + (k << 8)
        k ^= k >> 14
        k = k + (k << 2) + (k << 4)
        k ^= k >> 28
        k = k + (k << 31)
    return k


def _xxh64(data: bytes | memoryview) -> int:
    h = xxhash.xxh64_intdigest(data)
    return h - (1 << 64) if h >> 63 else h


def hash_value(kt: KeyType, value: object) -> int:
    """FastHash of one canonical (non-null) value, as a signed Java long."""
    jv = java_value(kt, value)
    if kt.name == "string":
        return _xxh64(jv)  # type: ignore[arg-type]  # a string's java_value: bytes
    return wang_hash(jv)  # type: ignore[arg-type]  # other java_values: ints


def _arrow_longs(kt: KeyType, arr: pa.Array) -> tuple[np.ndarray, np.ndarray] | None:
    """(Java longs to hash, validity) of an Arrow array without a per-row Python step, or None."""
    t, name = arr.type, kt.name
    valid = arr.is_valid().to_numpy(zero_copy_only=False)

    def raw(cast: pa.DataType) -> np.ndarray:
        filled: np.ndarray = pc.fill_null(arr.cast(cast), 0).to_numpy(zero_copy_only=False)
        return filled

    if pa.types.is_integer(t) and not pa.types.is_uint64(t) and name in ("tinyint", "smallint", "int", "bigint",
                                                                          "date", "time"):
        return raw(pa.int64()).astype(np.int64), valid
    if pa.types.is_floating(t) and name in ("float", "double") and t.bit_width in (32, 64):
        # Float.floatToIntBits / Double.doubleToLongBits: the value in the column's width, NaN canonical
        if name == "float":
            f = raw(pa.float32()).astype(np.float32)
            bits = f.view(np.int32).astype(np.int64)
            bits[np.isnan(f)] = FLOAT_NAN_BITS
        else:
            d = raw(pa.float64()).astype(np.float64)
            bits = d.view(np.int64).copy()
            bits[np.isnan(d)] = DOUBLE_NAN_BITS
        return bits, valid
    if pa.types.is_date32(t) and name == "date":
        return raw(pa.int32()).astype(np.int64), valid
    if pa.types.is_time(t) and name == "time":   # Paimon's TIME is millis of the day
        v = raw(pa.int64() if t.bit_width == 64 else pa.int32()).astype(np.int64)
        return rescale_epoch(v, t.unit, 1_000_000), valid
    if pa.types.is_timestamp(t) and name in ("timestamp", "timestamp_ltz"):
        v = raw(pa.int64()).astype(np.int64)
        try:
            return rescale_epoch(v, t.unit, 1_000_000 if kt.time_precision <= 3 else 1_000, checked=True), valid
        except OverflowError:
            return None   # out of a Java long: let the slow path report it
    return None


def _hashes(kt: KeyType, values: object) -> np.ndarray:
    """Signed 64-bit FastHash of every non-null value, in row order."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks() if values.num_chunks != 1 else values.chunk(0)
    if isinstance(values, pa.Array) and pa.types.is_dictionary(values.type):
        values = values.dictionary_decode()
    if isinstance(values, pa.Array):
        if kt.name == "string" and (pa.types.is_string(values.type) or pa.types.is_large_string(values.type)):
            # hash the UTF-8 bytes in place: no per-row str objects
            offsets_type = np.int64 if pa.types.is_large_string(values.type) else np.int32
            bufs = values.buffers()
            offs = np.frombuffer(bufs[1], offsets_type)[values.offset:values.offset + len(values) + 1].tolist()
            data = memoryview(bufs[2]) if bufs[2] is not None else memoryview(b"")
            valid = values.is_valid().to_numpy(zero_copy_only=False).tolist()
            return np.fromiter((_xxh64(data[offs[i]:offs[i + 1]]) for i in range(len(values)) if valid[i]),
                               dtype=np.int64)
        if kt.name != "string":
            fast = _arrow_longs(kt, values)
            if fast is not None:
                longs, valid = fast
                return _wang_hash_array(longs[valid])
        values = values.to_pylist()
    rows = values if isinstance(values, Sequence) else list(values)  # type: ignore[call-overload]  # an iterable
    if kt.name == "string":
        keys = (v.encode("utf-8") if type(v) is str else java_value(kt, v) for v in rows if v is not None)
        return np.fromiter(map(_xxh64, keys), dtype=np.int64)  # type: ignore[arg-type]  # a string's java_value: bytes
    if kt.name in ("tinyint", "smallint", "int", "bigint") and all(v is None or type(v) is int for v in rows):
        try:  # plain ints: one C conversion
            arr = pa.array(rows, type=pa.int64())
            longs = arr.drop_null().to_numpy(zero_copy_only=False)
            _check_width(kt, longs)
            return _wang_hash_array(longs)
        except (OverflowError, pa.ArrowException):
            pass
    longs_list = [java_value(kt, v) for v in rows if v is not None]
    try:
        longs = np.array(longs_list, dtype=np.int64).reshape(len(longs_list))
    except OverflowError:
        raise UnsupportedTypeError(f"a {kt.spelling.upper()} value does not fit a Java long") from None
    _check_width(kt, longs)
    return _wang_hash_array(longs)


_WIDTH = {"tinyint": 8, "smallint": 16, "int": 32, "date": 32, "time": 32}


def _check_width(kt: KeyType, longs: np.ndarray) -> None:
    bits = _WIDTH.get(kt.name)
    if bits and len(longs):
        lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
        if int(longs.min()) < lo or int(longs.max()) > hi:
            bad = int(longs[(longs < lo) | (longs > hi)][0])
            raise UnsupportedTypeError(f"value {bad} does not fit a {kt.spelling.upper()} column")


def _positions(h1: np.ndarray, h2: np.ndarray, i: np.ndarray, num_bits: int) -> np.ndarray:
    """BloomFilter64's bit positions: (h1 + i * h2) in int32 arithmetic, ~c if negative, % numBits.

    h1 / h2 are the low / high 32 bits of the hash as int32, i the 1-based hash function number(s);
    the arguments broadcast (many hashes and one i when writing, one hash and many i when testing).
    """
    with np.errstate(over="ignore"):
        c = h1 + i.astype(np.int32) * h2
    c = np.where(c < 0, ~c, c)
    positions: np.ndarray = c.astype(np.int64) % num_bits
    return positions


def _split(hashes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(int) hash64 and (int) (hash64 >>> 32) — the low and high halves as int32."""
    return hashes.astype(np.int32), (hashes >> 32).astype(np.int32)


# ---------------------------------------------------------------- writing

def write_bloom_filter(kt: KeyType, values: object, options: Mapping[str, str]) -> bytes:
    """The payload Java's BloomFilterFileIndex.Writer writes for these rows (None = NULL, skipped)."""
    check_supported(kt)
    items, fpp = _parse_options(options)
    num_bits, k = bloom_sizing(items, fpp)
    h1, h2 = _split(_hashes(kt, values))
    if num_bits <= _BOOL_MASK_MAX:   # a byte per bit, then packbits: faster than bitwise_or.at
        mask = np.zeros(num_bits, dtype=bool)
        for i in range(1, k + 1):
            mask[_positions(h1, h2, np.array(i), num_bits)] = True
        bits = np.packbits(mask, bitorder="little")
    else:
        bits = np.zeros(num_bits // 8, dtype=np.uint8)
        for i in range(1, k + 1):
            pos = _positions(h1, h2, np.array(i), num_bits)
            np.bitwise_or.at(bits, pos >> 3, np.left_shift(1, pos & 7).astype(np.uint8))
    return BE_I32.pack(k) + bits.tobytes()


# ---------------------------------------------------------------- reading

class BloomFilterReader(PayloadReader):
    """Java's BloomFilterFileIndex.Reader over one payload."""

    index_type = "bloom-filter"

    def __init__(self, data: bytes | memoryview, kt: KeyType, *, path: str | None = None) -> None:
        check_supported(kt)
        self.kt = kt
        self.path = path
        data = bytes(data)
        if len(data) < 4:
            raise TruncatedFileError(f"bloom-filter payload of {len(data)} bytes has no 4-byte header",
                                     path=path, block="bloom-filter header", offset=0)
        self.stored_hash_functions = BE_I32.unpack_from(data)[0]
        # Java rebuilds the count from *signed* bytes: (b0 << 24) + (b1 << 16) + (b2 << 8) + b3
        s = [b - 256 if b >= 128 else b for b in data[:4]]
        self.num_hash_functions = _wrap32((s[0] << 24) + (s[1] << 16) + (s[2] << 8) + s[3])
        self.bits = np.frombuffer(data, np.uint8, offset=4)
        self.num_bits = 8 * len(self.bits)
        if self.num_bits == 0:
            raise CorruptFileError("bloom-filter payload has no bit set (Java would divide by zero)",
                                   path=path, block="bloom-filter bit set", offset=4)
        # A writer never stores more hash functions than bits; refusing more bounds the work per probe.
        if self.num_hash_functions > self.num_bits:
            raise CorruptFileError(
                f"{self.num_hash_functions} hash functions for {self.num_bits} bits",
                path=path, block="bloom-filter header", offset=0)

    def test_hash(self, hash64: int) -> bool:
        """BloomFilter64.testHash (k <= 0, possible only through Java's signed-byte quirk, tests nothing)."""
        h1, h2 = _split(np.array([hash64], dtype=np.int64))
        k = self.num_hash_functions
        for start in range(1, k + 1, _PROBE_CHUNK):   # chunks: stop early at the first clear bit
            pos = _positions(h1, h2, np.arange(start, min(start + _PROBE_CHUNK, k + 1)), self.num_bits)
            if not bool(np.all((self.bits[pos >> 3] >> (pos & 7)) & 1)):
                return False
        return True

    def might_contain(self, value: object) -> bool:
        """Could a row hold this canonical value? (NULL: True — the filter knows nothing about nulls.)"""
        if value is None:
            return True
        return self.test_hash(hash_value(self.kt, value))

    def eq(self, value: object) -> FileIndexResult:
        return REMAIN if self.might_contain(value) else SKIP

    def describe(self) -> dict[str, object]:
        out = {**super().describe(), "hash_functions": self.num_hash_functions, "bits": self.num_bits,
               "bits_set": int(np.unpackbits(self.bits).sum())}
        if self.stored_hash_functions != self.num_hash_functions:
            out["stored_hash_functions"] = self.stored_hash_functions
        return out
