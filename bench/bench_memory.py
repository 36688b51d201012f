"""Memory benchmark (issue 34): does BGIX_CACHE_BYTES cap a worker's resident memory under high-cardinality queries?

A real `bgix serve --workers W` over a Parquet table of R rows: `uid` int64, all distinct (a permutation), and `s`
from ('ok', 'error', 'timeout', 'warn'), with bitmap indexes on both built through the API (local engine). After a
warm start (each code path run once on a few ids), C keep-alive connections (spread evenly over the workers: each
connection's worker is read from /proc) send Q distinct `s = 'error' AND uid IN (<1,000 random uids>)` count
queries, and with them two points `uid = k` each, and every fourth time a narrow range `uid BETWEEN a AND b AND s
IN (...)`, an `s IN (...) AND uid IN (<1,000 uids>)` and every eighth an `s IN (...)` alone. Every count is checked
against numpy on the source rows. A sampler records each worker's RSS over time. Optionally hostile clients run
alongside (bench_hostile.py's, in another process): slowloris holders, ~1 MB refused predicates, clients without
the token.

Printed as JSON: per worker RSS samples over time, RSS after the warm start, final and peak RSS, growth over the
last half of the queries, the budget (BGIX_CACHE_BYTES + BGIX_PARSE_CACHE_BYTES), overhead = final - warm - budget
(the documented allowance is 48 MiB), each worker's bgix_cache_bytes gauge, wrong answers, 5xx, point and IN-list
query p50 / p99. Exit status 2 on a wrong answer or a 5xx, 1 when a worker's overhead exceeds 48 MiB.

    .venv/bin/python bench/bench_memory.py [--rows 1000000] [--queries 600] [--workers 2] [--cache-mib 64]
                                           [--parse-cache-mib 16] [--seed 34] [--connections 4]
                                           [--holders 0] [--refused 0] [--unauthenticated 0] [--hostile-seconds 60]
"""
from __future__ import annotations

import argparse
import http.client
import json
import multiprocessing
import os
import platform
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _server import start_server, stop_server  # noqa: E402  bench/_server.py
from bench_hostile import _hostile  # noqa: E402  bench/bench_hostile.py's hostile clients (table `big`)
from bench_ranges import git_sha  # noqa: E402
from tests.api.helpers import write_table  # noqa: E402
from tests.api.server import rss_bytes  # noqa: E402

MiB = 2**20
OVERHEAD_MIB = 48        # the fixed overhead per worker the budget allows on top of the two caches
STATES = ("ok", "error", "timeout", "warn")
IN_SIZE = 1000
TOKEN = "bench-memory-token"
TABLE = "big"            # the table bench_hostile's clients aim at


# ---- data, queries, oracle ----------------------------------------------------------------------------
def make_table(root: Path, rows: int, seed: int) -> np.ndarray:
    """Write the table; return `s` by uid (uid is a permutation of 0..rows-1), the oracle's view of the rows."""
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"uid": rng.permutation(rows).astype(np.int64),
                       "s": np.array(STATES, dtype=object)[rng.integers(0, len(STATES), rows)]})
    write_table(root / "data" / TABLE, df, 8)
    s_by_uid = np.empty(rows, dtype=object)
    s_by_uid[df["uid"].to_numpy()] = df["s"].to_numpy()
    return s_by_uid


def _ids(values: np.ndarray) -> str:
    return ",".join(map(str, values.tolist()))


def _count(s_values: np.ndarray, states: list[str]) -> int:
    return int(np.count_nonzero(np.isin(s_values, states)))


def make_queries(rows: int, queries: int, seed: int, s_by_uid: np.ndarray) -> list[tuple[str, str, int]]:
    """(kind, where, expected count) of the whole run, in order."""
    rng = np.random.default_rng(seed + 1)
    out: list[tuple[str, str, int]] = []
    for q in range(queries):
        uids = rng.choice(rows, IN_SIZE, replace=False)
        out.append(("in", f"s = 'error' AND uid IN ({_ids(uids)})", _count(s_by_uid[uids], ["error"])))
        for _ in range(2):
            out.append(("point", f"uid = {int(rng.integers(0, rows))}", 1))
        if q % 4 == 1:
            low = int(rng.integers(0, rows - 2000))
            high = low + int(rng.integers(100, 2000))
            out.append(("range", f"uid BETWEEN {low} AND {high} AND s IN ('ok', 'warn')",
                        _count(s_by_uid[low:high + 1], ["ok", "warn"])))
        if q % 4 == 3:
            uids = rng.choice(rows, IN_SIZE, replace=False)
            out.append(("s_in_uid_in", f"s IN ('timeout', 'warn') AND uid IN ({_ids(uids)})",
                        _count(s_by_uid[uids], ["timeout", "warn"])))
        if q % 8 == 5:
            states = [s for s in STATES if rng.random() < 0.5] or ["error"]
            out.append(("s_in", f"s IN ({', '.join(repr(s) for s in states)})", _count(s_by_uid, states)))
    return out


