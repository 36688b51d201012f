"""What runs in a Python worker: Arrow batches (key + row-id source) → index files on Storage → small records.

Top-level, picklable code shared by the Spark engine (inside mapInArrow) and the local engine. Imports
index_format, service.catalog and service.build_job.rowids; never pyspark and never service.api.
"""
from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from index_format.errors import BgixError
from index_format.options import IndexOptions, parse_options
from index_format.storage import Storage
from index_format.types import KeyType, parse_type
from index_format.global_index.writer import WrittenFile, write_index_files
from index_format.sidecar import SIDECAR_SUFFIX
from index_format.sidecar.build import build_sidecar, sidecar_possible
from service.build_job.rowids import position_ids
from service.catalog.catalog_errors import DataFileError, RowIdError
from service.catalog.scan import read_slice

# What a task returns to the driver: one row per written index file (metadata only, never row data).
# sidecar_size: bytes of the range sidecar written beside the file (path + SIDECAR_SUFFIX), null when none.
RESULT_SCHEMA = pa.schema([
    ("range_start", pa.int64()), ("range_end", pa.int64()), ("path", pa.string()),
    ("file_size", pa.int64()), ("row_count", pa.int64()), ("meta", pa.binary()),
    ("sidecar_size", pa.int64()),
])
RESULT_DDL = ("range_start long, range_end long, path string, file_size long, row_count long, meta binary, "
              "sidecar_size long")

log = logging.getLogger("bgix.build_job.worker")

RangeDone = Callable[[int, int], None]   # (range index, rows written for it by this task)


class InjectedFailure(RuntimeError):
    """Raised by the `fail_after_files` test hook to simulate a worker crash mid-job."""


@dataclass(frozen=True)
class FileSlice:
    """A worker's unit of input: rows [start, stop) (positions in the file) of one data file;
    row id = first_row_id + position. The plan cuts them (BuildPlan.tasks); slice_batches reads them."""

    path: str
    size: int
    first_row_id: int
    start: int
    stop: int


@dataclass(frozen=True)
class WorkerContext:
    """Everything a task needs, picklable: where to write, how to number rows, what to build."""

    storage_config: dict[str, Any]
    key_type: str                       # KeyType spelling
    options: dict[str, str]             # IndexOptions.to_dict()
    out_dir: str                        # resolved per-job directory for index files
    range_starts: list[int]             # sorted, non-overlapping ranges
    range_ends: list[int]
    range_rows: list[int]               # rows each range will receive in total (for early flush)
    first_row_ids: dict[str, int] | None = None   # position mode: resolved file path → first_row_id
    test_hooks: dict[str, Any] = field(default_factory=dict)
    # For workers that read the data files themselves (engine local, Spark scan "direct"):
    table_format: str = "parquet"
    column: str = ""
    row_id_column: str | None = None
    tasks: list[list[FileSlice]] = field(default_factory=list)


