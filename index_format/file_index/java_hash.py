"""Java `hashCode()` of file-index keys, as java.util.HashMap sees them (spec §7.7).

Keys are in the internal form of `index_format.file_index.values.java_value`. All results are signed int32.

- `binary_string_hash(data)`: Paimon `BinaryString.hashCode()` (MurmurHash3_x86_32 variant, seed 42: 4-byte
  little-endian words, then every tail byte sign-extended through the same word mix, then `h ^= len`, fmix32).
- `string_hash(s)` / `java_string_order(s)`: `java.lang.String.hashCode()` and a sort key giving
  `String.compareTo` order (both over UTF-16 code units).
- `key_hash(kt, jv)`: one key; `key_hashes(kt, keys)`: many keys at once, numpy-vectorized.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from index_format.errors import UnsupportedTypeError
from index_format.layout import BE_U16, LE_U32
from index_format.types import KeyType

__all__ = ["binary_string_hash", "binary_string_hashes", "java_string_order", "key_hash", "key_hashes",
           "long_hash", "string_hash"]

_M32 = 0xFFFFFFFF
_C1 = 0xCC9E2D51
_C2 = 0x1B873593
_SEED = 42
_INT_KINDS = ("tinyint", "smallint", "int", "date", "time")
_LONG_KINDS = ("bigint", "timestamp", "timestamp_ltz", "double")  # double: hash of doubleToLongBits
# Strings with more words than this are hashed one by one (a vector round per word would cost more).
_MAX_VECTOR_WORDS = 64


def _signed32(x: int) -> int:
    x &= _M32
    return x - 0x100000000 if x & 0x80000000 else x


def _mix(h: int, k: int) -> int:
    k = (k * _C1) & _M32
    k = ((k << 15) | (k >> 17)) & _M32
    k = (k * _C2) & _M32
    h ^= k
    h = ((h << 13) | (h >> 19)) & _M32
    return (h * 5 + 0xE6546B64) & _M32


def _fmix(h: int) -> int:
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & _M32
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & _M32
    return h ^ (h >> 16)


def binary_string_hash(data: bytes) -> int:
    """Paimon `BinaryString.hashCode()` of UTF-8 bytes (`MurmurHashUtils.hashBytes`, seed 42)."""
    n = len(data)
    aligned = n - n % 4
    h = _SEED
    for (word,) in LE_U32.iter_unpack(data[:aligned]):
        h = _mix(h, word)
    for b in data[aligned:]:
        h = _mix(h, (b - 256 if b > 127 else b) & _M32)  # tail bytes are sign-extended (int)(byte)
    return _signed32(_fmix(h ^ n))


def _vmix(h: np.ndarray, k: np.ndarray) -> np.ndarray:
    k = k * np.uint32(_C1)
    k = (k << np.uint32(15)) | (k >> np.uint32(17))
    k = k * np.uint32(_C2)
    h = h ^ k
    h = (h << np.uint32(13)) | (h >> np.uint32(19))
    return h * np.uint32(5) + np.uint32(0xE6546B64)


def binary_string_hashes(keys: Sequence[bytes]) -> np.ndarray:
    """`binary_string_hash` of many byte strings at once → int32 array."""
    n = len(keys)
    if n == 0:
        return np.zeros(0, dtype=np.int32)
    lens = np.fromiter(map(len, keys), dtype=np.int64, count=n)
    buf = np.frombuffer(b"".join(keys), dtype=np.uint8)
    starts = np.zeros(n, dtype=np.int64)
    np.cumsum(lens[:-1], out=starts[1:])
    nwords = lens >> 2
    out = np.empty(n, dtype=np.uint32)
    long_ = np.flatnonzero(nwords > _MAX_VECTOR_WORDS)
    for i in long_.tolist():
        out[i] = binary_string_hash(bytes(keys[i])) & _M32

    # Vector rounds: sort by word count (descending) so the strings still active in round j are a prefix.
    short = np.flatnonzero(nwords <= _MAX_VECTOR_WORDS)
    order = short[np.argsort(-nwords[short], kind="stable")]
    s_start, s_len, s_words = starts[order], lens[order], nwords[order]
    h = np.full(len(order), _SEED, dtype=np.uint32)
    max_words = int(s_words[0]) if len(order) else 0
    neg_words = -s_words  # ascending, for searchsorted
    for j in range(max_words):
        cnt = int(np.searchsorted(neg_words, -j, side="left"))  # strings with more than j words
        pos = s_start[:cnt] + 4 * j
        word = (buf[pos].astype(np.uint32) | (buf[pos + 1].astype(np.uint32) << np.uint32(8))
                | (buf[pos + 2].astype(np.uint32) << np.uint32(16))
                | (buf[pos + 3].astype(np.uint32) << np.uint32(24)))
        h[:cnt] = _vmix(h[:cnt], word)
    tail = s_len & 3
    for t in range(3):
        idx = np.flatnonzero(tail > t)
        if len(idx):
            byte = buf[s_start[idx] + 4 * s_words[idx] + t].view(np.int8)
            h[idx] = _vmix(h[idx], byte.astype(np.int32).view(np.uint32))
    h ^= s_len.astype(np.uint32)
    h ^= h >> np.uint32(16)
    h *= np.uint32(0x85EBCA6B)
    h ^= h >> np.uint32(13)
    h *= np.uint32(0xC2B2AE35)
    h ^= h >> np.uint32(16)
    out[order] = h
    return out.view(np.int32)


def string_hash(s: str) -> int:
    """`java.lang.String.hashCode()`: s[0]*31^(n-1) + ... over UTF-16 code units."""
    h = 0
    data = s.encode("utf-16-be", "surrogatepass")
    for (unit,) in BE_U16.iter_unpack(data):
        h = (31 * h + unit) & _M32
    return _signed32(h)


def java_string_order(s: str) -> bytes:
    """Sort key giving `String.compareTo` order (UTF-16 code units, then length) for Python strings."""
    return s.encode("utf-16-be", "surrogatepass")


def long_hash(v: int) -> int:
    """`Long.hashCode(v)` = (int)(v ^ (v >>> 32))."""
    u = v & 0xFFFFFFFFFFFFFFFF
    return _signed32(u ^ (u >> 32))


def key_hash(kt: KeyType, jv: object) -> int:
    """Java `hashCode()` of one key in its internal form (signed int32)."""
    name = kt.name
    if name == "string":
        return binary_string_hash(bytes(jv))  # type: ignore[arg-type]
    if name == "boolean":
        return 1231 if jv else 1237
    if name in _INT_KINDS or name == "float":  # float: the key is already floatToIntBits
        return _signed32(int(jv))  # type: ignore[call-overload]
    if name in _LONG_KINDS:
        return long_hash(int(jv))  # type: ignore[call-overload]
    raise UnsupportedTypeError(f"no Java hash for {kt.spelling} bitmap keys")


def key_hashes(kt: KeyType, keys: np.ndarray | Sequence[object]) -> np.ndarray:
    """`key_hash` of many keys at once → int32 array (numpy-vectorized)."""
    name = kt.name
    if name == "string":
        return binary_string_hashes(list(keys) if isinstance(keys, np.ndarray) else keys)  # type: ignore[arg-type]
    if len(keys) == 0:
        return np.zeros(0, dtype=np.int32)
    if name == "boolean":
        return np.where(np.asarray(keys, dtype=bool), 1231, 1237).astype(np.int32)
    if name in _INT_KINDS or name == "float":
        arr = np.asarray(keys, dtype=np.int64)
        return (arr & _M32).astype(np.uint32).view(np.int32)
    if name in _LONG_KINDS:
        u = np.asarray(keys, dtype=np.int64).view(np.uint64)
        return ((u ^ (u >> np.uint64(32))) & np.uint64(_M32)).astype(np.uint32).view(np.int32)
    raise UnsupportedTypeError(f"no Java hash for {kt.spelling} bitmap keys")
