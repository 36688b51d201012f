"""Plan one build: which files to read, which row ranges to build, and the snapshot that results.

Imports index_format and service.catalog; never pyspark (engines turn a plan into tasks).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from index_format import ranges as row_ranges
from index_format.options import IndexOptions, option_error
from index_format.storage import Storage
from service.build_job.rowids import (
    RowRange, check_row_id_column, ranges_of_ids, select_files, uncovered_ranges,
)
from service.build_job.worker import FileSlice, WorkerContext
from service.catalog.catalog import Catalog
from service.catalog.catalog_errors import RowIdError
from service.catalog.jobspec import check_options_match, index_options_of
from service.catalog.model import DataFile, IndexFileEntry, Snapshot, SourceFile, Table
from service.catalog.partitions import check_matches, check_readable
from service.catalog.scan import read_columns


MAX_RANGES = 100_000  # row ranges (index files) one build may write


@dataclass
class BuildPlan:
    """The work of one job. `files` are read whole; every row of them lies in exactly one of `ranges`."""

    table: Table
    column: str
    options: IndexOptions
    previous: Snapshot | None               # what the commit expects to replace (None: first build)
    live_files: list[DataFile]              # the whole row-id map now
    files: list[DataFile]                   # files to read in this job
    ranges: list[RowRange]
    range_rows: list[int]
    stale_files: list[dict[str, Any]] = field(default_factory=list)

    @property
    def rows(self) -> int:
        return sum(self.range_rows)

    def tasks(self) -> list[list[FileSlice]]:
        """Units of work for workers that read the data themselves: one per range (the slices of the files
        its rows live in), or with a row_id_column one per file (ids are values, not positions)."""
        if self.table.row_id_column:
            return [[FileSlice(f.path, f.size, f.first_row_id, 0, f.row_count)] for f in self.files]
        out = []
        for r in self.ranges:
            out.append([FileSlice(f.path, f.size, f.first_row_id, max(r.start, f.first_row_id) - f.first_row_id,
                                  min(r.end + 1, f.end_row_id) - f.first_row_id)
                        for f in self.files if f.first_row_id <= r.end and f.end_row_id > r.start])
        return out

    def worker_context(self, storage: Storage, key_type: str, out_dir: str,
                       test_hooks: dict[str, Any] | None = None, *, ids_in_rows: bool = False) -> WorkerContext:
        """`ids_in_rows`: batches carry a `rid` column (row_id_column, or ids computed by Spark) instead
        of (`file`, `pos`)."""
        return WorkerContext(
            storage_config=storage.to_config(), key_type=key_type, options=self.options.to_dict(),
            out_dir=out_dir, range_starts=[r.start for r in self.ranges], range_ends=[r.end for r in self.ranges],
            range_rows=list(self.range_rows),
            first_row_ids=None if self.table.row_id_column or ids_in_rows else {f.path: f.first_row_id for f in self.files},
            test_hooks=dict(test_hooks or {}), table_format=self.table.format, column=self.column,
            row_id_column=self.table.row_id_column, tasks=[] if ids_in_rows else self.tasks())


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
              partitions: list[dict[str, str]]) -> BuildPlan:
    """Refresh the row-id map and work out the ranges this job builds (incremental unless rebuild).

    Raises:
        InvalidOptionError: without rebuild, options that shape index files differ from the index's; a
            partition spec matches no live data file; more than MAX_RANGES ranges.
    """
    live = catalog.refresh_data_files(table.name)
    previous = catalog.current_snapshot(table.name, column)
    base = None if options.rebuild else previous
    if base is not None:  # the service resolved this already; a spec from elsewhere may still differ
        check_options_match(index_options_of(base.options, column), options, column)
    selected = select_files(live, table, partitions)
    check_readable(catalog.unreadable_files(table.name), table, partitions)
    if partitions:
        check_matches(partitions, (f.partition for f in live), table.name)
    covered_paths = {s.path for s in base.source_files} if base else set()
    covered = row_ranges.merge(base.covered_ranges) if base else []
    if table.row_id_column:
        todo = [f for f in selected if f.path not in covered_paths and f.row_count > 0]
        ranges, rows = _ranges_from_column(catalog.storage, table, todo, covered, options.records_per_range)
    else:
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
    return BuildPlan(table, column, options, previous, live, todo, ranges, rows,
                     stale_files_of(base, live))


def _ranges_from_column(storage: Storage, table: Table, files: list[DataFile], covered: list[row_ranges.Range],
                        records_per_range: int) -> tuple[list[RowRange], list[int]]:
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
    ranges = ranges_of_ids(ids, covered, records_per_range, col)
    rows = [int(n) for n in np.diff(np.searchsorted(ids, [r.start for r in ranges] + [int(ids[-1]) + 1]))]
    return ranges, rows


def next_snapshot(plan: BuildPlan, key_type: str, written: pa.Table, storage: Storage,
                  job_id: str, index_type: str = "bitmap") -> Snapshot:
    """The snapshot to commit: the previous entries (unless rebuild) plus this job's files."""
    base = None if plan.options.rebuild else plan.previous
    if base is not None and base.key_type != key_type:
        raise RowIdError(f"column {plan.column!r} changed type from {base.key_type} to {key_type}; "
                         "run with rebuild=true")
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
        files=entries, options=plan.options.to_dict(), covered_ranges=covered, source_files=source_list,
        stale=bool(stale), stale_files=stale, job_id=job_id,
        row_count=sum(s.row_count for s in source_list))
