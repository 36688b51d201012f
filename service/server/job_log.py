"""The service's log line for each build job's start and end (succeeded, cancelled) or failure.

The job watcher (service.server.job_runner) calls these once per transition it observes. The line's text is for
people; its fields (`extra`, the keys of a JSON line: service.observability.log_format) are event, job_id, table,
index_column, family, state, rows, ranges, duration_s, snapshot_id, job_message (what a build that built nothing
says) and error. Imports
service.catalog.model only.
"""
from __future__ import annotations

import logging
from typing import Any

from service.catalog.model import JobRecord

log = logging.getLogger("bgix.jobs")

START, END, FAILURE = "job_start", "job_end", "job_failure"


def job_fields(job: JobRecord, event: str) -> dict[str, Any]:
    """What a job line says of `job`, as log `extra` fields."""
    p = job.progress or {}
    return {
        "event": event, "job_id": job.id, "table": job.table, "index_column": job.column,
        "family": str((job.spec or {}).get("index_type", "bitmap")), "state": job.state,
        "rows": int(p.get("rows_indexed") or 0), "ranges": int(p.get("ranges_total") or 0),
        "duration_s": job.duration_s(), "snapshot_id": job.snapshot_id,
        "job_message": p.get("message"), "error": job.error,
    }


def log_start(job: JobRecord) -> None:
    f = job_fields(job, START)
    log.info("job %s started: table %s, columns %s (%s)", job.id, job.table, job.column, f["family"], extra=f)


def log_end(job: JobRecord) -> None:
    """The line of a job that is over: INFO when it succeeded or was cancelled, WARNING with its error when it
    failed."""
    failed = job.state == "failed"
    f = job_fields(job, FAILURE if failed else END)
    took = "" if f["duration_s"] is None else f" after {f['duration_s']:.2f} s"
    what = f"table {job.table}, columns {job.column} ({f['family']})"
    if failed:
        log.warning("job %s failed%s: %s: %s", job.id, took, what, job.error, extra=f)
        return
    done = f"{f['rows']} rows indexed, snapshot {job.snapshot_id}" if job.state == "succeeded" else (
        job.error or job.state)
    if f["job_message"]:
        done += f" ({f['job_message']})"
    log.info("job %s %s%s: %s: %s", job.id, job.state, took, what, done, extra=f)
