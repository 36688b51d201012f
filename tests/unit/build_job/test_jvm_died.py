"""A build whose Spark JVM was killed says so, even when pyspark's connection error comes before the killed
process is seen ended (it closes its sockets before it becomes a zombie): the flaky
test_a_build_whose_spark_jvm_is_killed_says_so_and_leaves_no_files got `ConnectionRefusedError` that way.

The session is a stand-in holding a real child process as its gateway's `proc`, as pyspark's does."""
from __future__ import annotations

import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest

from service.build_job.engines import SparkJvmDiedError, jvm_died


def _session(proc: subprocess.Popen[bytes]) -> Any:
    return SimpleNamespace(sparkContext=SimpleNamespace(_gateway=SimpleNamespace(proc=proc)))


@pytest.fixture
def child() -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    yield proc
    proc.kill()
    proc.wait()


def test_a_lost_connection_waits_for_the_jvm_to_be_seen_ended(child: subprocess.Popen[bytes]) -> None:
    # the JVM ends a moment after the connection error reached the build
    threading.Timer(0.5, child.send_signal, (signal.SIGKILL,)).start()
    try:
        raise RuntimeError("py4j call failed") from ConnectionRefusedError(111, "Connection refused")
    except RuntimeError as exc:
        died = jvm_died(_session(child), exc)
    assert isinstance(died, SparkJvmDiedError)
    assert "killed by signal 9 (SIGKILL)" in str(died)


def test_a_living_jvm_is_not_called_dead(child: subprocess.Popen[bytes]) -> None:
    # another failure: answered at once, no wait
    assert jvm_died(_session(child), ValueError("a worker's error")) is None
    assert jvm_died(_session(child)) is None


def test_a_lost_connection_to_a_jvm_that_lives_on_is_not_called_dead(child: subprocess.Popen[bytes],
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    import service.build_job.engines as engines
    monkeypatch.setattr(engines, "_JVM_EXIT_WAIT_S", 0.2)
    assert jvm_died(_session(child), ConnectionResetError()) is None
    assert child.poll() is None
