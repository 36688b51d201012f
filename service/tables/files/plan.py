"""A plain table's build: which files to read, which row ranges to build, and the snapshots that result.

plan_build turns the catalog's row-id map into a BuildPlan for one or several columns (one task per range, or per
file with a row_id_column; columns whose ranges read the same file slices share a task); commit_build commits the
written files as each column's next catalog snapshot (or, with nothing to build, records staleness). Imports
index_format, service.catalog and service.tables.
"""
from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypedDict

import numpy as np
import pyarrow as pa

from index_format import ranges as row_ranges
from index_format.errors import InvalidOptionError, UnsupportedTypeError
from index_format.families import check_column_type, family
from index_format.options import IndexOptions, option_error
from index_format.storage import Storage
from index_format.types import KeyType, from_arrow
from service.catalog.catalog import Catalog
from service.catalog.catalog_errors import RowIdError
from service.jobs.jobspec import NOTHING_TO_BUILD, JobSpec, check_options_match, index_options_of
from service.catalog.model import DataFile, IndexFileEntry, Snapshot, SourceFile, Table
from service.jobs.partitions import check_matches, check_readable
from service.tables.files.scan import read_columns, read_schema
from service.tables.build_tasks import BuildOutcome, BuildPlan, BuildRange, FileNames, SparkScan
from service.tables.files.slice_reader import FileSlice, FileTaskReader
from service.tables.files.rowids import (
    RowRange, check_new_ids, check_row_id_column, file_ids, ranges_of_ids, select_files, uncovered_ranges,
)
from service.tables.files.data_files import DataFileMap
from service.jobs.active_builds import collect_garbage

log = logging.getLogger("bgix.tables.files.plan")


MAX_RANGES = 100_000  # row ranges (index files) one build may write


@dataclass
class FilePlan:
    """The work of one job on one column (BuildPlan.state holds one per column). `files` are read whole; every row
    of them lies in exactly one of `ranges`."""

    table: Table
    column: str
    options: IndexOptions
    previous: Snapshot | None               # what the commit expects to replace (None: first build)
    live_files: list[DataFile]              # the whole row-id map now
    files: list[DataFile]                   # files to read in this job
    ranges: list[RowRange]
    range_rows: list[int]
    stale_files: list[dict[str, Any]] = field(default_factory=list)
    committed: bool = False                 # its snapshot is in: a later failure must not remove its files

    @property
    def rows(self) -> int:
        return sum(self.range_rows)

    def tasks(self) -> list[tuple[FileSlice, ...]]:
        """Units of work for workers that read the data themselves: one per range (the slices of the files
        its rows live in), or with a row_id_column one per file (ids are values, not positions)."""
        if self.table.row_id_column:
            return [(FileSlice(f.path, f.size, f.first_row_id, 0, f.row_count),) for f in self.files]
        out = []
        for r in self.ranges:
            out.append(tuple(FileSlice(f.path, f.size, f.first_row_id,
                                       max(r.start, f.first_row_id) - f.first_row_id,
                                       min(r.end + 1, f.end_row_id) - f.first_row_id)
                             for f in self.files if f.first_row_id <= r.end and f.end_row_id > r.start))
        return out


def stale_files_of(previous: Snapshot | None, live: Sequence[DataFile]) -> list[dict[str, Any]]:
    """Source files of `previous` that were rewritten or removed since they were indexed."""
    if previous is None:
        return []
    now = {f.path: f for f in live}
    out = []
    for s in previous.source_files:
        f = now.get(s.path)
        if f is None:
            out.append({"path": s.path, "reason": "removed"})
        elif (f.size, f.mtime, f.first_row_id) != (s.size, s.mtime, s.first_row_id):
            out.append({"path": s.path, "reason": "changed"})
    return out


