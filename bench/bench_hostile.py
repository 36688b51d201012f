"""Hostile-client benchmark (issue 34): /healthz and point-query latency of a real `bgix serve`, alone and while
hostile clients run against it, in the same run.

The hostile clients (one separate process, so they do not share the measuring client's interpreter):
- slowloris holders: S connections that send half a request (headers, or headers declaring a body and 10 bytes
  of it) and stall; when the server closes one (BGIX_HEADER_TIMEOUT_S / BGIX_BODY_TIMEOUT_S), another opens;
- R clients without a token posting ~1 MB SQL predicates the server refuses (400 predicate_limit), back to back;
- U clients without a token posting to a mutating endpoint (401), back to back.
The measuring client (one keep-alive connection, http.client) alternates GET /healthz and a point count query
(`k = v`, checked against numpy's count). Every answer is checked: wrong counts and 5xx are counted.
Writes bench/results/hostile.md.

    .venv/bin/python bench/bench_hostile.py [--rows 1000000] [--distinct 100000] [--duration 20]
                                            [--holders 300] [--refused 2] [--unauthenticated 2]
"""
from __future__ import annotations

import argparse
import http.client
import json
import multiprocessing
import os
import platform
import shutil
import socket
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

from _server import start_server, stop_server  # bench/_server.py
from bench_ranges import git_sha
from bench_service import build, process_cpu_seconds

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results" / "hostile.md"
TOKEN = "bench-hostile-token"
HEADER_TIMEOUT_S, BODY_TIMEOUT_S = 5.0, 5.0


def _one_mb_predicate(i: int) -> str:
    """~1 MB of parenthesized terms (before issue 34: ~6 s of CPU for the general parser; now refused)."""
    parts, size, j = [], 0, 0
    while size < 980_000:
        parts.append(f"(k = {i + j})")
        size += len(parts[-1]) + 4
        j += 1
    return " OR ".join(parts)


def _conn(port: int) -> http.client.HTTPConnection:
    return http.client.HTTPConnection("127.0.0.1", port, timeout=60)


