"""Is a build job's process alive: the one check the service and the job processes both use.

A job records its pid and the process's start time (`pid_start`); a pid the OS has since handed to
another process does not count. Imports only the standard library and service.catalog.model.
"""
from __future__ import annotations

import os
from pathlib import Path

from service.catalog.model import JobRecord


def stat_fields(pid: int) -> list[bytes] | None:
    """The fields of /proc/<pid>/stat after the command name (so index 1 is the parent pid, 19 the start time), or
    None when the process is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()  # process metadata, not warehouse data
    except OSError:
        return None
    # Field 2 (the command name) may hold spaces and parentheses: count fields after its closing ')'.
    return stat[stat.rfind(b")") + 2:].split()


def process_start(pid: int) -> int | None:
    """The start time of process `pid` in clock ticks since boot (Linux /proc), or None where unknown."""
    fields = stat_fields(pid)
    try:
        return int(fields[19]) if fields is not None else None  # field 22 of proc(5): starttime
    except (IndexError, ValueError):
        return None


def process_alive(pid: int, started: int | None = None) -> bool:
    """A process with this pid exists and, when `started` is known, is the same process (not a reused pid).

    Job processes run on the service host (the Spark driver is the job process itself).
    """
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # it exists but belongs to another user: the start time still tells whether it is ours
    fields = stat_fields(pid)
    if fields and fields[0] in (b"Z", b"X"):
        return False  # exited, not yet reaped by its parent (an adopted build's parent is init)
    if started is None:
        return True
    now = process_start(pid)
    return now is None or now == started


def job_process_alive(job: JobRecord) -> bool:
    """The job's recorded process is running. False while no process has recorded itself (pid None)."""
    return job.pid is not None and process_alive(job.pid, job.pid_start)