def warm_queries(s_by_uid: np.ndarray) -> list[tuple[str, str, int]]:
    """Each column's reader opened and each code path run once, on a few ids only: the warm start holds code,
    pools and readers, not a cache's worth of blocks and bitmaps."""
    return [("warm", "s = 'error'", _count(s_by_uid, ["error"])),
            ("warm", "uid = 7", 1),
            ("warm", "s = 'error' AND uid IN (1, 2, 3)", _count(s_by_uid[[1, 2, 3]], ["error"])),
            ("warm", "uid BETWEEN 10 AND 20 AND s IN ('ok', 'warn')", _count(s_by_uid[10:21], ["ok", "warn"]))]


# ---- processes, sockets, memory ------------------------------------------------------------------------
def worker_pids(parent: int, workers: int) -> list[int]:
    """The processes that answer: the server itself with one worker, else its uvicorn workers (not
    multiprocessing's resource tracker, also a child)."""
    if workers == 1:
        return [parent]
    deadline = time.monotonic() + 30
    while True:
        pids = []
        for p in Path(f"/proc/{parent}/task/{parent}/children").read_text().split():
            try:
                if b"spawn_main" in Path(f"/proc/{p}/cmdline").read_bytes():
                    pids.append(int(p))
            except OSError:
                pass
        if len(pids) >= workers or time.monotonic() > deadline:
            return sorted(pids)
        time.sleep(0.2)


def client_port_owners(pids: list[int]) -> dict[int, int]:
    """Client port → the worker holding the accepted connection (socket inodes in /proc/<pid>/fd matched to
    /proc/net/tcp, whose rem_address of an accepted socket is the client's)."""
    inode_owner: dict[int, int] = {}
    for pid in pids:
        fd_dir = Path(f"/proc/{pid}/fd")
        for fd in fd_dir.iterdir():
            try:
                target = os.readlink(fd)
            except OSError:
                continue
            if target.startswith("socket:["):
                inode_owner[int(target[8:-1])] = pid
    owners: dict[int, int] = {}
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        inode = int(fields[9])
        if inode in inode_owner:
            owners[int(fields[2].split(":")[1], 16)] = inode_owner[inode]
    return owners


