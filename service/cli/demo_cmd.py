"""`bgix demo`: a sample Paimon table -> `bgix serve` -> create_global_index through the HTTP API (Spark)
-> example queries -> pypaimon's own index scanner answering from the files bgix committed.

Talks to the service only over HTTP (httpx and service.client), like any user would; imports no fastapi or
pyspark itself. `--format parquet` runs the same demo on a plain Parquet table. BGIX_* variables are read
through service.server.settings.Settings (pydantic only), like the service reads them.
"""
from __future__ import annotations

import argparse
import signal
import sys
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

import httpx
from pydantic import ValidationError

from service.server.settings import Settings
from service.cli.demo_server import auth_headers, java_available, pick_port, start_server, stop_server, wait_ready
from service.client import Client

TABLE = "events"
PAIMON_DATABASE = "demo"
DEFAULT_COLUMNS = ("status", "country", "tenant")
# (title, where, columns it needs): printed in this order when those columns are indexed;
# tests/e2e/test_demo.py re-computes each count from pypaimon's (or pandas') read of the rows.
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
# (where as bgix reads it, column, pypaimon operator, values): what pypaimon's own scanner is asked.
SCANNER_QUERIES: tuple[tuple[str, str, str, tuple[object, ...]], ...] = (
    ("status = 'error'", "status", "=", ("error",)),
    ("country IN ('DE', 'FR', 'NL')", "country", "in", ("DE", "FR", "NL")),
    ("tenant = 'acme-01'", "tenant", "=", ("acme-01",)),
    ("status IS NULL", "status", "is null", ()),
)
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
    parser.add_argument("--format", choices=("paimon", "parquet"), default="paimon",
                        help="sample table kind: a Paimon table written by pypaimon (default) or plain Parquet files")
    parser.add_argument("--rows", type=int, default=None, help="rows in the sample table (default 2,000,000)")
    parser.add_argument("--commits", type=int, default=4, help="Paimon commits the rows are written in (default 4)")
    parser.add_argument("--files", type=int, default=8, help="Parquet files of the plain sample table (default 8)")
    parser.add_argument("--quick", action="store_true", help="small run: 200,000 rows")
    parser.add_argument("--columns", default=",".join(DEFAULT_COLUMNS),
                        help="comma-separated columns to index (default status,country,tenant; add ts for a time range)")
    parser.add_argument("--host", default="127.0.0.1", help="address the service binds (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="port; a free one is picked if it is taken (default 8000)")
    parser.add_argument("--engine", choices=("spark", "local"), default=settings.build_engine,
                        help="build engine the service uses (default spark, local mode)")
    spark_master = settings.spark_master if "spark_master" in settings.model_fields_set else DEMO_SPARK_MASTER
    parser.add_argument("--spark-master", default=spark_master)
    parser.add_argument("--no-serve", action="store_true", help="exit after the example queries")


def _interrupted(signum: int, _frame: object) -> None:
    raise KeyboardInterrupt(signal.Signals(signum).name)


def run(args: argparse.Namespace) -> int:
    """The demo; SIGTERM and SIGHUP stop it as Ctrl-C does (SIGINT): the build it follows is cancelled and the
    service stopped with everything it started (demo_server.stop_server) before the demo exits."""
    with _handling((signal.SIGTERM, signal.SIGHUP), _interrupted):
        try:
            return _run(args)
        except KeyboardInterrupt:   # before the service started, or while it was being stopped
            return 0


def _run(args: argparse.Namespace) -> int:
    if args.engine == "spark" and not java_available():
        print("bgix demo: Java 17+ is required to build indexes with Spark, but no `java` was found on PATH "
              "(and JAVA_HOME is unset). Install it, e.g. `apt-get install openjdk-17-jre-headless`, "
              "or run `bgix demo --engine local` to build without Spark.", file=sys.stderr)
        return 1
    rows = args.rows if args.rows is not None else (200_000 if args.quick else 2_000_000)
    columns = [c.strip() for c in args.columns.split(",") if c.strip()]
    warehouse = Path(args.warehouse).resolve()
    paimon = args.format == "paimon"
    steps = 5 if paimon else 4

    t0 = time.perf_counter()
    if paimon:
        source, regenerated = _paimon_sample(warehouse, rows, max(1, args.commits))
    else:
        source, regenerated = _parquet_sample(warehouse, rows, 4 if args.quick and args.files == 8 else args.files)
    print(f"      ({time.perf_counter() - t0:.1f} s)", flush=True)

    port = pick_port(args.host, args.port)
    url = f"http://{args.host}:{port}"
    headers = auth_headers(getattr(args, "settings", None) or _settings())
    server = None
    try:
        with _signals_deferred():   # a stop arriving while the service starts waits until `server` is set
            server = start_server(args.host, port, warehouse, args.engine, args.spark_master)
        with httpx.Client(base_url=url, timeout=60.0, headers=headers) as http:
            wait_ready(http, server)
            print(f"[2/{steps}] service up at {url} (warehouse {warehouse})", flush=True)
            _register(http, source, args.format, replace=regenerated)
            if paimon:  # Paimon has no multi-column index; bgix builds all three from one scan, one commit
                _build(http, ",".join(columns), steps)
            else:
                for column in columns:
                    _build(http, column, steps)
            print(f"[4/{steps}] example queries", flush=True)
            for title, where, needs in EXAMPLE_QUERIES:
                if set(needs) <= set(columns):
                    _run_query(http, title, where)
        if paimon:
            _pypaimon_reads_our_index(url, headers, source, columns, steps)
        print(f"\nDashboard: {url}/dashboard", flush=True)
        if args.no_serve:
            return 0
        print("Serving; press Ctrl-C to stop.", flush=True)
        while server.poll() is None:
            time.sleep(0.5)
        return server.returncode or 0
    except KeyboardInterrupt:
        if server is not None:
            print("\nStopping the service and its build processes…", flush=True)
        return 0
    finally:
        if server is not None:
            with _signals_ignored():   # a second Ctrl-C must not cut the stop short and leave processes behind
                stop_server(server)


_STOPS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@contextmanager
def _handling(signals: tuple[signal.Signals, ...], handler: Any) -> Iterator[None]:
    """`handler` for `signals` in the block, the previous handlers back after it."""
    previous = {s: signal.signal(s, handler) for s in signals}
    try:
        yield
    finally:
        for s, old in previous.items():
            signal.signal(s, old)


@contextmanager
def _signals_deferred() -> Iterator[None]:
    """A stop signal arriving in the block raises KeyboardInterrupt when the block is over (a Python-level handler:
    a child started in the block gets the default ones back at exec)."""
    seen: list[int] = []
    with _handling(_STOPS, lambda signum, _frame: seen.append(signum)):
        yield
    if seen:
        raise KeyboardInterrupt(signal.Signals(seen[0]).name)


def _signals_ignored() -> AbstractContextManager[None]:
    """SIGINT, SIGTERM and SIGHUP ignored in the block (the demo is stopping already); no child may start in it
    (it would inherit the ignoring)."""
    return _handling(_STOPS, signal.SIG_IGN)


def _paimon_sample(warehouse: Path, rows: int, commits: int) -> tuple[Path, bool]:
    from service.demo.paimon_events import PARTITION_KEY, is_current_sample, write_sample_table

    location = warehouse / "paimon" / f"{PAIMON_DATABASE}.db" / TABLE
    regenerated = not is_current_sample(location, rows, commits)
    write_sample_table(warehouse / "paimon", PAIMON_DATABASE, TABLE, rows=rows, commits=commits)
    print(f"[1/5] sample Paimon table {PAIMON_DATABASE}.{TABLE}: {rows:,} rows written by pypaimon in {commits} "
          f"commit(s), partitioned by {PARTITION_KEY}, row tracking on, at {location}", flush=True)
    return location, regenerated


def _parquet_sample(warehouse: Path, rows: int, files: int) -> tuple[Path, bool]:
    from service.demo.events import is_current, write_events

    source = warehouse / "source" / TABLE
    regenerated = not is_current(source, rows, files)
    paths = write_events(source, rows=rows, files=files)
    print(f"[1/4] sample table: {rows:,} rows in {len(paths)} Parquet files under {source}", flush=True)
    return source, regenerated


def _check(resp: httpx.Response) -> dict[str, Any]:
    if resp.status_code >= 400:
        try:
            err = resp.json()["error"]
            msg = f"{err.get('code')}: {err.get('message')}"
        except (ValueError, KeyError, TypeError):
            msg = resp.text[:500]
        raise SystemExit(f"bgix demo: {resp.request.method} {resp.request.url.path} -> HTTP {resp.status_code} {msg}")
    return resp.json() if resp.content else {}


def _register(http: httpx.Client, source: Path, fmt: str, replace: bool) -> None:
    body = {"location": str(source), "format": fmt, "partition_columns": []}
    if replace:  # a new sample: the old registration's row-id map and indexes no longer apply
        resp = http.delete(f"/v1/tables/{TABLE}")
        if resp.status_code != 404:
            _check(resp)
    resp = http.put(f"/v1/tables/{TABLE}", json=body)
    if resp.status_code == 409:  # already registered by an earlier demo run on this warehouse
        print(f"      table {TABLE!r} already registered", flush=True)
        return
    table = _check(resp)
    paimon = table.get("paimon") or {}
    where = (f" (Paimon snapshot {paimon.get('snapshot_id')}, {int(paimon.get('row_count') or 0):,} rows)"
             if paimon else "")
    print(f"      registered table {TABLE!r} -> {source}{where}", flush=True)


def _build(http: httpx.Client, column: str, steps: int) -> None:
    body = {"table": TABLE, "index_column": column, "index_type": "bitmap", "options": {}}
    t0 = time.perf_counter()
    job_id = _check(http.post("/v1/create_global_index", json=body))["job_id"]
    print(f"[3/{steps}] create_global_index {TABLE}.{column}: job {job_id}", flush=True)
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
                f"{_rows_indexed(int(progress.get('rows_indexed') or 0), column)}  "
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


def _rows_indexed(rows: int, column: str) -> str:
    """rows_indexed counts each indexed column's rows: say so when a build indexes several columns."""
    n = len([c for c in column.split(",") if c.strip()])
    return f"rows indexed {rows:,}" + (f" ({rows // n:,} rows × {n} columns)" if n > 1 and rows else "")


def _run_query(http: httpx.Client, title: str, where: str) -> None:
    body = {"where": where, "result": "count"}
    t0 = time.perf_counter()
    ans = _check(http.post(f"/v1/tables/{TABLE}/query", json=body))
    ms = 1000 * (time.perf_counter() - t0)
    # The e2e test parses `count=<n>` and `where: <text>` from these lines.
    print(f"      {title:<20} count={ans['count']:>10,}  {ms:8.1f} ms  where: {where}", flush=True)


def _pypaimon_reads_our_index(url: str, headers: dict[str, str], location: Path, columns: list[str],
                              steps: int) -> None:
    """Paimon's own reader (pypaimon's DataEvolutionGlobalIndexScanner) answers from the files bgix committed."""
    from service.demo.paimon_events import scanner_row_ids

    print(f"[{steps}/{steps}] pypaimon's DataEvolutionGlobalIndexScanner over the index files bgix committed",
          flush=True)
    token = headers.get("Authorization", "").removeprefix("Bearer ") or None
    with Client(url, token=token) as client:
        for where, column, op, values in SCANNER_QUERIES:
            if column not in columns:
                continue
            t0 = time.perf_counter()
            theirs = scanner_row_ids(location, column, op, list(values))
            ms = 1000 * (time.perf_counter() - t0)
            if theirs is None:
                print(f"      pypaimon found no index for {column}", flush=True)
                continue
            ours = client.rows(TABLE, where=where)   # the demo's indexes cover every row: exact, else it raises
            same = "same row ids as bgix" if list(ours) == theirs else "DIFFERENT from bgix"
            # The e2e test parses `rows=<n>` and `where: <text>` from these lines.
            print(f"      pypaimon rows={len(theirs):>10,}  {ms:8.1f} ms  {same}  where: {where}", flush=True)
