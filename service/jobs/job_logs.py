"""A build's driver-side log, kept beside its job record as `jobs/<id>.log` (UTF-8 text, its last MAX_BYTES).

The build writes it (service.build_job.job_log_capture) while it runs and when it ends; the service serves it
(GET /v1/jobs/{id}/log) and writes what it knows when a build's runner died before the build could.
Imports index_format.storage and service.catalog only.
"""
from __future__ import annotations

from index_format.storage import Storage
from service.catalog import warehouse_layout

MAX_BYTES = 1 << 20   # a job log keeps its tail: the end of a build (and its failure) is what is read
_CUT = "[… earlier lines left out: a job log keeps its last {} bytes]\n"


def bounded(text: str, limit: int = MAX_BYTES) -> bytes:
    """`text` as UTF-8, cut to its last `limit` bytes at a line start, with a first line saying so."""
    data = text.encode("utf-8", "replace")
    if len(data) <= limit:
        return data
    note = _CUT.format(limit).encode()
    tail = data[len(data) - (limit - len(note)):]
    newline = tail.find(b"\n")
    if 0 <= newline < len(tail) - 1:
        tail = tail[newline + 1:]
    return note + tail


def write_job_log(storage: Storage, job_id: str, text: str) -> None:
    storage.write_atomic(warehouse_layout.job_log(job_id), bounded(text))


def read_job_log(storage: Storage, job_id: str) -> str | None:
    """The job's log; None when none was written (a queued job, or one from before job logs were kept)."""
    try:
        return storage.read_bytes(warehouse_layout.job_log(job_id)).decode("utf-8", "replace")
    except FileNotFoundError:
        return None


def has_job_log(storage: Storage, job_id: str) -> bool:
    return storage.exists(warehouse_layout.job_log(job_id))
