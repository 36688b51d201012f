"""A build runner whose Spark JVM has died takes no new build, whenever the JVM died (the full suite once saw a
runner claim the next build in the instant between its failed build's end and noticing the death, then crash
asking the dead JVM for its application id)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from service.build_job.build_runner import BuildRunner
from service.jobs.build_inbox import BuildInbox


class _NoJvm:
    """A session whose JVM has exited: any call into it would fail, as py4j's would."""

    def __init__(self) -> None:
        proc = subprocess.Popen([sys.executable, "-c", "pass"])
        proc.wait()
        self.sparkContext = SimpleNamespace(_gateway=SimpleNamespace(proc=proc))


@pytest.mark.timeout(60)
def test_a_runner_whose_jvm_died_between_builds_claims_nothing_and_exits_3(tmp_path: Path) -> None:
    inbox = BuildInbox(tmp_path)
    inbox.put_spec("next", '{"job_id": "next"}')
    runner = BuildRunner(tmp_path, master="local[1]", idle_s=-1.0, only_job=None)
    runner._spark = _NoJvm()  # type: ignore[assignment]  # a session stand-in: only its JVM's exit is read
    assert runner.serve() == 3                     # no traceback from asking the dead JVM anything
    assert inbox.waiting() == ["next"]             # left for the runner the service starts next
    state = inbox.state()
    assert state is not None and state["state"] == "stopped" and "Spark JVM died (exit status 0)" in state["error"]
