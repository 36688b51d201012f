"""Paimon's dynamic-bucket index files (`HashIndexFile`, index type "HASH"): per bucket, the key hashes
the bucket holds.

Imports numpy, the standard library and index_format.errors only.
"""
from __future__ import annotations

from index_format.bucket_index.hash_index import HASH_INDEX, describe, read_hash_index, write_hash_index

__all__ = ["HASH_INDEX", "describe", "read_hash_index", "write_hash_index"]
