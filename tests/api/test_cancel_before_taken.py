"""A build cancelled before its runner process took the spec is not handed to a new runner.

Cancelling ends the build's own runner process first and records "cancelled" after; a watcher pass in between saw
a dead runner, a spec still waiting and a record still queued — "the runner exited before taking it" — and started
another runner for the cancelled build (CI: four build processes for three builds in test_serve_workers). The
test runs that watcher pass at exactly that moment, with runner processes that are slow to take their spec.
"""
from __future__ import annotations

import os
import time
from pathlib import Path

import pandas as pd
import pytest

from index_format.storage import Storage
from service.server.job_runner import JobRunner
from service.catalog import Catalog, Table
from tests.api.helpers import make_settings, write_table

REPO = Path(__file__).resolve().parents[2]
SLOW_START = '''
import sys, time
if "service.build_job.build_runner" in sys.orig_argv:
    time.sleep(60)   # the runner has not taken its spec yet when the test cancels the build
'''


def test_the_watcher_between_ending_the_runner_and_recording_cancelled_starts_no_other(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "sitecustomize.py").write_text(SLOW_START)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path / "site"), str(REPO),
                                                      *filter(None, [os.environ.get("PYTHONPATH")])]))
    write_table(tmp_path / "data" / "t", pd.DataFrame({"s": ["a", "b", "c"] * 100}), 2)
    settings = make_settings(tmp_path, build_runner="process")
    storage = Storage(settings.warehouse, settings.allowed_roots)
    catalog = Catalog(storage)
    catalog.put_table(Table(name="t", location=str(tmp_path / "data" / "t")))
    runner = JobRunner(catalog, storage, settings, on_finished=lambda table: None)   # no watcher thread: we poll
    try:
        job = runner.start("t", "s", "bitmap", None, None)
        (host,) = runner.runners.processes
        assert runner.runners.box.is_waiting(job.id) and host.alive()

        real_update = catalog.update_job
        passes: list[int] = []
        in_window = [False]

        def update_job(job_id: str, **changes: object) -> object:
            if changes.get("state") == "cancelled" and not in_window[0]:
                in_window[0] = True
                deadline = time.monotonic() + 30
                while host.alive() and time.monotonic() < deadline:
                    time.sleep(0.02)
                assert not host.alive(), "cancelling ended the build's runner"
                runner._reap_all()   # the watcher's pass, in the window (it may record the cancel itself)
                passes.append(len(runner.runners.processes))
            return real_update(job_id, **changes)

        monkeypatch.setattr(catalog, "update_job", update_job)
        assert runner.cancel(job.id).state == "cancelled"
        assert passes == [1], "a new runner was started for the cancelled build"
        runner._reap_all()
        assert [p for p in runner.runners.processes if p.alive()] == []
        assert catalog.get_job(job.id).state == "cancelled"
        assert not runner.runners.box.is_waiting(job.id), "the cancelled build's spec is withdrawn"
    finally:
        for p in runner.runners.processes:
            p.terminate()
        runner.close(kill=True)
