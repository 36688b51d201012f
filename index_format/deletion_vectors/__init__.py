"""Paimon deletion-vector index files (spec §9), one format family; re-exports only."""
from __future__ import annotations

from index_format.deletion_vectors.index_file import (
    DV_VERSION, MAGIC_32, MAGIC_64, apply_deletion_vector, read_deletion_vector, read_deletion_vectors, write_deletion_vectors,
)

__all__ = ["DV_VERSION", "MAGIC_32", "MAGIC_64", "apply_deletion_vector", "read_deletion_vector", "read_deletion_vectors",
           "write_deletion_vectors"]
