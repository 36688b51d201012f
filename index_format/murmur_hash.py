"""Paimon's `MurmurHashUtils.hashBytes` (seed 42) over byte strings: one at a time or numpy-vectorized.

The hash of `BinaryString.hashCode()` (file-index HashMaps) and of the btree index's bloom filter. Java's variant
mixes 4-byte little-endian words, then each tail byte sign-extended through the same word mix, then `h ^= len`
and fmix32. Imports numpy and index_format.layout only.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from index_format.layout import LE_U32, java_int

__all__ = ["binary_string_hash", "binary_string_hashes", "binary_string_hashes_of"]

_M32 = 0xFFFFFFFF
_C1 = 0xCC9E2D51
_C2 = 0x1B873593
_SEED = 42
# Strings with more words than this are hashed one by one (a vector round per word would cost more).
_MAX_VECTOR_WORDS = 64


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
    return java_int(_fmix(h ^ n))


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
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, keys), dtype=np.int64, count=n), out=offsets[1:])
    return binary_string_hashes_of(np.frombuffer(b"".join(keys), dtype=np.uint8), offsets)


def binary_string_hashes_of(buf: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """`binary_string_hash` of buf[offsets[i]:offsets[i + 1]] for every i (uint8 buffer, n + 1 offsets) → int32."""
    n = len(offsets) - 1
    if n <= 0:
        return np.zeros(0, dtype=np.int32)
    starts = offsets[:-1].astype(np.int64)
    lens = np.diff(offsets).astype(np.int64)
    nwords = lens >> 2
    out = np.empty(n, dtype=np.uint32)
    long_ = np.flatnonzero(nwords > _MAX_VECTOR_WORDS)
    for i in long_.tolist():
        out[i] = binary_string_hash(buf[starts[i]:starts[i] + lens[i]].tobytes()) & _M32

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
