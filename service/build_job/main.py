"""The build job (Paimon's create_global_index for bitmap indexes): job spec → plan → tasks → worker → one
commit, the same way for every table kind: the table's source (service.tables) plans, reads and commits.

Run as `python -m service.build_job.main --spec SPEC.json` (or spark-submit). Imports index_format,
service.catalog, service.jobs, service.tables and service.build_job; nothing of the web process. Reads its configuration from the
spec only: the JSON of service.jobs.jobspec.JobSpec (the service writes it; its docstring lists the fields).
Exit status 0 when the job succeeded (or had nothing to do: the record's progress.message says so), 1 when
it failed; the job record holds state, progress, error and snapshot_id either way.
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from index_format.errors import BgixError, InvalidOptionError
from index_format.storage import Storage
from service.build_job.engines import (
    build_session, job_group, jvm_died, parallelism, run_local, run_spark_direct, run_spark_scan, spark_frame,
    spark_key_type,
)
from service.build_job.job_log_capture import JobLogCapture
from service.build_job.progress import Progress, planned
from service.catalog.catalog import Catalog
from service.catalog.catalog_errors import JobNotFoundError
from service.jobs.inflight_builds import InflightBuild, end_inflight, put_inflight, remove_inflight
from service.jobs.jobspec import JobSpec
from service.jobs.liveness import process_start
from service.catalog.model import JobRecord, Table, now
from service.tables import TableSource, check_spec, open_source, remove_dead_build_files
from service.tables.build_tasks import RESULT_SCHEMA, BuildPlan
from service.jobs.active_builds import check_no_active_build, reap_dead_jobs

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger("bgix.build_job")
_PAUSE_LIMIT = 120.0  # seconds the pause_before_commit test hook waits at most


class JobCancelled(BgixError):
    """The build was cancelled: its process received SIGTERM/SIGINT, or its runner a cancel request."""


class _Cancel:
    """A build's cancel request as its runner sets it (None: only a signal cancels, as in a job process)."""

    def __init__(self, event: threading.Event | None) -> None:
        self.event = event

    @property
    def requested(self) -> bool:
        return self.event is not None and self.event.is_set()

    def check(self) -> None:
        if self.requested:
            raise JobCancelled("cancelled by request")


def open_catalog(spec: JobSpec) -> Catalog:
    return Catalog(Storage(spec.warehouse, spec.allowed_roots, spec.storage_options))


def _start_record(catalog: Catalog, spec: JobSpec) -> JobRecord | None:
    """The job's record, now running in this process; None when it ended before the process started (a
    cancel that came first): the record is left as it is and nothing is built."""
    try:
        job = catalog.get_job(spec.job_id)
    except JobNotFoundError:
        job = JobRecord(id=spec.job_id, table=spec.table, column=spec.index_column, spec=spec.public_dict())
    if not job.active:
        log.info("job %s is %s already: not starting", spec.job_id, job.state)
        return None
    pid = os.getpid()
    return catalog.put_job(job.with_(state="running", started_at=now(), pid=pid, pid_start=process_start(pid),
                                     error=None))


@dataclass
class _Build:
    """How far one build got, for the cleanup of a failure."""

    source: TableSource | None = None
    plan: BuildPlan | None = None
    written: list[pa.RecordBatch] | None = None   # records of files written and not yet committed
    inflight: InflightBuild | None = None          # its marker once written (service.jobs.inflight_builds)
    spark: SparkSession | None = None              # its Spark session, once it has one
    phases: list[tuple[str, float]] = field(default_factory=list)
    _last: float = field(default_factory=time.monotonic)

    def done(self, phase: str) -> None:
        t = time.monotonic()
        self.phases.append((phase, t - self._last))
        self._last = t

    def timing(self) -> str:
        return ", ".join(f"{name} {seconds:.2f} s" for name, seconds in self.phases)


