"""The build job for Paimon tables: plan the unindexed row ranges, write bitmap index files, commit one snapshot.

Same job spec, record, progress and engines as for bgix-managed tables (main.py dispatches here), but the
table is Paimon's: pypaimon (through service.tables.paimon) plans the splits and reads `[columns…, _ROW_ID]`
per split, index files go to the table's `index/` directory (or `global-index.external-path`), and the files
become one new Paimon snapshot (service.tables.paimon.commit). Imports no pypaimon itself.
"""
from __future__ import annotations

import logging
import os
import re
import tempfile
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
from service.tables.paimon import open_paimon_table, table_storage
from service.tables.paimon.build_plan import PaimonBuildPlan, cut_tasks, plan_build, read_task, row_ids, rows_in
from service.tables.paimon.commit import BuiltIndexFile, commit_index_files, index_dir, new_index_file_name
from service.tables.paimon.origins import BGIX_JOB_PROPERTY

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
    rid = row_ids(data)
    storage = Storage.from_config(ctx.storage_config)
    options = parse_options(ctx.options)
    out: list[BuiltIndexFile] = []
    for column, todo in task.ranges.items():
        kt = parse_type(ctx.plan.key_types[column])
        for start, end in todo:
            keys, rids = rows_in(data, column, start, end, rid)
            if len(rids) == 0:  # every row of the range deleted: nothing to index
                continue
            written = write_index_files(keys, rids - start, kt, options, records_per_file=options.records_per_file,
                                        new_path=lambda: f"{ctx.out_dir}/{new_index_file_name()}", storage=storage)
            out.extend(BuiltIndexFile(
                column=column, field_id=ctx.plan.field_ids[column], partition_values=task.partition_values,
                row_range_start=start, row_range_end=end, path=w.path, file_name=w.path.rsplit("/", 1)[-1],
                file_size=w.file_size, row_count=w.row_count, index_meta=w.meta) for w in written)
    return out


def build_paimon(catalog: Catalog, spec: JobSpec, table: Table, spark: SparkSession | None) -> PaimonCommitted:
    """Build and commit the Paimon table's missing bitmap index ranges of spec.columns.

    With the Spark engine and no session given, a session is started once planning found work (a build
    with nothing to do starts no JVM); its parallelism decides how finely the plan is cut into tasks.

    Raises:
        InvalidOptionError (rebuild, unknown columns or partition keys), CommitConflictError (another writer
        indexed the same rows meanwhile), or whatever a task or pypaimon's commit raised; files written by
        this job and not committed are deleted (those of a failed Spark task are left unreferenced).
    """
    phases = _Phases()
    pt = open_paimon_table(table.location, storage_options=spec.storage_options)
    plan = plan_build(pt, spec.columns, records_per_range=spec.options.records_per_range,
                      partitions=spec.partitions)
    phases.done("open and plan")
    if spec.engine != "local" and plan.tasks:
        spark = spark or _new_session(spec)
        plan = balance_tasks(plan, _parallelism(spec.spark_master, spark), spec.options.records_per_range)
        phases.done("Spark session")
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
            progress.set_range_totals(dict(enumerate(rows)))   # every task returned: all its rows are written
        phases.done("tasks")
        _pause_before_commit(spec.test_hooks)
    except BaseException:
        for f in written:
            _delete_quietly(storage, f.path)
        raise
    if not written:
        progress.finished = True
        progress.flush(force=True)
        return PaimonCommitted(pt.snapshot_id, 0, tuple(spec.columns))
    sid = commit_index_files(pt, written, storage, properties={BGIX_JOB_PROPERTY: spec.job_id})
    phases.done("commit")
    log.info("job %s: committed %d index file(s) as Paimon snapshot %d (%s)", spec.job_id, len(written), sid,
             phases)
    progress.finished = True
    progress.flush(force=True)
    return PaimonCommitted(sid, len(written), tuple(spec.columns))


