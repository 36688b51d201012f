"""The same build job against a standalone Spark master + worker on 127.0.0.1 (spark://): as a separate
driver process (`python -m service.build_job.main`), and as builds through the API on the service's warm runner
(plain and Paimon tables in one application: each driver costs a JVM and an executor's start)."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import pyspark
from index_format.storage import Storage
from service.catalog import Catalog, Table
from tests.e2e.conftest import free_port
from tests.factories import assert_index_matches, make_parquet_table, oracle_table

pytestmark = [pytest.mark.spark, pytest.mark.slow]
SPARK_HOME = os.path.dirname(pyspark.__file__)
REPO = Path(__file__).resolve().parents[2]
LIGHT_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
MASTER = "org.apache.spark.deploy.master.Master"
WORKER = "org.apache.spark.deploy.worker.Worker"


def _daemon_env(tmp: Path) -> dict[str, str]:
    return {**os.environ, "SPARK_HOME": SPARK_HOME, "SPARK_PID_DIR": str(tmp / "pid"),
            "SPARK_LOG_DIR": str(tmp / "log"), "SPARK_WORKER_DIR": str(tmp / "work"),
            "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_IDENT_STRING": "bgixtest",
            "PYSPARK_PYTHON": sys.executable, "SPARK_NO_DAEMONIZE": "",
            # the master and worker only schedule: C1 and a serial collector start them for a fraction of the CPU
            "SPARK_DAEMON_JAVA_OPTS": LIGHT_JVM}


def _daemon(env: dict[str, str], *args: str) -> None:
    subprocess.run([f"{SPARK_HOME}/sbin/spark-daemon.sh", *args], env=env, check=True, timeout=60,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _master_state(webui: int) -> dict[str, Any]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{webui}/json/", timeout=2) as r:
            return dict(json.load(r))
    except OSError:
        return {}


def _alive_workers(webui: int) -> int:
    return int(_master_state(webui).get("aliveworkers", 0))


@pytest.fixture(scope="module")
def standalone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, int]]:
    tmp = tmp_path_factory.mktemp("spark-cluster")
    env = _daemon_env(tmp)
    env.pop("SPARK_NO_DAEMONIZE")
    port, webui, worker_ui = free_port(), free_port(), free_port()
    url = f"spark://127.0.0.1:{port}"
    started: list[str] = []
    try:
        _daemon(env, "start", MASTER, "1", "--host", "127.0.0.1", "--port", str(port), "--webui-port", str(webui))
        started.append(MASTER)
        _daemon(env, "start", WORKER, "1", url, "--host", "127.0.0.1", "--webui-port", str(worker_ui),
                "--cores", "1", "--memory", "1g")
        started.append(WORKER)
        deadline = time.monotonic() + 90
        while _alive_workers(webui) < 1:
            if time.monotonic() > deadline:
                logs = "\n".join(p.read_text()[-2000:] for p in (tmp / "log").glob("*.out"))
                raise AssertionError(f"standalone worker did not register within 90 s\n{logs}")
            time.sleep(0.5)
        yield url, webui
    finally:
        for cls in reversed(started):
            try:
                _daemon(env, "stop", cls, "1")
            except subprocess.SubprocessError:
                for pid_file in (tmp / "pid").glob("*.pid"):
                    try:
                        os.kill(int(pid_file.read_text().strip()), 9)
                    except (OSError, ValueError):
                        pass


def _run_job(tmp_path: Path, master_url: str, **spec: Any) -> dict[str, Any]:
    """Run the build job `spec` on the cluster as a separate driver process; its last stdout line (the result)."""
    spec_path = tmp_path / "spec.json"
    spec_path.write_text(json.dumps({
        **spec, "spark_master": master_url,
        "spark_conf": {"spark.executor.memory": "512m", "spark.executor.cores": "1",
                       "spark.cores.max": "1", "spark.driver.host": "127.0.0.1",
                       "spark.driver.bindAddress": "127.0.0.1", "spark.ui.enabled": "false"}}))
    env = {**os.environ, "PYTHONPATH": str(REPO), "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable}
    proc = subprocess.run([sys.executable, "-m", "service.build_job.main", "--spec", str(spec_path)],
                          env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


def test_build_on_standalone_cluster(standalone: tuple[str, int], tmp_path: Path) -> None:
    master_url, webui = standalone
    gen = make_parquet_table(tmp_path, rows_per_file=(900, 1400, 700), partitions=[{"dt": "a"}, {"dt": "b"}])
    wh = tmp_path / "wh"
    cat = Catalog(Storage(str(wh), [str(tmp_path)]))
    cat.put_table(Table("t", str(gen.location), partition_columns=["dt"]))
    result = _run_job(tmp_path, master_url, job_id="cluster1", warehouse=str(wh), allowed_roots=[str(tmp_path)],
                      table="t", index_column="s", options={"sorted-index.records-per-range": "1000"})
    snap = cat.current_snapshot("t", "s")
    assert result["snapshot_id"] == snap.id == 1
    assert cat.get_job("cluster1").state == "succeeded"
    assert _build_apps(webui) >= 1  # the job really ran as an application of this master
    assert assert_index_matches(cat, snap, oracle_table(gen.files, ["s"]), "s") > 5


def _build_apps(webui: int) -> int:
    state = _master_state(webui)
    return sum(a.get("name") == "bgix-build" for a in state.get("completedapps", []) + state.get("activeapps", []))


def test_warm_runner_on_standalone_cluster(standalone: tuple[str, int], tmp_path: Path) -> None:
    """The service's warm build runner as one application of the cluster: builds through the API on its one
    session (one more application for all of them), answers checked against the rows. A plain table's two
    columns one build each; a pypaimon table (partitioned, row tracking, data evolution, 3 commits, nulls): two
    columns in one request, committed as one Paimon snapshot, judged by pypaimon's own index scanner."""
    from fastapi.testclient import TestClient

    from service.api.app import create_app
    from tests.api.helpers import make_settings, wait_job
    from tests.e2e.test_paimon_build import assert_no_overlap, assert_pypaimon_agrees
    from tests.unit.tables.paimon.paimon_tables import create_table, pypaimon_table

    master_url, webui = standalone
    apps_before = _build_apps(webui)
    gen = make_parquet_table(tmp_path / "data", rows_per_file=(900, 1400, 700))
    location = create_table(tmp_path / "data" / "warehouse", "events", commits=3, rows=1000)
    before = int(pypaimon_table(location).snapshot_manager().get_latest_snapshot().id)
    settings = make_settings(tmp_path, build_engine="spark", spark_master=master_url, build_prewarm=True,
                             build_warmup_s=300.0)
    with TestClient(create_app(settings)) as client:
        deadline = time.monotonic() + 300
        while client.get("/readyz").status_code != 200:
            assert time.monotonic() < deadline
            time.sleep(0.2)
        assert client.put("/v1/tables/t", json={"location": str(gen.location)}).status_code == 200
        assert client.put("/v1/tables/events", json={"format": "paimon", "location": str(location)}).status_code \
            == 200
        state = client.app.state.services.jobs.runners.box.state()
        assert state is not None and state["state"] == "warm" and state["master"] == master_url
        jobs = []
        for body in ({"table": "t", "index_column": "s"}, {"table": "t", "index_column": "n"},
                     {"table": "events", "index_column": "status,flag",
                      "options": {"sorted-index.records-per-range": "700"}}):
            r = client.post("/v1/create_global_index", json=body)
            assert r.status_code == 202, r.text
            jobs.append(wait_job(client, r.json()["job_id"], timeout=300))
        assert [j["state"] for j in jobs] == ["succeeded"] * 3, jobs
        catalog = client.app.state.services.catalog
        assert {catalog.get_job(j["id"]).pid for j in jobs} == {state["pid"]}
        for column in ("s", "n"):
            snap = catalog.current_snapshot("t", column)
            assert assert_index_matches(catalog, snap, oracle_table(gen.files, [column]), column) > 5
    assert _build_apps(webui) == apps_before + 1   # the warm-up and all three builds: one application
    assert int(pypaimon_table(location).snapshot_manager().get_latest_snapshot().id) == before + 1
    entries = assert_no_overlap(location)
    assert set(entries) == {"status", "flag"}
    for items in entries.values():
        assert sum(e.row_range_end - e.row_range_start + 1 for e in items) == 3000
    assert_pypaimon_agrees(location, "status")
    assert_pypaimon_agrees(location, "flag")
