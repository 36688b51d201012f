"""Builds that may still be writing index files: one marker per build, `jobs/<job id>.inflight`, written by the
build's own process before its first index file and removed once its files are committed or cleaned up.

Orphan-file cleanup reads the markers: a build whose marker names a live process (pid and start time, as
job records do) may still commit, so its files are left alone whatever their age; a marker whose process is
gone is a build killed mid-way (kill -9, a crashed runner or host), and its files that no snapshot references
can go at once. A build that fails marks its marker `ended` before it removes its files (end_inflight): it will
commit nothing, though its process (a build runner's) lives on, so the dead-build cleanup takes over where its
own removal fails. The marker is not a `.json` document, so job listings never see it.
Imports index_format.storage and service.catalog only.
"""
from __future__ import annotations

import json
import logging
import os
from dataclasses import asdict, dataclass

from index_format.storage import Storage
from service.catalog import warehouse_layout
from service.jobs.liveness import process_alive, process_start
from service.catalog.model import now

__all__ = ["InflightBuild", "end_inflight", "list_inflight", "put_inflight", "remove_inflight"]

log = logging.getLogger("bgix.inflight")
SUFFIX = ".inflight"


@dataclass(frozen=True)
class InflightBuild:
    """One build's marker: its job, the table it writes into (catalog name, location, format), its process;
    `ended`: the build failed and will commit none of its files."""

    job_id: str
    table: str
    location: str
    table_format: str
    pid: int
    pid_start: int | None
    created_at: float
    ended: bool = False

    @property
    def alive(self) -> bool:
        """The build may still commit: not ended, and the process that wrote the marker still runs (a pid
        reused by another process does not count)."""
        return not self.ended and process_alive(self.pid, self.pid_start)


def _path(job_id: str) -> str:
    return f"{warehouse_layout.jobs_dir()}/{warehouse_layout.check_name('job', job_id)}{SUFFIX}"


def put_inflight(storage: Storage, job_id: str, table: str, location: str, table_format: str) -> InflightBuild:
    """Record that this process is about to write index files for `job_id` (atomically; replaces a marker)."""
    pid = os.getpid()
    marker = InflightBuild(job_id, table, location, table_format, pid, process_start(pid), now())
    storage.write_atomic(_path(job_id), json.dumps(asdict(marker), sort_keys=True).encode())
    return marker


def end_inflight(storage: Storage, marker: InflightBuild) -> InflightBuild:
    """The build failed: rewrite its marker as `ended` (its files may go, whatever its process does next)."""
    ended = InflightBuild(**{**asdict(marker), "ended": True})
    storage.write_atomic(_path(marker.job_id), json.dumps(asdict(ended), sort_keys=True).encode())
    return ended


def remove_inflight(storage: Storage, job_id: str) -> None:
    """The build's files are committed or removed: drop its marker (missing is fine)."""
    storage.delete(_path(job_id))


def list_inflight(storage: Storage) -> list[InflightBuild]:
    """Every readable marker, oldest first. An unreadable one is logged and left out: its build is then
    protected only by its job record and the cleanup's age guard."""
    out = []
    for path in storage.list(warehouse_layout.jobs_dir()):
        name = path.rstrip("/").rsplit("/", 1)[-1]
        if not name.endswith(SUFFIX) or name.startswith("."):
            continue
        try:
            doc = json.loads(storage.read_bytes(path))
            out.append(InflightBuild(
                job_id=str(doc["job_id"]), table=str(doc["table"]), location=str(doc["location"]),
                table_format=str(doc["table_format"]), pid=int(doc["pid"]),
                pid_start=None if doc.get("pid_start") is None else int(doc["pid_start"]),
                created_at=float(doc["created_at"]), ended=bool(doc.get("ended", False))))
        except FileNotFoundError:
            continue   # its build just ended
        except (ValueError, KeyError, TypeError) as exc:
            log.warning("unreadable build marker %s: %s", path, exc)
    return sorted(out, key=lambda m: (m.created_at, m.job_id))
