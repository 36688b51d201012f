"""The TableSource of Paimon tables: the latest Paimon snapshot's own index, data and deletion-vector files;
builds plan Paimon's unindexed ranges, read `[columns…, _ROW_ID]` through pypaimon and commit ONE Paimon
snapshot. Imports pypaimon only through this package's modules.
"""
from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pyarrow as pa

from index_format.errors import InvalidOptionError
from index_format.families import BITMAP
from index_format.options import parse_options
from service.catalog import warehouse_layout
from service.catalog.catalog import Catalog
from service.jobs.inflight_builds import InflightBuild, list_inflight
from service.catalog.catalog_errors import CorruptDocumentError, JobNotFoundError
from service.jobs.jobspec import NOTHING_TO_BUILD, JobSpec, RequestedOptions, one_set_of_options, resolve_options
from service.jobs.liveness import job_process_alive
from service.catalog.model import DataFile, Table, UnreadableFile
from service.jobs.partitions import check_keys, check_matches
from service.tables.build_tasks import ROW_ID, BuildOutcome, BuildPlan, BuildRange, FileNames, job_stamp
from service.tables.paimon.build_plan import PaimonBuildPlan, check_build_columns, cut_tasks, plan_build, read_task
from service.tables.paimon.commit import BuiltIndexFile, commit_index_files, index_dir
from service.tables.paimon.confined_io import check_data_files, naming_refusals, roots_of
from service.tables.paimon.direct_read import direct_batches
from service.tables.paimon.drop import drop_column_indexes
from service.tables.paimon.location import parse_location
from service.tables.paimon.paimon_errors import NotAPaimonTableError
from service.tables.paimon.orphan_files import remove_orphan_index_files
from service.tables.paimon.origins import BGIX_JOB_PROPERTY, OriginsCache
from service.tables.table_summary import TableSummary
from service.tables.paimon.rows import ROW_ID as PAIMON_ROW_ID
from service.tables.paimon.row_range_reads import live_rows_in
from service.tables.paimon.rows import arrow_schema
from service.tables.paimon.table import PaimonTable, open_paimon_table, reopen, table_storage
from service.tables.paimon.view import latest_snapshot_id, load_paimon_view
from service.tables.table_source import IndexViewSource, OrphanReport

__all__ = ["PaimonCommitted", "PaimonSource", "PaimonTaskReader", "balance_tasks", "build_owners", "built_files"]

log = logging.getLogger("bgix.tables.paimon")


@dataclass(frozen=True)
class PaimonCommitted:
    """A build's outcome: the Paimon snapshot that holds the new files (None: the table has no snapshot)."""

    id: int | None
    files: int = 0
    columns: tuple[str, ...] = ()

    def summary(self) -> dict[str, Any]:
        return {"snapshot_id": self.id, "files": self.files, "columns": list(self.columns)}


@dataclass(frozen=True)
class PaimonTaskReader:
    """Reads a task's split once: every requested column plus `_ROW_ID`, straight from its Parquet files where
    they need nothing of pypaimon's reader (direct_read), else with pypaimon's reader."""

    plan: PaimonBuildPlan

    def read(self, task: int) -> Iterator[pa.RecordBatch]:
        t = self.plan.tasks[task]
        columns = list(t.ranges)
        # bitmap writers sort a dictionary-encoded string column by its dictionary
        dictionary = [c for c in columns if self.plan.family_of(c) == BITMAP.name]
        direct = direct_batches(self.plan.table, t.split, columns, dictionary)
        batches = direct if direct is not None else read_task(self.plan.table, t).to_batches()
        for batch in batches:   # per chunk: the builder concatenates per range
            yield batch.rename_columns([ROW_ID if n == PAIMON_ROW_ID else n for n in batch.schema.names])


