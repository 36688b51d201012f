"""Demo query benchmark (issue 11): each example query of `bgix demo` over HTTP, warm, on the demo's 2M-row
events data, against pyarrow computing the same count over the in-memory table.

The sample events (service.demo.events, the data `bgix demo` writes) are registered as a table, the demo's
columns are indexed through the API (local build engine: same plan and worker code as Spark, range sidecars
included), and each query of service.cli.demo_cmd.EXAMPLE_QUERIES is sent back to back by one client. Counts
are checked against pyarrow. Writes bench/results/demo_queries.md; exits non-zero on a wrong count (and, with
--check, when a p50 is over the target).

    .venv/bin/python bench/bench_demo_queries.py [--rows 2000000] [--queries 200]
"""
from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from service.cli.demo_cmd import EXAMPLE_QUERIES
from service.demo.events import write_events

from _server import start_server, stop_server  # bench/_server.py
from bench_ranges import git_sha
from bench_service import process_cpu_seconds

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results" / "demo_queries.md"
TARGET_P50_MS = 5.0
COLUMNS = ("status", "country", "tenant", "ts")


def pyarrow_masks(t: pa.Table) -> dict[str, Callable[[], pa.ChunkedArray]]:
    """The same predicates in pyarrow (SQL semantics: null rows never match), by example title."""
    s, c, tn, ts = t["status"], t["country"], t["tenant"], t["ts"]
    day0, day1 = pa.scalar(dt.datetime(2026, 10, 10), pa.timestamp("us")), pa.scalar(dt.datetime(2026, 10, 11),
                                                                                     pa.timestamp("us"))
    return {
        "equality": lambda: pc.equal(s, "error"),
        "IN list": lambda: pc.is_in(c, pa.array(["DE", "FR", "NL"])),
        "NOT": lambda: pc.invert(pc.equal(s, "ok")),
        "prefix": lambda: pc.starts_with(tn, "acme"),
        "AND of two indexes": lambda: pc.and_(pc.equal(s, "timeout"), pc.equal(c, "US")),
        "IS NULL": lambda: pc.is_null(c),
        "range": lambda: pc.and_(pc.greater_equal(tn, "globex"), pc.less(tn, "hooli")),
        "range on ts": lambda: pc.and_(pc.greater_equal(ts, day0), pc.less(ts, day1)),
    }


def count_true(mask: pa.ChunkedArray) -> int:
    return int(pc.sum(pc.fill_null(mask, False).cast(pa.int64())).as_py() or 0)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--queries", type=int, default=200, help="back-to-back requests per query")
    ap.add_argument("--check", action="store_true", help="exit 1 when a p50 is over the target")
    ap.add_argument("--no-write", action="store_true", help="do not write bench/results/demo_queries.md")
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bgix-bench-demo-"))
    started, load0 = time.time(), os.getloadavg()
    rows_md: list[str] = []
    failures: list[str] = []
    missed: list[str] = []
    proc = None
    try:
        data = root / "data" / "events"
        write_events(data, rows=args.rows)
        table = ds.dataset(str(data), format="parquet").to_table()
        masks = pyarrow_masks(table)
        proc, url = start_server({"BGIX_WAREHOUSE": str(root / "warehouse"), "BGIX_ALLOWED_ROOTS": str(root / "data"),
                                  "BGIX_BUILD_ENGINE": "local"}, root / "serve.log")
        with httpx.Client(base_url=url, timeout=600) as client:
            client.put("/v1/tables/events", json={"location": str(data)}).raise_for_status()
            t0 = time.perf_counter()
            jobs = []
            for col in COLUMNS:
                r = client.post("/v1/create_global_index", json={"table": "events", "index_column": col})
                r.raise_for_status()
                jobs.append(r.json()["job_id"])
            for job_id in jobs:
                while (state := client.get(f"/v1/jobs/{job_id}").json()["state"]) not in (
                        "succeeded", "failed", "cancelled"):
                    time.sleep(0.2)
                if state != "succeeded":
                    raise SystemExit(f"build {job_id} {state}: {client.get(f'/v1/jobs/{job_id}').text}")
            build_s = time.perf_counter() - t0
            for title, where, _needs in EXAMPLE_QUERIES:
                body = {"where": where, "result": "count"}
                first = client.post("/v1/tables/events/query", json={**body, "explain": True})
                first.raise_for_status()
                count, explain = first.json()["count"], first.json()["explain"]
                want = count_true(masks[title]())
                if count != want:
                    failures.append(f"{title}: count {count}, pyarrow says {want}")
                lat = []
                cpu0 = process_cpu_seconds(proc.pid)
                for _ in range(args.queries):
                    t = time.perf_counter()
                    client.post("/v1/tables/events/query", json=body).raise_for_status()
                    lat.append((time.perf_counter() - t) * 1000)
                cpu = (process_cpu_seconds(proc.pid) - cpu0) / args.queries * 1000
                t = time.perf_counter()
                for _ in range(5):
                    count_true(masks[title]())
                base_ms = (time.perf_counter() - t) / 5 * 1000
                p50, p99 = float(np.percentile(lat, 50)), float(np.percentile(lat, 99))
                ok = p50 <= TARGET_P50_MS
                if not ok:
                    missed.append(f"{title} p50 {p50:.2f} ms")
                rows_md.append(f"| {title} | `{where}` | {count:,} | {p50:.2f} ms | {p99:.2f} ms | {cpu:.2f} ms | "
                               f"{explain.get('sidecars_used', 0)} | {explain.get('fallback_scan')} | "
                               f"{base_ms:.1f} ms | {'met' if ok else 'MISSED'} |")
                print(rows_md[-1], flush=True)
    finally:
        if proc is not None:
            stop_server(proc)
        shutil.rmtree(root, ignore_errors=True)
    load1 = os.getloadavg()
    doc = [
        "# Demo queries over HTTP, warm",
        "",
        f"Command: `.venv/bin/python bench/bench_demo_queries.py --rows {args.rows} --queries {args.queries}` — "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(started))}, {time.time() - started:.0f} s in total.",
        "",
        f"- git {git_sha()} · {platform.platform()} · {os.cpu_count()} cores · Python {platform.python_version()}",
        f"- load average at start {load0[0]:.1f}, at end {load1[0]:.1f}",
        f"- the demo's sample events ({args.rows:,} rows, service.demo.events) as a Parquet table; indexes on "
        f"{', '.join(COLUMNS)} built through the API with the local engine in {build_s:.0f} s (range sidecars "
        "written by the build); one `bgix serve` worker; one client, back to back, after one request with "
        "`explain`",
        "",
        "| example | where | count | p50 | p99 | server CPU / query | sidecars used | fallback scan | "
        "pyarrow on the in-memory table | p50 ≤ 5 ms |",
        "|---|---|---|---|---|---|---|---|---|---|",
        *rows_md,
        "",
        "Failures: " + ("; ".join(failures) if failures else "none") + ". Targets missed: "
        + ("; ".join(missed) if missed else "none") + ".",
    ]
    text = "\n".join(doc) + "\n"
    print(text)
    if not args.no_write:
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        RESULTS.write_text(text, encoding="utf-8")
    if failures:
        return 2
    return 1 if args.check and missed else 0


if __name__ == "__main__":
    sys.exit(main())
