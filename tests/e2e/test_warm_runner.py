"""The warm build service (issue 22): one build runner, started with the service, serves build after build on one
Spark session; a Python worker that dies fails only its build; a cancel stops a running build and commits
nothing; a runner killed with SIGKILL fails its build and a new runner takes the next one; the API answers while
the runner is frozen; an idle runner exits and the next build starts another.

Ground truth: counts from pandas over the source rows. Builds go through the HTTP API; builds that need a test
hook (a crashing worker, a slow batch) are recorded and handed to the same runner the way the API hands specs over.
"""
from __future__ import annotations

import os
import signal
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from fastapi.testclient import TestClient

from service.api.app import create_app
from service.jobs.jobspec import JobSpec
from service.jobs.liveness import process_alive
from tests.api.helpers import make_settings, wait_job, wait_until, write_table

ROWS = 40_000


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TestClient, pd.DataFrame, Path]]:
    root = tmp_path_factory.mktemp("warm")
    rng = np.random.default_rng(22)
    df = pd.DataFrame({"s": rng.choice([f"v{i}" for i in range(50)], ROWS), "n": rng.integers(0, 500, ROWS)})
    write_table(root / "data" / "t", df, 8)
    settings = make_settings(root, build_engine="spark", spark_master="local[2]", build_prewarm=True,
                             build_warmup_s=300.0)
    with TestClient(create_app(settings)) as client:
        # readiness waits for the warm-up (bounded)
        wait_until(lambda: client.get("/readyz").status_code == 200, 300, "/readyz after the warm-up", interval=0.2)
        assert client.get("/readyz").json()["checks"]["builds"] == "warm"
        assert client.put("/v1/tables/t", json={"location": str(root / "data" / "t")}).status_code == 200
        yield client, df, root
    # shutdown: the runner exits with the service (EOF on its stdin)


def _state(client: TestClient) -> dict[str, Any]:
    return client.app.state.services.jobs.runners.box.state() or {}


def _build(client: TestClient, column: str, **options: str) -> dict[str, Any]:
    body: dict[str, Any] = {"table": "t", "index_column": column}
    if options:
        body["options"] = options
    r = client.post("/v1/create_global_index", json=body)
    assert r.status_code == 202, r.text
    return wait_job(client, r.json()["job_id"])


def _count(client: TestClient, where: str) -> int:
    r = client.post("/v1/tables/t/query", json={"where": where, "result": "count"})
    assert r.status_code == 200, r.text
    return int(r.json()["count"])


def _hand_over(client: TestClient, column: str, hooks: dict[str, Any]) -> str:
    """Record a job and hand its spec (with test hooks, which the API does not take) to the service's runner, as
    the API does after its checks."""
    services = client.app.state.services
    settings = services.settings
    spec = JobSpec(job_id=uuid.uuid4().hex, warehouse=services.storage.root, table="t", index_column=column,
                   allowed_roots=list(services.storage.allowed_roots), spark_master=settings.spark_master,
                   engine="spark", table_format="parquet", options={"rebuild": "true"}, test_hooks=hooks)
    return services.jobs.hand_over(spec).id


def _job_pid(client: TestClient, job_id: str) -> int | None:
    return client.app.state.services.catalog.get_job(job_id).pid


def test_two_builds_in_a_row_share_one_session_and_one_runner(served: Any) -> None:
    client, df, _ = served
    before = _state(client)
    a = _build(client, "s")
    b = _build(client, "n")
    assert a["state"] == b["state"] == "succeeded", (a, b)
    pid = before["pid"]
    assert _job_pid(client, a["id"]) == _job_pid(client, b["id"]) == pid   # both ran in the warm runner
    after = _state(client)
    assert after["pid"] == pid and after["sessions"] == 1 and after["spark_app"] == before["spark_app"]
    assert after["builds"] >= before["builds"] + 2
    for job in (a, b):   # the session was there already: the builds went from plan to tasks
        phases = job["progress"]["phases"]
        # starting a session takes seconds (5–9 s measured); getting the warm one, milliseconds (0.11 s seen with
        # the machine loaded twice over): a bound between the two, not a timing
        assert set(phases) == {"open and plan", "Spark session", "tasks", "commit"} and phases["Spark session"] < 2.0
    assert _count(client, "s = 'v7'") == int((df.s == "v7").sum())
    assert _count(client, "n < 100") == int((df.n < 100).sum())


