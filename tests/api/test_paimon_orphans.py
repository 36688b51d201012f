"""`POST /v1/remove_orphan_files` on a Paimon table, and the service's own cleanup after builds that died: the
token guards it, a dry run removes nothing, files some snapshot names stay, a plain table is refused, and at
start-up the files a killed build left go. The directory listing and pypaimon's index manifests are the judges."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from pypaimon.index.index_file_handler import IndexFileHandler

from index_format.storage import Storage
from service.api.app import create_app
from service.catalog import Catalog
from service.jobs.inflight_builds import list_inflight, put_inflight
from service.jobs.jobspec import JobSpec
from service.tables.build_tasks import job_stamp
from tests.api.helpers import TestClient, make_settings, wait_job
from tests.api.server import bgix_process
from tests.unit.tables.paimon.paimon_tables import create_table, pypaimon_read, pypaimon_table

TOKEN = {"Authorization": "Bearer s3cret"}
FOREIGN = "bitmap-global-index-7d9c1a2b-3e4f-4a5b-8c6d-7e8f9a0b1c2d.index"


def _referenced(location: Path) -> set[str]:
    table = pypaimon_table(location)
    handler = IndexFileHandler(table=table)
    return {str(e.index_file.file_name) for s in table.snapshot_manager().list_snapshots() for e in handler.scan(s)}


def _stamped(job: str) -> str:
    s = job_stamp(job)
    return f"btree-global-index-{s[:8]}-{s[8:12]}-{s[12:16]}-8000-0123456789ab.index"


def _old(path: Path) -> None:
    t = time.time() - 7200
    os.utime(path, (t, t))


def test_remove_orphan_files_endpoint(tmp_path: Path) -> None:
    location = create_table(tmp_path / "data" / "warehouse", "events", commits=2, rows=500)
    with TestClient(create_app(make_settings(tmp_path, token="s3cret"))) as client:
        assert client.put("/v1/tables/events", json={"format": "paimon", "location": str(location)},
                          headers=TOKEN).status_code == 200
        r = client.post("/v1/create_global_index", json={"table": "events", "index_column": "status"}, headers=TOKEN)
        job = wait_job(client, r.json()["job_id"])
        assert job["state"] == "succeeded", job
        index = location / "index"
        committed = set(os.listdir(index))
        some = next(n for n in committed if "-global-index-" in n)
        shutil.copy(index / some, index / FOREIGN)                 # unattributed: goes by age only
        shutil.copy(index / some, index / _stamped(job["id"]))     # the finished build's: goes at once
        _old(index / FOREIGN)
        body = {"table": "events", "older_than_s": 3600, "dry_run": True}
        assert client.post("/v1/remove_orphan_files", json=body).status_code == 401
        r = client.post("/v1/remove_orphan_files", json=body, headers=TOKEN)
        assert r.status_code == 200, r.text
        out = r.json()
        assert out["dry_run"] is True and out["files"] == 2
        assert {f["file_name"]: f["job_id"] for f in out["removed"]} == {FOREIGN: None, _stamped(job["id"]): job["id"]}
        assert out["bytes"] == 2 * os.path.getsize(index / some)
        assert out["kept"] == {"referenced": len(committed & _referenced(location)), "in_flight": 0, "young": 0}
        assert set(os.listdir(index)) == committed | {FOREIGN, _stamped(job["id"])}   # nothing removed
        r = client.post("/v1/remove_orphan_files", json={**body, "dry_run": False}, headers=TOKEN)
        assert r.json()["files"] == 2
        assert set(os.listdir(index)) == committed
        assert {n for n in committed if "-global-index-" in n} <= _referenced(location)
        # bad input is a 422, not a removal
        bad = client.post("/v1/remove_orphan_files", json={**body, "older_than_s": -1}, headers=TOKEN)
        assert bad.status_code == 422
        assert client.post("/v1/remove_orphan_files", json={"table": "nope"}, headers=TOKEN).status_code == 404


def test_plain_tables_are_refused(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq
    (tmp_path / "data" / "plain").mkdir(parents=True)
    pq.write_table(pa.table({"a": [1, 2]}), tmp_path / "data" / "plain" / "f.parquet")
    with TestClient(create_app(make_settings(tmp_path))) as client:
        assert client.put("/v1/tables/plain", json={"location": str(tmp_path / "data" / "plain")}).status_code == 200
        r = client.post("/v1/remove_orphan_files", json={"table": "plain"})
        assert r.status_code == 400 and r.json()["error"]["code"] == "unsupported_operation", r.text


def test_service_start_removes_what_a_killed_build_left(tmp_path: Path) -> None:
    location = create_table(tmp_path / "data" / "warehouse", "events", commits=2, rows=500)
    settings = make_settings(tmp_path)
    with TestClient(create_app(settings)) as client:
        client.put("/v1/tables/events", json={"format": "paimon", "location": str(location)})
        job = wait_job(client, client.post("/v1/create_global_index",
                                           json={"table": "events", "index_column": "status"}).json()["job_id"])
        assert job["state"] == "succeeded"
    index = location / "index"
    committed = set(os.listdir(index))
    some = next(n for n in committed if "-global-index-" in n)
    # a build killed mid-way in an earlier service: its marker names a process that is gone, its files are young
    catalog = Catalog(Storage(settings.warehouse, settings.allowed_roots))
    put_inflight(catalog.storage, "killed", "events", str(location), "paimon")
    marker = Path(settings.warehouse) / "jobs" / "killed.inflight"
    doc = json.loads(marker.read_text())
    proc = subprocess.Popen(["true"])
    proc.wait()
    marker.write_text(json.dumps({**doc, "pid": proc.pid, "pid_start": None}))
    shutil.copy(index / some, index / _stamped("killed"))
    shutil.copy(index / some, index / FOREIGN)                     # young and unattributed: stays
    with TestClient(create_app(settings)):
        deadline = time.monotonic() + 30
        while (index / _stamped("killed")).exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert set(os.listdir(index)) == committed | {FOREIGN}
        deadline = time.monotonic() + 10
        while list_inflight(catalog.storage) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert list_inflight(catalog.storage) == []


@pytest.mark.slow
def test_cleanup_without_age_guard_never_touches_running_builds(tmp_path: Path) -> None:
    """Issue 34 #6: `older_than_s: 0` in a loop while builds run removed their temp files (and the files of
    builds that started after the cleanup read the live builds), failing most of them. Now every build
    succeeds, nothing of theirs is removed, and every file a snapshot names is there."""
    tables = {f"t{i}": create_table(tmp_path / "data" / "warehouse", f"t{i}", commits=3, rows=800, seed=i)
              for i in range(3)}
    env = {"BGIX_WAREHOUSE": str(tmp_path / "warehouse"), "BGIX_ALLOWED_ROOTS": str(tmp_path / "data"),
           "BGIX_BUILD_ENGINE": "local", "BGIX_JOB_POLL_SECONDS": "0.05"}
    stop = threading.Event()
    sweeps: list[dict[str, Any]] = []

    def sweep(url: str) -> None:
        deadline = time.monotonic() + 240
        with httpx.Client(base_url=url, timeout=60) as c:
            while not stop.is_set() and len(sweeps) < 5000 and time.monotonic() < deadline:
                for name in tables:
                    r = c.post("/v1/remove_orphan_files", json={"table": name, "older_than_s": 0})
                    assert r.status_code == 200, r.text
                    sweeps.append(r.json())

    with bgix_process(env, tmp_path / "serve.log") as (url, _), httpx.Client(base_url=url, timeout=60) as c:
        for name, location in tables.items():
            assert c.put(f"/v1/tables/{name}", json={"format": "paimon", "location": str(location)}).status_code == 200
        sweeper = threading.Thread(target=sweep, args=(url,), daemon=True)
        sweeper.start()
        jobs = []
        try:
            for column in ("status", "code"):
                ids = [c.post("/v1/create_global_index", json={
                    "table": name, "index_column": column,
                    "options": {"rebuild": "true", "sorted-index.records-per-range": "40"}}).json()["job_id"]
                    for name in tables]
                jobs += [wait_job(c, i) for i in ids]
        finally:
            stop.set()
            sweeper.join(timeout=120)
    assert [j["state"] for j in jobs] == ["succeeded"] * len(jobs), [j["error"] for j in jobs]
    assert sweeps and not [f for s in sweeps for f in s["removed"]]
    for location in tables.values():
        referenced = _referenced(location)
        assert referenced and referenced <= set(os.listdir(location / "index"))


def _hand_over(client: TestClient, table: str, column: str, hooks: dict[str, Any], **fields: Any) -> str:
    """Record a Paimon build and hand its spec (with test hooks, which the API does not take) to the service's
    build runner, as the API does after its checks."""
    services = client.app.state.services
    spec = JobSpec(job_id=uuid.uuid4().hex, warehouse=services.storage.root, table=table, index_column=column,
                   allowed_roots=list(services.storage.allowed_roots), table_format="paimon",
                   options={"rebuild": "true"}, test_hooks=hooks,
                   **{"engine": "local", "spark_master": services.settings.spark_master, **fields})
    return services.jobs.hand_over(spec).id


def _files_of(location: Path, job: str) -> list[str]:
    """The files in the table's index directory whose name carries `job`'s stamp (temp files too)."""
    s = job_stamp(job)
    stamp = f"{s[:8]}-{s[8:12]}-{s[12:16]}-"
    return [n for n in os.listdir(location / "index") if stamp in n]


def test_a_build_that_fails_after_writing_files_removes_them(tmp_path: Path) -> None:
    """Issue 34 #9: a build whose task failed after writing index files (it never reported them) left them, and
    its marker went with the failure, so the dead-build cleanup never took them either."""
    location = create_table(tmp_path / "data" / "warehouse", "events", commits=2, rows=500)
    with TestClient(create_app(make_settings(tmp_path))) as client:
        assert client.put("/v1/tables/events", json={"format": "paimon", "location": str(location)}).status_code == 200
        first = wait_job(client, client.post("/v1/create_global_index",
                                             json={"table": "events", "index_column": "status"}).json()["job_id"])
        assert first["state"] == "succeeded", first
        before = _referenced(location)
        listed = set(os.listdir(location / "index"))
        files = {n: (location / "index" / n).read_bytes() for n in before}
        job = wait_job(client, _hand_over(client, "events", "status", {"fail_after_files": 2}))
        assert job["state"] == "failed" and "test hook: failing after 2 index file(s)" in job["error"], job
        assert _files_of(location, job["id"]) == []
        assert _referenced(location) == before      # the index it was to replace: intact
        assert {n: (location / "index" / n).read_bytes() for n in before} == files
        assert set(os.listdir(location / "index")) == listed
        assert list_inflight(Storage(str(tmp_path / "warehouse"))) == []
        r = client.post("/v1/tables/events/query", json={"where": "status = 'ok'", "result": "count"})
        assert r.status_code == 200, r.text
        assert r.json()["count"] == pypaimon_read(location, ["status"]).column("status").to_pylist().count("ok")


def _child_jvm(pid: int) -> int | None:
    """The pid of the java process `pid` started (a build runner's Spark JVM), None while there is none."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        comm, rest = text[text.index("(") + 1:text.rindex(")")], text[text.rindex(")") + 2:].split()
        if comm == "java" and int(rest[1]) == pid:
            return int(stat.parent.name)
    return None


@pytest.mark.slow
def test_a_build_whose_spark_jvm_is_killed_says_so_and_leaves_no_files(tmp_path: Path) -> None:
    """Issue 34: the runner's Spark JVM killed mid-build failed the build with `ConnectionRefusedError` and left
    the files its task had written. Now the error names the JVM's death, the files go, the index the build was to
    replace stays, and the next build runs (in a new runner: the old one's session is gone)."""
    location = create_table(tmp_path / "data" / "warehouse", "events", commits=2, rows=300)
    with TestClient(create_app(make_settings(tmp_path))) as client:
        assert client.put("/v1/tables/events", json={"format": "paimon", "location": str(location)}).status_code == 200
        build = {"table": "events", "index_column": "status"}
        assert wait_job(client, client.post("/v1/create_global_index", json=build).json()["job_id"])["state"] == \
            "succeeded"
        before, listed = _referenced(location), set(os.listdir(location / "index"))
        # one Spark task over the table's three partitions, slow per batch: files of the first are there early
        job_id = _hand_over(client, "events", "status", {"sleep_per_batch": 1.0}, engine="spark",
                            spark_master="local[1]")
        deadline = time.monotonic() + 240
        while not [n for n in _files_of(location, job_id) if not n.startswith(".")]:
            assert time.monotonic() < deadline, client.get(f"/v1/jobs/{job_id}").json()
            time.sleep(0.1)
        catalog = client.app.state.services.catalog
        runner = catalog.get_job(job_id).pid
        jvm = _child_jvm(runner)
        assert jvm is not None and catalog.get_job(job_id).state == "running"
        os.kill(jvm, signal.SIGKILL)
        job = wait_job(client, job_id)
        assert job["state"] == "failed" and job["error"].startswith("SparkJvmDiedError: the build's Spark JVM died "
                                                                    "(killed by signal 9 (SIGKILL))"), job
        assert _files_of(location, job_id) == []
        assert _referenced(location) == before and set(os.listdir(location / "index")) == listed
        again = wait_job(client, client.post("/v1/create_global_index",
                                             json={**build, "options": {"rebuild": "true"}}).json()["job_id"])
        assert again["state"] == "succeeded", again
        assert catalog.get_job(again["id"]).pid != runner   # that runner left once its session's JVM was gone
