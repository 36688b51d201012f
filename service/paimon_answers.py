"""A bgix answer handed to Paimon's own reader on the driver: pypaimon's scan restricted to the answer's `_ROW_ID`
ranges (`Client.paimon_scan`), the exact rows read through it (`Client.read_arrow`), and the live ids of row
ranges (what spark_filter needs to leave a Paimon table's deleted rows out of rows no index answered).

The table is opened by the location the service registered, pinned at the Paimon snapshot the service answered
from, so the ranges mean the same rows. An inexact answer's rows are never returned as they are: read_arrow
filters its candidate rows (the answer's rows, the uncovered ranges; every row when the indexes declined) with
the predicate in pyarrow (service.arrow_predicate), paimon_scan refuses it unless the caller allows a superset.
pypaimon is reached only through service.tables.paimon; imported lazily by the client.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import pyarrow as pa
from pyroaring import BitMap64

from index_format.predicate.tree import Node
from index_format.predicate.visitors import referenced_columns
from service.api import schemas
from service.arrow_predicate import filter_table
from service.catalog.catalog_errors import UnsupportedOperationError
from service.predicate_translation import parse_predicate, resolve_column
from service.query_answer import InexactAnswerError, QueryAnswer, row_runs
from service.tables.paimon import ROW_ID, PaimonTable, open_paimon_table
from service.tables.paimon.row_range_reads import RowRangeScan, read_row_ranges, row_range_scan

__all__ = ["PaimonRowScan", "live_row_ids", "open_answered_table", "paimon_row_scan", "read_matching_rows"]

Predicate = Node | Mapping[str, Any] | None


class _Answers(Protocol):
    """What these reads ask of service.client.Client."""

    def table(self, name: str) -> schemas.TablePublic: ...

    def query(self, table: str, where: str | None = None, predicate: Predicate = None,
              result: str = "roaring") -> QueryAnswer: ...


@dataclass(frozen=True)
class PaimonRowScan:
    """pypaimon's read builder and scan of the answer's rows (`answer`), pinned at the snapshot it came from."""

    answer: QueryAnswer
    rows: RowRangeScan

    @property
    def table(self) -> PaimonTable:
        return self.rows.table

    @property
    def read_builder(self) -> Any:
        """pypaimon's ReadBuilder (projected to the columns asked for): `new_read().to_arrow(splits)`."""
        return self.rows.read_builder

    @property
    def scan(self) -> Any:
        """pypaimon's TableScan restricted to the rows (`with_row_ranges`): `plan().splits()`."""
        return self.rows.scan

    def splits(self) -> list[Any]:
        """pypaimon's splits of the rows (none when no row matches)."""
        return self.rows.splits()

    def to_arrow(self) -> pa.Table:
        """The rows the scan selects (exactly the matching rows when the answer is exact)."""
        return self.rows.to_arrow()


def open_answered_table(description: schemas.TablePublic, answer: QueryAnswer | None,
                        catalog_options: Mapping[str, str] | None) -> PaimonTable:
    """The registered Paimon table opened through pypaimon at the snapshot `answer` came from (else the one the
    description names). Raises UnsupportedOperationError for a table that is not a Paimon table."""
    if description.format != "paimon":
        raise UnsupportedOperationError(
            f"table {description.name!r} is a {description.format} table: Paimon's readers read Paimon tables only "
            "(spark_filter reads any table)")
    fallback = description.paimon.snapshot_id if description.paimon else None
    return _open(description.location, answer, fallback, catalog_options)


def _open(location: str, answer: QueryAnswer | None, fallback: int | None,
          catalog_options: Mapping[str, str] | None) -> PaimonTable:
    # a Paimon table's columns are all answered from one snapshot: the answer names it per column
    snapshots = set((answer.snapshots if answer is not None else {}).values())
    snapshot = max(snapshots) if snapshots else fallback
    return open_paimon_table(location, snapshot_id=snapshot, catalog_options=catalog_options)


def paimon_row_scan(client: _Answers, table: str, where: str | None, predicate: Predicate, *,
                    columns: Sequence[str] | None, catalog_options: Mapping[str, str] | None,
                    allow_inexact: bool) -> PaimonRowScan:
    """Client.paimon_scan: see there."""
    answer = client.query(table, where=where, predicate=predicate, result="roaring")
    if not answer.is_exact and not allow_inexact:
        raise InexactAnswerError(answer)
    opened = open_answered_table(client.table(table), answer, catalog_options)
    return PaimonRowScan(answer, row_range_scan(opened, _candidate_runs(answer), columns))


def read_matching_rows(client: _Answers, table: str, where: str | None, predicate: Predicate, *,
                       columns: Sequence[str] | None, catalog_options: Mapping[str, str] | None) -> pa.Table:
    """Client.read_arrow: see there."""
    node = parse_predicate(where, predicate)   # read first: a predicate the service would refuse fails here too
    answer = client.query(table, where=where, predicate=predicate, result="roaring")
    opened = open_answered_table(client.table(table), answer, catalog_options)
    fields = list(opened.table.field_names)
    wanted = list(dict.fromkeys(columns if columns is not None else fields))
    if answer.is_exact:
        return read_row_ranges(opened, _candidate_runs(answer), wanted)
    # Inexact: read the candidate rows with every column the predicate names, keep the rows where it is TRUE.
    named = [resolve_column(c, fields, "pyarrow") for c in sorted(referenced_columns(node))]
    rows = read_row_ranges(opened, _candidate_runs(answer), list(dict.fromkeys([*wanted, *named])))
    return filter_table(rows, node).select(wanted)


def live_row_ids(location: str, answer: QueryAnswer, ranges: Sequence[tuple[int, int]] | None,
                 catalog_options: Mapping[str, str] | None) -> BitMap64:
    """The `_ROW_ID`s of `ranges` (None: the whole table) of the Paimon table at `location` that hold a live row at
    the answer's snapshot: its deletion vectors applied by pypaimon, which reads only the `_ROW_ID`s."""
    opened = _open(location, answer, None, catalog_options)
    ids = read_row_ranges(opened, ranges, [ROW_ID]).column(ROW_ID)
    return BitMap64(ids.to_numpy(zero_copy_only=False).astype("uint64"))


def _candidate_runs(answer: QueryAnswer) -> list[tuple[int, int]] | None:
    """The row-id runs to read for `answer`: its rows when exact, else its candidates (None: every row)."""
    if answer.declined:
        return None
    assert answer.rows is not None
    return row_runs(answer.candidates(()))
