"""The TableSource of plain tables: the catalog's row-id map and snapshots, data files read with pyarrow.

Imports service.catalog and service.tables; never pypaimon, pyspark or the web layer.
"""
from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace

import numpy as np
import pyarrow as pa

from index_format import ranges
from index_format.errors import InvalidOptionError
from index_format.storage import Storage
from service.catalog.catalog import Catalog
from service.catalog.catalog_errors import DataFileError, UnsupportedOperationError
from service.jobs.inflight_builds import InflightBuild
from service.jobs.jobspec import JobSpec, RequestedOptions, one_set_of_options, resolve_options
from service.catalog.model import DataFile, Snapshot, Table, UnreadableFile
from service.jobs.partitions import check_matches, check_readable, select_files
from service.tables.files.scan import (
    hive_keys, list_data_files, parse_partition, read_columns, read_schema, read_slice, relative_dir,
)
from service.tables.build_tasks import ROW_ID, BuildOutcome, BuildPlan
from service.tables.files.plan import check_family, column_key_type, commit_build, plan_build
from service.tables.files.rowids import file_key
from service.tables.table_source import IndexViewSource, OrphanReport
from service.tables.files.data_files import DataFileMap

__all__ = ["FileSource"]

log = logging.getLogger("bgix.tables.files")
Range = tuple[int, int]


