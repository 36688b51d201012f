"""Stable row ids and the row ranges not yet covered by an index (spec §5.1, §5.2).

A row's id is `first_row_id of its file + its position in the file` (the catalog's row-id map), or
the value of the table's `row_id_column`: then ids are values with gaps, and what an index covers is the ids
of the data files it was built from, not the spans of its ranges. Imports pyarrow/numpy, index_format,
service.catalog and this kind's scan; never Spark.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from index_format import ranges
from index_format.storage import Storage
from service.catalog.catalog_errors import RowIdError
from service.catalog.model import DataFile, Snapshot, SourceFile, Table
from service.jobs.partitions import parse_partitions, select_files
from service.tables.files.scan import read_columns

__all__ = ["FileKey", "RowRange", "parse_partitions", "select_files", "uncovered_ranges", "check_row_id_column",
           "check_new_ids", "file_ids", "file_key", "ranges_of_ids"]

FileKey = tuple[str, int, float, int]
"""A data file's version as the row-id map and index snapshots record it: path, size, mtime, first_row_id."""


def file_key(f: DataFile | SourceFile) -> FileKey:
    return (f.path, f.size, f.mtime, f.first_row_id)


@dataclass(frozen=True)
class RowRange:
    """Inclusive row-id range [start, end] built as one unit; its files carry this whole range (spec §5.2)."""

    start: int
    end: int
    partition: dict[str, str] = field(default_factory=dict)

    @property
    def rows(self) -> int:
        return self.end - self.start + 1


def uncovered_ranges(files: Sequence[DataFile], covered: Sequence[Sequence[int]],
                     records_per_range: int) -> list[RowRange]:
    """Position-based ids: the rows of `files` not in `covered`, as contiguous per-partition segments cut
    into ranges of at most `records_per_range` rows (spec §5.2: contiguous, merged, per partition)."""
    covered = ranges.merge(covered)
    pieces: list[tuple[int, int, dict[str, str]]] = []
    for f in sorted(files, key=lambda f: f.first_row_id):
        if f.row_count == 0:
            continue
        for a, b in ranges.subtract([(f.first_row_id, f.end_row_id - 1)], covered):
            if pieces and pieces[-1][1] + 1 == a and pieces[-1][2] == f.partition:
                pieces[-1] = (pieces[-1][0], b, f.partition)
            else:
                pieces.append((a, b, f.partition))
    return [RowRange(s, e, part) for a, b, part in pieces for s, e in ranges.chunks([(a, b)], records_per_range)]


def check_row_id_column(ids: pa.ChunkedArray | pa.Array, column: str) -> np.ndarray:
    """Validate a row_id_column (non-null, non-negative integers, unique) and return it as int64.

    Raises:
        RowIdError: nulls, negatives, non-integers or duplicates, naming the offending value.
    """
    if not pa.types.is_integer(ids.type):
        raise RowIdError(f"row_id_column {column!r} must be an integer column, found {ids.type}")
    if ids.null_count:
        raise RowIdError(f"row_id_column {column!r} has {ids.null_count} null value(s)")
    arr = ids.to_numpy() if isinstance(ids, pa.Array) else ids.to_numpy()
    if pa.types.is_unsigned_integer(ids.type) and len(arr) and int(arr.max()) >= 1 << 63:
        raise RowIdError(f"row_id_column {column!r} has values ≥ 2^63")
    arr = arr.astype(np.int64)
    if len(arr) and int(arr.min()) < 0:
        raise RowIdError(f"row_id_column {column!r} has negative value {int(arr.min())}")
    s = np.sort(arr)
    dup = np.flatnonzero(s[1:] == s[:-1])
    if len(dup):
        raise RowIdError(f"row_id_column {column!r} has duplicate value {int(s[dup[0]])}")
    return s


def file_ids(storage: Storage, table: Table, f: DataFile | SourceFile) -> np.ndarray:
    """A row_id_column table's ids in one data file, sorted (int64), validated as check_row_id_column does.

    Raises:
        RowIdError: as check_row_id_column; DataFileError: the file does not read; FileNotFoundError.
    """
    column = table.row_id_column
    assert column is not None
    size = f.size if f.size >= 0 else None
    return check_row_id_column(read_columns(storage, f.path, table.format, [column], size).column(0), column)


def check_new_ids(sorted_ids: np.ndarray, base: Snapshot | None, live: Sequence[DataFile],
                  read_ids: Callable[[SourceFile], np.ndarray], column: str) -> None:
    """row_id_column mode: the ids a build adds must not be ids the index holds already (two of its files would
    answer for one id). Ids are values with gaps, so an id inside the span of an index range is free unless a
    data file the index was built from holds it (`read_ids` reads one: only when some new id falls inside a
    span). When one of those files was rewritten or removed since, its ids cannot be read any more: every id
    inside the index's ranges is then taken (a rebuild builds them all again).

    Raises:
        RowIdError: naming the id and the index range or data file that holds it.
    """
    if base is None or not len(sorted_ids):
        return
    inside: list[np.ndarray] = []
    first: tuple[int, int, int] | None = None
    for a, b in ranges.merge(base.covered_ranges):
        lo, hi = np.searchsorted(sorted_ids, [a, b + 1])
        if hi > lo:
            inside.append(sorted_ids[lo:hi])
            first = first or (int(sorted_ids[lo]), a, b)
    if first is None:
        return
    now = {file_key(f) for f in live}
    changed = [s for s in base.source_files if file_key(s) not in now]
    if changed:
        x, a, b = first
        raise RowIdError(f"row_id_column {column!r}: new rows use id {x} inside the index range [{a}, {b}], and data "
                         f"file {changed[0].path!r} the index was built from was rewritten or removed since (its ids "
                         "cannot be read to tell whether it held this one); run with rebuild=true")
    candidates = np.concatenate(inside)
    for s in base.source_files:
        clash = np.intersect1d(candidates, read_ids(s), assume_unique=True)
        if len(clash):
            raise RowIdError(f"row_id_column {column!r}: new rows reuse id {int(clash[0])}, which data file "
                             f"{s.path!r} holds already (the index has it); row ids must be unique across the "
                             "table's data files")


def ranges_of_ids(sorted_ids: np.ndarray, records_per_range: int) -> list[RowRange]:
    """row_id_column mode: sorted unique ids cut into chunks of `records_per_range`; each range spans its
    chunk's [min, max] (which may take in ids of older ranges' gaps: a range's files hold only its own ids)."""
    out = []
    for i in range(0, len(sorted_ids), records_per_range):
        chunk = sorted_ids[i:i + records_per_range]
        out.append(RowRange(int(chunk[0]), int(chunk[-1])))
    return out
