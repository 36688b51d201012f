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
from index_format.layout import BE_U16, java_int
from index_format.murmur_hash import binary_string_hash, binary_string_hashes
from index_format.types import KeyType

__all__ = ["binary_string_hash", "binary_string_hashes", "java_string_order", "key_hash", "key_hashes",
           "long_hash", "string_hash"]

_M32 = 0xFFFFFFFF
_INT_KINDS = ("tinyint", "smallint", "int", "date", "time")
_LONG_KINDS = ("bigint", "timestamp", "timestamp_ltz", "double")  # double: hash of doubleToLongBits


def string_hash(s: str) -> int:
    """`java.lang.String.hashCode()`: s[0]*31^(n-1) + ... over UTF-16 code units."""
    h = 0
    data = s.encode("utf-16-be", "surrogatepass")
    for (unit,) in BE_U16.iter_unpack(data):
        h = (31 * h + unit) & _M32
    return java_int(h)


def java_string_order(s: str) -> bytes:
    """Sort key giving `String.compareTo` order (UTF-16 code units, then length) for Python strings."""
    return s.encode("utf-16-be", "surrogatepass")


def long_hash(v: int) -> int:
    """`Long.hashCode(v)` = (int)(v ^ (v >>> 32))."""
    u = v & 0xFFFFFFFFFFFFFFFF
    return java_int(u ^ (u >> 32))


def key_hash(kt: KeyType, jv: object) -> int:
    """Java `hashCode()` of one key in its internal form (signed int32)."""
    name = kt.name
    if name == "string":
        return binary_string_hash(bytes(jv))  # type: ignore[call-overload]  # a string's internal form: bytes
    if name == "boolean":
        return 1231 if jv else 1237
    if name in _INT_KINDS or name == "float":  # float: the key is already floatToIntBits
        return java_int(int(jv))  # type: ignore[call-overload]  # an int key's internal form
    if name in _LONG_KINDS:
        return long_hash(int(jv))  # type: ignore[call-overload]  # a long key's internal form
    raise UnsupportedTypeError(f"no Java hash for {kt.spelling} bitmap keys")


def key_hashes(kt: KeyType, keys: np.ndarray | Sequence[object]) -> np.ndarray:
    """`key_hash` of many keys at once → int32 array (numpy-vectorized)."""
    name = kt.name
    if name == "string":
        strings = list(keys) if isinstance(keys, np.ndarray) else keys
        return binary_string_hashes(strings)  # type: ignore[arg-type]  # string keys: bytes
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
