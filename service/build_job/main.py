"""The build job (Paimon's create_global_index for bitmap indexes): job spec → plan → build → one commit.

Run as `python -m service.build_job.main --spec SPEC.json` (or spark-submit). Imports index_format,
service.catalog and service.build_job; never service.api. Reads its configuration from the spec only:
the JSON of service.catalog.jobspec.JobSpec (the service writes it; its docstring lists the fields).
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
import traceback
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from index_format.errors import BgixError, InvalidOptionError
from index_format.storage import Storage
from service.build_job.engines import (
    local_key_type, run_local, run_spark, run_spark_direct, spark_frame, spark_key_type, spark_session,
)
from service.build_job.paimon_job import PaimonCommitted, build_paimon
from service.build_job.plan import BuildPlan, make_plan, next_snapshot
from service.build_job.progress import Progress
from service.catalog.catalog import Catalog
from service.catalog.catalog_errors import JobNotFoundError
from service.catalog.jobspec import NOTHING_TO_BUILD, JobSpec
from service.catalog.liveness import process_start
from service.catalog.model import JobRecord, Snapshot, now
from service.tables import check_spec, open_source

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger("bgix.build_job")


class JobCancelled(BgixError):
    """The job process received SIGTERM/SIGINT (the service's cancel)."""


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


def run_job(spec: JobSpec | Mapping[str, Any],
            spark: SparkSession | None = None) -> Snapshot | PaimonCommitted | None:
    """Run one build to its commit; updates the job record (running → succeeded/failed/cancelled).

    `spec` is a JobSpec or its JSON form (JobSpec.from_dict).
    Returns the committed snapshot (or the unchanged current one when there was nothing to do); for a
    Paimon table a PaimonCommitted naming the new Paimon snapshot.
    Raises the failure after recording it: BgixError subclasses (InvalidOptionError, RowIdError,
    CommitConflictError, BuildInProgressError, …) or anything a worker raised.
    """
    if not isinstance(spec, JobSpec):
        spec = parse_spec(spec)
    catalog = open_catalog(spec)
    if _start_record(catalog, spec) is None:
        return None
    try:
        snap = _build(catalog, spec, spark)
    except BaseException as exc:
        state = "cancelled" if isinstance(exc, (JobCancelled, KeyboardInterrupt)) else "failed"
        _cleanup_quietly(catalog, spec)
        catalog.update_job(spec.job_id, state=state, finished_at=now(),
                           error=f"{type(exc).__name__}: {exc}")
        raise
    if isinstance(snap, PaimonCommitted) and not snap.files:
        catalog.write_progress(spec.job_id, {"message": NOTHING_TO_BUILD})
    catalog.update_job(spec.job_id, state="succeeded", finished_at=now(),
                       snapshot_id=None if snap is None else snap.id)
    return snap


def _cleanup_quietly(catalog: Catalog, spec: JobSpec) -> None:
    if spec.table_format == "paimon":  # build_paimon deletes its own uncommitted files
        return
    # Our partial files go now; if this process dies instead, the next run's garbage collection takes them.
    try:
        catalog.storage.delete(catalog.job_index_dir(spec.table, spec.index_column, spec.job_id), recursive=True)
    except Exception:
        log.warning("could not remove partial files of job %s", spec.job_id, exc_info=True)


def _build(catalog: Catalog, spec: JobSpec, spark: SparkSession | None) -> Snapshot | PaimonCommitted | None:
    options = spec.options
    table = catalog.get_table(spec.table)
    source = open_source(catalog, table)
    check_spec(spec)
    if spec.table_format == "paimon" and table.format != "paimon":
        raise InvalidOptionError(f"table {table.name!r} is not a Paimon table")
    if table.format == "paimon" and spec.table_format != "paimon":
        raise InvalidOptionError(f"table {table.name!r} is a Paimon table but the job spec says "
                                 f"table_format {spec.table_format!r}")
    if table.format != "paimon":
        source.check_table(spec)
    column = spec.index_column
    if not spec.test_hooks.get("skip_active_check"):
        catalog.check_no_active_build(table.name, column, except_job=spec.job_id)
    catalog.reap_dead_jobs(table.name, column)
    if spec.table_format == "paimon":  # the Paimon table's own index: planned, read and committed through the adapter
        return build_paimon(catalog, spec, table, spark)
    removed = catalog.collect_garbage(table.name, column, keep_job=spec.job_id)
    if removed:
        log.info("removed %d unreferenced index file(s)", len(removed))
    plan = make_plan(catalog, table, column, options, spec.partitions)
    log.info("job %s: %d file(s) to read, %d range(s), %d row(s)", spec.job_id, len(plan.files),
             len(plan.ranges), plan.rows)
    progress = Progress(catalog, spec.job_id, plan.range_rows)
    if not plan.ranges and not options.rebuild:
        progress.finished = True  # nothing to index: the job is done as soon as staleness is recorded
        progress.flush(force=True)
        snap, message = _commit_staleness(catalog, plan, bool(spec.partitions))
        catalog.write_progress(spec.job_id, {"message": message})  # a succeeded job must say it built nothing
        return snap
    progress.flush(force=True)
    out_dir = catalog.job_index_dir(table.name, column, spec.job_id)
    if spec.engine == "local" or not plan.files:
        kt = local_key_type(catalog.storage, plan) if plan.files else None
        ctx = plan.worker_context(catalog.storage, kt.spelling if kt else "string", out_dir, spec.test_hooks)
        written = run_local(catalog.storage, plan, ctx, progress)
    elif spec.scan == "direct":
        spark = spark or spark_session(spec.spark_master, spec.spark_conf)
        kt = local_key_type(catalog.storage, plan)
        ctx = plan.worker_context(catalog.storage, kt.spelling, out_dir, spec.test_hooks)
        written = run_spark_direct(spark, plan, ctx, progress, job_group=f"bgix-{spec.job_id}")
    else:
        spark = spark or spark_session(spec.spark_master, spec.spark_conf)
        df = spark_frame(spark, plan)
        kt = spark_key_type(df)
        ctx = plan.worker_context(catalog.storage, kt.spelling, out_dir, spec.test_hooks, ids_in_rows=True)
        written = run_spark(spark, plan, df, ctx, progress, job_group=f"bgix-{spec.job_id}")
    log.info("job %s: %d index file(s) written", spec.job_id, written.num_rows)
    key_type = kt.spelling if kt else (plan.previous.key_type if plan.previous else "string")
    snap = next_snapshot(plan, key_type, written, catalog.storage, spec.job_id, spec.index_type)
    committed = catalog.commit(table.name, column, plan.previous.id if plan.previous else None, snap)
    progress.finished = True
    progress.flush(force=True)
    return committed


_BUDGET_KEY = "bitmap-index.fallback-scan-max-size"


def _commit_staleness(catalog: Catalog, plan: BuildPlan, selected: bool) -> tuple[Snapshot | None, str]:
    """Nothing new to index: commit only if the staleness verdict or the scan budget (a query-time option,
    the one option an existing index takes without a rebuild) changed. Returns the snapshot and what the
    job did, for its record."""
    prev = plan.previous
    if prev is None:
        return None, "nothing to build: no rows to index" + (" in the selected partitions" if selected else "")
    notes = []
    changes: dict[str, object] = {}
    if prev.stale != bool(plan.stale_files) or prev.stale_files != plan.stale_files:
        changes.update(stale=bool(plan.stale_files), stale_files=plan.stale_files)
        notes.append(f"staleness recorded ({len(plan.stale_files)} data file(s) rewritten or removed)")
    budget = plan.options.to_dict()[_BUDGET_KEY]
    if prev.options.get(_BUDGET_KEY) != budget:
        changes["options"] = {**prev.options, _BUDGET_KEY: budget}
        notes.append(f"{_BUDGET_KEY} set to {budget}")
    message = NOTHING_TO_BUILD + "".join(f"; {n}" for n in notes)
    if not changes:
        return prev, message
    return catalog.commit(prev.table, prev.column, prev.id, replace(prev, **changes)), message


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
