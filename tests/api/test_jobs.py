"""Job records: they survive a restart (a job whose process is gone becomes failed), cancel terminates the
process group, progress is reported, and /metrics counts jobs by state and requests by route template."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from service.api.app import create_app
from service.catalog import Catalog
from service.catalog.model import JobRecord
from tests.api.helpers import TestClient, make_settings, wait_job, write_table
from tests.api.predicates import make_frame


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_restart_marks_orphaned_jobs_failed_and_keeps_finished_ones(tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    app = create_app(settings)
    catalog: Catalog = app.state.services.catalog
    catalog.put_job(JobRecord(id="lostrun", table="t", column="a", state="running", pid=_dead_pid()))
    catalog.put_job(JobRecord(id="lostqueue", table="t", column="b", state="queued", pid=None))
    catalog.put_job(JobRecord(id="done", table="t", column="c", state="succeeded", snapshot_id=3))
    with TestClient(create_app(settings)) as client:
        jobs = {j["id"]: j for j in client.get("/v1/jobs").json()["jobs"]}
        assert jobs["lostrun"]["state"] == "failed" and "gone" in jobs["lostrun"]["error"]
        assert jobs["lostqueue"]["state"] == "failed"
        assert jobs["done"]["state"] == "succeeded" and jobs["done"]["snapshot_id"] == 3
        assert set(jobs["done"]["progress"]) == {"fraction", "rows_indexed", "ranges_done", "ranges_total", "phases"}
        assert jobs["done"]["progress"]["phases"] is None   # recorded by a build that ran before phases were kept
        metrics = client.get("/metrics").text
        assert 'bgix_jobs{state="failed"} 2.0' in metrics
        assert 'bgix_jobs{state="succeeded"} 1.0' in metrics


def test_cancel_terminates_a_running_job_process(tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    job_id = "sleepy0001"
    # Stands in for a build process adopted after a restart: its command line names the job.
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "build_job", job_id],
                            start_new_session=True)
    try:
        Catalog(create_app(settings).state.services.storage).put_job(
            JobRecord(id=job_id, table="t", column="a", state="running", pid=proc.pid))
        with TestClient(create_app(settings)) as client:
            assert client.get(f"/v1/jobs/{job_id}").json()["state"] == "running"
            r = client.post(f"/v1/jobs/{job_id}/cancel")
            assert r.status_code == 200 and r.json()["state"] == "cancelled", r.text
            assert proc.wait(timeout=10) != 0
            assert client.get(f"/v1/jobs/{job_id}").json()["state"] == "cancelled"
            # cancelling a finished job changes nothing
            assert client.post(f"/v1/jobs/{job_id}/cancel").json()["state"] == "cancelled"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_build_job_reports_progress_and_snapshot(tmp_path: Path) -> None:
    df = make_frame(np.random.default_rng(5), 500)
    write_table(tmp_path / "data" / "t", df, 2)
    app = create_app(make_settings(tmp_path))
    spec_dir = app.state.services.jobs._spec_dir
    with TestClient(app) as client:
        client.put("/v1/tables/t", json={"location": str(tmp_path / "data" / "t")})
        r = client.post("/v1/create_global_index", json={"table": "t", "index_column": "age"})
        assert r.status_code == 202 and r.headers["location"] == f"/v1/jobs/{r.json()['job_id']}"
        job = wait_job(client, r.json()["job_id"])
        assert job["state"] == "succeeded" and job["error"] is None
        assert job["snapshot_id"] == 1 and job["progress"]["fraction"] == 1.0
        assert job["progress"]["rows_indexed"] == 500
        assert job["index_column"] == "age" and job["table"] == "t"
        # a new snapshot is picked up without restart
        write_table(tmp_path / "data" / "t2", df.iloc[:10], 1)
        (tmp_path / "data" / "t2" / "part-000.parquet").rename(tmp_path / "data" / "t" / "part-009.parquet")
        files = client.get("/v1/tables/t/files", params={"refresh": True}).json()
        assert files["total_rows"] == 510
        # the new file's rows are not covered yet: reported, and never returned as matches
        data = client.post("/v1/tables/t/query", json={"where": "age >= 0 OR age IS NULL", "result": "count",
                                                       "scan": "never"}).json()
        assert data["coverage"] == {"complete": False, "uncovered_ranges": [[500, 509]]}
        assert data["count"] == 500
        # by default they are read from the new file: the whole table, exactly
        data = client.post("/v1/tables/t/query", json={"where": "age >= 0 OR age IS NULL", "result": "count"}).json()
        assert data["coverage"] == {"complete": True, "uncovered_ranges": []} and data["count"] == 510
        listing = client.get("/v1/tables/t/indexes").json()["indexes"][0]
        assert listing["uncovered_ranges"] == [[500, 509]]
        old_cursor = client.post("/v1/tables/t/query", json={"where": "age >= 0", "limit": 5}).json()["next_cursor"]
        assert old_cursor
        job2_id = client.post("/v1/create_global_index", json={"table": "t", "index_column": "age"}).json()["job_id"]
        # the job spec (it may hold credentials) goes to the build runner's directory, readable by us only ...
        specs = [p for p in spec_dir.rglob(f"{job2_id}.json")]
        assert all(p.stat().st_mode & 0o077 == 0 for p in specs)
        job2 = wait_job(client, job2_id)
        assert job2["state"] == "succeeded" and job2["snapshot_id"] == 2
        data = client.post("/v1/tables/t/query", json={"where": "age >= 0", "result": "count"}).json()
        full = int(df.age.notna().sum()) + int(df.age.iloc[:10].notna().sum())
        assert data["count"] == full and data["snapshots"] == {"age": 2}
        # a cursor taken on snapshot 1 does not silently continue on snapshot 2
        r = client.post("/v1/tables/t/query", json={"where": "age >= 0", "limit": 5, "cursor": old_cursor})
        assert r.status_code == 409 and r.json()["error"]["code"] == "conflict"
        metrics = client.get("/metrics").text
        assert 'route="/v1/tables/{name}/query"' in metrics
        assert "bgix_index_bytes_read_total" in metrics and "bgix_cache_hit_ratio" in metrics
        # ... and is removed once the build has ended (the job's state is written by the runner, so the spec may
        # go a moment after the state says succeeded)
        deadline = time.monotonic() + 30
        while list(spec_dir.rglob(f"{job2_id}.json")) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not list(spec_dir.rglob(f"{job2_id}.json"))
    assert not spec_dir.exists()  # the directory goes on shutdown once no build runs from it


def test_job_of_unknown_table_is_404_and_pid_free(tmp_path: Path) -> None:
    with TestClient(create_app(make_settings(tmp_path))) as client:
        r = client.post("/v1/create_global_index", json={"table": "nope", "index_column": "a"})
        assert r.status_code == 404 and r.json()["error"]["code"] == "not_found"
        assert client.get("/v1/jobs").json()["jobs"] == []
    assert os.getpid() > 0


def test_a_build_whose_spark_session_cannot_start_fails_with_the_reason(tmp_path: Path, monkeypatch) -> None:
    """No Java for the runner's Spark session: the job fails naming it (never stays queued) and the service goes on."""
    df = make_frame(np.random.default_rng(8), 50)
    write_table(tmp_path / "data" / "t", df, 1)
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "no-java"))   # the runner inherits the service's environment
    with TestClient(create_app(make_settings(tmp_path, build_engine="spark", spark_master="local[1]"))) as client:
        client.put("/v1/tables/t", json={"location": str(tmp_path / "data" / "t")})
        r = client.post("/v1/create_global_index", json={"table": "t", "index_column": "age"})
        assert r.status_code == 202, r.text
        job = wait_job(client, r.json()["job_id"])
        assert job["state"] == "failed" and "java" in job["error"].lower(), job
        assert client.get("/readyz").status_code == 200
