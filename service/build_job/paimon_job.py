"""The build job for Paimon tables: plan the unindexed row ranges, write bitmap index files, commit one snapshot.

Same job spec, record, progress and engines as for bgix-managed tables (main.py dispatches here), but the
table is Paimon's: pypaimon (through service.catalog.paimon) plans the splits and reads `[columns…, _ROW_ID]`
per split, index files go to the table's `index/` directory (or `global-index.external-path`), and the files
become one new Paimon snapshot (service.catalog.paimon.commit). Imports no pypaimon itself.
"""
from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from index_format.errors import InvalidOptionError
from index_format.global_index.writer import write_index_files
from index_format.options import parse_options
from index_format.storage import Storage
from index_format.types import parse_type
from service.build_job.progress import Progress
from service.catalog.catalog import Catalog
from service.catalog.jobspec import JobSpec
from service.catalog.model import Table
from service.catalog.paimon import open_paimon_table, table_storage
from service.catalog.paimon.build_plan import PaimonBuildPlan, plan_build, read_task, rows_in
from service.catalog.paimon.commit import BuiltIndexFile, commit_index_files, index_dir, new_index_file_name

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger("bgix.build_job.paimon")
_PAUSE_LIMIT = 120.0  # seconds the pause_before_commit test hook waits at most


@dataclass(frozen=True)
class PaimonCommitted:
    """The job's outcome: the Paimon snapshot that holds the new files (None: the table has no snapshot)."""

    id: int | None
    files: int = 0
    columns: tuple[str, ...] = ()

    def summary(self) -> dict[str, Any]:
        return {"snapshot_id": self.id, "files": self.files, "columns": list(self.columns)}


@dataclass(frozen=True)
class PaimonWorkerContext:
    """What a task needs, picklable: the plan (table handle + splits), where and how to write."""

    plan: PaimonBuildPlan
    options: dict[str, str]
    out_dir: str
    storage_config: dict[str, Any]
    test_hooks: dict[str, Any] = field(default_factory=dict)


def run_task(ctx: PaimonWorkerContext, i: int) -> list[BuiltIndexFile]:
    """Read task `i`'s split once and write one file group per (column, range); returns what it wrote."""
    task = ctx.plan.tasks[i]
    data = read_task(ctx.plan.table, task)
    storage = Storage.from_config(ctx.storage_config)
    options = parse_options(ctx.options)
    out: list[BuiltIndexFile] = []
    for column, todo in task.ranges.items():
        kt = parse_type(ctx.plan.key_types[column])
        for start, end in todo:
            keys, rid = rows_in(data, column, start, end)
            if len(rid) == 0:  # every row of the range deleted: nothing to index
                continue
            written = write_index_files(keys, rid - start, kt, options, records_per_file=options.records_per_file,
                                        new_path=lambda: f"{ctx.out_dir}/{new_index_file_name()}", storage=storage)
            out.extend(BuiltIndexFile(
                column=column, field_id=ctx.plan.field_ids[column], partition_values=task.partition_values,
                row_range_start=start, row_range_end=end, path=w.path, file_name=w.path.rsplit("/", 1)[-1],
                file_size=w.file_size, row_count=w.row_count, index_meta=w.meta) for w in written)
    return out


def build_paimon(catalog: Catalog, spec: JobSpec, table: Table, spark: SparkSession | None) -> PaimonCommitted:
    """Build and commit the Paimon table's missing bitmap index ranges of spec.columns.

    Raises:
        InvalidOptionError (rebuild, unknown columns or partition keys), CommitConflictError (another writer
        indexed the same rows meanwhile), or whatever a task or pypaimon's commit raised; files written by
        this job and not committed are deleted (those of a failed Spark task are left unreferenced).
    """
    if spec.options.rebuild:
        raise InvalidOptionError("option 'rebuild' is not supported for Paimon tables (drop the index first)")
    pt = open_paimon_table(table.location)
    plan = plan_build(pt, spec.columns, records_per_range=spec.options.records_per_range,
                      partitions=spec.partitions)
    rows = [t.rows for t in plan.tasks]
    log.info("job %s: Paimon snapshot %s, %d task(s), %d row id(s) to index", spec.job_id, plan.snapshot_id,
             len(plan.tasks), sum(rows))
    progress = Progress(catalog, spec.job_id, rows)
    if not plan.tasks:
        progress.finished = True
        progress.flush(force=True)
        return PaimonCommitted(pt.snapshot_id, 0, tuple(spec.columns))
    progress.flush(force=True)
    storage = table_storage(pt, spec.storage_options)
    ctx = PaimonWorkerContext(plan=plan, options=spec.options.to_dict(), out_dir=index_dir(pt)[0],
                              storage_config=storage.to_config(), test_hooks=spec.test_hooks)
    written: list[BuiltIndexFile] = []
    try:
        if spec.engine == "local":
            for i in range(len(plan.tasks)):
                written.extend(run_task(ctx, i))
                progress.range_rows_done(i, rows[i])
        else:
            written = _run_spark(spark, spec, ctx)
        _pause_before_commit(spec.test_hooks)
    except BaseException:
        for f in written:
            _delete_quietly(storage, f.path)
        raise
    if not written:
        progress.finished = True
        progress.flush(force=True)
        return PaimonCommitted(pt.snapshot_id, 0, tuple(spec.columns))
    sid = commit_index_files(pt, written, storage, properties={"bgix.job-id": spec.job_id})
    log.info("job %s: committed %d index file(s) as Paimon snapshot %d", spec.job_id, len(written), sid)
    progress.finished = True
    progress.flush(force=True)
    return PaimonCommitted(sid, len(written), tuple(spec.columns))


def _run_spark(spark: SparkSession | None, spec: JobSpec, ctx: PaimonWorkerContext) -> list[BuiltIndexFile]:
    """One Spark task per planned split (capped by max-parallelism); only file records come back."""
    from service.build_job.engines import spark_session, worker_error
    spark = spark or spark_session(spec.spark_master, spec.spark_conf)
    sc = spark.sparkContext
    n = len(ctx.plan.tasks)
    group = f"bgix-{spec.job_id}"
    sc.setJobGroup(group, f"bgix Paimon build {spec.table}.{spec.index_column}", interruptOnCancel=True)

    def task(ids: Iterator[int]) -> Iterator[BuiltIndexFile]:
        for i in ids:
            yield from run_task(ctx, i)

    try:
        return list(sc.parallelize(range(n), max(1, min(n, spec.options.max_parallelism))).mapPartitions(task)
                    .collect())
    except BaseException as exc:
        sc.cancelJobGroup(group)
        if isinstance(exc, Exception):
            raise worker_error(exc) from exc
        raise


def _pause_before_commit(hooks: dict[str, Any]) -> None:
    """Test hook: announce DIR/ready, wait for DIR/go (lets a test commit as another writer meanwhile)."""
    where = hooks.get("pause_before_commit")
    if not where:
        return
    Path(where, "ready").write_text(str(os.getpid()))
    deadline = time.monotonic() + _PAUSE_LIMIT
    while not Path(where, "go").exists() and time.monotonic() < deadline:
        time.sleep(0.05)


def _delete_quietly(storage: Storage, path: str) -> None:
    try:
        storage.delete(path)
    except Exception:
        log.warning("could not delete uncommitted index file %s", path, exc_info=True)