def make_plan(catalog: Catalog, table: Table, column: str, options: IndexOptions,
              partitions: list[dict[str, str]], live: list[DataFile] | None = None,
              family: str | None = None) -> FilePlan:
    """Work out the ranges this job builds on `column` (incremental unless rebuild) over the row-id map `live`
    (None: refresh it first); the options of the column's index `family` must match its index's.

    Raises:
        InvalidOptionError: without rebuild, options that shape index files differ from the index's; a
            partition spec matches no live data file; more than MAX_RANGES ranges.
    """
    if live is None:
        live = DataFileMap(catalog).refresh(table.name)
    previous = catalog.current_snapshot(table.name, column)
    base = None if options.rebuild else previous
    if base is not None:  # the service resolved this already; a spec from elsewhere may still differ
        check_options_match(index_options_of(base.options, column), options, column, family)
    selected = select_files(live, table, partitions)
    check_readable(DataFileMap(catalog).unreadable(table.name), table, partitions)
    if partitions:
        check_matches(partitions, (f.partition for f in live), table.name)
    covered_paths = {s.path for s in base.source_files} if base else set()
    if table.row_id_column:
        todo = [f for f in selected if f.path not in covered_paths and f.row_count > 0]
        ranges, rows = _ranges_from_column(catalog.storage, table, todo, base, live, options.records_per_range)
    else:
        covered = row_ranges.merge(base.covered_ranges) if base else []
        ranges = uncovered_ranges(selected, covered, options.records_per_range)
        lo_hi = [(r.start, r.end) for r in ranges]
        todo = [f for f in selected if f.row_count and any(a <= f.end_row_id - 1 and f.first_row_id <= b
                                                           for a, b in lo_hi)]
        rows = [r.rows for r in ranges]
    if len(ranges) > MAX_RANGES:  # each range is an index file and a snapshot entry: refuse before writing
        raise option_error("sorted-index.records-per-range",
                           f"this build would write {len(ranges)} row ranges (index files, {sum(rows)} rows at "
                           f"sorted-index.records-per-range={options.records_per_range}); at most {MAX_RANGES} "
                           "per build: raise the option, or select fewer partitions per build")
    return FilePlan(table, column, options, previous, live, todo, ranges, rows, stale_files_of(base, live))


def _ranges_from_column(storage: Storage, table: Table, files: list[DataFile], base: Snapshot | None,
                        live: list[DataFile], records_per_range: int) -> tuple[list[RowRange], list[int]]:
    col = table.row_id_column
    assert col is not None
    if not files:
        return [], []
    parts = []
    for f in files:
        t = read_columns(storage, f.path, table.format, [col], f.size)
        parts.append(t.column(col))
    ids = check_row_id_column(pa.chunked_array([c for p in parts for c in p.chunks],
                                               type=parts[0].type), col)
    check_new_ids(ids, base, live, lambda s: file_ids(storage, table, s), col)
    ranges = ranges_of_ids(ids, records_per_range)
    rows = [int(n) for n in np.diff(np.searchsorted(ids, [r.start for r in ranges] + [int(ids[-1]) + 1]))]
    return ranges, rows


def next_snapshot(plan: FilePlan, key_type: str, written: pa.Table, storage: Storage,
                  job_id: str, index_type: str = "bitmap") -> Snapshot:
    """The snapshot to commit: the previous entries (unless rebuild) plus this job's files."""
    base = None if plan.options.rebuild else plan.previous
    if base is not None and base.key_type != key_type:
        raise RowIdError(f"column {plan.column!r} changed type from {base.key_type} to {key_type}; "
                         "run with rebuild=true")
    if base is not None and base.index_type != index_type:
        # a bgix table keeps one index per column: another family replaces it, with rebuild
        raise RowIdError(f"column {plan.column!r} has a {base.index_type} index; building a {index_type} index "
                         "replaces it: run with rebuild=true (or drop it first)")
    part_of = {(r.start, r.end): r.partition for r in plan.ranges}
    entries = list(base.files) if base else []
    for row in written.to_pylist():
        entries.append(IndexFileEntry(
            path=storage.relative(row["path"]), range_start=row["range_start"], range_end=row["range_end"],
            row_count=row["row_count"], file_size=row["file_size"], meta_hex=bytes(row["meta"]).hex(),
            partition=dict(part_of.get((row["range_start"], row["range_end"]), {})),
            sidecar_size=row.get("sidecar_size")))
    entries.sort(key=lambda e: (e.range_start, e.path))
    covered = [list(r) for r in row_ranges.merge([*(base.covered_ranges if base else []),
                                                  *((r.start, r.end) for r in plan.ranges)])]
    # Keyed by (path, first_row_id): a rewritten file keeps its old entry next to the new one, so the
    # index stays marked stale until a rebuild drops the old ids.
    sources = {(s.path, s.first_row_id): s for s in (base.source_files if base else [])}
    for f in plan.files:
        sources[(f.path, f.first_row_id)] = SourceFile.of(f)
    source_list = sorted(sources.values(), key=lambda s: s.first_row_id)
    stale = stale_files_of(base, plan.live_files)
    return Snapshot(
        id=0, table=plan.table.name, column=plan.column, key_type=key_type, index_type=index_type,
        files=entries, options=plan.options.of_family(index_type).to_dict(), covered_ranges=covered,
        source_files=source_list,
        stale=bool(stale), stale_files=stale, job_id=job_id,
        row_count=sum(s.row_count for s in source_list))


