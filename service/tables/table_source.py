"""The table-source seam: what the query side and the build job may ask of a table, whatever its kind.

`TableSource` is implemented once per table kind (service.tables.files: Parquet/ORC/CSV/JSON files managed in
the bgix warehouse; service.tables.paimon: a Paimon table's own snapshots). service.tables.open_source picks
the implementation; nothing else branches on the table format. Imports service.catalog only.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import pyarrow as pa
from pyroaring import BitMap64

from service.catalog.catalog_errors import CorruptDocumentError
from service.jobs.jobspec import JobSpec, RequestedOptions
from service.catalog.model import DataFile, Snapshot, Table, UnreadableFile
from service.tables.build_tasks import BuildOutcome, BuildPlan
from service.tables.table_summary import TableSummary

__all__ = ["IndexViewSource", "OrphanFile", "OrphanReport", "TableSource"]

Range = tuple[int, int]


@dataclass(frozen=True)
class IndexViewSource:
    """A table's indexes, data files and row-id space at one version, in the catalog's shapes.

    `gone`: ids that name no live row (retired data files, Paimon deletion vectors), None when none.
    `retired_ranges`: the retired ids as ranges (bgix tables only; they count as covered).
    `live_ranges`: inclusive ranges of ids that hold rows; None means every id below total_rows.
    `held_files`: with sparse ids (a plain table's own id column: ids are the data files' values), per indexed
    column the live data files its index was built from, unchanged since: it holds their ids and no others.
    The query side reads the ids of those and of all `data_files` (the table's ids) and compares coverage id by
    id (ColumnIndex.held), not by the spans of row ranges.
    `version`: a cheap change token (the Paimon snapshot id) or None when there is none to compare.
    `summary`: the source's own description of the version served, shown with the table when present
    (Paimon: its PaimonView, with fields, index summaries and their origins); None for plain tables.
    `records_key_order`: the index snapshots record their key order in their options (bgix builds do);
    False when other writers' files must be opened to tell.
    `more_indexes`: a column's other indexes (other families), beside the one in `columns`.
    `broken_columns`: indexed columns left out of `columns` because their current snapshot document is
    corrupt; a query naming one must raise its error, queries on other columns go on.
    """

    table: Table
    columns: dict[str, Snapshot]
    data_files: list[DataFile]
    total_rows: int
    sparse: bool
    gone: BitMap64 | None
    retired_ranges: tuple[Range, ...] = ()
    live_ranges: tuple[Range, ...] | None = None
    held_files: Mapping[str, tuple[DataFile, ...]] = field(default_factory=dict)
    version: int | None = None
    summary: TableSummary | None = None
    records_key_order: bool = True
    broken_columns: dict[str, CorruptDocumentError] = field(default_factory=dict)
    # Other indexes of a column in `columns` (another family on the same column), answering leaves its
    # index in `columns` does not, or answers less cheaply (predicate/answer.py picks per leaf).
    more_indexes: dict[str, list[Snapshot]] = field(default_factory=dict)


@dataclass(frozen=True)
class OrphanFile:
    """One orphan index file: where, how big, how old, and why it may go (`job_id`: the dead bgix build that
    wrote it; None: only its age says so)."""

    path: str
    file_name: str
    bytes: int
    age_s: float
    job_id: str | None
    reason: str


@dataclass(frozen=True)
class OrphanReport:
    """What one cleanup removed (with `dry_run`: would remove) and what it kept, by the rule that kept it."""

    location: str
    dry_run: bool
    older_than_s: float
    removed: tuple[OrphanFile, ...]
    kept_referenced: int = 0
    kept_in_flight: int = 0
    kept_young: int = 0
    failed: tuple[str, ...] = ()          # paths whose removal failed (left in place)
    metadata_scanned: int = 0             # snapshot, tag and changelog files read

    @property
    def bytes(self) -> int:
        return sum(f.bytes for f in self.removed)


class TableSource(Protocol):
    """One registered table seen through its kind's adapter.

    Describe, serve, drop and clean (the service):
      source_columns, check_registration, version, view, refresh, unreadable_files, drop_index,
      remove_orphan_files; and per kind (a static method) remove_dead_build_files.
    Build (the service validates with check_build; the build job checks with check_table, then runs
    plan_build (fit_plan for a parallel engine) → each task read in the shared worker through the plan's
    picklable TaskReader (no catalog needed there) → commit_build, or abort_build on any failure):
      check_table, check_build, plan_build, fit_plan, commit_build, abort_build.
    """

    table: Table
    # What the index summary the source shows with the table needs the view for (False: nothing to show).
    shows_summary: bool
    # A column may hold one index per family (builds of different families on it do not conflict).
    indexes_by_family: bool

    def source_columns(self) -> list[str] | None:
        """Column names of the table's data (None while there is none to read a schema from)."""

    def check_registration(self) -> None:
        """What registering the table must refuse (InvalidOptionError, InvalidTableError)."""

    def version(self) -> int | None:
        """The version a fresh view would have, when telling is cheap; None: cannot tell, reload."""

    def view(self) -> IndexViewSource:
        """The table's current indexes, data files and row-id space."""

    def refresh(self) -> None:
        """Rescan what the source does not version itself (a plain table's row-id map)."""

    def unreadable_files(self) -> list[UnreadableFile]:
        """Data files the last scan could not read ([] when the source has no scan of its own)."""

    def arrow_schema(self) -> pa.Schema:
        """The table's columns as the Arrow types read_rows returns (what a query binds a column no index covers
        to); an empty schema while there is no data to read one from."""

    def read_rows(self, columns: Sequence[str], row_ranges: Sequence[Range], *, version: int | None,
                  data_files: Sequence[DataFile]) -> pa.Table:
        """The live rows whose ids lie in `row_ranges` (inclusive), as `columns` plus build_tasks.ROW_ID (int64 ids), at the
        view that saw `version` and `data_files` (Paimon: deletion vectors applied, data-evolution files merged).

        Raises:
            DataFileError naming a file that does not read; a kind's column-not-found error.
        """

    def row_id_values(self, f: DataFile) -> np.ndarray:
        """The row ids of data file `f`'s rows in file order (int64): its own row-id column's values where the
        table has one, else first_row_id onwards."""

    def drop_index(self, column: str) -> None:
        """Drop the column's index; the source data is untouched. Raises IndexNotFoundError."""

    def remove_orphan_files(self, *, older_than_s: float, dry_run: bool) -> OrphanReport:
        """Remove (or list) index files of the table nothing references and no live build may still commit
        (Paimon tables; UnsupportedOperationError for the others)."""

    def check_table(self, spec: JobSpec) -> None:
        """The spec's checks against the table's definition (the build job repeats them; InvalidOptionError)."""

    def check_build(self, spec: JobSpec, requested: RequestedOptions = None) -> JobSpec:
        """Everything a build of `spec` could only fail on later, refused now (the service's 400s); returns
        the spec to run (e.g. the `requested` options, as the request gave them, resolved against the
        existing index's)."""

    def plan_build(self, spec: JobSpec) -> BuildPlan:
        """The build's tasks and ranges (picklable); `plan.message` set when there is nothing to build."""

    def fit_plan(self, plan: BuildPlan, parallelism: int) -> BuildPlan:
        """`plan` cut for an engine with `parallelism` task slots."""

    def commit_build(self, plan: BuildPlan, written: pa.Table, spec: JobSpec) -> BuildOutcome:
        """Make the written index files (build_tasks.RESULT_SCHEMA rows) part of the table's index, atomically."""

    def abort_build(self, plan: BuildPlan | None, written: pa.Table | None, spec: JobSpec) -> None:
        """Remove index files of this build that no commit references (best effort)."""
