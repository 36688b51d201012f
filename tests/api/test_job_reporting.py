"""A service that runs jobs reports and logs them: one log line per job start, end and failure (with
BGIX_LOG_FORMAT=json every line of a real `bgix serve` is one JSON object), `duration_s` and the
nothing-to-build `message` in job responses, and each build's own log at GET /v1/jobs/{id}/log."""
from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pandas as pd
import pytest

from service.api.app import create_app
from tests.api.helpers import TestClient, make_settings, wait_job, write_table
from tests.api.server import bgix_process

ROWS = 1800


def _table(root: Path) -> pd.DataFrame:
    rng = np.random.default_rng(7)
    df = pd.DataFrame({"status": rng.choice(["ok", "late", "lost"], ROWS), "n": rng.integers(0, 50, ROWS)})
    write_table(root / "data" / "t", df, 3)
    return df


def _seconds(iso: str) -> float:
    return datetime.fromisoformat(iso).timestamp()


@pytest.mark.slow
@pytest.mark.parametrize("workers", [1, 2])
def test_json_log_has_one_line_per_job_start_end_and_failure(tmp_path: Path, workers: int) -> None:
    _table(tmp_path)
    env = {"BGIX_WAREHOUSE": str(tmp_path / "warehouse"), "BGIX_ALLOWED_ROOTS": str(tmp_path / "data"),
           "BGIX_BUILD_ENGINE": "local", "BGIX_LOG_FORMAT": "json", "BGIX_JOB_POLL_SECONDS": "0.05"}
    log = tmp_path / "serve.log"
    # with two workers only the one running the jobs logs them, once
    with bgix_process(env, log, workers=workers, log_level="info") as (url, _proc), httpx.Client(base_url=url) as c:
        assert c.put("/v1/tables/t", json={"location": str(tmp_path / "data" / "t")}).status_code == 200
        build = {"table": "t", "index_column": "status"}
        built = wait_job(c, c.post("/v1/create_global_index", json=build).json()["job_id"])
        again = wait_job(c, c.post("/v1/create_global_index", json=build).json()["job_id"])
        # a build that fails: a file where its index directory must go
        (tmp_path / "warehouse" / "tables" / "t" / "indexes" / "n").mkdir(parents=True)
        (tmp_path / "warehouse" / "tables" / "t" / "indexes" / "n" / "data").write_text("in the way")
        failed = wait_job(c, c.post("/v1/create_global_index", json={"table": "t", "index_column": "n"})
                            .json()["job_id"])
        assert (built["state"], again["state"], failed["state"]) == ("succeeded", "succeeded", "failed")
        import time
        time.sleep(0.5)   # the watcher logs what it saw on its next poll
    text = log.read_text()
    lines = [json.loads(ln) for ln in text.splitlines() if ln.strip()]   # every line is one JSON object
    assert all({"timestamp", "level", "logger", "message"} <= set(d) for d in lines), text
    assert any(d["logger"].startswith("uvicorn") for d in lines), text   # uvicorn's lines too

    def events(job: dict[str, Any]) -> list[dict[str, Any]]:
        return [d for d in lines if d.get("job_id") == job["id"] and d.get("event")]

    mine = events(built)
    assert [d["event"] for d in mine] == ["job_start", "job_end"], mine
    start, end = mine
    for d in mine:
        assert (d["table"], d["index_column"], d["family"]) == ("t", "status", "bitmap")
        assert d["logger"] == "bgix.jobs" and d["level"] == "INFO"
    assert end["state"] == "succeeded" and end["rows"] == ROWS and end["error"] is None
    assert end["snapshot_id"] == built["snapshot_id"] == 1
    assert end["duration_s"] == pytest.approx(built["duration_s"], abs=0.01) and end["duration_s"] > 0
    assert _seconds(end["timestamp"]) >= _seconds(start["timestamp"])

    nothing = events(again)
    assert [d["event"] for d in nothing] == ["job_start", "job_end"], nothing
    assert nothing[1]["job_message"] == again["message"] == "index already up to date: nothing to build"

    bad = events(failed)
    assert [d["event"] for d in bad][-1] == "job_failure" and len([d for d in bad if d["event"] != "job_start"]) == 1
    assert bad[-1]["level"] == "WARNING" and bad[-1]["state"] == "failed"
    assert bad[-1]["error"] == failed["error"] and failed["error"]
    assert bad[-1]["index_column"] == "n"


def test_job_responses_carry_duration_message_and_log(tmp_path: Path) -> None:
    _table(tmp_path)
    with TestClient(create_app(make_settings(tmp_path))) as client:
        assert client.put("/v1/tables/t", json={"location": str(tmp_path / "data" / "t")}).status_code == 200
        first = wait_job(client, client.post("/v1/create_global_index",
                                             json={"table": "t", "index_column": "status"}).json()["job_id"])
        assert first["state"] == "succeeded", first
        assert first["duration_s"] == pytest.approx(_seconds(first["finished_at"]) - _seconds(first["started_at"]),
                                                    abs=0.002)
        assert first["duration_s"] > 0 and first["message"] is None
        second = wait_job(client, client.post("/v1/create_global_index",
                                              json={"table": "t", "index_column": "status"}).json()["job_id"])
        assert second["message"] == "index already up to date: nothing to build"
        listed = {j["id"]: j for j in client.get("/v1/jobs").json()["jobs"]}
        assert listed[second["id"]]["message"] == second["message"]
        assert listed[first["id"]]["duration_s"] == first["duration_s"]

        r = client.get(f"/v1/jobs/{first['id']}/log")
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
        assert r.text.startswith(f"bgix build job {first['id']}: table t, columns status (bitmap), engine local")
        assert f"job {first['id']}: committed" in r.text and f"job {first['id']} succeeded" in r.text
        assert first["id"] in r.text and second["id"] not in r.text   # its own lines only
        assert "index already up to date" in client.get(f"/v1/jobs/{second['id']}/log").text
        missing = client.get("/v1/jobs/nosuchjob/log")
        assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"
