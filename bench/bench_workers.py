"""Worker benchmark (issue 11): throughput of count queries with `bgix serve --workers 1` and `--workers N`.

A closed loop: C keep-alive connections each send point count queries back to back for D seconds. The client
is one asyncio process writing pre-encoded HTTP/1.1 requests on raw streams (a few tens of µs per request),
so on a small machine nearly all CPU goes to the server. Every response must be 200 with the count numpy
computes for its key. Writes bench/results/workers.md.

    .venv/bin/python bench/bench_workers.py [--rows 1000000] [--distinct 100000] [--workers 2] [--duration 10]
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from _server import start_server, stop_server  # bench/_server.py
from bench_ranges import git_sha
from bench_service import build

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results" / "workers.md"
TARGET_RATIO = 1.7


def _request(port: int, value: int) -> bytes:
    body = json.dumps({"where": f"k = {value}", "result": "count"}).encode()
    return (f"POST /v1/tables/big/query HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n").encode() + body


async def _connection(port: int, requests: list[tuple[bytes, int]], stop: float, stats: dict[str, int]) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    i = 0
    try:
        while time.monotonic() < stop:
            payload, want = requests[i % len(requests)]
            i += 1
            writer.write(payload)
            head = await reader.readuntil(b"\r\n\r\n")
            status = int(head.split(b" ", 2)[1])
            length = 0
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":", 1)[1])
            body = await reader.readexactly(length)
            if status != 200 or json.loads(body)["count"] != want:
                stats["errors"] += 1
            stats["done"] += 1
    finally:
        writer.close()


async def _load(port: int, requests: list[tuple[bytes, int]], connections: int, duration: float) -> dict[str, float]:
    stats = {"done": 0, "errors": 0}
    # warm every connection and the server's caches for a second before counting
    await asyncio.gather(*(_connection(port, requests[c::connections], time.monotonic() + 1.0, stats)
                           for c in range(connections)))
    stats = {"done": 0, "errors": 0}
    t0, c0 = time.monotonic(), time.process_time()
    await asyncio.gather(*(_connection(port, requests[c::connections], t0 + duration, stats)
                           for c in range(connections)))
    elapsed = time.monotonic() - t0
    return {"rps": stats["done"] / elapsed, "requests": stats["done"], "errors": stats["errors"],
            "client_cpu": (time.process_time() - c0) / elapsed}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--distinct", type=int, default=100_000)
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--connections", type=int, default=8)
    ap.add_argument("--duration", type=float, default=10.0)
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bgix-bench-workers-"))
    started, load0 = time.time(), os.getloadavg()
    results: dict[int, dict[str, float]] = {}
    try:
        k, _flag = build(root, args.rows, args.distinct, seed=1)
        truth = np.bincount(k, minlength=args.distinct)
        rng = np.random.default_rng(3)
        values = rng.integers(0, args.distinct, 20_000)
        for workers in (1, args.workers):
            proc, url = start_server({"BGIX_WAREHOUSE": str(root / "warehouse"),
                                      "BGIX_ALLOWED_ROOTS": str(root / "data")}, root / f"serve-{workers}.log",
                                     workers=workers)
            try:
                port = int(url.rsplit(":", 1)[1])
                requests = [(_request(port, int(v)), int(truth[v])) for v in values]
                results[workers] = asyncio.run(_load(port, requests, args.connections, args.duration))
                print(f"--workers {workers}: {results[workers]['rps']:.0f} req/s "
                      f"({results[workers]['requests']} requests, {results[workers]['errors']} errors, client "
                      f"{results[workers]['client_cpu']:.2f} cores)", flush=True)
            finally:
                stop_server(proc)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    one, many = results[1], results[args.workers]
    ratio = many["rps"] / one["rps"]
    ok = ratio >= TARGET_RATIO and not one["errors"] and not many["errors"]
    load1 = os.getloadavg()
    text = "\n".join([
        "# Workers: count-query throughput, one worker vs several",
        "",
        f"Command: `.venv/bin/python bench/bench_workers.py --rows {args.rows} --distinct {args.distinct} --workers "
        f"{args.workers} --connections {args.connections} --duration {args.duration:g}` — "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(started))}",
        "",
        f"- git {git_sha()} · {platform.platform()} · {os.cpu_count()} cores · load average at start "
        f"{load0[0]:.1f}, at end {load1[0]:.1f}",
        f"- {args.rows:,} rows, `k` with {args.distinct:,} distinct values; closed loop, {args.connections} keep-alive "
        "connections from one asyncio client process (pre-encoded requests), every answer checked",
        "",
        "| server | throughput | requests | errors | load generator's own CPU |",
        "|---|---|---|---|---|",
        f"| `bgix serve --workers 1` | {one['rps']:.0f} req/s | {one['requests']:,} | {one['errors']} | "
        f"{one['client_cpu']:.2f} cores |",
        f"| `bgix serve --workers {args.workers}` | {many['rps']:.0f} req/s | {many['requests']:,} | {many['errors']} | "
        f"{many['client_cpu']:.2f} cores |",
        "",
        f"Ratio: **{ratio:.2f}×** (target ≥ {TARGET_RATIO}×: {'met' if ok else 'MISSED'}).",
        "",
    ])
    print(text)
    if not args.no_write:
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        RESULTS.write_text(text, encoding="utf-8")
    return 0 if not (one["errors"] or many["errors"]) else 2


if __name__ == "__main__":
    sys.exit(main())