def run_job(spec: JobSpec | Mapping[str, Any], spark: SparkSession | None = None, *,
            cancel: threading.Event | None = None, runner_output: Path | None = None) -> Any:
    """Run one build to its commit; updates the job record (running → succeeded/failed/cancelled).

    `spec` is a JobSpec or its JSON form (JobSpec.from_dict). `spark`: the session to run on (a build runner's;
    None: the active one, or a new one). `cancel`: set by a build runner when the build is cancelled; the build
    stops at its next check (between phases, between a local build's batches; a Spark job is cancelled by the
    runner) and records itself cancelled; never after its commit began.
    Returns what the table's source committed: a catalog Snapshot for plain tables (or the unchanged current
    one when there was nothing to do), for a Paimon table a PaimonCommitted naming the new Paimon snapshot;
    None when the job had ended before it started. Either has `id` and `summary()`.
    Raises the failure after recording it: BgixError subclasses (InvalidOptionError, RowIdError,
    CommitConflictError, BuildInProgressError, …) or anything a worker raised.
    What the build logs (in this thread) is kept beside its record as `jobs/<id>.log`, with the part of
    `runner_output` (a build runner's stderr file: Spark's own log) written meanwhile (job_log_capture).
    """
    if not isinstance(spec, JobSpec):
        spec = parse_spec(spec)
    catalog = open_catalog(spec)
    engine = spec.engine + (f" (Spark master {spec.spark_master})" if spec.engine != "local" else "")
    header = (f"bgix build job {spec.job_id}: table {spec.table}, columns {spec.index_column} ({spec.index_type}), "
              f"engine {engine}\n")
    with JobLogCapture(catalog.storage, spec.job_id, header, runner_output=runner_output) as capture:
        return _run_job(catalog, spec, spark, cancel, capture.finish)


def _run_job(catalog: Catalog, spec: JobSpec, spark: SparkSession | None, cancel: threading.Event | None,
             log_done: Callable[[], None]) -> Any:
    """`log_done` stores the job's log: called after its last line and before the record says the job ended."""
    if _start_record(catalog, spec) is None:
        return None
    build = _Build()
    try:
        result, message = _build(catalog, spec, spark, build, _Cancel(cancel))
    except BaseException as failure:
        exc = _explained(failure, build)
        state = "cancelled" if isinstance(exc, (JobCancelled, KeyboardInterrupt)) else "failed"
        _cleanup_quietly(build, spec)
        _end_inflight(catalog, build, spec, failed=True)
        # in the job's log: an unexpected failure with its traceback (a BgixError names its problem)
        log.warning("job %s %s: %s: %s", spec.job_id, state, type(exc).__name__, exc,
                    exc_info=not isinstance(exc, (BgixError, KeyboardInterrupt)))
        log_done()
        catalog.update_job(spec.job_id, state=state, finished_at=now(),
                           error=f"{type(exc).__name__}: {exc}")
        if exc is failure:
            raise
        raise exc from failure
    _end_inflight(catalog, build, spec)
    # a succeeded job must say it built nothing; where its time went is for operators and benchmarks
    catalog.write_progress(spec.job_id, {"phases": {name: round(sec, 3) for name, sec in build.phases},
                                         **({"message": message} if message is not None else {})})
    log.info("job %s succeeded: %s", spec.job_id, message or f"snapshot {None if result is None else result.id}")
    log_done()
    catalog.update_job(spec.job_id, state="succeeded", finished_at=now(),
                       snapshot_id=None if result is None else result.id)
    return result


def _explained(exc: BaseException, build: _Build) -> BaseException:
    """The failure to record: a dead Spark JVM says so (pyspark raises only a connection error, e.g.
    ConnectionRefusedError, from whichever call found it gone first); anything else as it is."""
    if not isinstance(exc, Exception) or isinstance(exc, BgixError):
        return exc
    return jvm_died(build.spark, exc) or exc


def record_failure(spec: JobSpec, exc: BaseException) -> None:
    """Record in the job's record a failure that came before run_job could (e.g. no Spark session)."""
    open_catalog(spec).update_job(spec.job_id, state="failed", finished_at=now(),
                                  error=f"{type(exc).__name__}: {exc}")


