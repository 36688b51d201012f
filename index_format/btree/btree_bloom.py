"""The optional bloom filter of a btree index file (Paimon's `utils/BloomFilter` over serialized keys): test, build.

Bits are stored as bytes, bit i in byte i >> 3 at 1 << (i & 7). A key's hash is `MurmurHashUtils.hashBytes`
of its serialized bytes (index_format.murmur_hash); probe i (1..k) sets bit |h + i·(h >>> 16)| mod bits, the
sum as a Java int and a negative one bit-flipped. k = max(1, round(bits / expected entries · ln 2)). Writers
size it for a 5% false-positive rate: bytes = ceil((int)(-n · ln 0.05 / ln² 2) / 8). Paimon Java writes none;
pypaimon writes one when `btree-index.bloom-filter.enabled`; bgix does the same. Imports numpy, math and
index_format.murmur_hash.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from index_format.murmur_hash import binary_string_hash, binary_string_hashes

__all__ = ["BLOOM_FPP", "BTreeBloom", "build_bloom"]

BLOOM_FPP = 0.05
_M32 = 0xFFFFFFFF
_CHUNK = 1 << 20


def _hash_count(byte_size: int, expected: int) -> int:
    # Java: Math.max(1, (int) Math.round((double) bitSize / expectEntries * Math.log(2)))
    return max(1, int(math.floor(byte_size * 8 / expected * math.log(2) + 0.5)))


def _positions(hashes: np.ndarray, k: int, bit_size: int) -> np.ndarray:
    """Every probed bit of every hash (int32 hashes → int64 positions, k per hash)."""
    h = hashes.astype(np.int64)
    h2 = (h & _M32) >> 16
    i = np.arange(1, k + 1, dtype=np.int64)
    combined = (h[:, None] + i[None, :] * h2[:, None]) & _M32
    combined = np.where(combined >= 1 << 31, combined - (1 << 32), combined)   # back to a Java int
    combined = np.where(combined < 0, ~combined, combined)
    return (combined % bit_size).ravel()


class BTreeBloom:
    """A btree file's bloom filter, answering "may this serialized key be in the file?"."""

    def __init__(self, bits: bytes, expected_entries: int) -> None:
        self.bits = np.frombuffer(bits, dtype=np.uint8)
        self.expected_entries = expected_entries
        self.bit_size = len(bits) * 8
        self.hash_count = _hash_count(len(bits), expected_entries)

    def might_contain(self, key: bytes) -> bool:
        h = binary_string_hash(key)
        h2 = (h & _M32) >> 16
        bits = self.bits
        for i in range(1, self.hash_count + 1):
            c = (h + i * h2) & _M32
            if c >= 1 << 31:
                c -= 1 << 32
            if c < 0:
                c = ~c
            pos = c % self.bit_size
            if not bits[pos >> 3] & (1 << (pos & 7)):
                return False
        return True


def build_bloom(keys: Sequence[bytes] | None = None, *, hashes: np.ndarray | None = None,
                fpp: float = BLOOM_FPP) -> tuple[bytes, int] | None:
    """(filter bytes, expected entries) over serialized keys (or their murmur hashes); None for no keys."""
    if hashes is None:
        hashes = binary_string_hashes(list(keys or []))
    n = len(hashes)
    if n == 0:
        return None
    optimal_bits = int(-n * math.log(fpp) / (math.log(2) * math.log(2)))
    byte_size = int(math.ceil(optimal_bits / 8.0))
    k = _hash_count(byte_size, n)
    flags = np.zeros(byte_size * 8, dtype=bool)
    hashes = np.asarray(hashes)
    for a in range(0, n, _CHUNK):   # k positions per hash: bounded temporaries
        flags[_positions(hashes[a:a + _CHUNK], k, byte_size * 8)] = True
    return np.packbits(flags, bitorder="little").tobytes(), n