class RangeBuilder:
    """Collects rows per range; writes a range's files as soon as all its rows arrived, the rest at the end."""

    def __init__(self, ctx: WorkerContext, on_range_done: RangeDone | None = None) -> None:
        self.ctx = ctx
        self.kt: KeyType = parse_type(ctx.key_type)
        self.options: IndexOptions = parse_options(ctx.options)
        self.storage = Storage.from_config(ctx.storage_config)
        self.starts = np.asarray(ctx.range_starts, dtype=np.int64)
        self.ends = np.asarray(ctx.range_ends, dtype=np.int64)
        self.keys: dict[int, list[pa.Array]] = {}
        self.ids: dict[int, list[np.ndarray]] = {}
        self.counts: dict[int, int] = {}
        self.on_range_done = on_range_done
        self.files_written = 0

    def row_ids(self, batch: pa.RecordBatch) -> np.ndarray:
        if self.ctx.first_row_ids is not None:
            return position_ids(batch.column("file"), batch.column("pos"), self.ctx.first_row_ids)
        rid = batch.column("rid")
        if rid.null_count:
            raise RowIdError(f"{rid.null_count} row(s) without a row id (null row_id_column value, or a data "
                             "file Spark named differently from the catalog)")
        return rid.to_numpy(zero_copy_only=False).astype(np.int64)

    def add(self, batch: pa.RecordBatch) -> Iterator[pa.RecordBatch]:
        """Route one batch's rows to their ranges; yields results of ranges that became complete."""
        sleep = self.ctx.test_hooks.get("sleep_per_batch")
        if sleep:
            time.sleep(float(sleep))
        if batch.num_rows == 0:
            return
        ids = self.row_ids(batch)
        idx = np.searchsorted(self.starts, ids, side="right") - 1
        inside = (idx >= 0) & (ids <= self.ends[np.maximum(idx, 0)])
        keys = batch.column("key")
        if not inside.all():  # rows of already covered ranges (not read by our plans, but be safe)
            keep = np.flatnonzero(inside)
            ids, idx, keys = ids[keep], idx[keep], keys.take(pa.array(keep))
        if len(idx) and idx[0] == idx[-1] and (idx == idx[0]).all():  # common case: one range per batch
            yield from self._append(int(idx[0]), keys, ids)
            return
        order = np.argsort(idx, kind="stable")
        sidx = idx[order]
        bounds = np.flatnonzero(np.diff(sidx)) + 1
        for part in np.split(np.arange(len(order)), bounds):
            if len(part) == 0:
                continue
            take = order[part]
            yield from self._append(int(sidx[part[0]]), keys.take(pa.array(take)), ids[take])

    def _append(self, r: int, keys: pa.Array, ids: np.ndarray) -> Iterator[pa.RecordBatch]:
        self.keys.setdefault(r, []).append(keys)
        self.ids.setdefault(r, []).append(ids - self.starts[r])   # local ids, spec §5.1
        self.counts[r] = self.counts.get(r, 0) + len(ids)
        if self.counts[r] == self.ctx.range_rows[r]:
            yield self.flush(r)

    def flush(self, r: int) -> pa.RecordBatch:
        keys = pa.concat_arrays(self.keys.pop(r))
        local = np.concatenate(self.ids.pop(r))
        rows = self.counts.pop(r)
        start, end = int(self.starts[r]), int(self.ends[r])
        prefix = f"{self.ctx.out_dir.rstrip('/')}/{start:012d}-{end:012d}-{uuid.uuid4().hex[:12]}"
        seq = iter(range(1 << 30))

        def new_path() -> str:
            return f"{prefix}-{next(seq):04d}.index"

        sidecars = self.options.range_sidecar and sidecar_possible(self.kt, end - start + 1)
        written = write_index_files(keys, local, self.kt, self.options,
                                    records_per_file=self.options.records_per_file,  # floor(1.2 R), spec §5.2
                                    new_path=new_path, storage=self.storage, keep_rows=sidecars)
        sidecar_sizes = [self.write_sidecar(keys, w, end - start + 1) if sidecars else None for w in written]
        self.files_written += len(written)
        fail_after = self.ctx.test_hooks.get("fail_after_files")
        if fail_after is not None and self.files_written >= int(fail_after):
            raise InjectedFailure(f"test hook: failing after {self.files_written} index file(s)")
        if self.on_range_done is not None:
            self.on_range_done(r, rows)
        n = len(written)
        return pa.RecordBatch.from_arrays([
            pa.array([start] * n, pa.int64()), pa.array([end] * n, pa.int64()),
            pa.array([w.path for w in written], pa.string()),
            pa.array([w.file_size for w in written], pa.int64()),
            pa.array([w.row_count for w in written], pa.int64()),
            pa.array([w.meta for w in written], pa.binary()),
            pa.array(sidecar_sizes, pa.int64()),
        ], schema=RESULT_SCHEMA)

    def write_sidecar(self, keys: pa.Array, written: WrittenFile, row_count: int) -> int | None:
        """Write the range sidecar of one just written index file beside it; its size (None: none written).

        The sidecar only speeds ranges up (answers are the same without it): a key column it cannot encode
        is logged and built without one; failing to store it fails the task like an index file would.
        """
        assert written.rows is not None
        try:
            data = build_sidecar(self.kt, keys, written.rows, row_count,
                                 chunk_size=self.options.range_sidecar_chunk_size)
        except (BgixError, ValueError, TypeError, pa.ArrowException):
            log.warning("no range sidecar for %s", written.path, exc_info=True)
            return None
        if data is None:
            return None
        self.storage.write_atomic(written.path + SIDECAR_SUFFIX, data)
        return len(data)

    def finish(self) -> Iterator[pa.RecordBatch]:
        for r in sorted(self.keys):
            yield self.flush(r)


def build_batches(batches: Iterable[pa.RecordBatch], ctx: WorkerContext,
                  on_range_done: RangeDone | None = None) -> Iterator[pa.RecordBatch]:
    """The task body: consume batches with columns `key` + (`file`, `pos`) or `rid`; yield RESULT_SCHEMA rows."""
    builder = RangeBuilder(ctx, on_range_done)
    for batch in batches:
        yield from builder.add(batch)
    yield from builder.finish()


def slice_batches(storage: Storage, ctx: WorkerContext, slices: Iterable[FileSlice]) -> Iterator[pa.RecordBatch]:
    """Read the task's file slices with pyarrow: `key` plus (`file`, `pos`) or `rid` per row.

    Raises:
        RowIdError: a file is shorter than the row-id map says (it changed after planning).
        DataFileError: a file cannot be read (junk, corrupt column chunk, removed since planning); it
            names the file, so the job record's error does.
    """
    rid = ctx.row_id_column
    cols = [ctx.column] + ([rid] if rid and rid != ctx.column else [])
    for sl in slices:
        try:
            t = read_slice(storage, sl.path, ctx.table_format, cols, sl.start, sl.stop, sl.size)
        except FileNotFoundError as exc:
            raise DataFileError(sl.path, "removed since the build was planned") from exc
        if t.num_rows != sl.stop - sl.start:
            raise RowIdError(f"data file {sl.path!r} has fewer rows than the row-id map says; "
                             "it changed during the build")
        key = t.column(ctx.column).combine_chunks()
        if rid:
            yield pa.RecordBatch.from_arrays([key, t.column(rid).combine_chunks()], names=["key", "rid"])
            continue
        n = t.num_rows
        files = pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, np.int32)), pa.array([sl.path]))
        yield pa.RecordBatch.from_arrays(
            [key, files, pa.array(np.arange(sl.start, sl.stop, dtype=np.int64))], names=["key", "file", "pos"])


def build_tasks(task_ids: Iterable[int], ctx: WorkerContext,
                on_range_done: RangeDone | None = None) -> Iterator[pa.RecordBatch]:
    """Run the given tasks of ctx.tasks in this worker; yields RESULT_SCHEMA rows (one per index file)."""
    builder = RangeBuilder(ctx, on_range_done)
    for tid in task_ids:
        for batch in slice_batches(builder.storage, ctx, ctx.tasks[tid]):
            yield from builder.add(batch)
    yield from builder.finish()
