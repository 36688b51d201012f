"""A build's own log: the records of its thread (not another build's), and the part of its runner's output
(Spark's JVM log) written while it ran, without the runner's Python lines; nothing kept when nothing was logged."""
from __future__ import annotations

import logging
import threading
from pathlib import Path

from index_format.storage import Storage
from service.build_job.job_log_capture import JobLogCapture
from service.jobs.job_logs import read_job_log


def test_capture_keeps_its_threads_records_and_the_runner_output_of_its_time(tmp_path: Path) -> None:
    storage = Storage(str(tmp_path / "wh"), [str(tmp_path)])
    runner = tmp_path / "runner.log"
    runner.write_text("26/11/27 04:00:00 WARN Before: written before the build\n")
    log = logging.getLogger("bgix.build_job.test")
    with JobLogCapture(storage, "j1", "header of j1\n", runner_output=runner, flush_s=0.05):
        log.warning("mine: planned 4 ranges")
        other = threading.Thread(target=lambda: log.warning("theirs: another build"))
        other.start()
        other.join()
        with open(runner, "a") as fh:
            fh.write("26/11/27 04:00:01 ERROR Executor: Exception in task 0.0 in stage 3.0\n"
                     "2026-11-27 04:00:01,123 WARNING bgix.build_runner: job other: a Python line\n")
    text = read_job_log(storage, "j1")
    assert text is not None and text.startswith("header of j1\n")
    assert "mine: planned 4 ranges" in text and "theirs" not in text
    assert "ERROR Executor: Exception in task 0.0" in text
    assert "written before the build" not in text and "a Python line" not in text
    with JobLogCapture(storage, "j2", "header of j2\n"):
        pass
    assert read_job_log(storage, "j2") is None
