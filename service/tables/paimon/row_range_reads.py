"""A Paimon table's rows selected by `_ROW_ID` ranges through pypaimon: the scan a driver hands Paimon's readers
for a bgix answer (`TableScan.with_row_ranges`), and its read as Arrow.

pypaimon selects whole rows by range, applies the snapshot's deletion vectors and merges data-evolution files, so
the rows read are exactly the live rows of the ranges. It restricts scans to row ranges only on data-evolution
tables; on a row-tracking table without data evolution `read_row_ranges` reads the splits whose files hold rows of
the ranges and keeps those rows by `_ROW_ID` itself.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pypaimon.utils.range import Range

from service.catalog.catalog_errors import UnsupportedOperationError
from service.tables.paimon.broken_files import naming_data_files, reading_metadata
from service.tables.paimon.paimon_errors import PaimonColumnNotFoundError
from service.tables.paimon.rows import ROW_ID, batched_table, empty_rows
from service.tables.paimon.table import PaimonTable

if TYPE_CHECKING:
    from pypaimon.read.read_builder import ReadBuilder
    from pypaimon.read.split import Split
    from pypaimon.read.table_scan import TableScan

__all__ = ["RowRangeScan", "read_row_ranges", "row_range_scan"]

_DATA_EVOLUTION = "data-evolution.enabled"


@dataclass(frozen=True)
class RowRangeScan:
    """pypaimon's read builder (projected to `columns`) and its scan restricted to `ranges` (inclusive
    `_ROW_ID` runs; None: every row) of `table`, pinned at the table's snapshot."""

    table: PaimonTable
    ranges: tuple[tuple[int, int], ...] | None
    columns: tuple[str, ...]
    read_builder: ReadBuilder
    scan: TableScan

    def splits(self) -> list[Split]:
        """The splits to read (empty when no range holds a row)."""
        if self.ranges == () or self.table.snapshot is None:
            return []
        with reading_metadata(self.table):
            return list(self.scan.plan().splits())

    def to_arrow(self) -> pa.Table:
        """The live rows of the ranges (deleted rows left out, data-evolution files merged).

        Raises:
            DataFileError: a data file that does not read (names it).
        """
        splits = self.splits()
        if not splits:
            return empty_rows(self.table, list(self.columns)).select(list(self.columns))
        with naming_data_files(self.table, (f for split in splits for f in split.files)):
            rows = self.read_builder.new_read().to_arrow(splits)
        return empty_rows(self.table, list(self.columns)).select(list(self.columns)) if rows is None else rows


def row_range_scan(table: PaimonTable, ranges: Sequence[tuple[int, int]] | None,
                   columns: Sequence[str] | None = None) -> RowRangeScan:
    """The scan of `table`'s rows in `ranges` (inclusive [first, last] `_ROW_ID` runs; None: every row), reading
    `columns` (None: every column; name "_ROW_ID" to get it).

    Raises:
        UnsupportedOperationError: the table has no data evolution (pypaimon refuses row ranges there).
        PaimonColumnNotFoundError: a column the pinned schema does not have.
    """
    if not table.table.options.data_evolution_enabled():
        raise UnsupportedOperationError(
            f"pypaimon restricts scans to row ranges only on data-evolution tables; Paimon table "
            f"{table.location.identifier} does not set '{_DATA_EVOLUTION}=true' (read_row_ranges reads it anyway)")
    names = tuple(dict.fromkeys(columns if columns is not None else table.table.field_names))
    builder = _builder(table, names)
    runs = None if ranges is None else tuple((int(a), int(b)) for a, b in ranges)
    scan = builder.new_scan()
    if runs is not None:   # an empty list selects nothing (pypaimon plans no split)
        scan = scan.with_row_ranges([Range(a, b) for a, b in runs])
    return RowRangeScan(table, runs, names, builder, scan)


def read_row_ranges(table: PaimonTable, ranges: Sequence[tuple[int, int]] | None,
                    columns: Sequence[str] | None = None) -> pa.Table:
    """The live rows of `table` in `ranges`, as Arrow with `columns` (see row_range_scan), on any row-tracking table.

    Raises:
        PaimonColumnNotFoundError; DataFileError (names the file); CorruptTableMetadataError.
    """
    if table.table.options.data_evolution_enabled():
        return row_range_scan(table, ranges, columns).to_arrow()
    wanted = list(dict.fromkeys([*(columns if columns is not None else table.table.field_names), ROW_ID]))
    builder = _builder(table, wanted)
    runs = None if ranges is None else sorted((int(a), int(b)) for a, b in ranges)
    if runs == [] or table.snapshot is None:
        return _trim(empty_rows(table, wanted), columns)
    with reading_metadata(table):
        splits = [s for s in builder.new_scan().plan().splits() if runs is None or _touches(s, runs)]
    if not splits:
        return _trim(empty_rows(table, wanted), columns)
    with naming_data_files(table, (f for split in splits for f in split.files)):
        rows = builder.new_read().to_arrow(splits)
    if rows is None:
        rows = empty_rows(table, wanted)
    return _trim(rows if runs is None else rows.filter(_in_runs(rows.column(ROW_ID), runs)), columns)


def _builder(table: PaimonTable, columns: Sequence[str]) -> ReadBuilder:
    builder = batched_table(table.table).new_read_builder()
    names = list(table.table.field_names)
    for c in columns:
        if c not in names and c != ROW_ID:
            raise PaimonColumnNotFoundError(c, names, table.location.identifier)
    return builder.with_projection(list(dict.fromkeys(columns)))


def _touches(split: Any, runs: list[tuple[int, int]]) -> bool:
    """Whether a split holds a row of `runs`, by its files' `_ROW_ID` spans (a file without one: assume it does)."""
    for f in split.files:
        first = getattr(f, "first_row_id", None)
        if first is None:
            return True
        last = first + f.row_count - 1
        if any(a <= last and first <= b for a, b in runs):
            return True
    return False


def _in_runs(ids: pa.ChunkedArray | pa.Array, runs: list[tuple[int, int]]) -> pa.Array:
    """Per row: is its `_ROW_ID` inside one of the sorted, disjoint `runs`."""
    values = np.asarray(ids.to_numpy(zero_copy_only=False), dtype=np.int64)
    starts = np.array([a for a, _ in runs], dtype=np.int64)
    ends = np.array([b for _, b in runs], dtype=np.int64)
    at = np.searchsorted(starts, values, side="right") - 1
    inside = (at >= 0) & (values <= ends[np.clip(at, 0, None)])
    return pa.array(inside)


def _trim(rows: pa.Table, columns: Sequence[str] | None) -> pa.Table:
    """`rows` with the asked columns only (`_ROW_ID` was read to select rows; kept only when asked for)."""
    names = list(columns) if columns is not None else [c for c in rows.column_names if c != ROW_ID]
    return rows.select(names)
