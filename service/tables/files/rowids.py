"""Stable row ids and the row ranges not yet covered by an index (spec §5.1, §5.2).

A row's id is `first_row_id of its file + its position in the file` (the catalog's row-id map), or
the value of the table's `row_id_column`. Imports pyarrow/numpy, index_format.ranges and service.catalog;
never Spark.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from index_format import ranges
from service.catalog.catalog_errors import RowIdError
from service.catalog.model import DataFile
from service.jobs.partitions import parse_partitions, select_files

__all__ = ["RowRange", "parse_partitions", "select_files", "uncovered_ranges", "check_row_id_column",
           "ranges_of_ids"]


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


def ranges_of_ids(sorted_ids: np.ndarray, covered: Sequence[Sequence[int]], records_per_range: int,
                  column: str) -> list[RowRange]:
    """row_id_column mode: sorted unique ids cut into chunks of `records_per_range`; each range spans its
    chunk's [min, max]. Ids inside an already covered range are an error (a rebuild is needed)."""
    for a, b in covered:
        lo, hi = np.searchsorted(sorted_ids, [a, b + 1])
        if hi > lo:
            raise RowIdError(f"row_id_column {column!r}: new rows reuse id {int(sorted_ids[lo])} already covered "
                             f"by the index range [{a}, {b}]; run with rebuild=true")
    out = []
    for i in range(0, len(sorted_ids), records_per_range):
        chunk = sorted_ids[i:i + records_per_range]
        out.append(RowRange(int(chunk[0]), int(chunk[-1])))
    return out
