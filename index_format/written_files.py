"""What a sorted-index writer hands back (WrittenFile, FileRows), its input checks and the manifest metadata bytes.

Shared by the bitmap and btree global index writers: both cut one global (key, row id) order into files and
describe each with Paimon's `SortedIndexFileMeta` (spec §4). Imports numpy/pyarrow and index_format.{errors,layout,
key_arrays} only.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from index_format.errors import BgixError
from index_format.key_arrays import numpy_of
from index_format.layout import LE_I32

__all__ = ["FileRows", "META_VERSION", "WriterInputError", "WrittenFile", "build_meta_bytes", "check_row_ids"]

META_VERSION = 1
MAX_ROW_ID = (1 << 63) - 1


class WriterInputError(BgixError, ValueError):
    """Keys and row ids that cannot be written (length mismatch, negative or too large ids)."""


@dataclass(frozen=True, slots=True)
class FileRows:
    """The non-null rows one written file holds, ordered by logical key, then row id.

    rows: index of each row in the writer's input keys; row_ids: its (local) row id; key_starts: the
    positions in `rows` where a new distinct key begins (key_starts[0] == 0 when there are rows). The
    file's null rows are not listed (they are in its null bitmap only). Arrays may be views of the
    writer's sort buffers: treat them as read-only.
    """

    rows: np.ndarray
    row_ids: np.ndarray
    key_starts: np.ndarray


@dataclass(frozen=True, slots=True)
class WrittenFile:
    path: str
    file_size: int
    row_count: int
    meta: bytes              # spec §4 bytes
    first_key: object | None
    last_key: object | None
    has_nulls: bool
    value_count: int         # distinct non-null keys; -1 where the family does not count them (fm)
    # which input rows went into this file: only when asked for (write_index_files(..., keep_rows=True))
    rows: FileRows | None = field(default=None, compare=False, repr=False)


def build_meta_bytes(first: bytes | None, last: bytes | None, has_nulls: bool) -> bytes:
    """spec §4 layout from serialized keys (None = null key)."""
    flags = (1 if first is None else 0) | (2 if last is None else 0)
    f = first or b""
    la = last or b""
    return (LE_I32.pack(len(f)) + f + LE_I32.pack(len(la)) + la
            + bytes((1 if has_nulls else 0, META_VERSION, flags)))


def check_row_ids(row_ids: object, n: int) -> np.ndarray:
    """`row_ids` as int64, checked: one per key, integers, 0 ≤ id < 2^63 (local ids, spec §5.1).

    Raises:
        WriterInputError: a length mismatch, non-integers, or ids out of range.
    """
    if isinstance(row_ids, (pa.Array, pa.ChunkedArray)):
        rid = numpy_of(row_ids)
    else:
        rid = np.asarray(row_ids)
    if rid.shape != (n,):
        raise WriterInputError(f"{rid.shape[0] if rid.ndim else 0} row ids for {n} keys")
    if n == 0:
        return rid.astype(np.int64)
    if rid.dtype.kind not in "iu":
        raise WriterInputError(f"row ids must be integers, got {rid.dtype}")
    if rid.dtype.kind == "u":
        if int(rid.max()) > MAX_ROW_ID:
            raise WriterInputError("row ids must be < 2^63")
        return rid.astype(np.int64)
    rid = rid.astype(np.int64, copy=False)
    if int(rid.min()) < 0:
        raise WriterInputError("row ids are local to their row range and must be ≥ 0 (spec §5.1)")
    return rid