def column_key_type(arrow_type: pa.DataType, index_type: str, column: str) -> KeyType:
    """The keys a `index_type` index on a column of `arrow_type` holds: a multivalue index the elements of a
    list column, the others the column's values (families.check_column_type decides, as for every table kind).

    Raises:
        InvalidOptionError: a type the family cannot hold.
    """
    is_list = pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type)
    try:
        keys: KeyType | None = from_arrow(arrow_type.value_type if is_list else arrow_type)
    except UnsupportedTypeError:
        keys = None
    return check_column_type(family(index_type), column, arrow_type, is_array=is_list, keys=keys)


def check_family(previous: Snapshot | None, spec: JobSpec, column: str) -> None:
    """A bgix table keeps one index per column: a build of another family replaces it, only with rebuild.

    Raises:
        InvalidOptionError: the column has an index of another family and the build does not rebuild.
    """
    wanted = spec.families[column]
    if previous is not None and previous.index_type != wanted and not spec.options.rebuild:
        raise InvalidOptionError(
            f"column {column!r} of {spec.table!r} has a {previous.index_type} index; a bgix table keeps "
            f"one index per column, so a {wanted} index replaces it: pass rebuild=true (or drop the "
            "index first)")


def _column_type(schema: pa.Schema, column: str, path: str) -> pa.DataType:
    """The column's Arrow type in a data file's schema; InvalidOptionError naming the columns there are."""
    if column not in schema.names:
        raise InvalidOptionError(f"the table has no column {column!r} (data file {path} has columns: "
                                 f"{', '.join(schema.names)})")
    return schema.field(column).type


def plan_build(catalog: Catalog, table: Table, spec: JobSpec) -> BuildPlan:
    """Collect each column's garbage, plan every column over one scan of the row-id map (make_plan) and describe
    the work for the shared worker: one task per range (or per file with a row_id_column), the columns whose
    ranges read the same file slices in one task (read once), each column's files in its job directory, with
    range sidecars.

    Raises: as make_plan.
    """
    for column in spec.columns:
        check_family(catalog.current_snapshot(table.name, column), spec, column)
        removed = collect_garbage(catalog, table.name, column, keep_job=spec.job_id)
        if removed:
            log.info("column %s: removed %d unreferenced index file(s)", column, len(removed))
    live = DataFileMap(catalog).refresh(table.name)
    plans = [make_plan(catalog, table, c, spec.options, spec.partitions, live, spec.families[c]) for c in spec.columns]
    for plan in plans:
        log.info("job %s: column %s: %d file(s) to read, %d range(s), %d row(s)", spec.job_id, plan.column,
                 len(plan.files), len(plan.ranges), plan.rows)
    storage = catalog.storage
    tasks, task_columns = _shared_tasks(plans)
    files = sorted({f.path: f for p in plans for f in p.files}.values(), key=lambda f: f.first_row_id)
    nothing = all(not p.ranges for p in plans) and not spec.options.rebuild
    return BuildPlan(
        columns={p.column: _key_type(storage, table, p, spec.families[p.column]) for p in plans},
        ranges=tuple(BuildRange(p.column, r.start, r.end, n)
                     for p in plans for r, n in zip(p.ranges, p.range_rows, strict=True)),
        task_rows=tuple(sum(s.stop - s.start for s in t) * len(c) for t, c in zip(tasks, task_columns, strict=True)),
        reader=FileTaskReader(storage.to_config(), table.format, table.row_id_column, tasks, task_columns),
        names=FileNames(catalog.job_index_dir(table.name, spec.columns[0], spec.job_id)),
        column_names={c: FileNames(catalog.job_index_dir(table.name, c, spec.job_id)) for c in spec.columns},
        options=spec.options.to_dict(), storage_config=storage.to_config(), test_hooks=dict(spec.test_hooks),
        index_type=spec.index_type, families=dict(spec.families),
        spark_scan=SparkScan(table.format, tuple(spec.columns), tuple((f.path, f.first_row_id) for f in files),
                             table.row_id_column, sum(f.size for f in files)),
        message=NOTHING_TO_BUILD if nothing else None, state=plans)


def _key_type(storage: Storage, table: Table, plan: FilePlan, index_type: str) -> str:
    """The key type of the column's index, from the first data file it reads (its Arrow schema; Parquet/ORC:
    footer only; the Spark scan variant takes Spark's own); with no file to read, the index's own."""
    if not plan.files:
        return plan.previous.key_type if plan.previous else "string"
    f0 = plan.files[0]
    arrow_type = _column_type(read_schema(storage, f0.path, table.format, f0.size), plan.column, f0.path)
    return column_key_type(arrow_type, index_type, plan.column).spelling