# ---- hostile clients (a separate process) ------------------------------------------------------------
def _holders(port: int, count: int, stop: float, stats: dict[str, int]) -> None:
    """Keep `count` stalled connections open, replacing every one the server closes."""
    def open_one(i: int) -> socket.socket | None:
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=5)
        except OSError:
            stats["holder_connect_failed"] += 1
            return None
        if i % 2:
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        else:
            s.sendall(b"POST /v1/tables/big/query HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                      b"Content-Length: 100000\r\n\r\n{\"where\":")
        s.setblocking(False)
        stats["holder_opened"] += 1
        return s

    socks: list[socket.socket | None] = [open_one(i) for i in range(count)]
    while time.monotonic() < stop:
        for i, s in enumerate(socks):
            if s is None:
                socks[i] = open_one(i)
                continue
            try:
                data = s.recv(65536)
            except BlockingIOError:
                continue
            except OSError:
                data = b""
            status = data[9:12].decode("ascii", "replace") if data.startswith(b"HTTP/1.1 ") else "closed"
            stats[f"holder_closed_{status}"] += 1
            s.close()
            socks[i] = open_one(i)
        time.sleep(0.2)
    for s in socks:
        if s is not None:
            s.close()


def _refused(port: int, stop: float, stats: dict[str, int], seed: int) -> None:
    conn, i = _conn(port), seed
    while time.monotonic() < stop:
        body = json.dumps({"where": _one_mb_predicate(i), "result": "count"}).encode()
        i += 1
        try:
            conn.request("POST", "/v1/tables/big/query", body, {"Content-Type": "application/json"})
            r = conn.getresponse()
            r.read()
            stats[f"refused_{r.status}"] += 1
        except (OSError, http.client.HTTPException):
            stats["refused_connection_error"] += 1
            conn.close()
            conn = _conn(port)


def _unauthenticated(port: int, stop: float, stats: dict[str, int]) -> None:
    conn = _conn(port)
    body = json.dumps({"table": "big", "index_column": "k"}).encode()
    while time.monotonic() < stop:
        try:
            conn.request("POST", "/v1/create_global_index", body, {"Content-Type": "application/json"})
            r = conn.getresponse()
            r.read()
            stats[f"unauthenticated_{r.status}"] += 1
        except (OSError, http.client.HTTPException):
            stats["unauthenticated_connection_error"] += 1
            conn.close()
            conn = _conn(port)


def _hostile(port: int, duration: float, holders: int, refused: int, unauthenticated: int, out: Any) -> None:
    from collections import Counter
    stats: Counter[str] = Counter()
    stop = time.monotonic() + duration
    threads = [threading.Thread(target=_holders, args=(port, holders, stop, stats))]
    threads += [threading.Thread(target=_refused, args=(port, stop, stats, 1000 * i)) for i in range(refused)]
    threads += [threading.Thread(target=_unauthenticated, args=(port, stop, stats)) for _ in range(unauthenticated)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    out.put(dict(stats))


# ---- measuring client --------------------------------------------------------------------------------
def measure(port: int, duration: float, values: np.ndarray, truth: np.ndarray) -> dict[str, Any]:
    conn = _conn(port)
    health: list[float] = []
    point: list[float] = []
    wrong = five = other = 0
    stop = time.monotonic() + duration
    i = 0
    while time.monotonic() < stop:
        v = int(values[i % len(values)])
        i += 1
        t0 = time.perf_counter()
        conn.request("GET", "/healthz")
        r = conn.getresponse()
        r.read()
        health.append(time.perf_counter() - t0)
        five += r.status >= 500
        other += r.status != 200
        body = json.dumps({"where": f"k = {v}", "result": "count"}).encode()
        t0 = time.perf_counter()
        conn.request("POST", "/v1/tables/big/query", body, {"Content-Type": "application/json"})
        r = conn.getresponse()
        payload = r.read()
        point.append(time.perf_counter() - t0)
        five += r.status >= 500
        other += r.status != 200
        if r.status == 200 and json.loads(payload)["count"] != int(truth[v]):
            wrong += 1
    conn.close()
    ms = lambda xs, q: float(np.percentile(np.array(xs) * 1000, q))  # noqa: E731
    return {"requests": len(health) + len(point), "wrong": wrong, "5xx": five, "non_200": other,
            "health_p50": ms(health, 50), "health_p99": ms(health, 99),
            "point_p50": ms(point, 50), "point_p99": ms(point, 99)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--distinct", type=int, default=100_000)
    ap.add_argument("--duration", type=float, default=20.0, help="seconds of each phase")
    ap.add_argument("--holders", type=int, default=300, help="slowloris connections held")
    ap.add_argument("--refused", type=int, default=2, help="clients posting 1 MB refused predicates")
    ap.add_argument("--unauthenticated", type=int, default=2, help="clients posting without the token")
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bgix-bench-hostile-"))
    started, load0 = time.time(), os.getloadavg()
    try:
        k, _flag = build(root, args.rows, args.distinct, seed=34)
        truth = np.bincount(k, minlength=args.distinct)
        values = np.random.default_rng(5).integers(0, args.distinct, 50_000)
        env = {"BGIX_WAREHOUSE": str(root / "warehouse"), "BGIX_ALLOWED_ROOTS": str(root / "data"),
               "BGIX_TOKEN": TOKEN, "BGIX_BUILD_PREWARM": "false", "BGIX_BUILD_ENGINE": "local",
               "BGIX_HEADER_TIMEOUT_S": str(HEADER_TIMEOUT_S), "BGIX_BODY_TIMEOUT_S": str(BODY_TIMEOUT_S)}
        proc, url = start_server(env, root / "serve.log", workers=1)
        try:
            port = int(url.rsplit(":", 1)[1])
            measure(port, 2.0, values, truth)   # warm-up: readers, caches
            c0 = process_cpu_seconds(proc.pid)
            quiet = measure(port, args.duration, values, truth)
            c1 = process_cpu_seconds(proc.pid)
            print(f"alone: {quiet}", flush=True)
            ctx = multiprocessing.get_context("spawn")
            out = ctx.Queue()
            hostile = ctx.Process(target=_hostile, args=(port, args.duration + 1.0, args.holders, args.refused,
                                                         args.unauthenticated, out))
            hostile.start()
            time.sleep(1.0)   # the holders are connected, the refused predicates flowing
            c2 = process_cpu_seconds(proc.pid)
            loud = measure(port, args.duration, values, truth)
            c3 = process_cpu_seconds(proc.pid)
            stats = out.get(timeout=120)
            hostile.join(30)
            print(f"under hostile clients: {loud}", flush=True)
            print(f"hostile clients: {stats}", flush=True)
        finally:
            stop_server(proc)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    load1 = os.getloadavg()
    cpu_quiet, cpu_loud = (c1 - c0) / args.duration, (c3 - c2) / args.duration
    ok = not (quiet["wrong"] or quiet["5xx"] or loud["wrong"] or loud["5xx"])
    row = lambda name, m, cpu: (  # noqa: E731
        f"| {name} | {m['requests']:,} | {m['wrong']} | {m['5xx']} | {m['health_p50']:.2f} / {m['health_p99']:.2f} "
        f"| {m['point_p50']:.2f} / {m['point_p99']:.2f} | {cpu:.2f} |")
    hostile_text = ", ".join(f"{key} {value:,}" for key, value in sorted(stats.items()))
    text = "\n".join([
        "# Hostile clients: /healthz and point queries alone and under slowloris, 1 MB refused predicates and "
        "unauthenticated clients",
        "",
        f"Command: `.venv/bin/python bench/bench_hostile.py --rows {args.rows} --distinct {args.distinct} --duration "
        f"{args.duration:g} --holders {args.holders} --refused {args.refused} --unauthenticated "
        f"{args.unauthenticated}` — {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(started))}",
        "",
        f"- git {git_sha()} · {platform.platform()} · {os.cpu_count()} cores · load average at start "
        f"{load0[0]:.1f}, at end {load1[0]:.1f}",
        f"- `bgix serve --workers 1`, BGIX_TOKEN set, BGIX_HEADER_TIMEOUT_S={HEADER_TIMEOUT_S:g}, "
        f"BGIX_BODY_TIMEOUT_S={BODY_TIMEOUT_S:g}, other settings default; {args.rows:,} rows, `k` with "
        f"{args.distinct:,} distinct values",
        f"- measuring client: one keep-alive connection alternating GET /healthz and a point count query "
        f"(checked against numpy), {args.duration:g} s per phase; hostile clients (another process): "
        f"{args.holders} slowloris connections (half stalled mid-headers, half after declaring a body), "
        f"{args.refused} clients posting ~1 MB predicates, {args.unauthenticated} posting without the token",
        "",
        "| phase | requests | wrong | 5xx | /healthz p50 / p99 (ms) | point query p50 / p99 (ms) | server CPU (cores) |",
        "|---|---|---|---|---|---|---|",
        row("alone", quiet, cpu_quiet),
        row("under hostile clients", loud, cpu_loud),
        "",
        f"Hostile clients' outcomes: {hostile_text}.",
        "",
        f"Wrong answers and 5xx: {'none' if ok else 'SOME'}.",
        "",
    ])
    print(text)
    if not args.no_write:
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        RESULTS.write_text(text, encoding="utf-8")
    return 0 if ok else 2


if __name__ == "__main__":
    sys.exit(main())
