"""`bgix demo`: sample table -> `bgix serve` -> create_global_index through the HTTP API (Spark) -> example queries.

Talks to the service only over HTTP (httpx), like any user would; imports no fastapi or pyspark itself.
BGIX_* variables are read through service.api.settings.Settings (pydantic only), like the service reads them.
"""
from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
from pydantic import ValidationError

from service.api.settings import Settings
from service.sample_data import is_current, write_events

TABLE = "events"
DEFAULT_COLUMNS = ("status", "country", "tenant")
# (title, where, columns it needs): printed in this order when those columns are indexed;
# tests/e2e/test_demo.py re-computes each count with pandas.
EXAMPLE_QUERIES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("equality", "status = 'error'", ("status",)),
    ("IN list", "country IN ('DE', 'FR', 'NL')", ("country",)),
    ("NOT", "NOT (status = 'ok')", ("status",)),
    ("prefix", "tenant LIKE 'acme%'", ("tenant",)),
    ("AND of two indexes", "status = 'timeout' AND country = 'US'", ("status", "country")),
    ("IS NULL", "country IS NULL", ("country",)),
    ("range", "tenant >= 'globex' AND tenant < 'hooli'", ("tenant",)),
    ("range on ts", "ts >= TIMESTAMP '2026-10-10 00:00:00' AND ts < TIMESTAMP '2026-10-11 00:00:00'", ("ts",)),
)
READY_TIMEOUT_S = 60.0
BUILD_TIMEOUT_S = 1800.0
DEMO_SPARK_MASTER = "local[2]"   # the demo's default when BGIX_SPARK_MASTER is unset (the service's is local[*])


def _settings() -> Settings:
    try:
        return Settings()
    except ValidationError as exc:
        raise SystemExit(f"bgix demo: invalid BGIX_* environment: {exc}") from exc