def _cleanup_quietly(build: _Build, spec: JobSpec) -> None:
    """Files this job wrote and no commit references go now (the source knows where they are)."""
    if build.source is None:
        return
    written = None if build.written is None else pa.Table.from_batches(build.written, schema=RESULT_SCHEMA)
    try:
        build.source.abort_build(build.plan, written, spec)
    except Exception:
        log.warning("could not remove partial files of job %s", spec.job_id, exc_info=True)


def _end_inflight(catalog: Catalog, build: _Build, spec: JobSpec, *, failed: bool = False) -> None:
    """Its files are committed: the build's marker goes. A failed build's marker says it ended first, then
    every unreferenced file stamped with its job goes, also those of Spark tasks that wrote some before the
    failure and never reported them, and temp files, then the marker (the table's kind knows how:
    service.tables.remove_dead_build_files). Where that fails the ended marker stays, and the job runner's
    dead-build cleanup tries again."""
    if build.inflight is None:
        return
    try:
        if not failed:
            remove_inflight(catalog.storage, spec.job_id)
            return
        end_inflight(catalog.storage, build.inflight)
        remove_dead_build_files(catalog, spec.job_id)   # logs what it removed
    except Exception:
        log.warning("could not clean up after job %s (the dead-build cleanup tries again)", spec.job_id,
                    exc_info=True)


def _open_source(catalog: Catalog, spec: JobSpec) -> TableSource:
    """The table's source, once the spec is known to fit the table (its kind and its kind's rules).

    Raises:
        TableNotFoundError; InvalidOptionError.
    """
    table: Table = catalog.get_table(spec.table)
    if (spec.table_format or table.format) != table.format:
        raise InvalidOptionError(f"table {table.name!r} has format {table.format!r} but the job spec says "
                                 f"table_format {spec.table_format!r}")
    check_spec(replace(spec, table_format=table.format))
    source = open_source(catalog, table)
    source.check_table(spec)
    return source


def _build(catalog: Catalog, spec: JobSpec, spark: SparkSession | None, build: _Build,
           cancel: _Cancel) -> tuple[Any, str | None]:
    """plan → tasks → worker → commit, through the table's source. Returns (what was committed, the
    message of a build that had nothing to do)."""
    source = _open_source(catalog, spec)
    column = spec.index_column
    if not spec.test_hooks.get("skip_active_check"):
        check_no_active_build(catalog, spec.table, column, except_job=spec.job_id,
                                      families=spec.families if source.indexes_by_family else None)
    reap_dead_jobs(catalog, spec.table, column)
    # Before any index file exists: orphan cleanup leaves the files of a build whose marker names a live process.
    build.inflight = put_inflight(catalog.storage, spec.job_id, source.table.name, source.table.location,
                                  source.table.format)
    build.source = source
    plan = build.plan = source.plan_build(spec)
    build.done("open and plan")
    planned(catalog, spec.job_id, plan)   # ranges_total before a Spark session starts (it may re-cut the plan)
    cancel.check()
    use_spark = spec.engine != "local" and plan.tasks > 0
    if use_spark:  # a build with nothing to do starts no JVM
        spark = build.spark = spark or build_session(plan, spec.spark_master, spec.spark_conf)
        plan = build.plan = source.fit_plan(plan, parallelism(spec.spark_master, spark))
        build.done("Spark session")
        cancel.check()
    log.info("job %s: %d task(s), %d range(s), %d row id(s) to index", spec.job_id, plan.tasks,
             len(plan.ranges), sum(plan.task_rows))
    progress = Progress.for_plan(catalog, spec.job_id, plan, check=cancel.check)
    if plan.message is not None:
        progress.finished = True  # nothing to index: done as soon as the source recorded what it must
        progress.flush(force=True)
        outcome = source.commit_build(plan, RESULT_SCHEMA.empty_table(), spec)
        return outcome.result, outcome.message
    progress.flush(force=True)
    build.written = []
    group, what = job_group(spec.job_id), f"{spec.table}.{column}"
    try:
        if not use_spark:
            written = run_local(plan, progress, build.written)
        elif spec.scan == "spark" and plan.spark_scan is not None:
            assert spark is not None
            df = spark_frame(spark, plan.spark_scan)
            plan = build.plan = replace(plan, columns={c: spark_key_type(df, c).spelling for c in plan.columns})
            written = run_spark_scan(spark, plan, df, progress, group, what)
        else:
            assert spark is not None
            written = run_spark_direct(spark, plan, progress, group, what)
    except Exception as exc:
        if cancel.requested:   # the runner cancelled the Spark job group: that is the failure seen here
            raise JobCancelled("cancelled by request") from exc
        raise
    build.written = written.to_batches()
    build.done("tasks")
    cancel.check()
    log.info("job %s: %d index file(s) written", spec.job_id, written.num_rows)
    _pause_before_commit(spec.test_hooks)
    build.written = None   # from here the commit cleans up after itself (it knows what it referenced)
    outcome = source.commit_build(plan, written, spec)
    build.done("commit")
    log.info("job %s: committed (%s)", spec.job_id, build.timing())
    progress.finished = True
    progress.flush(force=True)
    return outcome.result, outcome.message