class FileSource:
    """A plain table of the catalog (see TableSource for the methods' contracts)."""

    shows_summary = False
    indexes_by_family = False   # a column has one index: another family replaces it

    def __init__(self, catalog: Catalog, table: Table, shared: object = None) -> None:
        self.catalog = catalog
        self.table = table
        self.files = DataFileMap(catalog)

    @staticmethod
    def new_shared() -> None:
        """Plain tables share nothing between views."""
        return None

    @staticmethod
    def check_spec(spec: JobSpec) -> JobSpec:
        """Spec rules of plain tables: none beyond the spec's own; several columns may be built together, each
        with its family (a column keeps one index: another family replaces it, with rebuild)."""
        return spec

    # -- describe ----------------------------------------------------------------------------------
    def source_columns(self) -> list[str] | None:
        """Column names of the table's data files (schema of the first readable file, plus the partition
        columns), or None while the location holds no data file. Reads one footer only."""
        t = self.table
        for path in list_data_files(self.catalog.storage, t.location, t.format):
            try:
                schema = read_schema(self.catalog.storage, path, t.format)
            except (DataFileError, FileNotFoundError) as exc:  # a broken or vanished file: try the next
                log.warning("table %r: skipping %s", t.name, exc)
                continue
            return [*schema.names, *(c for c in t.partition_columns if c not in schema.names)]
        return None

    def check_registration(self) -> None:
        """Partition columns must be the hive levels (`col=value`) of the data files already there, in
        order; otherwise every file would fail the scan. An empty location is not checked.

        A row_id_column must be a column of the data files already there (else every build fails later).

        Raises:
            InvalidOptionError: naming the column and a file whose path lacks it; a row_id_column the data
                files do not have, with theirs.
        """
        t = self.table
        if t.row_id_column is not None:
            known = self.source_columns()
            if known is not None and t.row_id_column not in known:
                err = InvalidOptionError(f"row_id_column {t.row_id_column!r} is not a column of the table's data "
                                         f"files; their columns: {', '.join(known) or '(none)'}")
                err.option = "row_id_column"  # type: ignore[attr-defined]  # the API names it in the details
                raise err
        if not t.partition_columns:
            return
        for path in list_data_files(self.catalog.storage, t.location, t.format):
            keys = [k for k in hive_keys(relative_dir(t.location, path)) if k in t.partition_columns]
            if keys == t.partition_columns:
                continue
            missing = [c for c in t.partition_columns if c not in keys]
            if missing:
                raise InvalidOptionError(
                    f"partition column {missing[0]!r} is not a directory level ({missing[0]}=value) of data file "
                    f"{path!r} under the location")
            raise InvalidOptionError(
                f"partition columns {t.partition_columns} are not in the order of the directory levels {keys} "
                f"of data file {path!r}")

    # -- serve -------------------------------------------------------------------------------------
    def version(self) -> int | None:
        return None  # the row-id map has no cheap change token: reload after the TTL

    def view(self) -> IndexViewSource:
        """The catalog's current snapshots and row-id map (`gone` = retired files' ids).

        Raises:
            TableNotFoundError; CorruptDocumentError (the row-id map; a corrupt snapshot only lands in
            `broken_columns`).
        """
        t, name = self.table, self.table.name
        live, retired = self.files.live_and_retired(name)
        files = sorted(live, key=lambda f: f.first_row_id)
        total = max((f.first_row_id + f.row_count for f in files), default=0)
        # Ids from a table's own row-id column may have gaps: complements must not return them.
        sparse = t.row_id_column is not None
        gone: tuple[Range, ...] = ()
        if not sparse:  # with a row_id_column, ids are values: a retired file frees no id range
            gone = tuple(ranges.merge((f.first_row_id, f.end_row_id - 1) for f in retired))
        snapshots, broken = self.catalog.load_indexes(name)
        held = {s.column: _held_files(files, s) for s in snapshots} if sparse else {}
        return IndexViewSource(
            table=t, columns={s.column: s for s in snapshots}, data_files=files, total_rows=total,
            sparse=sparse, gone=ranges.to_bitmap(gone) if gone else None, retired_ranges=gone,
            held_files=held, broken_columns=broken)

    def refresh(self) -> None:
        self.files.refresh(self.table.name)

    def unreadable_files(self) -> list[UnreadableFile]:
        return self.files.unreadable(self.table.name)

    def arrow_schema(self) -> pa.Schema:
        """The first live data file's schema (a build reads every file with the types it finds there)."""
        files = sorted(self.files.live(self.table.name), key=lambda f: f.first_row_id)
        if not files:
            return pa.schema([])
        return read_schema(self.catalog.storage, files[0].path, self.table.format, files[0].size)

    def read_rows(self, columns: Sequence[str], row_ranges: Sequence[Range], *, version: int | None,
                  data_files: Sequence[DataFile]) -> pa.Table:
        """`data_files` (the view's live files) read with pyarrow: with dense ids only the files and, in Parquet,
        the row groups overlapping the ranges; with a row_id_column every file's ids first, then the files
        holding ids in the ranges."""
        merged = ranges.merge(row_ranges)
        wanted = list(dict.fromkeys(columns))
        parts = []
        for f in sorted(data_files, key=lambda f: f.first_row_id):
            part = self._rows_in(f, wanted, merged)
            if part is not None and part.num_rows:
                parts.append(part)
        if not parts:
            schema = self.arrow_schema()
            return pa.schema([*(schema.field(c) for c in wanted), pa.field(ROW_ID, pa.int64(), nullable=False)]
                             ).empty_table()
        return pa.concat_tables(parts, promote_options="permissive")

    def _rows_in(self, f: DataFile, columns: list[str], merged: list[Range]) -> pa.Table | None:
        storage, fmt = self.catalog.storage, self.table.format
        if self.table.row_id_column is None:
            inside = ranges.intersect(merged, [(f.first_row_id, f.end_row_id - 1)])
            if not inside:
                return None
            start, stop = inside[0][0] - f.first_row_id, inside[-1][1] - f.first_row_id + 1
            try:
                t = read_slice(storage, f.path, fmt, columns, start, stop, f.size)
            except FileNotFoundError as exc:
                raise DataFileError(f.path, "removed since the table was read") from exc
            ids = np.arange(f.first_row_id + start, f.first_row_id + start + t.num_rows, dtype=np.int64)
        else:
            ids = self.row_id_values(f)
            if not ranges.contains(ids, merged).any():
                return None
            t = read_columns(storage, f.path, fmt, columns, f.size)
        t = t.append_column(pa.field(ROW_ID, pa.int64(), nullable=False), pa.array(ids, type=pa.int64()))
        return t.filter(pa.array(ranges.contains(ids, merged)))

    def row_id_values(self, f: DataFile) -> np.ndarray:
        column = self.table.row_id_column
        if column is None:
            return np.arange(f.first_row_id, f.first_row_id + f.row_count, dtype=np.int64)
        values = read_columns(self.catalog.storage, f.path, self.table.format, [column], f.size).column(0)
        return np.asarray(values.to_numpy(), dtype=np.int64)

    def drop_index(self, column: str) -> None:
        """The catalog removes the index's snapshots and files. Raises IndexNotFoundError."""
        self.catalog.drop_index(self.table.name, column)

    def remove_orphan_files(self, *, older_than_s: float, dry_run: bool) -> OrphanReport:
        """Plain tables: the next build of a column collects its index files no snapshot references.

        Raises:
            UnsupportedOperationError.
        """
        raise UnsupportedOperationError(
            f"table {self.table.name!r} is not a Paimon table: its unreferenced index files are removed by the "
            "next build of their column (catalog garbage collection)")

    @staticmethod
    def remove_dead_build_files(catalog: Catalog, marker: InflightBuild) -> OrphanReport | None:
        """Nothing to remove here (the job's directory goes with the next build's garbage collection): an empty
        report, so the marker goes."""
        return OrphanReport(location=marker.location, dry_run=False, older_than_s=0.0, removed=())

    # -- build -------------------------------------------------------------------------------------
    def check_table(self, spec: JobSpec) -> None:
        """The checks that need the table's definition: the column holds data, the partitions exist.

        Raises:
            InvalidOptionError: a partition column is indexed (its value lives in the directory names),
                or `partitions` names keys the table is not partitioned by.
        """
        t = self.table
        for column in spec.columns:
            if column in t.partition_columns:
                raise InvalidOptionError(f"column {column!r} is a partition column of {t.name!r}; "
                                         "its value lives in the directory names, not in the data files")
        select_files([], t, spec.partitions)

    def check_build(self, spec: JobSpec, requested: RequestedOptions = None) -> JobSpec:
        """Partitions that match no data file or hold unreadable ones; a column type its family cannot hold
        (families.check_column_type, as on Paimon tables); options that differ from a column's existing index's
        without rebuild (an incremental build keeps the index's options), or that would differ between the columns
        of one build (it writes every column with one set of options)."""
        self.check_table(spec)
        check_partitions_match(self.catalog.storage, self.table, spec.partitions)
        # The map as last scanned; the job rescans and checks again (plan.make_plan).
        check_readable(self.files.unreadable(self.table.name), self.table, spec.partitions)
        schema = self.arrow_schema()   # one data file's footer; the job checks again
        resolved = {}
        for column in spec.columns:
            previous = self.catalog.current_snapshot(self.table.name, column)
            check_family(previous, spec, column)
            if column in schema.names:
                column_key_type(schema.field(column).type, spec.families[column], column)
            family = spec.families[column]
            resolved[column] = (family, resolve_options(requested, previous.options if previous else None, column,
                                                        family))
        return replace(spec, options=one_set_of_options(resolved))
    def plan_build(self, spec: JobSpec) -> BuildPlan:
        return plan_build(self.catalog, self.table, spec)

    def fit_plan(self, plan: BuildPlan, parallelism: int) -> BuildPlan:
        return plan  # one task per range already (spec §7.2)

    def commit_build(self, plan: BuildPlan, written: pa.Table, spec: JobSpec) -> BuildOutcome:
        return commit_build(self.catalog, plan, written, spec)

    def abort_build(self, plan: BuildPlan | None, written: pa.Table | None, spec: JobSpec) -> None:
        """The job's directory of every column not committed goes; if this process dies instead, the next build's
        garbage collection takes it."""
        committed = {p.column for p in (plan.state if plan is not None else None) or () if p.committed}
        for column in spec.columns:
            if column in committed:   # a later column's commit failed: this one's files are its index now
                continue
            try:
                self.catalog.storage.delete(self.catalog.job_index_dir(spec.table, column, spec.job_id),
                                            recursive=True)
            except Exception:
                log.warning("could not remove partial files of job %s", spec.job_id, exc_info=True)


def _held_files(files: list[DataFile], snap: Snapshot) -> tuple[DataFile, ...]:
    """The live data files `snap`'s index was built from, unchanged since: with a row_id_column (ids are values,
    not positions) it holds their ids and no others, not those of a file added later or rewritten, whatever the
    spans of its row ranges."""
    built = {file_key(s) for s in snap.source_files}
    return tuple(f for f in files if file_key(f) in built)


def check_partitions_match(storage: Storage, table: Table, partitions: list[dict[str, str]]) -> None:
    """Refuse a partition selection with a spec that matches no data file now (a typo, or a partition not
    written yet): the build would succeed having built nothing. Lists the location; reads no file.

    Raises:
        InvalidOptionError: naming the specs that match nothing.
    """
    if not partitions:
        return
    found = []
    for path in list_data_files(storage, table.location, table.format):
        try:
            found.append(parse_partition(relative_dir(table.location, path), table.partition_columns))
        except Exception:  # noqa: BLE001 - outside the partition layout: the build skips it too
            continue
    check_matches(partitions, found, table.name)