def _shared_tasks(plans: Sequence[FilePlan]) -> tuple[tuple[tuple[FileSlice, ...], ...], tuple[tuple[str, ...], ...]]:
    """Every plan's tasks, those of several columns that read the same file slices merged into one task (a
    fresh build of several columns reads each file once, like a Paimon build); and each task's columns."""
    merged: dict[tuple[FileSlice, ...], list[str]] = {}
    for plan in plans:
        for task in plan.tasks():
            merged.setdefault(task, []).append(plan.column)
    return tuple(merged), tuple(tuple(columns) for columns in merged.values())


@dataclass(frozen=True)
class ColumnsCommitted:
    """What a build of several columns of a plain table committed: each column's index snapshot after it (None:
    the column has none, nothing was built). `id` is their snapshot id when all have the same (a first build of
    them all), else None: each column keeps its own snapshot sequence."""

    snapshots: dict[str, Snapshot | None]

    @property
    def id(self) -> int | None:
        ids = {None if s is None else s.id for s in self.snapshots.values()}
        return ids.pop() if len(ids) == 1 else None

    def summary(self) -> dict[str, Any]:
        return {"snapshot_id": self.id,
                "columns": {c: None if s is None else s.summary() for c, s in self.snapshots.items()}}


def commit_build(catalog: Catalog, build: BuildPlan, written: pa.Table, spec: JobSpec) -> BuildOutcome:
    """Each column's next snapshot (the previous entries unless rebuild, plus the files written for it), committed
    if every column's current snapshot is still the one planned against; a column with nothing to build only
    commits a changed staleness verdict or scan budget. One column: its Snapshot; several: ColumnsCommitted.

    Raises:
        CommitConflictError: another commit happened since the plan (checked for every column before the first
            commit); RowIdError: a column changed type.
    """
    plans: list[FilePlan] = build.state
    for plan in plans:
        catalog.check_current(plan.table.name, plan.column, plan.previous.id if plan.previous else None)
    column_of = [r.column for r in build.ranges]
    written_column = np.array([column_of[i] for i in written.column("range").to_pylist()], dtype=object)
    snapshots: dict[str, Snapshot | None] = {}
    messages: dict[str, str] = {}
    for plan in plans:
        if not plan.ranges and not plan.options.rebuild:
            snapshots[plan.column], messages[plan.column] = _commit_staleness(catalog, plan, bool(spec.partitions))
        else:
            key_type = build.columns[plan.column] if plan.files else plan.previous.key_type if plan.previous \
                else "string"
            mine = written.filter(pa.array(written_column == plan.column, type=pa.bool_()))
            snap = next_snapshot(plan, key_type, mine, catalog.storage, spec.job_id, spec.families[plan.column])
            snapshots[plan.column] = catalog.commit(plan.table.name, plan.column,
                                                    plan.previous.id if plan.previous else None, snap)
        plan.committed = True
    if len(plans) == 1:
        return BuildOutcome(snapshots[plans[0].column], messages.get(plans[0].column))
    message = None
    if len(messages) == len(plans):   # nothing built on any column: say what each did
        said = set(messages.values())
        message = said.pop() if len(said) == 1 else "; ".join(f"{c}: {m}" for c, m in messages.items())
    return BuildOutcome(ColumnsCommitted(snapshots), message)


_BUDGET_KEY = "bitmap-index.fallback-scan-max-size"


class _SnapshotChanges(TypedDict, total=False):
    """What a build with nothing new to index changes in the index's snapshot (Snapshot's fields)."""

    stale: bool
    stale_files: list[dict[str, Any]]
    options: dict[str, str]


def _commit_staleness(catalog: Catalog, plan: FilePlan, selected: bool) -> tuple[Snapshot | None, str]:
    """Nothing new to index: commit only if the staleness verdict or the scan budget (a query-time option,
    the one option an existing index takes without a rebuild) changed. Returns the snapshot and what the
    job did, for its record."""
    prev = plan.previous
    if prev is None:
        return None, "nothing to build: no rows to index" + (" in the selected partitions" if selected else "")
    notes = []
    changes: _SnapshotChanges = {}
    if prev.stale != bool(plan.stale_files) or prev.stale_files != plan.stale_files:
        changes["stale"], changes["stale_files"] = bool(plan.stale_files), plan.stale_files
        notes.append(f"staleness recorded ({len(plan.stale_files)} data file(s) rewritten or removed)")
    budget = plan.options.to_dict()[_BUDGET_KEY]
    if prev.options.get(_BUDGET_KEY) != budget:
        changes["options"] = {**prev.options, _BUDGET_KEY: budget}
        notes.append(f"{_BUDGET_KEY} set to {budget}")
    message = NOTHING_TO_BUILD + "".join(f"; {n}" for n in notes)
    if not changes:
        return prev, message
    return catalog.commit(prev.table, prev.column, prev.id, replace(prev, **changes)), message
