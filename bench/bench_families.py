"""Families benchmark (issue 21): btree and multivalue on one Paimon table, bgix against pypaimon-rust, in one run
on the same data: build time (bgix's API with Spark and with the local engine vs pypaimon-rust's
`CALL sys.create_global_index`) and warm query latency over HTTP on the index each of them built.

The table is written once by pypaimon-rust (row tracking, data evolution; --rows rows in --commits commits):
`id` BIGINT (the row number), `uid` BIGINT all distinct (a shuffled permutation of an arithmetic run that straddles
zero), `tags` ARRAY<STRING> with --tags-per-row elements per row drawn from --distinct-tags tags. Every contender
builds on its own copy of that unindexed table directory:
  - pypaimon-rust, same options: `CALL sys.create_global_index` for `uid` (btree), then `tags` (multivalue), with
    `sorted-index.records-per-range` = bgix's default (one file per family at 10M rows, as bgix writes);
  - pypaimon-rust, its own defaults (its records-per-range is 100,000 rows: 100 files per family at 10M rows);
  - bgix, Spark: a real `bgix serve` with BGIX_BUILD_ENGINE=spark, BGIX_SPARK_MASTER=--master; one
    POST /v1/create_global_index {"index_column": "uid,tags", "index_type": "btree,multivalue"} (one scan, one
    commit), polled until it ends (end to end: job process, Spark session, build, Paimon commit, the poll). A first
    untimed Spark build on another copy records the build jobs' JVM class archive, as bench_paimon.py does;
  - bgix, local engine: the same request on a second `bgix serve` with BGIX_BUILD_ENGINE=local.
Then one `bgix serve` (the Spark one) serves every built table and one client on loopback sends, per table, warm
and back to back over one keep-alive connection: `uid = v` (a different existing key each request), a 1% range
`uid >= a AND uid < b` (a different range each request, `"result": "count"`: a 100k-id list is a 1 MB JSON body)
and `array_contains(tags, 't')` (a different tag each request, count). Every count is checked against numpy on the
source columns, and every answer must be exact with complete coverage. Tables take turns in blocks, so machine load
hits each alike. Prints a MISSED line per missed target; exits 1 only when something is wrong (a wrong count, a
failed build). Writes bench/results/families.md. Temp data lives under /tmp and is deleted at the end.

    SPARK_LOCAL_IP=127.0.0.1 PYSPARK_PYTHON=$PWD/.venv/bin/python .venv/bin/python bench/bench_families.py \
        [--rows 10000000] [--queries 1000] [--repeats 1]
"""
from __future__ import annotations

import argparse
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pyarrow as pa

from _bench_env import REPO  # noqa: E402  (bench/_bench_env.py: sys.path and Spark's env, before the rest)

from index_format.options import IndexOptions  # noqa: E402
from tests.unit.tables.paimon import rust_tables as rt  # noqa: E402

from _paimon_bench import api_build as shared_api_build  # noqa: E402  (bench/_paimon_bench.py)
from _paimon_bench import copy_table, index_layout, publish, register, verdict  # noqa: E402
from _server import KeepAlive, start_server, stop_server  # noqa: E402  (bench/_server.py)
from bench_paimon import _CDS_WAIT, cds_archive_ready, git_sha, wait_for_cds_archive  # noqa: E402
from bench_service import process_cpu_seconds  # noqa: E402

RESULTS = REPO / "bench" / "results" / "families.md"
NAME = "t"
COLUMNS, FAMILIES = "uid,tags", "btree,multivalue"
TARGETS = {"point_p50_ms": 2.0, "range_p50_ms": 2.0, "array_p50_ms": 2.0, "build_ratio": 2.0}
SAME_OPTIONS = f"sorted-index.records-per-range={IndexOptions().records_per_range}"