class PaimonSource:
    """A Paimon table registered with the table directory `<warehouse>/<db>.db/<table>` (see TableSource)."""

    shows_summary = True
    indexes_by_family = True   # a column's indexes are keyed by (column, family)

    def __init__(self, catalog: Catalog, table: Table, shared: OriginsCache | None = None) -> None:
        self.catalog = catalog
        self.table = table
        self.origins = shared if shared is not None else OriginsCache()
        self._pinned: PaimonTable | None = None

    @property
    def roots(self) -> tuple[str, ...] | None:
        """The storage roots (warehouse, BGIX_ALLOWED_ROOTS) every file of the table must lie under (confined_io);
        None without a catalog (a plan made on its own: the table directory and its declared paths)."""
        return None if self.catalog is None else self.catalog.storage.roots.all

    @staticmethod
    def new_shared() -> OriginsCache:
        """Who wrote which index file, cached across views of every Paimon table (snapshots are immutable)."""
        return OriginsCache()

    @staticmethod
    def check_spec(spec: JobSpec) -> JobSpec:
        """Spec rules of Paimon tables: several columns may be built together; `rebuild` builds every range of
        each column's family again and replaces all its index files (whoever wrote them) in one snapshot."""
        return spec

    def _open(self) -> PaimonTable:
        """The table pinned at its latest snapshot, opened once per source (a request asks several questions
        of one snapshot: its columns, then what a build would fail on)."""
        if self._pinned is None:
            self._pinned = open_paimon_table(self.table.location, storage_options=self.catalog.storage.storage_options,
                                             roots=self.roots)
        return self._pinned

    # -- describe ----------------------------------------------------------------------------------
    def source_columns(self) -> list[str] | None:
        """The schema's fields (the partition keys among them)."""
        return [str(n) for n in self._open().table.field_names]

    def check_registration(self) -> None:
        """A Paimon table brings its own row ids (`_ROW_ID`) and partitions; the location must open as one, and
        everything serving it reads (its metadata, index manifest, deletion vectors) must read now, so a table
        that could not be served is never registered.

        Raises:
            InvalidOptionError: a row_id_column or partition_columns given.
            InvalidTableError: not a row-tracking Paimon table (NotAPaimonTableError, RowTrackingDisabledError).
            CorruptTableMetadataError, IndexFormatError (a corrupt deletion vector): see view.
            PathNotAllowedError: the table, a metadata directory, a declared external path or a data file of its
                latest snapshot lies outside the storage roots (symlinks followed; names it).
        """
        given = [f"row_id_column {self.table.row_id_column!r}"] if self.table.row_id_column is not None else []
        given += [f"partition_columns {list(self.table.partition_columns)!r}"] if self.table.partition_columns else []
        if given:
            raise InvalidOptionError(
                f"a Paimon table takes its row ids (_ROW_ID) and partition keys from Paimon: {' and '.join(given)} "
                "cannot be given")
        self._open()
        view = self.view()
        check_data_files((f.path for f in view.data_files), roots_of(self.catalog.storage.roots.all))

    # -- serve -------------------------------------------------------------------------------------
    def version(self) -> int | None:
        """The latest snapshot id (~2 ms); -1 before the first snapshot."""
        sid = latest_snapshot_id(self.table.location, self.catalog.storage.storage_options, roots=self.roots)
        return -1 if sid is None else sid

    def view(self) -> IndexViewSource:
        """The latest snapshot's global index entries (any writer, every family) as Snapshots per column (the
        one covering most rows in `columns`, the others in `more_indexes`), its
        data files as DataFiles (ids = `_ROW_ID`), deletion vectors as `gone`, row ranges as `live_ranges`.

        Raises:
            InvalidTableError (no longer a row-tracking Paimon table), PathNotAllowedError (files outside
            the roots), IndexFormatError (corrupt deletion vector), CorruptTableMetadataError (a schema,
            snapshot, manifest list, manifest or index manifest that does not read; names it).
        """
        t = self.table
        with naming_refusals():   # a metadata file read outside the roots: 403 naming it, whatever pypaimon wrapped
            view = load_paimon_view(t.name, t.location, self.catalog.storage, self.origins)
        return IndexViewSource(
            table=t, columns=view.columns, more_indexes=view.more, data_files=view.data_files,
            total_rows=view.total_rows, sparse=False,
            gone=view.deleted if view.deleted else None, live_ranges=view.row_ranges,
            version=view.snapshot_id if view.snapshot_id is not None else -1, summary=view.summary(),
            records_key_order=False)

    def refresh(self) -> None:
        """Paimon versions its own data files: nothing to rescan."""

    def unreadable_files(self) -> list[UnreadableFile]:
        return []

    def arrow_schema(self) -> pa.Schema:
        return arrow_schema(self._open())

    def read_rows(self, columns: Sequence[str], row_ranges: Sequence[tuple[int, int]], *, version: int | None,
                  data_files: Sequence[DataFile]) -> pa.Table:
        """Through pypaimon at snapshot `version` (the view's; the latest when None or -1)."""
        table = self._open()
        if version is not None and version >= 0 and table.snapshot_id != version:
            table = reopen(table, version)
        rows = live_rows_in(table, columns, row_ranges)
        return rows.rename_columns([ROW_ID if n == PAIMON_ROW_ID else n for n in rows.column_names])

    def row_id_values(self, f: DataFile) -> np.ndarray:
        """A Paimon data file's `_ROW_ID`s run from its first_row_id (row tracking)."""
        return np.arange(f.first_row_id, f.first_row_id + f.row_count, dtype=np.int64)

    def drop_index(self, column: str) -> None:
        """One new Paimon snapshot takes the column's global index entries (every family) out (index deletes, whoever
        wrote them); the files stay for the older snapshots that reference them.

        Raises:
            IndexNotFoundError; InvalidTableError; whatever pypaimon's commit raises.
        """
        drop_column_indexes(self.table.location, column, storage_options=self.catalog.storage.storage_options,
                            roots=self.roots)
        # bgix's statistics of those files live in the warehouse, not in the Paimon table.
        self.catalog.storage.delete(warehouse_layout.stats_dir(self.table.name, column), recursive=True)

    def remove_orphan_files(self, *, older_than_s: float, dry_run: bool) -> OrphanReport:
        """Remove (or with `dry_run` list) the table's orphan global index files: referenced by no snapshot, tag
        or branch, not of a live bgix build, and either of a bgix build that is over or older than
        `older_than_s` (orphan_files states the rule).

        Raises:
            OrphanScanError (the table's metadata cannot be read completely: nothing removed); InvalidTableError.
        """
        pt = open_paimon_table(self.table.location, storage_options=self.catalog.storage.storage_options,
                               roots=self.roots)
        return remove_orphan_index_files(pt, table_storage(pt),
                                         owners=lambda: build_owners(self.catalog, pt.location.table_path),
                                         older_than_s=older_than_s, dry_run=dry_run)

    @staticmethod
    def remove_dead_build_files(catalog: Catalog, marker: InflightBuild) -> OrphanReport | None:
        """The index files (and temp files) a build whose process died or that failed (`marker`) left in its
        table and no snapshot references; by its job stamp only, whatever their age. None when the build turns
        out to be live."""
        try:
            pt = open_paimon_table(marker.location, storage_options=catalog.storage.storage_options,
                                   roots=catalog.storage.roots.all)
        except NotAPaimonTableError:   # the table is gone, and its index directory with it
            return OrphanReport(location=marker.location, dry_run=False, older_than_s=0.0, removed=())
        stamp = job_stamp(marker.job_id)
        if stamp in build_owners(catalog, pt.location.table_path)[0]:
            return None

        def owners() -> tuple[dict[str, str], dict[str, str]]:
            live, _ = build_owners(catalog, pt.location.table_path)
            return live, ({} if stamp in live else {stamp: marker.job_id})

        return remove_orphan_index_files(pt, table_storage(pt), owners=owners, dead_only=True)

    # -- build -------------------------------------------------------------------------------------
    def check_table(self, spec: JobSpec) -> None:
        """Columns and partition keys are checked against the pinned snapshot's schema when planning."""

    def check_build(self, spec: JobSpec, requested: RequestedOptions = None) -> JobSpec:
        """Column types, partition keys, partition specs that match no data file, and options that differ from
        those the column's index was built with, without rebuild (as for plain tables: an incremental build
        keeps the index's options, and one that would build nothing must not answer "up to date" with the
        requested options ignored).

        The index's options are those of the bgix build that committed its newest files (its job record);
        files other writers committed record none, so those are not compared.
        Raises:
            InvalidOptionError: as above (naming the option, the index's value and the requested one, and
                saying to pass rebuild=true); the indexes of two columns built with other values of an option
                both use, which the request leaves out (jobspec.one_set_of_options).
        """
        pt = self._open()
        check_keys(spec.partitions, list(pt.table.partition_keys), self.table.name)
        check_build_columns(pt, spec.columns, spec.partitions, spec.families)
        view = self.view()
        if spec.partitions:
            check_matches(spec.partitions, (f.partition for f in view.data_files), self.table.name)
        if spec.options.rebuild or view.summary is None:
            return spec
        built = self._built_with(view.summary, spec)
        if not built:
            return spec
        # options the request leaves out are the indexes' (one set for all their columns, as on plain tables)
        return replace(spec, options=one_set_of_options({
            column: (spec.families[column], resolve_options(requested, recorded, column, spec.families[column]))
            for column, recorded in built.items()}))

    def _built_with(self, summary: TableSummary, spec: JobSpec) -> dict[str, dict[str, Any]]:
        """column → the options its index (of the family the spec builds) was built with, where bgix knows."""
        out: dict[str, dict[str, Any]] = {}
        for column, fam in spec.families.items():
            origins = [o for i in summary.indexes if i.column == column and i.index_type == fam
                       for o in i.origins if o.writer == "bgix" and o.job_id]
            if not origins:
                continue
            newest = max(origins, key=lambda o: o.snapshot_id or -1)
            try:
                options = self.catalog.get_job(str(newest.job_id)).spec.get("options")
            except (JobNotFoundError, CorruptDocumentError):
                continue   # its record is gone: nothing to compare with
            if isinstance(options, dict):
                out[column] = options
        return out

    def plan_build(self, spec: JobSpec) -> BuildPlan:
        """Per split of the selected partitions, each column's unindexed ranges (Paimon's rule), cut at
        records-per-range; a task reads its split once for every column. Files go to the table's `index/`
        directory (or `global-index.external-path`), named as Paimon names global index files, each uuid
        beginning with the job's stamp (build_tasks.job_stamp: orphan cleanup tells the job's files by it).

        Raises:
            InvalidOptionError (unknown columns or partition keys); InvalidTableError.
        """
        pt = open_paimon_table(self.table.location, storage_options=spec.storage_options, roots=self.roots)
        plan = plan_build(pt, spec.columns, records_per_range=spec.options.records_per_range,
                          partitions=spec.partitions, families=spec.families, rebuild=spec.options.rebuild)
        storage = table_storage(pt, spec.storage_options)
        names = FileNames(index_dir(pt)[0], uuid_only=True, stamp=job_stamp(spec.job_id))
        return _as_build_plan(plan, spec, names, storage.to_config())

    def fit_plan(self, plan: BuildPlan, parallelism: int) -> BuildPlan:
        """The plan cut for an even load over `parallelism` task slots (see balance_tasks)."""
        state: PaimonBuildPlan = plan.state
        records = parse_options(plan.options).records_per_range
        return _as_build_plan(balance_tasks(state, parallelism, records), None, plan.names, plan.storage_config,
                              like=plan)

    def commit_build(self, plan: BuildPlan, written: pa.Table, spec: JobSpec) -> BuildOutcome:
        """The written files as ONE new Paimon snapshot (DEIX source_meta, `bgix.job-id` property) that also
        takes the plan's replaced index files out (stale ones; all of the family's on a rebuild); with
        nothing written or replaced, the scanned snapshot and NOTHING_TO_BUILD.

        Raises:
            CommitConflictError: another writer indexed the same rows, or took a replaced file out, since the scan.
        """
        state: PaimonBuildPlan = plan.state
        columns = tuple(spec.columns)
        if written.num_rows == 0 and not state.replaces:
            return BuildOutcome(PaimonCommitted(state.snapshot_id, 0, columns), NOTHING_TO_BUILD)
        files = built_files(plan, written)
        storage = table_storage(state.table, spec.storage_options)
        sid = commit_index_files(state.table, files, storage, properties={BGIX_JOB_PROPERTY: spec.job_id},
                                 replaces=state.replaces)
        log.info("job %s: committed %d index file(s), replacing %d, as Paimon snapshot %d", spec.job_id,
                 len(files), len(state.replaces), sid)
        return BuildOutcome(PaimonCommitted(sid, len(files), columns))

    def abort_build(self, plan: BuildPlan | None, written: pa.Table | None, spec: JobSpec) -> None:
        """Delete the files tasks wrote before the commit (a failed commit deletes its own; those of a failed
        Spark task stay unreferenced)."""
        if plan is None or written is None:
            return
        storage = table_storage(plan.state.table, spec.storage_options)
        for path in written.column("path").to_pylist():
            try:
                storage.delete(path)
            except Exception:
                log.warning("could not delete uncommitted index file %s", path, exc_info=True)