def test_a_crashed_worker_fails_its_build_and_the_runner_goes_on(served: Any) -> None:
    client, df, _ = served
    pid = _state(client)["pid"]
    job_id = _hand_over(client, "s", {"fail_after_files": 1, "crash": True})
    job = wait_job(client, job_id)
    assert job["state"] == "failed" and "exited unexpectedly" in job["error"], job   # Spark's word for it
    # its log beside the record: what the build logged, Spark's report of its job group, and the runner's output
    # (the JVM's log) of the time it ran
    text = client.get(f"/v1/jobs/{job_id}/log").text
    assert text.startswith(f"bgix build job {job_id}: table t, columns s (bitmap), engine spark"), text[:500]
    assert f"Spark job group bgix-{job_id} failed" in text and "build runner output while this build ran" in text
    assert process_alive(pid)
    ok = _build(client, "s", **{"rebuild": "true"})
    assert ok["state"] == "succeeded", ok
    assert _job_pid(client, ok["id"]) == pid and _state(client)["sessions"] == 1
    assert _count(client, "s = 'v3'") == int((df.s == "v3").sum())


def test_a_cancel_stops_a_running_build_and_commits_nothing(served: Any) -> None:
    client, df, _ = served
    pid = _state(client)["pid"]
    snapshots = client.get("/v1/tables/t/indexes").json()
    job_id = _hand_over(client, "n", {"sleep_per_batch": 5.0, "skip_active_check": True})
    wait_until(lambda: client.get(f"/v1/jobs/{job_id}").json()["state"] == "running", 60, "the build started")
    r = client.post(f"/v1/jobs/{job_id}/cancel")
    assert r.status_code == 200 and r.json()["state"] == "cancelled"
    # The runner cancels the Spark job: the build records itself cancelled long before its sleeps would end.
    wait_until(lambda: _job_pid(client, job_id) is not None and job_id not in _state(client).get("running", [job_id]),
          30, "the runner let go of the cancelled build")
    assert client.get(f"/v1/jobs/{job_id}").json()["state"] == "cancelled"
    assert client.get("/v1/tables/t/indexes").json() == snapshots
    assert process_alive(pid) and _state(client)["sessions"] == 1
    assert _build(client, "n", rebuild="true")["state"] == "succeeded"
    assert _count(client, "n = 42") == int((df.n == 42).sum())


def test_the_api_does_not_wait_on_a_frozen_runner(served: Any) -> None:
    client, df, _ = served
    pid = _state(client)["pid"]
    os.kill(pid, signal.SIGSTOP)
    try:
        r = client.post("/v1/create_global_index", json={"table": "t", "index_column": "s",
                                                         "options": {"rebuild": "true"}})
        assert r.status_code == 202, r.text
        job_id = r.json()["job_id"]
        assert client.get(f"/v1/jobs/{job_id}").json()["state"] == "queued"
        assert _count(client, "s = 'v1'") == int((df.s == "v1").sum())   # queries answer meanwhile
        assert client.get("/readyz").status_code == 200
    finally:
        os.kill(pid, signal.SIGCONT)
    assert wait_job(client, job_id)["state"] == "succeeded"


def test_a_runner_killed_mid_build_fails_it_and_a_new_runner_takes_the_next(served: Any) -> None:
    client, df, _ = served
    old = _state(client)["pid"]
    job_id = _hand_over(client, "n", {"sleep_per_batch": 5.0, "skip_active_check": True})
    wait_until(lambda: client.get(f"/v1/jobs/{job_id}").json()["state"] == "running", 60, "the build started")
    os.kill(old, signal.SIGKILL)
    job = wait_job(client, job_id)
    assert job["state"] == "failed" and "runner exited" in job["error"], job
    assert f"job {job_id}" in client.get(f"/v1/jobs/{job_id}/log").text   # the runner's output, if nothing else
    # The service starts a new warm runner at once (it was prewarming); the next build runs there.
    wait_until(lambda: _state(client).get("pid") not in (None, old) and _state(client).get("state") == "warm", 180,
          "a new warm runner")
    ok = _build(client, "n", rebuild="true")
    assert ok["state"] == "succeeded", ok
    assert _job_pid(client, ok["id"]) == _state(client)["pid"] != old
    assert _count(client, "n >= 250") == int((df.n >= 250).sum())


def test_an_idle_runner_exits_and_the_next_build_starts_another(tmp_path: Path) -> None:
    df = pd.DataFrame({"s": [f"k{i % 7}" for i in range(700)]})
    write_table(tmp_path / "data" / "t", df, 2)
    with TestClient(create_app(make_settings(tmp_path, build_idle_s=0.5))) as client:   # local engine
        assert client.put("/v1/tables/t", json={"location": str(tmp_path / "data" / "t")}).status_code == 200
        first = _build(client, "s")
        assert first["state"] == "succeeded"
        runner = client.app.state.services.jobs.runners.warm
        assert runner is not None
        wait_until(lambda: not runner.alive(), 30, "the idle runner exited")
        assert runner.proc.returncode == 0 and client.get("/readyz").status_code == 200
        second = _build(client, "s", rebuild="true")
        assert second["state"] == "succeeded"
        assert _job_pid(client, second["id"]) != _job_pid(client, first["id"])
        assert _count(client, "s = 'k3'") == int((df.s == "k3").sum())
