"""What runs in a build's Python worker, for every table kind: Arrow batches (ROW_ID + the indexed columns,
from the table source's TaskReader or a Spark scan) → index files on Storage → small RESULT_SCHEMA records.

Top-level, picklable code shared by the Spark engine (inside its tasks) and the local engine. Imports
index_format, service.catalog and service.tables; never pyspark and never service.api.
"""
from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterable, Iterator
from typing import cast

import numpy as np
import pyarrow as pa

from index_format.errors import BgixError
from index_format.families import RangeStream, family
from index_format.global_index.writer import WrittenFile
from index_format.options import IndexOptions, parse_options
from index_format.sidecar import SIDECAR_SUFFIX
from index_format.sidecar.build import build_sidecar, sidecar_possible
from index_format.storage import Storage
from index_format.types import KeyType, parse_type
from service.catalog.catalog_errors import RowIdError
from service.tables.build_tasks import RESULT_SCHEMA, ROW_ID, BuildPlan

log = logging.getLogger("bgix.build_job.worker")

Report = Callable[[int, int], None]   # (progress unit, rows done for it by this worker)


class InjectedFailure(RuntimeError):
    """Raised by the `fail_after_files` test hook to simulate a worker crash mid-job."""


class RangeBuilder:
    """Collects rows per range (or feeds them to the range's streamed writer, for a family with one); writes a
    range's files as soon as all its rows arrived (plans with exact row counts), when the task holding it ends
    (`close`), or at the end (`finish`)."""

    def __init__(self, plan: BuildPlan, report: Report | None = None) -> None:
        self.plan = plan
        self.kts: dict[str, KeyType] = {c: parse_type(s) for c, s in plan.columns.items()}
        self.options: IndexOptions = parse_options(plan.options)
        self.storage = Storage.from_config(plan.storage_config)
        self.families = {c: family(plan.family_of(c)) for c in plan.columns}
        # per column: its ranges sorted by start, as (starts, ends, range indexes)
        self.by_column: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        for c in plan.columns:
            idx = sorted((i for i, r in enumerate(plan.ranges) if r.column == c), key=lambda i: plan.ranges[i].start)
            self.by_column[c] = (np.asarray([plan.ranges[i].start for i in idx], dtype=np.int64),
                                 np.asarray([plan.ranges[i].end for i in idx], dtype=np.int64),
                                 np.asarray(idx, dtype=np.int64))
        self.keys: dict[int, list[pa.Array]] = {}
        self.ids: dict[int, list[np.ndarray]] = {}
        # ranges of a family with a streamer are written as they are read (an fm range's partitions are encoded
        # on the worker threads while the next files are read), the others gathered and written at flush
        self.streams: dict[int, RangeStream] = {}
        self.counts: dict[int, int] = {}
        self.held: dict[int, int] = {}   # per range, rows read and not yet reported (the last batch's)
        self.report = report
        self.files_written = 0

    @staticmethod
    def row_ids(batch: pa.RecordBatch) -> np.ndarray:
        rid = batch.column(ROW_ID)
        if rid.null_count:
            raise RowIdError(f"{rid.null_count} row(s) without a row id (null row_id_column value, or a data "
                             "file Spark named differently from the catalog)")
        return cast(np.ndarray, rid.to_numpy(zero_copy_only=False).astype(np.int64))   # pyarrow is untyped

    def add(self, batch: pa.RecordBatch) -> Iterator[pa.RecordBatch]:
        """Route one batch's rows to their ranges; yields results of ranges that became complete."""
        sleep = self.plan.test_hooks.get("sleep_per_batch")
        if sleep:
            time.sleep(float(sleep))
        if batch.num_rows == 0:
            return
        all_ids = self.row_ids(batch)
        names = batch.schema.names
        for column, (starts, ends, range_ids) in self.by_column.items():
            # a column with nothing left to build, or none in this task (a task reads only its own columns)
            if len(starts) == 0 or column not in names:
                continue
            ids = all_ids
            pos = np.searchsorted(starts, ids, side="right") - 1
            inside = (pos >= 0) & (ids <= ends[np.maximum(pos, 0)])
            keys = batch.column(column)
            if not inside.all():  # rows of covered ranges (another column's, or an incremental build's)
                keep = np.flatnonzero(inside)
                ids, pos, keys = ids[keep], pos[keep], keys.take(pa.array(keep))
            if len(pos) == 0:
                continue
            idx = range_ids[pos]
            if idx[0] == idx[-1] and (idx == idx[0]).all():  # common case: one range per batch
                yield from self._append(int(idx[0]), keys, ids)
                continue
            order = np.argsort(idx, kind="stable")
            sidx = idx[order]
            bounds = np.flatnonzero(np.diff(sidx)) + 1
            for part in np.split(np.arange(len(order)), bounds):
                if len(part) == 0:
                    continue
                take = order[part]
                yield from self._append(int(sidx[part[0]]), keys.take(pa.array(take)), ids[take])

    def _append(self, r: int, keys: pa.Array, ids: np.ndarray) -> Iterator[pa.RecordBatch]:
        local = ids - self.plan.ranges[r].start   # local ids, spec §5.1
        stream = self.streams.get(r) if r in self.counts else self._stream(r)
        if stream is not None:
            stream.add(keys, local)
        else:
            self.keys.setdefault(r, []).append(keys)
            self.ids.setdefault(r, []).append(local)
        self.counts[r] = self.counts.get(r, 0) + len(ids)
        if self.report is not None and not self.plan.progress_by_task:
            # Rows count as they are read, all but the last batch's, which count once the range's files are
            # written: progress moves inside a range, and a range is done only when written.
            if self.held.get(r):
                self.report(r, self.held[r])
            self.held[r] = len(ids)
        if self.plan.exact_rows and self.counts[r] == self.plan.ranges[r].rows:
            yield self.flush(r)

    def _sidecars(self, r: int) -> bool:
        rng = self.plan.ranges[r]
        return bool(self.plan.sidecars and self.families[rng.column].sidecars and self.options.range_sidecar
                    and sidecar_possible(self.kts[rng.column], rng.end - rng.start + 1))

    def _stream(self, r: int) -> RangeStream | None:
        """A new streamed writer for range r, when its family has one (and no sidecar needs the rows kept)."""
        rng = self.plan.ranges[r]
        fam = self.families[rng.column]
        if fam.open_stream is None or self._sidecars(r):
            return None
        stream = fam.open_stream(self.kts[rng.column], self.options, rows=rng.end - rng.start + 1,
                                 records_per_file=self.options.records_per_file,
                                 new_path=self.plan.names_of(rng.column).new_path(rng.start, rng.end, fam.name),
                                 storage=self.storage)
        self.streams[r] = stream
        return stream

    def flush(self, r: int) -> pa.RecordBatch:
        rng = self.plan.ranges[r]
        kt = self.kts[rng.column]
        del self.counts[r]
        start, end = rng.start, rng.end
        fam = self.families[rng.column]
        sidecars = self._sidecars(r)
        stream = self.streams.pop(r, None)
        if stream is not None:
            written = stream.finish()
            sidecar_sizes: list[int | None] = [None] * len(written)
        else:
            keys = pa.concat_arrays(self.keys.pop(r))
            local = np.concatenate(self.ids.pop(r))
            if fam.dense and len(local) < end - start + 1:
                keys, local = _dense(keys, local, end - start + 1)
            written = fam.write_files(keys, local, kt, self.options,
                                      records_per_file=self.options.records_per_file,  # floor(1.2 R), spec §5.2
                                      new_path=self.plan.names_of(rng.column).new_path(start, end, fam.name),
                                      storage=self.storage, keep_rows=sidecars)
            sidecar_sizes = [self.write_sidecar(kt, keys, w, end - start + 1) if sidecars else None
                             for w in written]
        self.files_written += len(written)
        fail_after = self.plan.test_hooks.get("fail_after_files")
        if fail_after is not None and self.files_written >= int(fail_after):
            if self.plan.test_hooks.get("crash"):   # the worker process dies, as a segfault or OOM kill would
                os._exit(17)
            raise InjectedFailure(f"test hook: failing after {self.files_written} index file(s)")
        if self.report is not None and not self.plan.progress_by_task:
            self.report(r, self.held.pop(r, 0))
        n = len(written)
        return pa.RecordBatch.from_arrays([
            pa.array([r] * n, pa.int32()),
            pa.array([start] * n, pa.int64()), pa.array([end] * n, pa.int64()),
            pa.array([w.path for w in written], pa.string()),
            pa.array([w.file_size for w in written], pa.int64()),
            pa.array([w.row_count for w in written], pa.int64()),
            pa.array([w.meta for w in written], pa.binary()),
            pa.array(sidecar_sizes, pa.int64()),
        ], schema=RESULT_SCHEMA)

    def write_sidecar(self, kt: KeyType, keys: pa.Array, written: WrittenFile, row_count: int) -> int | None:
        """Write the range sidecar of one just written index file beside it; its size (None: none written).

        The sidecar only speeds ranges up (answers are the same without it): a key column it cannot encode
        is logged and built without one; failing to store it fails the task like an index file would.
        """
        assert written.rows is not None
        try:
            data = build_sidecar(kt, keys, written.rows, row_count,
                                 chunk_size=self.options.range_sidecar_chunk_size)
        except (BgixError, ValueError, TypeError, pa.ArrowException):
            log.warning("no range sidecar for %s", written.path, exc_info=True)
            return None
        if data is None:
            return None
        self.storage.write_atomic(written.path + SIDECAR_SUFFIX, data)
        return len(data)

    def close(self, ranges: Iterable[int]) -> Iterator[pa.RecordBatch]:
        """Write the given ranges now (their task ended; a range never seen had no live row)."""
        for r in ranges:
            if r in self.counts:
                yield self.flush(r)

    def finish(self) -> Iterator[pa.RecordBatch]:
        for r in sorted(self.counts):
            yield self.flush(r)