def _pause_before_commit(hooks: dict[str, Any]) -> None:
    """Test hook: announce DIR/ready, wait for DIR/go (lets a test commit as another writer meanwhile)."""
    where = hooks.get("pause_before_commit")
    if not where:
        return
    Path(where, "ready").write_text(str(os.getpid()))
    deadline = time.monotonic() + _PAUSE_LIMIT
    while not Path(where, "go").exists() and time.monotonic() < deadline:
        time.sleep(0.05)


def parse_spec(raw: Mapping[str, Any]) -> JobSpec:
    """JobSpec.from_dict; an invalid spec is recorded in its job record (when it names one), then raised.

    Raises:
        InvalidOptionError: as JobSpec.
    """
    try:
        return JobSpec.from_dict(raw)
    except BgixError as exc:
        _record_bad_spec(raw, exc)
        raise


def _record_bad_spec(raw: Mapping[str, Any], exc: BgixError) -> None:
    """Best effort: put the spec error into the job record, if the spec says where that is."""
    try:
        catalog = Catalog(Storage(raw["warehouse"], raw.get("allowed_roots") or (), raw.get("storage_options")))
        public = {k: v for k, v in raw.items() if k != "storage_options"}
        job = JobRecord(id=raw["job_id"], table=str(raw.get("table")), column=str(raw.get("index_column")),
                        spec=public)
        try:
            job = catalog.get_job(raw["job_id"])
        except JobNotFoundError:
            pass
        catalog.put_job(job.with_(state="failed", finished_at=now(), error=f"{type(exc).__name__}: {exc}"))
    except Exception:
        log.warning("could not record the spec error in a job record", exc_info=True)


def _on_signal(signum: int, _frame: Any) -> None:
    raise JobCancelled(f"received signal {signum}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m service.build_job.main", description=__doc__.split("\n")[0])
    parser.add_argument("--spec", required=True, help="path to the JSON job spec")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    signal.signal(signal.SIGTERM, _on_signal)
    with open(args.spec, encoding="utf-8") as fh:  # the spec file is the job's argument, not warehouse data
        raw = json.load(fh)
    try:
        spec = parse_spec(raw)
    except BgixError as exc:
        log.error("invalid job spec: %s", exc)
        return 1
    try:
        snap = run_job(spec)
    except BaseException as exc:  # recorded in the job record by run_job
        log.error("job %s failed: %s", spec.job_id, exc)
        traceback.print_exc()
        return 1
    print(json.dumps(snap.summary() if snap else {"snapshot_id": None, "message": "nothing to index"}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