def build_owners(catalog: Catalog, table_path: str) -> tuple[dict[str, str], dict[str, str]]:
    """(live, dead): job stamp → job id of the catalog's bgix builds that may still commit an index file (an
    in-flight marker naming a running process, or a queued/running record whose process runs or has not
    started; not a build whose marker says it ended), and of the builds of the table at `table_path` that never
    will (every other job the catalog knows of that table)."""
    here = parse_location(table_path).table_path
    locations = {t.name: t.location for t in catalog.list_tables()}

    def same(location: str | None) -> bool:
        try:
            return location is not None and parse_location(location).table_path == here
        except Exception:   # not a Paimon location (a plain table): not this one
            return False

    live: set[str] = set()
    mine: set[str] = set()
    ended: set[str] = set()   # failed builds whose record may still say running
    for m in list_inflight(catalog.storage):
        if m.alive:
            live.add(m.job_id)
        if m.ended:
            ended.add(m.job_id)
        if same(m.location):
            mine.add(m.job_id)
    for job in catalog.list_jobs():
        if job.active and (job.pid is None or job_process_alive(job)) and job.id not in ended:
            live.add(job.id)
        if same(locations.get(job.table)):
            mine.add(job.id)
    return ({job_stamp(j): j for j in live}, {job_stamp(j): j for j in mine - live})