class Conn:
    """One keep-alive connection (http.client: little client time per request), and the worker behind it."""

    def __init__(self, port: int) -> None:
        self.http = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
        self.worker = 0

    def request(self, method: str, path: str, body: Any = None, token: str | None = None) -> tuple[int, bytes]:
        headers = {"Content-Type": "application/json"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        data = None if body is None else json.dumps(body).encode()
        self.http.request(method, path, data, headers)
        r = self.http.getresponse()
        return r.status, r.read()

    def local_port(self) -> int:
        assert self.http.sock is not None
        return int(self.http.sock.getsockname()[1])


def spread_connections(port: int, pids: list[int], count: int) -> list[Conn]:
    """`count` connections, as evenly spread over the workers as SO_REUSEPORT's hashing lets 64 tries make them."""
    want = -(-count // len(pids))
    kept: dict[int, list[Conn]] = {pid: [] for pid in pids}
    for _ in range(64):
        if sum(len(v) for v in kept.values()) >= count:
            break
        c = Conn(port)
        c.request("GET", "/healthz")
        owner = client_port_owners(pids).get(c.local_port())
        if owner is not None and len(kept[owner]) < want:
            c.worker = owner
            kept[owner].append(c)
        else:
            c.http.close()
    conns = [c for pid in pids for c in kept[pid]]
    return conns[:count]


def cache_gauge(conn: Conn) -> float:
    """bgix_cache_bytes of the worker behind `conn` (each worker serves its own /metrics registry)."""
    _, body = conn.request("GET", "/metrics")
    line = next(x for x in body.decode().splitlines() if x.startswith("bgix_cache_bytes "))
    return float(line.split()[1])


class Sampler:
    """Each worker's RSS every `interval` seconds, with the number of queries answered so far."""

    def __init__(self, pids: list[int], interval: float, done: list[int]) -> None:
        self.pids, self.interval, self.done = pids, interval, done
        self.samples: list[dict[str, Any]] = []
        self._stop = threading.Event()
        self._t0 = time.monotonic()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def sample(self) -> None:
        self.samples.append({"t": round(time.monotonic() - self._t0, 2), "queries_done": self.done[0],
                             "rss_mib": {str(p): round(rss_bytes(p) / MiB, 1) for p in self.pids}})

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.sample()

    def __enter__(self) -> Sampler:
        self.sample()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.sample()


# ---- the run --------------------------------------------------------------------------------------------
def run_queries(conns: list[Conn], plan: list[tuple[str, str, int]], done: list[int]) -> dict[str, Any]:
    """Query i goes to connection i mod len(conns); every connection sends its share in order, concurrently."""
    lock = threading.Lock()
    latency: dict[str, list[float]] = {}
    answered: dict[int, int] = {}
    wrong: list[str] = []
    failed: list[str] = []
    status: dict[int, int] = {}

    def run(j: int) -> None:
        conn = conns[j]
        mine: dict[str, list[float]] = {}
        for kind, where, want in plan[j::len(conns)]:
            t0 = time.perf_counter()
            code, body = conn.request("POST", f"/v1/tables/{TABLE}/query", {"where": where, "result": "count"})
            took = time.perf_counter() - t0
            mine.setdefault(kind, []).append(took)
            with lock:
                status[code] = status.get(code, 0) + 1
                answered[conn.worker] = answered.get(conn.worker, 0) + 1
                done[0] += 1
                if code == 200 and json.loads(body)["count"] != want:
                    wrong.append(f"{where[:100]}…: {json.loads(body)['count']} != {want}")
                elif code != 200:
                    failed.append(f"{where[:100]}…: HTTP {code} {body[:200]!r}")
        with lock:
            for kind, xs in mine.items():
                latency.setdefault(kind, []).extend(xs)

    threads = [threading.Thread(target=run, args=(j,)) for j in range(len(conns))]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    ms = lambda xs, q: round(float(np.percentile(np.array(xs) * 1000, q)), 2)  # noqa: E731
    return {"seconds": round(time.perf_counter() - t0, 1), "status": {str(k): v for k, v in sorted(status.items())},
            "answered_by_worker": {str(k): v for k, v in answered.items()},
            "wrong": len(wrong), "5xx": sum(v for k, v in status.items() if k >= 500),
            "non_200": len(failed), "first_problems": (wrong + failed)[:5],
            "latency_ms": {kind: {"n": len(xs), "p50": ms(xs, 50), "p99": ms(xs, 99)}
                           for kind, xs in sorted(latency.items())}}


def build_indexes(conn: Conn, location: Path) -> float:
    t0 = time.perf_counter()
    code, body = conn.request("PUT", f"/v1/tables/{TABLE}", {"location": str(location)}, TOKEN)
    assert code == 200, body[:500]
    for column in ("uid", "s"):
        code, body = conn.request("POST", "/v1/create_global_index", {"table": TABLE, "index_column": column}, TOKEN)
        assert code in (200, 202), body[:500]
        job_id = json.loads(body)["job_id"]
        while True:
            state = json.loads(conn.request("GET", f"/v1/jobs/{job_id}")[1])["state"]
            if state not in ("queued", "running"):
                break
            time.sleep(0.2)
        assert state == "succeeded", f"build of {column}: {state}"
    return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--queries", type=int, default=600, help="`s = 'error' AND uid IN (1,000 uids)` queries "
                    "(the other kinds come with them: ~2.6 more per one)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--connections", type=int, default=4, help="client connections, spread over the workers")
    ap.add_argument("--cache-mib", type=int, default=64, help="BGIX_CACHE_BYTES in MiB")
    ap.add_argument("--parse-cache-mib", type=int, default=16, help="BGIX_PARSE_CACHE_BYTES in MiB")
    ap.add_argument("--seed", type=int, default=34)
    ap.add_argument("--sample-seconds", type=float, default=1.0, help="RSS sampling interval")
    ap.add_argument("--holders", type=int, default=0, help="hostile: slowloris connections held")
    ap.add_argument("--refused", type=int, default=0, help="hostile: clients posting ~1 MB refused predicates")
    ap.add_argument("--unauthenticated", type=int, default=0, help="hostile: clients posting without the token")
    ap.add_argument("--hostile-seconds", type=float, default=60.0, help="how long the hostile clients run, from "
                    "the start of the queries")
    args = ap.parse_args()
    budget = (args.cache_mib + args.parse_cache_mib) * MiB
    hostile_on = bool(args.holders or args.refused or args.unauthenticated)
    tmp_parent = "/work/bench-tmp" if Path("/work/bench-tmp").is_dir() else None
    root = Path(tempfile.mkdtemp(prefix="bgix-bench-memory-", dir=tmp_parent))
    started, load0 = time.time(), os.getloadavg()
    report: dict[str, Any] = {
        "command": " ".join(["bench/bench_memory.py", *sys.argv[1:]]),
        "git": git_sha(), "served_from": os.environ.get("PYTHONPATH") or "the installed bgix",
        "platform": platform.platform(), "cores": os.cpu_count(),
        "started_utc": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(started)),
        "rows": args.rows, "workers": args.workers, "connections": args.connections, "seed": args.seed,
        "cache_mib": args.cache_mib, "parse_cache_mib": args.parse_cache_mib,
        "budget_mib": args.cache_mib + args.parse_cache_mib, "overhead_allowed_mib": OVERHEAD_MIB,
    }
    try:
        t0 = time.perf_counter()
        s_by_uid = make_table(root, args.rows, args.seed)
        plan = make_queries(args.rows, args.queries, args.seed, s_by_uid)
        report["data_seconds"] = round(time.perf_counter() - t0, 1)
        report["queries"] = {kind: sum(1 for k, _, _ in plan if k == kind) for kind in sorted({k for k, _, _ in plan})}
        env = {"BGIX_WAREHOUSE": str(root / "warehouse"), "BGIX_ALLOWED_ROOTS": str(root / "data"),
               "BGIX_BUILD_ENGINE": "local", "BGIX_BUILD_PREWARM": "false", "BGIX_TOKEN": TOKEN,
               "BGIX_CACHE_BYTES": str(args.cache_mib * MiB),
               "BGIX_PARSE_CACHE_BYTES": str(args.parse_cache_mib * MiB)}
        proc, url = start_server(env, root / "serve.log", workers=args.workers)
        try:
            port = int(url.rsplit(":", 1)[1])
            admin = Conn(port)
            report["build_seconds"] = round(build_indexes(admin, root / "data" / TABLE), 1)
            admin.http.close()
            pids = worker_pids(proc.pid, args.workers)
            conns = spread_connections(port, pids, args.connections)
            report["connections_by_worker"] = {str(p): sum(c.worker == p for c in conns) for p in pids}
            for c in conns:   # the warm start, on every connection (so on every worker)
                for _, where, want in warm_queries(s_by_uid):
                    code, body = c.request("POST", f"/v1/tables/{TABLE}/query", {"where": where, "result": "count"})
                    assert code == 200 and json.loads(body)["count"] == want, body[:300]
            time.sleep(0.5)
            warm = {p: rss_bytes(p) for p in pids}
            hostile = None
            if hostile_on:
                ctx = multiprocessing.get_context("spawn")
                out = ctx.Queue()
                hostile = ctx.Process(target=_hostile, args=(port, args.hostile_seconds, args.holders, args.refused,
                                                             args.unauthenticated, out))
                hostile.start()
            done = [0]
            with Sampler(pids, args.sample_seconds, done) as sampler:
                result = run_queries(conns, plan, done)
            final = {p: rss_bytes(p) for p in pids}
            gauges = {c.worker: cache_gauge(c) for c in conns}
            if hostile is not None:
                report["hostile"] = out.get(timeout=args.hostile_seconds + 120)
                hostile.join(30)
                report["rss_after_hostile_mib"] = {str(p): round(rss_bytes(p) / MiB, 1) for p in pids}
            for c in conns:
                c.http.close()
        finally:
            stop_server(proc)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    half = len(plan) // 2
    per_worker: dict[str, Any] = {}
    for p in pids:
        series = [s["rss_mib"][str(p)] * MiB for s in sampler.samples]
        mid = next((s["rss_mib"][str(p)] * MiB for s in sampler.samples if s["queries_done"] >= half), series[-1])
        per_worker[str(p)] = {
            "queries": result["answered_by_worker"].get(str(p), 0),
            "rss_warm_mib": round(warm[p] / MiB, 1), "rss_final_mib": round(final[p] / MiB, 1),
            "rss_peak_mib": round(max(series + [final[p]]) / MiB, 1),
            "growth_mib": round((final[p] - warm[p]) / MiB, 1),
            "growth_last_half_mib": round((final[p] - mid) / MiB, 1),
            "overhead_mib": round((final[p] - warm[p] - budget) / MiB, 1),
            "peak_overhead_mib": round((max(series + [final[p]]) - warm[p] - budget) / MiB, 1),
            "bgix_cache_bytes_mib": round(gauges[p] / MiB, 1) if p in gauges else None,
        }
    report.update(result)
    lat = report.pop("latency_ms")
    report["point_p50_ms"], report["point_p99_ms"] = lat["point"]["p50"], lat["point"]["p99"]
    report["latency_ms"] = lat
    report["per_worker"] = per_worker
    report["within_bound"] = all(w["peak_overhead_mib"] <= OVERHEAD_MIB for w in per_worker.values()
                                 if w["queries"])
    load1 = os.getloadavg()
    report["load_average"] = [round(load0[0], 1), round(load1[0], 1)]
    report["samples"] = sampler.samples
    print(json.dumps(report, indent=1))
    if report["wrong"] or report["5xx"]:
        return 2
    return 0 if report["within_bound"] else 1


if __name__ == "__main__":
    sys.exit(main())
