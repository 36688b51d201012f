"""A bounded soak of a real `bgix serve` on loopback: mixed valid, refused and malformed queries, table
registrations, builds, and commits to a Paimon table by other writers (pypaimon appends and deletes,
pypaimon-rust index builds), for a set duration; samples every server process's memory, open files and threads.

Ground truth: pyarrow over the plain table's source rows, and pypaimon's own read of the Paimon table AT the
snapshot each answer names (cached per snapshot). An answer is wrong when, outside its uncovered ranges, it
misses a true row, or (when it says `exact`) holds a false one.

Used by tests/e2e/test_soak.py (about a minute, in CI) and bench/bench_soak.py (minutes, recorded in
bench/RESULTS.md). Every loop is bounded by the deadline; only 127.0.0.1 is ever a target.
"""
from __future__ import annotations

import os
import random
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from pyroaring import BitMap64

from tests.api.helpers import wait_job, write_table
from tests.api.server import bgix_process
from tests.unit.tables.paimon import paimon_tables as pt

STATUSES = [s for s in pt.STATUSES if s is not None]
PLAIN_ROWS = 20_000


@dataclass
class Sample:
    at: float                       # seconds since the soak started
    rss: dict[int, int]             # pid → bytes, server processes (parent and workers)
    fds: dict[int, int]
    threads: dict[int, int]
    runner_rss: int                 # the build runners' trees (Spark included), bytes


@dataclass
class SoakReport:
    duration_s: float
    workers: int
    requests: Counter[str] = field(default_factory=Counter)      # kind → count
    statuses: Counter[int] = field(default_factory=Counter)
    server_errors: list[str] = field(default_factory=list)      # every 5xx, and 4xx where 2xx was due
    wrong: list[str] = field(default_factory=list)               # answers that disagree with the oracle
    jobs: Counter[str] = field(default_factory=Counter)           # final job states
    failed_jobs: list[str] = field(default_factory=list)
    writer: Counter[str] = field(default_factory=Counter)        # other writers' commits by kind
    writer_errors: list[str] = field(default_factory=list)
    samples: list[Sample] = field(default_factory=list)
    warm_at: float = 0.0            # samples from here on are compared

    def growth(self) -> dict[str, dict[int, int]]:
        """Per server process alive throughout: the peak of the second half of the run after warm-up minus the
        peak of the first half, for RSS bytes, open files and threads. Peaks, not single samples: memory swings
        with each request's garbage; a leak raises the later peak."""
        after = [s for s in self.samples if s.at >= self.warm_at] or self.samples
        half = len(after) // 2 or 1
        early, late = after[:half], after[half:] or after[-1:]
        out: dict[str, dict[int, int]] = {"rss": {}, "fds": {}, "threads": {}}
        for what in out:
            pids = set(getattr(early[0], what)).intersection(getattr(late[-1], what))
            out[what] = {p: max(getattr(s, what).get(p, 0) for s in late) -
                         max(getattr(s, what).get(p, 0) for s in early) for p in pids}
        return out

    def summary(self) -> dict[str, Any]:
        warm = next((s for s in self.samples if s.at >= self.warm_at), self.samples[0])
        last = self.samples[-1]
        return {
            "duration_s": round(self.duration_s, 1), "workers": self.workers,
            "requests": sum(self.requests.values()), "by_kind": dict(self.requests),
            "statuses": {str(k): v for k, v in sorted(self.statuses.items())},
            "server_errors": len(self.server_errors), "wrong_answers": len(self.wrong),
            "jobs": dict(self.jobs), "other_writer_commits": dict(self.writer),
            "other_writer_errors": len(self.writer_errors),
            "rss_mib_warm": {p: round(v / 2**20, 1) for p, v in warm.rss.items()},
            "rss_mib_end": {p: round(v / 2**20, 1) for p, v in last.rss.items()},
            "fds_warm_end": {p: (warm.fds[p], last.fds.get(p)) for p in warm.fds},
            "threads_warm_end": {p: (warm.threads[p], last.threads.get(p)) for p in warm.threads},
            "runner_rss_mib_end": round(last.runner_rss / 2**20, 1),
        }


