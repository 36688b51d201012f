"""Where the test tree's reference files live (all inside the repository; see README.md here)."""
from __future__ import annotations

from pathlib import Path

DATA = Path(__file__).resolve().parent
GLOBAL_INDEX = DATA / "global_index"          # bitmap global index files written by Paimon's Java code
DELETION_VECTORS = DATA / "deletion_vectors"  # Paimon deletion-vector index files
FILE_INDEX = DATA / "file_index"              # Paimon's per-data-file index formats
BTREE = DATA / "btree"                        # btree global index files written by pypaimon-rust
FM = DATA / "fm"                              # fm global index files written by pypaimon-rust
GLOBAL_INDEX_RESULT = DATA / "global_index_result"  # GlobalIndexResultSerializer bytes written by Paimon Java