# ---- the table -------------------------------------------------------------------------------------
class Source:
    """The generated columns (row id order) and the numpy answers the service's counts are checked against."""

    def __init__(self, rows: int, tags_per_row: int, distinct_tags: int, seed: int = 1) -> None:
        rng = np.random.default_rng(seed)
        self.rows, self.distinct_tags = rows, distinct_tags
        self.uid = ((rng.permutation(rows).astype(np.int64) - rows // 2) * 3 + 1)
        self.sorted_uid = np.sort(self.uid)
        self.tags = rng.integers(0, distinct_tags, (rows, tags_per_row), dtype=np.int32)
        # rows holding each tag: a tag drawn twice for one row counts that row once
        s = np.sort(self.tags, axis=1)
        first = np.ones_like(s, dtype=bool)
        first[:, 1:] = s[:, 1:] != s[:, :-1]
        self.tag_rows = np.bincount(s[first], minlength=distinct_tags)

    @staticmethod
    def tag(i: int) -> str:
        return f"tag-{int(i):05d}"

    def range_count(self, lo: int, hi: int) -> int:
        """Rows with lo <= uid < hi."""
        return int(np.searchsorted(self.sorted_uid, hi) - np.searchsorted(self.sorted_uid, lo))

    def batches(self, commits: int) -> list[pa.Table]:
        words = pa.array([self.tag(i) for i in range(self.distinct_tags)])
        k = self.tags.shape[1]
        bounds = np.linspace(0, self.rows, commits + 1).astype(np.int64)
        out = []
        for lo, hi in zip(bounds[:-1], bounds[1:], strict=True):
            flat = words.take(pa.array(self.tags[lo:hi].ravel()))
            offsets = pa.array(np.arange(0, k * (hi - lo) + 1, k, dtype=np.int32))
            out.append(pa.table({"id": pa.array(np.arange(lo, hi, dtype=np.int64)),
                                 "uid": pa.array(self.uid[lo:hi]),
                                 "tags": pa.ListArray.from_arrays(offsets, flat)}))
        return out


def write_table(warehouse: Path, source: Source, commits: int) -> Path:
    """pypaimon-rust writes default.t once, in `commits` commits; returns the table directory."""
    location = rt.create_table(warehouse, NAME, "id BIGINT, uid BIGINT, tags ARRAY<STRING>")
    for batch in source.batches(commits):
        rt.append(warehouse, NAME, batch)
    return location


def index_files(location: Path) -> dict[str, tuple[int, int]]:
    """Per family of the table's committed global indexes: (files, bytes)."""
    return {index_type: v for (_column, index_type), v in index_layout(location).items()}


# ---- builds ----------------------------------------------------------------------------------------
def rust_build(location: Path, options: str | None) -> dict[str, float]:
    """pypaimon-rust's `CALL sys.create_global_index`, btree on uid then multivalue on tags (its procedure takes
    one column per call): seconds per family."""
    warehouse = location.parent.parent
    out = {}
    for column, family in zip(COLUMNS.split(","), FAMILIES.split(","), strict=True):
        t0 = time.perf_counter()
        rt.create_index(warehouse, NAME, column, family, options)
        out[family] = time.perf_counter() - t0
    return out


def api_build(client: httpx.Client, table: str) -> dict[str, Any]:
    """POST create_global_index for both families, poll the job until it ends (_paimon_bench.api_build)."""
    return shared_api_build(client, table, COLUMNS, FAMILIES)


def wait_served(client: httpx.Client, table: str, timeout: float = 60) -> None:
    """Until the table lists both built indexes (the watcher picks a Paimon commit up within a poll)."""
    want = set(zip(COLUMNS.split(","), FAMILIES.split(","), strict=True))
    deadline = time.monotonic() + timeout
    while True:
        got = {(i["column"], i["index_type"]) for i in client.get(f"/v1/tables/{table}/indexes").json()["indexes"]}
        if want <= got:
            return
        if time.monotonic() > deadline:
            raise SystemExit(f"{table}: indexes {sorted(want)} never showed up (listed: {sorted(got)})")
        time.sleep(0.1)


def median_job(jobs: list[dict[str, Any]]) -> dict[str, Any]:
    return sorted(jobs, key=lambda j: j["seconds"])[len(jobs) // 2]


def runs(values: list[float]) -> str:
    return " / ".join(f"{v:.1f}" for v in values)


# ---- queries ---------------------------------------------------------------------------------------
class Shape:
    """One query shape: `make(i)` gives the i-th request's (where, expected count)."""

    def __init__(self, key: str, title: str, target: str, make: Any) -> None:
        self.key, self.title, self.target, self.make = key, title, target, make


def shapes(source: Source, queries: int, seed: int = 5) -> list[Shape]:
    rng = np.random.default_rng(seed)
    n = source.rows
    points = source.uid[rng.choice(n, min(queries, n), replace=False)]
    width = max(1, n // 100)
    starts = rng.integers(0, max(1, n - width), queries + 20)
    tags = rng.choice(source.distinct_tags, min(queries, source.distinct_tags), replace=False)

    def point(i: int) -> tuple[str, int]:
        v = int(points[i % len(points)])
        return f"uid = {v}", 1

    def one_percent(i: int) -> tuple[str, int]:
        s = int(starts[i % len(starts)])
        lo = int(source.sorted_uid[s])
        hi = int(source.sorted_uid[s + width]) if s + width < n else int(source.sorted_uid[-1]) + 1
        return f"uid >= {lo} AND uid < {hi}", source.range_count(lo, hi)

    def contains(i: int) -> tuple[str, int]:
        t = int(tags[i % len(tags)])
        return f"array_contains(tags, '{source.tag(t)}')", int(source.tag_rows[t])

    return [Shape("point_p50_ms", "btree `uid = v`, a different existing key each request", "≤ 2 ms", point),
            Shape("range_p50_ms", f"btree 1% range `uid >= a AND uid < b` ({width:,} rows), count, a different "
                                  "range each request", "≤ 2 ms", one_percent),
            Shape("array_p50_ms", "multivalue `array_contains(tags, 't')`, count, a different tag each request",
                  "≤ 2 ms", contains)]


def ask(client: KeepAlive, table: str, where: str) -> dict[str, Any]:
    return client.post_json(f"/v1/tables/{table}/query", {"where": where, "result": "count"})


def check(table: str, where: str, answer: dict[str, Any], want: int, failures: list[str]) -> None:
    got = int(answer["count"])
    if got != want:
        failures.append(f"{table}: `{where}` counted {got:,}, numpy says {want:,}")
    if not answer.get("exact", True) or not answer["coverage"]["complete"]:
        failures.append(f"{table}: `{where}` not answered exactly from the index "
                        f"(exact {answer.get('exact')}, coverage {answer['coverage']})")


def warm(url: str, table: str, source: Source, failures: list[str]) -> None:
    """Touch every block of both indexes once (a service that has been up a while): one count over the whole
    uid range and one arrays_overlap over every tag, each checked."""
    with KeepAlive(url, timeout=600) as client:
        lo, hi = int(source.sorted_uid[0]), int(source.sorted_uid[-1])
        where = f"uid >= {lo} AND uid <= {hi}"
        check(table, where, ask(client, table, where), source.rows, failures)
        every = [source.tag(i) for i in range(source.distinct_tags)]
        answer = client.post_json(f"/v1/tables/{table}/query", {"predicate": {
            "op": "arrays_overlap", "column": "tags", "values": every}, "result": "count"})
        check(table, "arrays_overlap(tags, <every tag>)", answer, source.rows, failures)


def measure(url: str, pid: int, tables: list[str], shape: Shape, queries: int, rounds: int,
            failures: list[str]) -> dict[str, dict[str, float]]:
    """`queries` requests of `shape` per table, the tables taking turns in `rounds` blocks; per table p50, p99
    (ms) and the server's CPU ms per request. A few untimed requests per table first."""
    lat: dict[str, list[float]] = {t: [] for t in tables}
    cpu: dict[str, float] = dict.fromkeys(tables, 0.0)
    per_block = max(1, queries // rounds)
    with KeepAlive(url) as client:
        for t in tables:
            for i in range(20):
                where, want = shape.make(queries + i)
                check(t, where, ask(client, t, where), want, failures)
        for r in range(rounds):
            block = range(r * per_block, queries if r == rounds - 1 else (r + 1) * per_block)
            for t in tables:
                answers = []
                c0 = process_cpu_seconds(pid)
                for i in block:
                    where, want = shape.make(i)
                    t0 = time.perf_counter()
                    answer = ask(client, t, where)
                    lat[t].append((time.perf_counter() - t0) * 1000)
                    answers.append((where, answer, want))
                cpu[t] += process_cpu_seconds(pid) - c0
                for where, answer, want in answers:
                    check(t, where, answer, want, failures)
    return {t: {"p50": float(np.percentile(v, 50)), "p99": float(np.percentile(v, 99)),
                "cpu": cpu[t] / len(v) * 1000, "n": len(v)} for t, v in lat.items()}


# ---- report ----------------------------------------------------------------------------------------

def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--commits", type=int, default=5)
    ap.add_argument("--tags-per-row", type=int, default=3)
    ap.add_argument("--distinct-tags", type=int, default=10_000)
    ap.add_argument("--queries", type=int, default=1000, help="requests per shape and table")
    ap.add_argument("--rounds", type=int, default=4, help="blocks the tables take turns in, per shape")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--repeats", type=int, default=1, help="bgix API builds of each engine (median reported)")
    ap.add_argument("--cache-bytes", type=int, default=2 << 30, help="BGIX_CACHE_BYTES of the serving process")
    ap.add_argument("--no-rust-default", action="store_true",
                    help="skip pypaimon-rust's build with its own defaults (100 files per family at 10M rows)")
    ap.add_argument("--no-write", action="store_true", help="do not write bench/results/families.md")
    args = ap.parse_args()

    root = Path(tempfile.mkdtemp(prefix="bgix-bench-families-", dir="/tmp"))
    started, load0 = time.time(), os.getloadavg()
    failures: list[str] = []
    procs: list[Any] = []
    rust_layouts = [("rust", SAME_OPTIONS)] + ([] if args.no_rust_default else [("rust_default", None)])
    try:
        print(f"generating {args.rows:,} rows under {root}", flush=True)
        source = Source(args.rows, args.tags_per_row, args.distinct_tags)
        t0 = time.perf_counter()
        write_table(root / "src", source, args.commits)
        t_write = time.perf_counter() - t0
        print(f"  pypaimon-rust wrote the table in {args.commits} commits: {t_write:.1f} s", flush=True)
        spark_names = [f"bgix_spark{i}" for i in range(args.repeats)]
        local_names = [f"bgix_local{i}" for i in range(args.repeats)]
        names = ["warmup", *(n for n, _ in rust_layouts), *spark_names, *local_names]
        locations = {n: copy_table(root / "src", root, n) for n in names}

        rust_s: dict[str, dict[str, float]] = {}
        for name, options in rust_layouts:
            print(f"pypaimon-rust create_global_index uid (btree), tags (multivalue), options {options} …", flush=True)
            rust_s[name] = rust_build(locations[name], options)
            print(f"  {rust_s[name]} → {sum(rust_s[name].values()):.1f} s", flush=True)

        # PYTHONPATH: this checkout's code, in the servers and the build jobs they spawn (not the editable install's)
        base_env = {"BGIX_WAREHOUSE": str(root / "bgix-warehouse"), "BGIX_ALLOWED_ROOTS": str(root),
                    "BGIX_SPARK_MASTER": args.master,
                    "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)}
        # One worker each, served by this interpreter, so that the build jobs they spawn (their sys.executable)
        # use the JVM class archive cds_archive_ready() checks here (the `bgix` script may name another path to
        # the venv, and the archive's key includes the path of Spark's jars).
        proc_local, url_local = start_server({**base_env, "BGIX_WAREHOUSE": str(root / "bgix-warehouse-local"),
                                              "BGIX_BUILD_ENGINE": "local"}, root / "serve-local.log",
                                             this_interpreter=True)
        procs.append(proc_local)
        proc, url = start_server({**base_env, "BGIX_BUILD_ENGINE": "spark",
                                  "BGIX_CACHE_BYTES": str(args.cache_bytes)}, root / "serve.log",
                                 this_interpreter=True)
        procs.append(proc)
        had_archive = cds_archive_ready()
        with httpx.Client(base_url=url, timeout=600) as client, \
                httpx.Client(base_url=url_local, timeout=600) as local_client:
            for n in ("warmup", *spark_names, *(n for n, _ in rust_layouts)):
                register(client, n, locations[n])
            for n in local_names:
                register(local_client, n, locations[n])
            print(f"first Spark build of this run, untimed (JVM class archive present: {had_archive}) …", flush=True)
            first = api_build(client, "warmup")
            print(f"  {first['seconds']:.1f} s ({first['state']}; {first['phases']})", flush=True)
            archive = wait_for_cds_archive(_CDS_WAIT)
            sparks, locals_ = [], []
            for i in range(args.repeats):   # alternated, each on a fresh copy
                print(f"bgix API, Spark {args.master}: uid btree + tags multivalue (run {i + 1}) …", flush=True)
                sparks.append(api_build(client, spark_names[i]))
                print(f"  {sparks[-1]['seconds']:.1f} s ({sparks[-1]['state']}; {sparks[-1]['phases']})", flush=True)
                print(f"bgix API, engine local (run {i + 1}) …", flush=True)
                locals_.append(api_build(local_client, local_names[i]))
                print(f"  {locals_[-1]['seconds']:.1f} s ({locals_[-1]['state']}; {locals_[-1]['phases']})",
                      flush=True)
            for job in [first, *sparks, *locals_]:
                if job["state"] != "succeeded":
                    failures.append(f"job on {job['table']} ended {job['state']}: {job.get('error')}")
            stop_server(proc_local)
            procs.remove(proc_local)
            spark_job, local_job = median_job(sparks), median_job(locals_)
            layouts = {n: index_files(locations[n]) for n in
                       (spark_names[0], local_names[0], *(n for n, _ in rust_layouts))}

            served = [spark_names[0], *(n for n, _ in rust_layouts)]
            for t in served:
                wait_served(client, t)
        print(f"warming {served} …", flush=True)
        for t in served:
            warm(url, t, source, failures)
        results: dict[str, dict[str, dict[str, float]]] = {}
        for shape in shapes(source, args.queries):
            print(f"{shape.title}: {args.queries} per table …", flush=True)
            results[shape.key] = measure(url, proc.pid, served, shape, args.queries, args.rounds, failures)
            for t, m in results[shape.key].items():
                print(f"  {t}: p50 {m['p50']:.2f} ms, p99 {m['p99']:.2f} ms, server CPU {m['cpu']:.2f} ms", flush=True)
    finally:
        for p in procs:
            stop_server(p)
        shutil.rmtree(root, ignore_errors=True)

    load1 = os.getloadavg()
    rust_total = sum(rust_s["rust"].values())
    ratio_spark = rust_total / spark_job["seconds"]
    ratio_local = rust_total / local_job["seconds"]
    rust_default_total = sum(rust_s["rust_default"].values()) if "rust_default" in rust_s else None
    missed: list[str] = []
    if ratio_spark < TARGETS["build_ratio"]:
        missed.append(f"build, Spark: {ratio_spark:.2f}× pypaimon-rust (target ≥ {TARGETS['build_ratio']:.0f}×)")
    bgix_t = spark_names[0]
    for shape in shapes(source, 1):
        p50 = results[shape.key][bgix_t]["p50"]
        if p50 > TARGETS[shape.key]:
            missed.append(f"{shape.title} on bgix's index: p50 {p50:.2f} ms (target {shape.target})")
        for t, what in (("rust", "same options"), ("rust_default", "its defaults")):
            if t not in results[shape.key]:
                continue
            p50 = results[shape.key][t]["p50"]
            if p50 > TARGETS[shape.key]:
                missed.append(f"{shape.title} on pypaimon-rust's index ({what}): p50 {p50:.2f} ms "
                              f"(target {shape.target})")

    def layout(name: str) -> str:
        return ", ".join(f"{fam} {files} file(s) {size / 1e6:.0f} MB" for fam, (files, size) in
                         sorted(layouts[name].items()))

    def q(shape_key: str, t: str) -> str:
        m = results[shape_key][t]
        return f"{m['p50']:.2f} ({m['p99']:.2f}) ms, CPU {m['cpu']:.2f} ms"

    def phases(job: dict[str, Any]) -> str:
        tl = job.get("timeline") or {}
        spawn = f"spawn {tl['spawn']:.2f} s, " if tl else ""
        return f"{spawn}{job['phases'] or 'phases not logged'}"

    titles = {bgix_t: "bgix (Spark build)", "rust": "pypaimon-rust, same options",
              "rust_default": "pypaimon-rust, its defaults"}
    shape_list = shapes(source, 1)
    lines = [
        "# Families benchmark: btree and multivalue, bgix vs pypaimon-rust (`bench/bench_families.py`)",
        "",
        f"Command: `SPARK_LOCAL_IP=127.0.0.1 PYSPARK_PYTHON=$PWD/.venv/bin/python .venv/bin/python "
        f"bench/bench_families.py --rows {args.rows} --commits {args.commits} --tags-per-row {args.tags_per_row} "
        f"--distinct-tags {args.distinct_tags} --queries {args.queries} --rounds {args.rounds} "
        f"--master '{args.master}' --repeats {args.repeats}`  ",
        f"git {git_sha()} · {platform.platform()} · {os.cpu_count()} cores · Python {platform.python_version()}  ",
        f"Date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(started))}, {time.time() - started:.0f} s in all · "
        f"load average at start {load0[0]:.1f}/{load0[1]:.1f}/{load0[2]:.1f}, at end "
        f"{load1[0]:.1f}/{load1[1]:.1f}/{load1[2]:.1f} (other processes on the machine slow every contender)",
        "",
        f"Table: written once by pypaimon-rust ({t_write:.1f} s), row tracking + data evolution, unpartitioned, "
        f"{args.rows:,} rows in {args.commits} commits: `id` BIGINT, `uid` BIGINT all distinct (a shuffled "
        f"permutation), `tags` ARRAY<STRING> with {args.tags_per_row} elements per row from {args.distinct_tags:,} "
        "distinct tags. Each build runs on its own copy of the unindexed table directory.",
        "",
        "## Targets",
        "",
        "| target | bgix | pypaimon-rust | pypaimon-rust ÷ bgix (time, p50) | met |",
        "|---|---|---|---|---|",
        f"| build btree `uid` + multivalue `tags` ≥ 2× pypaimon-rust | API, Spark {args.master}: "
        f"{spark_job['seconds']:.1f} s (runs {runs([j['seconds'] for j in sparks])} s); API, engine local: "
        f"{local_job['seconds']:.1f} s (runs {runs([j['seconds'] for j in locals_])} s) | "
        f"`CALL sys.create_global_index` ×2, `{SAME_OPTIONS}`: {rust_total:.1f} s (btree "
        f"{rust_s['rust']['btree']:.1f} s + multivalue {rust_s['rust']['multivalue']:.1f} s) | Spark "
        f"**{ratio_spark:.2f}×**, local **{ratio_local:.2f}×** | {verdict(ratio_spark >= TARGETS['build_ratio'])} |",
    ]
    if rust_default_total is not None:
        lines.append(f"| … against pypaimon-rust with its own defaults (100,000 rows per file: more, smaller sorts) | "
                     "same builds | "
                     f"{rust_default_total:.1f} s (btree {rust_s['rust_default']['btree']:.1f} s + multivalue "
                     f"{rust_s['rust_default']['multivalue']:.1f} s) | Spark "
                     f"**{rust_default_total / spark_job['seconds']:.2f}×**, local "
                     f"**{rust_default_total / local_job['seconds']:.2f}×** | reported |")
    for shape in shape_list:
        m = results[shape.key]
        lines.append(f"| {shape.title}: p50 (p99) {shape.target} | {q(shape.key, bgix_t)} | {q(shape.key, 'rust')}"
                     f" | {m['rust']['p50'] / m[bgix_t]['p50']:.2f}× | "
                     f"bgix {verdict(m[bgix_t]['p50'] <= TARGETS[shape.key])}, on pypaimon-rust's "
                     f"{verdict(m['rust']['p50'] <= TARGETS[shape.key])} |")
    lines += [
        "",
        "Query figures are over HTTP from one client on 127.0.0.1 (Python's http.client, one keep-alive connection), "
        f"warm (every block of both indexes touched once, then 20 untimed requests per shape), {args.queries} "
        f"requests per shape and table back to back, the tables taking turns in {args.rounds} blocks; latency is "
        "the client's round trip, CPU the serving process's user+system time per request (/proc). Every query of "
        "the columns both contenders built is served by the same `bgix serve` "
        f"(`BGIX_CACHE_BYTES={args.cache_bytes}`). The 1% range asks `\"result\": \"count\"`.",
        "",
        "## Every build and every served index",
        "",
        "| contender | build | index files |",
        "|---|---|---|",
        f"| bgix API, Spark {args.master} (median run) | {spark_job['seconds']:.1f} s: {phases(spark_job)} | "
        f"{layout(bgix_t)} |",
        f"| bgix API, engine local (median run) | {local_job['seconds']:.1f} s: {phases(local_job)} | "
        f"{layout(local_names[0])} |",
        f"| bgix API, first Spark build of the run (untimed; JVM class archive present before: {had_archive}) | "
        f"{first['seconds']:.1f} s: {phases(first)} | |",
    ]
    for name, options in rust_layouts:
        lines.append(f"| pypaimon-rust, {'options ' + repr(options) if options else 'its defaults'} | "
                     f"{sum(rust_s[name].values()):.1f} s: btree {rust_s[name]['btree']:.1f} s, multivalue "
                     f"{rust_s[name]['multivalue']:.1f} s | {layout(name)} |")
    lines += ["", f"The timed Spark builds ran with the build jobs' JVM class archive "
                  f"{'in place' if archive else 'NOT yet in place'}.", "",
              "| query, p50 (p99), server CPU per request | " + " | ".join(titles[t] for t in served) + " |",
              "|---|" + "---|" * len(served)]
    for shape in shape_list:
        lines.append(f"| {shape.title} | " + " | ".join(q(shape.key, t) for t in served) + " |")
    n_checked = sum(int(m["n"]) + 20 for r in results.values() for m in r.values()) + 2 * len(served)
    lines += ["", f"Correctness: {n_checked:,} counts compared with numpy on the source columns, each answered "
                  f"exactly with complete coverage ({'all equal' if not failures else '; '.join(failures[:5])}).",
              "", "Targets missed: " + ("; ".join(missed) if missed else "none") + "."]
    return publish("\n".join(lines) + "\n", RESULTS, not args.no_write, [f"MISSED: {m}" for m in missed], failures)


if __name__ == "__main__":
    raise SystemExit(main())
