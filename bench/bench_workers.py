"""Worker benchmark (issue 11): throughput of count queries with `bgix serve --workers 1` and `--workers N`.

A closed loop: C keep-alive connections each send point count queries for D seconds, P at a time (HTTP/1.1
pipelining). The client is one asyncio process (on uvloop) writing pre-encoded requests on raw streams and
checking responses on their bytes (about 30 µs per request), because on a 2-core machine it shares the cores
with the workers. Every response must be 200 with the count numpy computes for its key. Writes
bench/results/workers.md.

    .venv/bin/python bench/bench_workers.py [--rows 1000000] [--distinct 100000] [--workers 2] [--duration 10]
                                            [--connections 16] [--depth 8]
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
from typing import Any

import numpy as np

from _server import start_server, stop_server  # bench/_server.py
from bench_ranges import git_sha
from bench_service import build, process_cpu_seconds

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results" / "workers.md"
TARGET_RATIO = 1.7


def _request(port: int, value: int) -> bytes:
    body = json.dumps({"where": f"k = {value}", "result": "count"}).encode()
    return (f"POST /v1/tables/big/query HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n").encode() + body


async def _connection(port: int, requests: list[tuple[bytes, int]], stop: float, stats: dict[str, int],
                      depth: int = 1) -> None:
    """One keep-alive connection: `depth` requests written at once (HTTP/1.1 pipelining), then their
    responses read in order, until `stop`. Responses are checked on the bytes (status line and the
    `"count":N` field), so the client's own CPU per request stays small next to the server's."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    i = 0
    buf = b""
    try:
        while time.monotonic() < stop:
            batch = [requests[(i + j) % len(requests)] for j in range(depth)]
            i += depth
            writer.write(b"".join(payload for payload, _ in batch))
            for _, want in batch:
                while (end := buf.find(b"\r\n\r\n")) < 0:
                    buf += await reader.read(65536)
                head = buf[:end]
                at = head.lower().find(b"content-length:")
                length = int(head[at + 15:head.find(b"\r\n", at) if head.find(b"\r\n", at) > 0 else None])
                while len(buf) < end + 4 + length:
                    buf += await reader.read(65536)
                body, buf = buf[end + 4:end + 4 + length], buf[end + 4 + length:]
                if not head.startswith(b"HTTP/1.1 200") or b'"count":%d,' % want not in body:
                    stats["errors"] += 1
                stats["done"] += 1
    finally:
        writer.close()


async def _load(port: int, requests: list[tuple[bytes, int]], connections: int, duration: float,
                depth: int = 1) -> dict[str, float]:
    stats = {"done": 0, "errors": 0}
    # warm every connection and the server's caches for a second before counting
    await asyncio.gather(*(_connection(port, requests[c::connections], time.monotonic() + 1.0, stats, depth)
                           for c in range(connections)))
    stats = {"done": 0, "errors": 0}
    t0, c0 = time.monotonic(), time.process_time()
    await asyncio.gather(*(_connection(port, requests[c::connections], t0 + duration, stats, depth)
                           for c in range(connections)))
    elapsed = time.monotonic() - t0
    return {"rps": stats["done"] / elapsed, "requests": stats["done"], "errors": stats["errors"],
            "client_cpu": (time.process_time() - c0) / elapsed}


def _run(coro: Any) -> dict[str, float]:
    """On uvloop (installed with uvicorn[standard]) the client spends about half the CPU per request of
    asyncio's default loop: on a 2-core machine the client shares the cores with the workers."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(coro)  # type: ignore[no-any-return]
    return uvloop.run(coro)  # type: ignore[no-any-return]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--distinct", type=int, default=100_000)
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--connections", type=int, default=16)
    ap.add_argument("--depth", type=int, default=8, help="requests in flight per connection (pipelining)")
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
                c0, t0 = process_cpu_seconds(proc.pid), time.monotonic()
                results[workers] = _run(_load(port, requests, args.connections, args.duration, args.depth))
                results[workers]["server_cpu"] = (process_cpu_seconds(proc.pid) - c0) / (time.monotonic() - t0)
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
        f"{args.workers} --connections {args.connections} --depth {args.depth} --duration {args.duration:g}` — "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(started))}",
        "",
        f"- git {git_sha()} · {platform.platform()} · {os.cpu_count()} cores · load average at start "
        f"{load0[0]:.1f}, at end {load1[0]:.1f}",
        f"- {args.rows:,} rows, `k` with {args.distinct:,} distinct values; closed loop, {args.connections} keep-alive "
        f"connections with {args.depth} pipelined requests each, from one asyncio client process (pre-encoded "
        "requests), every answer checked; server CPU is the whole process tree's (supervisor and workers)",
        "",
        "| server | throughput | requests | errors | server CPU | load generator's own CPU |",
        "|---|---|---|---|---|---|",
        f"| `bgix serve --workers 1` | {one['rps']:.0f} req/s | {one['requests']:,} | {one['errors']} | "
        f"{one['server_cpu']:.2f} cores | {one['client_cpu']:.2f} cores |",
        f"| `bgix serve --workers {args.workers}` | {many['rps']:.0f} req/s | {many['requests']:,} | {many['errors']} | "
        f"{many['server_cpu']:.2f} cores | {many['client_cpu']:.2f} cores |",
        "",
        f"Ratio: **{ratio:.3f}×** (target ≥ {TARGET_RATIO}×: {'met' if ok else 'MISSED'}).",
        "",
    ])
    print(text)
    if not args.no_write:
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        RESULTS.write_text(text, encoding="utf-8")
    return 0 if not (one["errors"] or many["errors"]) else 2


if __name__ == "__main__":
    sys.exit(main())