# ---------------------------------------------------------------- process sampling (Linux /proc)

def _children(pid: int) -> list[int]:
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []
    kids: list[int] = []
    for t in tasks:
        try:
            kids += [int(c) for c in Path(f"/proc/{pid}/task/{t}/children").read_text().split()]
        except OSError:
            continue
    return kids


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _status(pid: int, key: str) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def _tree(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo += _children(p)
    return out


def sample(server_pid: int, started: float) -> Sample:
    """The server process and its uvicorn workers, apart from build runners (and their Spark) below them."""
    serve, runners = [], []
    todo = [server_pid]
    while todo:
        p = todo.pop()
        if "build_runner" in _cmdline(p) or "build_job" in _cmdline(p):
            runners.append(p)
            continue
        serve.append(p)
        todo += _children(p)
    rss, fds, threads = {}, {}, {}
    for p in serve:
        if "multiprocessing" in _cmdline(p) and "resource_tracker" in _cmdline(p):
            continue
        rss[p] = _status(p, "VmRSS") * 1024
        threads[p] = _status(p, "Threads")
        try:
            fds[p] = len(os.listdir(f"/proc/{p}/fd"))
        except OSError:
            fds[p] = 0
    runner_rss = sum(_status(q, "VmRSS") * 1024 for r in runners for q in _tree(r))
    return Sample(at=time.monotonic() - started, rss=rss, fds=fds, threads=threads, runner_rss=runner_rss)


# ---------------------------------------------------------------- predicates and the oracle

def _leaf(rng: random.Random, table: str) -> tuple[str, Callable[[pa.Table], pa.Array]]:
    """A random SQL leaf and its pyarrow mask (NULL compares false, as SQL's WHERE keeps only TRUE rows)."""
    s_col, n_col = ("s", "n") if table == "plain" else ("status", "code")
    kind = rng.randrange(5)
    if kind == 0:
        v = rng.choice(STATUSES)
        return f"{s_col} = '{v}'", lambda t: pc.equal(t[s_col], v)
    if kind == 1:
        vs = rng.sample(STATUSES, 2)
        return (f"{s_col} IN ('{vs[0]}', '{vs[1]}')",
                lambda t: pc.is_in(t[s_col], value_set=pa.array(vs, t[s_col].type)))
    if kind == 2:
        a = rng.randint(-50, 40)
        b = a + rng.randint(0, 30)
        return f"{n_col} BETWEEN {a} AND {b}", lambda t: pc.and_(pc.greater_equal(t[n_col], a),
                                                                 pc.less_equal(t[n_col], b))
    if kind == 3:
        a = rng.randint(-40, 40)
        return f"{n_col} > {a}", lambda t: pc.greater(t[n_col], a)
    v = rng.choice(STATUSES)
    return f"{s_col} <> '{v}'", lambda t: pc.not_equal(t[s_col], v)


def predicate(rng: random.Random, table: str) -> tuple[str, Callable[[pa.Table], pa.Array]]:
    (a, fa), (b, fb) = _leaf(rng, table), _leaf(rng, table)
    shape = rng.randrange(3)
    if shape == 0:
        return a, lambda t: pc.fill_null(fa(t), False)
    op, f = ("AND", pc.and_kleene) if shape == 1 else ("OR", pc.or_kleene)
    return f"({a}) {op} ({b})", lambda t: pc.fill_null(f(fa(t), fb(t)), False)


def check_answer(body: dict[str, Any], truth: BitMap64, what: str) -> str | None:
    """None when the answer agrees with the truth outside its uncovered ranges; else what is wrong."""
    got = BitMap64(body["row_ids"])
    uncovered = BitMap64()
    for a, b in body["coverage"]["uncovered_ranges"]:
        uncovered.add_range(a, b + 1)
    missing = (truth - uncovered) - got
    extra = (got - uncovered) - truth
    if missing:
        return f"{what}: {len(missing)} true rows missing (e.g. {list(missing)[:5]})"
    if body["exact"] and extra:
        return f"{what}: exact, but {len(extra)} false rows (e.g. {list(extra)[:5]})"
    return None


class PaimonOracle:
    """pypaimon's read of the table at a snapshot, cached per snapshot id."""

    def __init__(self, location: Path) -> None:
        self.location = location
        self._cache: dict[int, pa.Table] = {}
        self._lock = threading.Lock()

    def at(self, sid: int) -> pa.Table:
        with self._lock:
            if sid not in self._cache:
                table = pt.pypaimon_table(self.location).copy({"scan.snapshot-id": str(sid)})
                rb = table.new_read_builder().with_projection(["status", "code", "flag", "_ROW_ID"])
                self._cache[sid] = rb.new_read().to_arrow(rb.new_scan().plan().splits())
            return self._cache[sid]


# ---------------------------------------------------------------- the soak

class Soak:
    def __init__(self, root: Path, duration_s: float, workers: int, seed: int, build_engine: str,
                 log: Callable[[str], None], max_open_files: int | None = None) -> None:
        self.root, self.duration, self.seed, self.log = root, duration_s, seed, log
        self.max_open_files = max_open_files
        self.report = SoakReport(duration_s=duration_s, workers=workers)
        self.build_engine = build_engine
        self.lock = threading.Lock()
        self.jobs: list[str] = []
        self.deadline = 0.0

    # -- setup
    def setup(self) -> None:
        rng = np.random.default_rng(self.seed)
        self.plain_dir = self.root / "data" / "plain"
        n = rng.integers(-50, 50, PLAIN_ROWS).astype("float64")
        n[rng.random(PLAIN_ROWS) < 0.05] = np.nan
        s = rng.choice(np.array(STATUSES, dtype=object), PLAIN_ROWS)
        s[rng.random(PLAIN_ROWS) < 0.05] = None
        df = pd.DataFrame({"s": s, "n": pd.array(n, dtype="Int64")})
        write_table(self.plain_dir, df, 8)
        self.plain = pa.Table.from_pandas(df, preserve_index=False)
        self.warehouse = self.root / "data" / "wh"
        self.location = pt.create_table(self.warehouse, "events", commits=2, rows=2000, seed=self.seed)
        self.oracle = PaimonOracle(self.location)

    def env(self) -> dict[str, str]:
        env = {"BGIX_WAREHOUSE": str(self.root / "warehouse"), "BGIX_ALLOWED_ROOTS": str(self.root / "data"),
               "BGIX_BUILD_ENGINE": self.build_engine, "BGIX_BUILD_PREWARM": "false",
               "BGIX_SPARK_MASTER": "local[1]", "BGIX_SNAPSHOT_TTL_SECONDS": "0"}
        if self.max_open_files is not None:
            env["BGIX_MAX_OPEN_FILES"] = str(self.max_open_files)
        return env

    # -- the pieces
    def call(self, client: httpx.Client, kind: str, method: str, path: str, want: tuple[int, ...],
             **kw: Any) -> httpx.Response | None:
        try:
            r = client.request(method, path, **kw)
        except httpx.HTTPError as exc:
            with self.lock:
                self.report.requests[kind] += 1
                self.report.server_errors.append(f"{kind} {method} {path}: {type(exc).__name__}: {exc}")
            return None
        with self.lock:
            self.report.requests[kind] += 1
            self.report.statuses[r.status_code] += 1
            if r.status_code >= 500 or r.status_code not in want:
                self.report.server_errors.append(f"{kind} {method} {path}: {r.status_code} {r.text[:300]}")
        return r

    def query_plain(self, client: httpx.Client, rng: random.Random) -> None:
        where, mask = predicate(rng, "plain")
        r = self.call(client, "query", "POST", "/v1/tables/plain/query", (200,),
                      json={"where": where, "result": "row_ids", "limit": 100_000})
        if r is not None and r.status_code == 200:
            truth = BitMap64(np.flatnonzero(mask(self.plain).to_numpy(zero_copy_only=False)).tolist())
            self._judge(check_answer(r.json(), truth, f"plain {where!r}"))

    def query_paimon(self, client: httpx.Client, rng: random.Random) -> None:
        where, mask = predicate(rng, "paimon")
        r = self.call(client, "query", "POST", "/v1/tables/events/query", (200,),
                      json={"where": where, "result": "row_ids", "limit": 100_000})
        if r is None or r.status_code != 200:
            return
        body = r.json()
        sids = set(body["snapshots"].values())
        if len(sids) != 1:   # every column of one answer comes from one Paimon snapshot
            self._judge(f"paimon {where!r}: answer from several snapshots {body['snapshots']}")
            return
        rows = self.oracle.at(int(next(iter(sids))))
        ids = pc.filter(rows["_ROW_ID"], mask(rows)).to_pylist()
        self._judge(check_answer(body, BitMap64(ids), f"paimon {where!r} @ {sids}"))

    def refused(self, client: httpx.Client, rng: random.Random) -> None:
        big = "".join(rng.choice("abcdefghij") for _ in range(64)) * (900 * 1024 // 64)
        r = self.call(client, "refused", "POST", "/v1/tables/plain/query", (400,),
                      json={"where": f"s = '{big}'", "result": "count"})
        if r is not None and r.status_code == 400 and r.json()["error"]["code"] != "predicate_limit":
            self._judge(f"refused predicate answered {r.json()['error']['code']}")

    def malformed(self, client: httpx.Client, rng: random.Random) -> None:
        junk = rng.choice([
            f"s = = 'x{rng.random()}'", f"nosuch_{rng.randrange(10**6)} = 1", f"n > 'abc{rng.random()}'",
            "(" * 3 + f"s = '{rng.random()}'", f"s IN ({rng.random()}", "".join(rng.choice("()=<>'ab ,") for _ in
                                                                              range(rng.randrange(1, 4000))),
        ])
        self.call(client, "malformed", "POST", "/v1/tables/plain/query", (400,),
                  json={"where": junk, "result": "count"})

    def register_cycle(self, client: httpx.Client, rng: random.Random) -> None:
        name = f"tmp{rng.randrange(10**9)}"
        if self.call(client, "register", "PUT", f"/v1/tables/{name}", (200, 201),
                     json={"location": str(self.plain_dir)}) is None:
            return
        self.call(client, "register", "GET", f"/v1/tables/{name}", (200,))
        # nothing indexed yet: the column is read from the data, the count exact
        r = self.call(client, "register", "POST", f"/v1/tables/{name}/query", (200,),
                      json={"where": "s = 'ok'", "result": "row_ids", "limit": 100_000})
        if r is not None and r.status_code == 200:
            ok = pc.fill_null(pc.equal(self.plain.column("s"), "ok"), False)
            truth = BitMap64(np.flatnonzero(ok.to_numpy(zero_copy_only=False)).tolist())
            self._judge(check_answer(r.json(), truth, f"unindexed {name} s = 'ok'"))
        self.call(client, "register", "DELETE", f"/v1/tables/{name}", (200, 204))
        self.call(client, "register", "GET", f"/v1/tables/{name}", (404,))

    def reads(self, client: httpx.Client, rng: random.Random) -> None:
        path = rng.choice(["/v1/tables", "/v1/tables/events/indexes", "/v1/tables/plain/indexes", "/metrics",
                           "/v1/jobs", "/v1/tables/events", "/healthz",
                           "/v1/tables/events/indexes/status/values?limit=10"])
        self.call(client, "read", "GET", path, (200,))

    def build(self, client: httpx.Client, rng: random.Random) -> None:
        table, columns = rng.choice([("events", "status,code"), ("events", "status"), ("plain", "s"),
                                     ("plain", "n")])
        r = self.call(client, "build", "POST", "/v1/create_global_index", (202, 409),
                      json={"table": table, "index_column": columns})
        if r is not None and r.status_code == 202:
            with self.lock:
                self.jobs.append(r.json()["job_id"])

    # -- loops
    def client_loop(self, worker: int) -> None:
        rng = random.Random(self.seed * 1000 + worker)
        kinds: list[tuple[Callable[[httpx.Client, random.Random], None], int]] = [
            (self.query_plain, 35), (self.query_paimon, 25), (self.refused, 10), (self.malformed, 12),
            (self.register_cycle, 4), (self.reads, 12), (self.build, 2)]
        fns, weights = zip(*kinds)
        with httpx.Client(base_url=self.url, timeout=60.0) as client:
            while time.monotonic() < self.deadline:
                rng.choices(fns, weights)[0](client, rng)

    def writer_loop(self) -> None:
        """The other writers: pypaimon appends and deletes rows, pypaimon-rust appends rows."""
        rng = random.Random(self.seed + 7)
        prng = random.Random(self.seed + 8)
        step = 0
        while time.monotonic() < self.deadline - 2:
            step += 1
            try:
                if step % 4 == 3:
                    self._rust_append(pt.make_rows(prng, 300))
                    self._count_writer("rust_append")
                elif step % 5 == 2:
                    rows = self.oracle_latest()
                    ids = rng.sample(rows, min(20, len(rows)))
                    pt.delete_rows(self.location, ids)
                    self._count_writer("delete")
                else:
                    pt.append(self.warehouse, "events", pt.make_rows(prng, 400))
                    self._count_writer("append")
            except Exception as exc:  # noqa: BLE001 - reported, never fatal to the soak
                with self.lock:
                    self.report.writer_errors.append(f"{type(exc).__name__}: {exc}"[:300])
            time.sleep(1.0)

    def oracle_latest(self) -> list[int]:
        rb = pt.pypaimon_table(self.location).new_read_builder().with_projection(["_ROW_ID"])
        return rb.new_read().to_arrow(rb.new_scan().plan().splits())["_ROW_ID"].to_pylist()

    def _rust_append(self, rows: pa.Table) -> None:
        """One commit of `rows` by pypaimon-rust's writer."""
        from tests.unit.tables.paimon.rust_tables import append
        append(self.warehouse, "events", rows, db=pt.DB)

    def _count_writer(self, kind: str) -> None:
        with self.lock:
            self.report.writer[kind] += 1

    def _judge(self, problem: str | None) -> None:
        if problem:
            with self.lock:
                self.report.wrong.append(problem)

    def run(self, clients: int = 2) -> SoakReport:
        self.setup()
        log_path = self.root / "serve.log"
        with bgix_process(self.env(), log_path, workers=self.report.workers) as (url, proc):
            self.url = url
            with httpx.Client(base_url=url, timeout=60.0) as c:
                assert c.put("/v1/tables/plain", json={"location": str(self.plain_dir)}).status_code in (200, 201)
                assert c.put("/v1/tables/events", json={"format": "paimon", "location": str(self.location)}
                             ).status_code in (200, 201)
                for table, cols in (("plain", "s"), ("plain", "n"), ("events", "status,code")):
                    r = c.post("/v1/create_global_index", json={"table": table, "index_column": cols})
                    assert r.status_code == 202, r.text
                    wait_job(c, r.json()["job_id"], 300)
            started = time.monotonic()
            self.deadline = started + self.duration
            self.report.warm_at = min(20.0, self.duration / 3)
            threads = [threading.Thread(target=self.client_loop, args=(i,), daemon=True) for i in range(clients)]
            threads.append(threading.Thread(target=self.writer_loop, daemon=True))
            for t in threads:
                t.start()
            while time.monotonic() < self.deadline:
                self.report.samples.append(sample(proc.pid, started))
                time.sleep(2.0)
            for t in threads:
                t.join(timeout=120)
            with httpx.Client(base_url=url, timeout=60.0) as c:
                for job in self.jobs:   # every build the soak started ends, and how
                    rec = wait_job(c, job, 300)
                    self.report.jobs[rec["state"]] += 1
                    if rec["state"] != "succeeded":
                        self.report.failed_jobs.append(f"{job}: {rec.get('error')}")
            self.report.samples.append(sample(proc.pid, started))
            self.report.duration_s = time.monotonic() - started
        return self.report


def run_soak(root: Path, duration_s: float, *, workers: int = 2, clients: int = 2, seed: int = 24,
             build_engine: str = "local", log: Callable[[str], None] = print,
             max_open_files: int | None = None) -> SoakReport:
    """Run the soak in `root` (an empty directory) for `duration_s` seconds of load; the report.
    `max_open_files`: the servers' BGIX_MAX_OPEN_FILES (None: the service's default)."""
    return Soak(root, duration_s, workers, seed, build_engine, log, max_open_files).run(clients)