# The driver JVM of a Paimon build only schedules Python tasks and collects small file records, so it
# does not need the C2 compiler or a parallel collector; both cost seconds of CPU while the JVM starts
# (on 2 cores: about half of the session start). Class-data sharing (engines) cuts class loading too.
# The spec's spark_conf overrides all of these.
_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
_SPARK_CONF = {"spark.ui.showConsoleProgress": "false"}
_MIN_TASK_ROWS = 262_144   # below this a task's fixed cost (scheduling, one more index file) is not worth it
# Two tasks per slot measured faster than one (10M rows in 5 files, local[2]: 12.0 s vs 14.0 s median end to
# end): a slot that drew a small task takes another, and a smaller task holds less memory in its worker.
_TASKS_PER_SLOT = 2


def spark_conf() -> dict[str, str]:
    """The Spark settings of a Paimon build's own session (see _JVM_OPTIONS)."""
    from service.build_job.engines import class_data_sharing_options
    cds = class_data_sharing_options(Path(tempfile.gettempdir()) / f"bgix-spark-cds-{os.getuid()}")
    return {**_SPARK_CONF, "spark.driver.extraJavaOptions": f"{_JVM_OPTIONS} {cds}".strip()}


def balance_tasks(plan: PaimonBuildPlan, parallelism: int, max_rows: int) -> PaimonBuildPlan:
    """`plan` cut into about _TASKS_PER_SLOT tasks per task slot of a parallel engine, for an even load.

    Files whose row ranges overlap are never split. Tasks aim at `max_rows` (records-per-range: a task holds
    its rows in memory) but are never cut below _MIN_TASK_ROWS, so with a small records-per-range a task
    holds several ranges (each still within records-per-range); one file group bigger than that stays whole.
    """
    total = sum(t.row_id_count for t in plan.tasks)
    size = -(-total // (max(1, parallelism) * _TASKS_PER_SLOT))
    return cut_tasks(plan, max(_MIN_TASK_ROWS, min(max_rows, size)))


def local_cores(master: str) -> int | None:
    """Task slots of a `local`, `local[N]` or `local[*]` master (None: a cluster; ask the session)."""
    m = re.fullmatch(r"local(?:\[(\*|\d+)(?:,\d+)?\])?", master.strip())
    if m is None:
        return None
    n = m.group(1)
    return 1 if n is None else (os.cpu_count() or 1) if n == "*" else max(1, int(n))


def _parallelism(master: str, spark: SparkSession) -> int:
    cores = local_cores(master)
    return cores if cores is not None else int(spark.sparkContext.defaultParallelism)


def _new_session(spec: JobSpec) -> SparkSession:
    from service.build_job.engines import spark_session
    return spark_session(spec.spark_master, {**spark_conf(), **spec.spark_conf})


class _Phases:
    """Wall time per phase of the job, logged with the commit (where a build's time goes)."""

    def __init__(self) -> None:
        self._last = time.monotonic()
        self._done: list[tuple[str, float]] = []

    def done(self, name: str) -> None:
        now = time.monotonic()
        self._done.append((name, now - self._last))
        self._last = now

    def __str__(self) -> str:
        return ", ".join(f"{name} {seconds:.2f} s" for name, seconds in self._done)


def _run_spark(spark: SparkSession, spec: JobSpec, ctx: PaimonWorkerContext) -> list[BuiltIndexFile]:
    """One Spark task per planned task (capped by max-parallelism), biggest first so the last to finish
    is a small one; only file records come back."""
    from service.build_job.engines import worker_error
    sc = spark.sparkContext
    tasks = ctx.plan.tasks
    order = sorted(range(len(tasks)), key=lambda i: -tasks[i].row_id_count)
    group = f"bgix-{spec.job_id}"
    sc.setJobGroup(group, f"bgix Paimon build {spec.table}.{spec.index_column}", interruptOnCancel=True)

    def task(ids: Iterator[int]) -> Iterator[BuiltIndexFile]:
        for i in ids:
            yield from run_task(ctx, i)

    slices = max(1, min(len(order), spec.options.max_parallelism))
    try:
        return list(sc.parallelize(order, slices).mapPartitions(task).collect())
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
