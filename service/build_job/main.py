"""The build job (Paimon's create_global_index for bitmap indexes): job spec → plan → build → one commit.

Run as `python -m service.build_job.main --spec SPEC.json` (or spark-submit). Imports index_format,
service.catalog and service.build_job; never service.api. Reads its configuration from the spec only.

Job spec (JSON object):
  job_id            str, required; the job record `<warehouse>/jobs/<job_id>.json` (created if missing)
  warehouse         str, required; catalog root (local dir or s3://bucket/prefix)
  storage_options   dict, optional; fsspec options, e.g. {"client_kwargs": {"endpoint_url": ...}, "key": ..}
  allowed_roots     [str], optional; extra roots data files may live under (table locations)
  table             str, required; a table registered in the catalog
  index_column      str, required; one column
  index_type        str, default "bitmap"; anything else is rejected
  partitions        str "dt=2026-06-18,hh=0;dt=2026-06-19,hh=1" or [{..}], optional
  options           dict or "k=v,k=v", optional; index_format.options keys plus `rebuild`
  spark_master      str, default "local[*]" (e.g. "spark://127.0.0.1:7077")
  spark_conf        dict, optional; extra Spark settings for a new session
  engine            "spark" (default) or "local" (same plan and worker code, in-process, no Spark)
  scan              Spark engine only: "direct" (default): one Spark task per row range (capped by
                    max-parallelism) whose Python worker reads its file slices with pyarrow through
                    Storage; "spark": Spark scans the files (Parquet: _metadata.file_path/row_index,
                    or the row_id_column) and streams (key, row id) batches into mapInArrow
  test_hooks        dict, optional, tests only: {"fail_after_files": n} makes a worker raise after
                    writing n index files; {"sleep_per_batch": s} slows every batch down;
                    {"skip_active_check": true} lets two jobs race to the commit (CAS tests)
Exit status 0 when the job succeeded (or had nothing to do), 1 when it failed; the job record holds
state, progress, error and snapshot_id either way.
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
import traceback
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from index_format.errors import BgixError, InvalidOptionError
from index_format.options import parse_options
from index_format.storage import Storage
from service.build_job.engines import (
    local_key_type, run_local, run_spark, run_spark_direct, spark_frame, spark_key_type, spark_session,
)
from service.build_job.plan import check_column, check_index_type, make_plan, next_snapshot
from service.build_job.progress import Progress
from service.build_job.rowids import parse_partitions
from service.catalog.catalog import Catalog
from service.catalog.errors import JobNotFoundError
from service.catalog.model import JobRecord, Snapshot, now

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger("bgix.build_job")
ENGINES = ("spark", "local")
SCANS = ("direct", "spark")


class JobCancelled(BgixError):
    """The job process received SIGTERM/SIGINT (the service's cancel)."""


@dataclass(frozen=True)
class JobSpec:
    job_id: str
    warehouse: str
    table: str
    index_column: str
    index_type: str = "bitmap"
    storage_options: dict[str, Any] = field(default_factory=dict)
    allowed_roots: list[str] = field(default_factory=list)
    partitions: Any = None
    options: Any = None
    spark_master: str = "local[*]"
    spark_conf: dict[str, str] = field(default_factory=dict)
    engine: str = "spark"
    scan: str = "direct"
    test_hooks: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> JobSpec:
        missing = [k for k in ("job_id", "warehouse", "table", "index_column") if not d.get(k)]
        if missing:
            raise InvalidOptionError(f"job spec lacks {missing}")
        known = set(cls.__dataclass_fields__)
        unknown = set(d) - known
        if unknown:  # newer services may add keys; the job must not fail on them
            log.warning("job spec: ignoring unknown keys %s", sorted(unknown))
        spec = cls(**{k: v for k, v in d.items() if v is not None and k in known})
        if spec.engine not in ENGINES:
            raise InvalidOptionError(f"engine {spec.engine!r} is not one of {list(ENGINES)}")
        if spec.scan not in SCANS:
            raise InvalidOptionError(f"scan {spec.scan!r} is not one of {list(SCANS)}")
        return spec

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def open_catalog(spec: JobSpec) -> Catalog:
    return Catalog(Storage(spec.warehouse, spec.allowed_roots, spec.storage_options))


def _start_record(catalog: Catalog, spec: JobSpec) -> JobRecord:
    try:
        job = catalog.get_job(spec.job_id)
    except JobNotFoundError:
        job = JobRecord(id=spec.job_id, table=spec.table, column=spec.index_column, spec=spec.to_dict())
    return catalog.put_job(job.with_(state="running", started_at=now(), pid=os.getpid(), error=None))


def run_job(spec: JobSpec | dict[str, Any], spark: SparkSession | None = None) -> Snapshot | None:
    """Run one build to its commit; updates the job record (running → succeeded/failed/cancelled).

    Returns the committed snapshot (or the unchanged current one when there was nothing to do).
    Raises the failure after recording it: BgixError subclasses (InvalidOptionError, RowIdError,
    CommitConflictError, BuildInProgressError, …) or anything a worker raised.
    """
    spec = spec if isinstance(spec, JobSpec) else JobSpec.from_dict(spec)
    catalog = open_catalog(spec)
    _start_record(catalog, spec)
    try:
        snap = _build(catalog, spec, spark)
    except BaseException as exc:
        state = "cancelled" if isinstance(exc, (JobCancelled, KeyboardInterrupt)) else "failed"
        _cleanup_quietly(catalog, spec)
        catalog.update_job(spec.job_id, state=state, finished_at=now(),
                           error=f"{type(exc).__name__}: {exc}")
        raise
    catalog.update_job(spec.job_id, state="succeeded", finished_at=now(),
                       snapshot_id=None if snap is None else snap.id)
    return snap


def _cleanup_quietly(catalog: Catalog, spec: JobSpec) -> None:
    # Our partial files go now; if this process dies instead, the next run's garbage collection takes them.
    try:
        catalog.storage.delete(catalog.job_index_dir(spec.table, spec.index_column, spec.job_id), recursive=True)
    except Exception:
        log.warning("could not remove partial files of job %s", spec.job_id, exc_info=True)


def _build(catalog: Catalog, spec: JobSpec, spark: SparkSession | None) -> Snapshot | None:
    index_type = check_index_type(spec.index_type)
    options = parse_options(spec.options)
    options.writable_compression()
    table = catalog.get_table(spec.table)
    column = check_column(table, spec.index_column)
    if not spec.test_hooks.get("skip_active_check"):
        catalog.check_no_active_build(table.name, column, except_job=spec.job_id)
    catalog.reap_dead_jobs(table.name, column)
    removed = catalog.collect_garbage(table.name, column, keep_job=spec.job_id)
    if removed:
        log.info("removed %d unreferenced index file(s)", len(removed))
    plan = make_plan(catalog, table, column, options, parse_partitions(spec.partitions))
    log.info("job %s: %d file(s) to read, %d range(s), %d row(s)", spec.job_id, len(plan.files),
             len(plan.ranges), plan.rows)
    progress = Progress(catalog, spec.job_id, plan.range_rows)
    if not plan.ranges and not options.rebuild:
        progress.finished = True  # nothing to index: the job is done as soon as staleness is recorded
        progress.flush(force=True)
        return _commit_staleness(catalog, plan)
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
    snap = next_snapshot(plan, key_type, written, catalog.storage, spec.job_id, index_type)
    committed = catalog.commit(table.name, column, plan.previous.id if plan.previous else None, snap)
    progress.finished = True
    progress.flush(force=True)
    return committed


def _commit_staleness(catalog: Catalog, plan: Any) -> Snapshot | None:
    """Nothing new to index: commit only if the staleness verdict changed."""
    prev = plan.previous
    if prev is None:
        return None
    if prev.stale == bool(plan.stale_files) and prev.stale_files == plan.stale_files:
        return prev
    from dataclasses import replace
    updated = replace(prev, stale=bool(plan.stale_files), stale_files=plan.stale_files)
    return catalog.commit(prev.table, prev.column, prev.id, updated)


def _record_bad_spec(raw: dict[str, Any], exc: BgixError) -> None:
    """Best effort: put the spec error into the job record, if the spec says where that is."""
    try:
        catalog = Catalog(Storage(raw["warehouse"], raw.get("allowed_roots") or (), raw.get("storage_options")))
        job = JobRecord(id=raw["job_id"], table=str(raw.get("table")), column=str(raw.get("index_column")),
                        spec=raw)
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
        spec = JobSpec.from_dict(raw)
    except BgixError as exc:
        _record_bad_spec(raw, exc)
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
