"""A Paimon table's rows selected by `_ROW_ID` ranges through pypaimon: the scan a driver hands Paimon's readers
for a bgix answer (`TableScan.with_row_ranges`), and its read as Arrow.

pypaimon selects whole rows by range, applies the snapshot's deletion vectors and merges data-evolution files, so
the rows read are exactly the live rows of the ranges. It restricts scans to row ranges only on data-evolution
tables; on a row-tracking table without data evolution `read_row_ranges` reads the file groups holding rows of the
ranges and keeps those rows by `_ROW_ID` itself (`live_rows_in`, also the query side's scan of rows no index covers).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc
from pypaimon.utils.range import Range

from service.catalog.catalog_errors import UnsupportedOperationError
from service.tables.paimon.broken_files import naming_data_files, reading_metadata
from service.tables.paimon.build_plan import splits_meeting
from service.tables.paimon.direct_read import direct_batches
from service.tables.paimon.paimon_errors import PaimonColumnNotFoundError
from service.tables.paimon.rows import ROW_ID, batched_table, empty_rows, read_rows, rows_in_ranges
from service.tables.paimon.table import PaimonTable

if TYPE_CHECKING:
    from pypaimon.read.read_builder import ReadBuilder
    from pypaimon.read.split import Split
    from pypaimon.read.table_scan import TableScan

__all__ = ["RowRangeScan", "live_rows_in", "read_row_ranges", "row_range_scan"]

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
    wanted = [c for c in dict.fromkeys(columns if columns is not None else table.table.field_names) if c != ROW_ID]
    if ranges is None:
        return _trim(read_rows(table, wanted), columns)
    return _trim(live_rows_in(table, wanted, [(int(a), int(b)) for a, b in ranges]), columns)


def live_rows_in(table: PaimonTable, columns: Sequence[str], row_ranges: Sequence[tuple[int, int]]) -> pa.Table:
    """The live rows whose `_ROW_ID` lies in `row_ranges` (inclusive), as `columns` + `_ROW_ID`: only the file
    groups holding them are opened (build_plan.splits_meeting), read with pyarrow's direct read where pypaimon adds
    nothing (direct_read), else through pypaimon (deletion vectors applied, data-evolution files merged). What the
    query side's exact-by-scan step and the client's reads of tables without data evolution read.

    Raises:
        PaimonColumnNotFoundError; DataFileError (names the file); CorruptTableMetadataError.
    """
    names = [*dict.fromkeys(c for c in columns if c != ROW_ID), ROW_ID]
    parts = []
    for split in splits_meeting(table, row_ranges):
        direct = direct_batches(table, split, names[:-1])
        part = pa.Table.from_batches(list(direct)) if direct is not None else read_rows(table, names[:-1], [split])
        parts.append(rows_in_ranges(part.select(names), row_ranges))
    if not parts:
        return read_rows(table, names[:-1], []).select(names)
    return pa.concat_tables(parts, promote_options="permissive")


def _builder(table: PaimonTable, columns: Sequence[str]) -> ReadBuilder:
    builder = batched_table(table.table).new_read_builder()
    names = list(table.table.field_names)
    for c in columns:
        if c not in names and c != ROW_ID:
            raise PaimonColumnNotFoundError(c, names, table.location.identifier)
    return builder.with_projection(list(dict.fromkeys(columns)))


def _trim(rows: pa.Table, columns: Sequence[str] | None) -> pa.Table:
    """`rows` with the asked columns only (`_ROW_ID` was read to select rows; kept only when asked for)."""
    names = list(columns) if columns is not None else [c for c in rows.column_names if c != ROW_ID]
    return rows.select(names)
