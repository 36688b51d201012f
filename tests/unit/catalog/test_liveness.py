"""Job-process liveness: a running process is alive, an exited one is not, and a reused pid (another
process start time) does not count as the job."""
from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from service.jobs.liveness import job_process_alive, process_alive, process_start
from service.catalog.model import JobRecord


def test_running_exited_and_unstarted_processes() -> None:
    me = os.getpid()
    assert process_alive(me) and process_alive(me, process_start(me))
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait(timeout=30)
    assert not process_alive(dead.pid)
    assert not job_process_alive(JobRecord(id="j", table="t", column="c", state="queued", pid=None))
    assert job_process_alive(JobRecord(id="j", table="t", column="c", state="running", pid=me))


@pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="process start times come from /proc")
def test_a_reused_pid_is_not_the_job() -> None:
    me = os.getpid()
    started = process_start(me)
    assert started is not None
    assert not process_alive(me, started + 1)
    assert not job_process_alive(JobRecord(id="j", table="t", column="c", state="running", pid=me,
                                           pid_start=started - 1))


def test_an_exited_but_unreaped_process_is_not_alive() -> None:
    """A zombie (exited, parent not waiting yet) must not keep a build looking alive."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    started = process_start(child.pid)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with open(f"/proc/{child.pid}/stat", "rb") as fh:
            if fh.read().rsplit(b")", 1)[1].split()[0] == b"Z":
                break
    assert not process_alive(child.pid)
    assert not process_alive(child.pid, started)
    child.wait(timeout=30)