def configure(parser: argparse.ArgumentParser) -> None:
    settings = _settings()
    parser.set_defaults(settings=settings)
    parser.add_argument("--warehouse", default=settings.warehouse,
                        help="local warehouse directory (default: $BGIX_WAREHOUSE or ./warehouse)")
    parser.add_argument("--rows", type=int, default=None, help="rows in the sample table (default 2,000,000)")
    parser.add_argument("--files", type=int, default=8, help="Parquet files in the sample table (default 8)")
    parser.add_argument("--quick", action="store_true", help="small run: 200,000 rows in 4 files")
    parser.add_argument("--columns", default=",".join(DEFAULT_COLUMNS),
                        help="comma-separated columns to index (default status,country,tenant; add ts for a time range)")
    parser.add_argument("--host", default="127.0.0.1", help="address the service binds (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="port; a free one is picked if it is taken (default 8000)")
    parser.add_argument("--engine", choices=("spark", "local"), default=settings.build_engine,
                        help="build engine the service uses (default spark, local mode)")
    spark_master = settings.spark_master if "spark_master" in settings.model_fields_set else DEMO_SPARK_MASTER
    parser.add_argument("--spark-master", default=spark_master)
    parser.add_argument("--no-serve", action="store_true", help="exit after the example queries")


def run(args: argparse.Namespace) -> int:
    if args.engine == "spark" and not _java_available():
        print("bgix demo: Java 17+ is required to build indexes with Spark, but no `java` was found on PATH "
              "(and JAVA_HOME is unset). Install it, e.g. `apt-get install openjdk-17-jre-headless`, "
              "or run `bgix demo --engine local` to build without Spark.", file=sys.stderr)
        return 1
    rows = args.rows if args.rows is not None else (200_000 if args.quick else 2_000_000)
    files = 4 if args.quick and args.files == 8 else args.files
    columns = [c.strip() for c in args.columns.split(",") if c.strip()]
    warehouse = Path(args.warehouse).resolve()
    source = warehouse / "source" / TABLE

    t0 = time.perf_counter()
    regenerated = not is_current(source, rows, files)
    paths = write_events(source, rows=rows, files=files)
    print(f"[1/4] sample table: {rows:,} rows in {len(paths)} Parquet files under {source} "
          f"({time.perf_counter() - t0:.1f} s)", flush=True)

    port = _pick_port(args.host, args.port)
    url = f"http://{args.host}:{port}"
    server = _start_server(args, warehouse, port)
    try:
        with httpx.Client(base_url=url, timeout=60.0, headers=_auth_headers(getattr(args, "settings", None) or _settings())) as http:
            _wait_ready(http, server)
            print(f"[2/4] service up at {url} (warehouse {warehouse})", flush=True)
            _register(http, source, replace=regenerated)
            for column in columns:
                _build(http, column)
            print("[4/4] example queries", flush=True)
            for title, where, needs in EXAMPLE_QUERIES:
                if set(needs) <= set(columns):
                    _run_query(http, title, where)
        print(f"\nDashboard: {url}/dashboard", flush=True)
        if args.no_serve:
            return 0
        print("Serving; press Ctrl-C to stop.", flush=True)
        while server.poll() is None:
            time.sleep(0.5)
        return server.returncode or 0
    except KeyboardInterrupt:
        return 0
    finally:
        _stop(server)


def _java_available() -> bool:
    home = os.environ.get("JAVA_HOME")
    return shutil.which("java") is not None or bool(home and (Path(home) / "bin" / "java").exists())


def _auth_headers(settings: Settings) -> dict[str, str]:
    token = settings.token.get_secret_value() if settings.token is not None else ""
    return {"Authorization": f"Bearer {token}"} if token else {}


def _pick_port(host: str, preferred: int) -> int:
    for port in (preferred, 0):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind((host, port))
            except OSError:
                continue
            return int(s.getsockname()[1])
    raise SystemExit(f"bgix demo: no free port on {host}")


def _start_server(args: argparse.Namespace, warehouse: Path, port: int) -> subprocess.Popen[bytes]:
    env = dict(os.environ)
    env.update({
        "BGIX_WAREHOUSE": str(warehouse),
        "BGIX_BUILD_ENGINE": args.engine,
        "BGIX_SPARK_MASTER": args.spark_master,
        "SPARK_LOCAL_IP": env.get("SPARK_LOCAL_IP", "127.0.0.1"),
        "PYSPARK_PYTHON": env.get("PYSPARK_PYTHON", sys.executable),
        "PYSPARK_DRIVER_PYTHON": env.get("PYSPARK_DRIVER_PYTHON", sys.executable),
    })
    cmd = [sys.executable, "-c", "from service.cli import main; raise SystemExit(main())",
           "serve", "--host", args.host, "--port", str(port), "--log-level", "warning", "--no-access-log"]
    # Own process group: Ctrl-C reaches us once, and we stop the server (and its build jobs) ourselves.
    return subprocess.Popen(cmd, env=env, start_new_session=True)


def _stop(server: subprocess.Popen[bytes]) -> None:
    if server.poll() is not None:
        return
    try:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=15)
    except (subprocess.TimeoutExpired, ProcessLookupError):
        try:
            os.killpg(server.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        server.wait(timeout=5)


def _wait_ready(http: httpx.Client, server: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"bgix demo: the service exited with code {server.returncode} while starting")
        try:
            if http.get("/v1/tables").status_code < 500:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise SystemExit(f"bgix demo: the service did not answer within {READY_TIMEOUT_S:.0f} s")


def _check(resp: httpx.Response) -> dict:
    if resp.status_code >= 400:
        try:
            err = resp.json()["error"]
            msg = f"{err.get('code')}: {err.get('message')}"
        except (ValueError, KeyError, TypeError):
            msg = resp.text[:500]
        raise SystemExit(f"bgix demo: {resp.request.method} {resp.request.url.path} -> HTTP {resp.status_code} {msg}")
    return resp.json() if resp.content else {}


def _register(http: httpx.Client, source: Path, replace: bool) -> None:
    body = {"location": str(source), "format": "parquet", "partition_columns": []}
    if replace:  # new sample files: the old registration's row-id map and indexes no longer apply
        resp = http.delete(f"/v1/tables/{TABLE}")
        if resp.status_code != 404:
            _check(resp)
    resp = http.put(f"/v1/tables/{TABLE}", json=body)
    if resp.status_code == 409:  # already registered by an earlier demo run on this warehouse
        print(f"      table {TABLE!r} already registered", flush=True)
        return
    _check(resp)
    print(f"      registered table {TABLE!r} -> {source}", flush=True)


def _build(http: httpx.Client, column: str) -> None:
    body = {"table": TABLE, "index_column": column, "index_type": "bitmap", "options": {}}
    t0 = time.perf_counter()
    job_id = _check(http.post("/v1/create_global_index", json=body))["job_id"]
    print(f"[3/4] create_global_index {TABLE}.{column}: job {job_id}", flush=True)
    try:
        _follow(http, column, job_id, t0)
    except KeyboardInterrupt:  # the job runs in its own process group: stop it too
        http.post(f"/v1/jobs/{job_id}/cancel")
        raise


def _follow(http: httpx.Client, column: str, job_id: str, t0: float) -> None:
    deadline = time.monotonic() + BUILD_TIMEOUT_S
    last = ""
    while time.monotonic() < deadline:
        job = _check(http.get(f"/v1/jobs/{job_id}"))
        progress = job.get("progress") or {}
        line = (f"      {job['state']:<9} {100 * float(progress.get('fraction') or 0):5.1f}%  "
                f"rows {int(progress.get('rows_indexed') or 0):,}  "
                f"ranges {progress.get('ranges_done', 0)}/{progress.get('ranges_total', '?')}")
        if line != last:
            print(line, flush=True)
            last = line
        if job["state"] == "succeeded":
            print(f"      done in {time.perf_counter() - t0:.1f} s (snapshot {job.get('snapshot_id')})", flush=True)
            return
        if job["state"] in ("failed", "cancelled"):
            raise SystemExit(f"bgix demo: build of {column} {job['state']}: {job.get('error')}")
        time.sleep(0.5)
    raise SystemExit(f"bgix demo: build of {column} did not finish within {BUILD_TIMEOUT_S:.0f} s")


def _run_query(http: httpx.Client, title: str, where: str) -> None:
    body = {"where": where, "result": "count"}
    t0 = time.perf_counter()
    ans = _check(http.post(f"/v1/tables/{TABLE}/query", json=body))
    ms = 1000 * (time.perf_counter() - t0)
    # The e2e test parses `count=<n>` and `where: <text>` from these lines.
    print(f"      {title:<20} count={ans['count']:>10,}  {ms:8.1f} ms  where: {where}", flush=True)