def built_files(plan: BuildPlan, written: pa.Table) -> list[BuiltIndexFile]:
    """The worker's RESULT_SCHEMA rows as the commit's file records (column, field id, partition)."""
    state: PaimonBuildPlan = plan.state
    owner = _range_tasks(state)
    out = []
    for row in written.to_pylist():
        r = plan.ranges[row["range"]]
        task = state.tasks[owner[row["range"]]]
        out.append(BuiltIndexFile(
            column=r.column, field_id=state.field_ids[r.column], partition_values=task.partition_values,
            row_range_start=r.start, row_range_end=r.end, path=row["path"],
            file_name=row["path"].rsplit("/", 1)[-1], file_size=row["file_size"], row_count=row["row_count"],
            index_meta=bytes(row["meta"]), index_type=plan.family_of(r.column)))
    return out


def _range_tasks(plan: PaimonBuildPlan) -> list[int]:
    """For every range of the BuildPlan (in _as_build_plan's order), the task it belongs to."""
    return [i for i, task in enumerate(plan.tasks) for rs in task.ranges.values() for _ in rs]


def _as_build_plan(plan: PaimonBuildPlan, spec: JobSpec | None, names: FileNames, storage_config: dict[str, Any],
                   *, like: BuildPlan | None = None) -> BuildPlan:
    build_ranges: list[BuildRange] = []
    closes: list[tuple[int, ...]] = []
    for task in plan.tasks:
        first = len(build_ranges)
        build_ranges.extend(BuildRange(c, s, e, e - s + 1) for c, rs in task.ranges.items() for s, e in rs)
        closes.append(tuple(range(first, len(build_ranges))))
    common: dict[str, Any] = dict(
        columns=dict(plan.key_types), ranges=tuple(build_ranges), task_rows=tuple(t.rows for t in plan.tasks),
        reader=PaimonTaskReader(plan), names=names, storage_config=storage_config, task_closes=tuple(closes),
        exact_rows=False, progress_by_task=True, sidecars=False, state=plan, families=dict(plan.families),
        message=None if plan.tasks else NOTHING_TO_BUILD)
    if like is not None:
        return replace(like, **common)
    assert spec is not None
    return BuildPlan(options=spec.options.to_dict(), test_hooks=dict(spec.test_hooks), light_driver=True,
                     index_type=spec.index_type, **common)


_MIN_TASK_ROWS = 262_144   # below this a task's fixed cost (scheduling, one more index file) is not worth it
# Two tasks per slot measured faster than one (10M rows in 5 files, local[2]: 12.0 s vs 14.0 s median end to
# end): a slot that drew a small task takes another, and a smaller task holds less memory in its worker.
_TASKS_PER_SLOT = 2


def balance_tasks(plan: PaimonBuildPlan, parallelism: int, max_rows: int) -> PaimonBuildPlan:
    """`plan` cut into about _TASKS_PER_SLOT tasks per task slot of a parallel engine, for an even load.

    Files whose row ranges overlap are never split. Tasks aim at `max_rows` (records-per-range: a task holds
    its rows in memory) but are never cut below _MIN_TASK_ROWS, so with a small records-per-range a task
    holds several ranges (each still within records-per-range); one file group bigger than that stays whole.
    """
    total = sum(t.row_id_count for t in plan.tasks)
    size = -(-total // (max(1, parallelism) * _TASKS_PER_SLOT))
    return cut_tasks(plan, max(_MIN_TASK_ROWS, min(max_rows, size)))