def _dense(keys: pa.Array, local: np.ndarray, n: int) -> tuple[pa.Array, np.ndarray]:
    """Every local id 0..n-1 of a range, in order: the rows read at their ids, nulls at the ids no row was read
    for (rows a deletion vector removed; answers never show them)."""
    where = np.full(n, -1, dtype=np.int64)
    where[local] = np.arange(len(local), dtype=np.int64)
    missing = where < 0
    return keys.take(pa.array(where, mask=missing)), np.arange(n, dtype=np.int64)


def build_batches(batches: Iterable[pa.RecordBatch], plan: BuildPlan,
                  report: Report | None = None) -> Iterator[pa.RecordBatch]:
    """The task body over batches from elsewhere (a Spark scan); yields RESULT_SCHEMA rows."""
    builder = RangeBuilder(plan, report)
    for batch in batches:
        yield from builder.add(batch)
    yield from builder.finish()


def build_tasks(task_ids: Iterable[int], plan: BuildPlan, report: Report | None = None) -> Iterator[pa.RecordBatch]:
    """Run the given tasks of the plan in this worker, each read by the plan's TaskReader; yields
    RESULT_SCHEMA rows (one per index file)."""
    assert plan.reader is not None
    builder = RangeBuilder(plan, report)
    for tid in task_ids:
        for batch in plan.reader.read(tid):
            yield from builder.add(batch)
        if plan.task_closes:
            yield from builder.close(plan.task_closes[tid])
        if report is not None and plan.progress_by_task:
            report(tid, plan.task_rows[tid])
    yield from builder.finish()
