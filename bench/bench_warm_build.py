"""Warm build benchmark (issue 22): bgix's bitmap builds through one `bgix serve` (Spark) against pypaimon-rust's
`CALL sys.create_global_index`, one column and three, and bgix's first build right after the service starts.

One run, one table: pypaimon-rust writes default.t (row tracking, data evolution, unpartitioned; --rows rows in
--commits commits, seeded): `id` BIGINT and three STRING columns drawn uniformly from 10,000 (`c10k`), 200 (`c200`)
and 50,000 (`c50k`) distinct values. Every build runs on its own copy of that unindexed table directory:
  - pypaimon-rust, bitmap on `c10k` (one call), and on its own copy the three calls `c10k`, `c200`, `c50k` (its
    procedure takes one column per call); each copy's calls run in a child process of their own, so that its peak
    RSS (the kernel's high-water mark) is pypaimon-rust's; the time is the calls' own, timed in the child;
  - bgix: ONE `bgix serve` (BGIX_BUILD_ENGINE=spark, BGIX_SPARK_MASTER=--master). Its clock starts when the
    process is spawned; once GET /readyz answers 200 the FIRST build (`c10k`) is posted at once: its wall time
    (POST → the poll that sees `succeeded`) and spawn → succeeded. Then --repeats warm builds of one column (`c10k`)
    and of three (one request, "index_column": "c10k,c200,c50k"), alternated, each on a fresh copy registered under
    a new table name; medians. The serve process tree's RSS (the service, its build processes, their JVMs and
    Python workers) is sampled during every build.
Targets: warm one column ≥ 2× faster than pypaimon-rust's one call; warm three columns ≥ 4× faster than its three
calls; the first build ≤ 1.5× the warm one-column median. Correctness: for a few values per column (the most and
least frequent, a middle one, an absent one) bgix's count (POST /v1/tables/{t}/query) on every table it built and
pypaimon-rust's SQL `count(*)` over every indexed copy (its scans use the global indexes: bgix's on bgix's copies)
must equal pyarrow's count over the rows written. Prints MISSED per missed target; exits 1 only when something is
wrong (a wrong count, a failed build). Writes bench/results/warm_build.md. Temp data lives under /work/bench-tmp
($BGIX_BENCH_TMP) and is deleted at the end.

    SPARK_LOCAL_IP=127.0.0.1 PYSPARK_PYTHON=$PWD/.venv/bin/python .venv/bin/python bench/bench_warm_build.py \\
        [--rows 6000000] [--commits 3] [--repeats 3] [--master 'local[2]']
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pyarrow as pa

from _bench_env import REPO  # noqa: E402  (bench/_bench_env.py: sys.path and Spark's env, before the rest)

from _paimon_bench import (  # noqa: E402  (bench/_paimon_bench.py)
    Generated, api_build, check_counts, copy_table, index_layout, layout_text, log_tail, mb, median, publish, register,
    rust_build, scratch_dir, serve_env, wait_served, write_table)
from _server import start_server, stop_server  # noqa: E402  (bench/_server.py)
from _tree_rss import tree_rss  # noqa: E402
from bench_paimon import _CDS_WAIT, cds_archive_ready, git_sha, wait_for_cds_archive  # noqa: E402

RESULTS = REPO / "bench" / "results" / "warm_build.md"
DISTINCT = {"c10k": 10_000, "c200": 200, "c50k": 50_000}
ONE, THREE = "c10k", ",".join(DISTINCT)
TARGETS = {"one": 2.0, "three": 4.0, "first": 1.5}


def verdict(ok: bool) -> str:
    return "met" if ok else "MISSED"


def job_line(job: dict[str, Any]) -> str:
    """A build's figures for the report: wall time, timeline, the job log's phases, progress, peak RSS."""
    tl = job.get("timeline") or {}
    spawn = f"spawn {tl['spawn']:.2f} s, run {tl['run']:.2f} s, seen {tl['seen']:.2f} s; " if tl else ""
    phases = job["phases"] or "no phase line"
    return (f"{job['seconds']:.1f} s ({job['state']}; {spawn}{phases}; progress {json.dumps(job.get('progress'))}; "
            f"serve tree peak {mb(job.get('peak_rss', 0))})")


def library_writer(location: Path, column: str) -> dict[str, float]:
    """bgix's writer alone, in this process: the column read from the table's Parquet data files (as dictionaries,
    like a build task) and written as one index with `write_index_files`; (wall, CPU) seconds."""
    import numpy as np
    import pyarrow.parquet as pq

    from index_format.global_index.writer import write_index_files
    from index_format.options import IndexOptions
    from index_format.storage import Storage
    from index_format.types import parse_type

    out = location.parent.parent / "library-writer"
    out.mkdir()
    storage, opts, n = Storage(str(out), [str(out)]), IndexOptions(), iter(range(1 << 30))
    w0, c0 = time.perf_counter(), time.process_time()
    keys = pa.chunked_array([pq.ParquetFile(f, read_dictionary=[column]).read(columns=[column]).column(0)
                             .combine_chunks() for f in sorted(location.glob("**/*.parquet"))])
    write_index_files(keys, np.arange(len(keys), dtype=np.int64), parse_type("STRING"), opts,
                      records_per_file=opts.records_per_file, new_path=lambda: str(out / f"f{next(n)}"),
                      storage=storage)
    return {"wall": time.perf_counter() - w0, "cpu": time.process_time() - c0}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=6_000_000)
    ap.add_argument("--commits", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=3, help="warm builds of each kind (median reported)")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--pause", type=float, default=3.0,
                    help="seconds between bgix builds: the last build's processes exit before the next starts")
    ap.add_argument("--rust-timeout", type=float, default=1800, help="seconds per pypaimon-rust child")
    ap.add_argument("--build-timeout", type=float, default=1800, help="seconds per bgix build")
    ap.add_argument("--no-write", action="store_true", help="do not write bench/results/warm_build.md")
    args = ap.parse_args()

    root = scratch_dir("bgix-bench-warm-")
    started, load0 = time.time(), os.getloadavg()
    failures: list[str] = []
    proc = None
    checked = 0
    try:
        print(f"generating {args.rows:,} rows under {root}", flush=True)
        gen = Generated(args.rows, DISTINCT, seed=args.seed)
        t0 = time.perf_counter()
        write_table(root / "src", gen, args.commits)
        t_write = time.perf_counter() - t0
        print(f"  pypaimon-rust wrote the table in {args.commits} commits: {t_write:.1f} s", flush=True)
        w1_names = [f"warm1_{i}" for i in range(args.repeats)]
        w3_names = [f"warm3_{i}" for i in range(args.repeats)]
        names = ["rust1", "rust3", "first", *w1_names, *w3_names]
        locations = {n: copy_table(root / "src", root, n) for n in names}
        warehouses = {n: loc.parent.parent for n, loc in locations.items()}

        rust: dict[str, dict[str, Any]] = {}
        for name, columns in (("rust1", [ONE]), ("rust3", list(DISTINCT))):
            print(f"pypaimon-rust create_global_index bitmap, {', '.join(columns)} (child process) …", flush=True)
            rust[name] = rust_build(warehouses[name], [(c, "bitmap") for c in columns], root / f"{name}.log",
                                    timeout=args.rust_timeout)
            r = rust[name]
            print(f"  {r['status']}: {r['total']:.1f} s ({', '.join(f'{c} {s:.1f} s' for c, s in r['seconds'].items())}"
                  f"), peak RSS {mb(r['peak_rss'])}", flush=True)
            if r["status"] != "ok":
                failures.append(f"pypaimon-rust build on {name}: {r['status']}: {r['error']}")
            else:
                checked += check_counts(gen, columns, None, name, warehouses[name], failures)

        writer = library_writer(locations["first"], ONE)
        print(f"library writer in this process ({ONE}: pyarrow read + write_index_files): {writer['wall']:.2f} s, "
              f"{writer['cpu']:.2f} CPU s", flush=True)

        had_archive = cds_archive_ready()
        print(f"starting bgix serve (Spark {args.master}; JVM class archive present: {had_archive}) …", flush=True)
        t_spawn = time.perf_counter()
        proc, url = start_server(serve_env(root, root / "bgix-warehouse", args.master), root / "serve.log",
                                 this_interpreter=True)
        t_ready = time.perf_counter()
        idle_rss = tree_rss(proc.pid)
        with httpx.Client(base_url=url, timeout=600) as client:
            register(client, "first", locations["first"])
            first = api_build(client, "first", ONE, rss_root=proc.pid, timeout=args.build_timeout)
            spawn_to_done = first["ended"] - t_spawn
            print(f"  ready {t_ready - t_spawn:.2f} s after spawn; first build {job_line(first)}; spawn → "
                  f"{first['state']} {spawn_to_done:.1f} s", flush=True)
            for n in (*w1_names, *w3_names):
                register(client, n, locations[n])
            archive = wait_for_cds_archive(_CDS_WAIT)
            time.sleep(args.pause)
            warm_idle_rss = tree_rss(proc.pid)
            w1: list[dict[str, Any]] = []
            w3: list[dict[str, Any]] = []
            for i in range(args.repeats):   # alternated, each on a fresh copy
                print(f"warm build, one column (run {i + 1}) …", flush=True)
                w1.append(api_build(client, w1_names[i], ONE, rss_root=proc.pid, timeout=args.build_timeout))
                print(f"  {job_line(w1[-1])}", flush=True)
                time.sleep(args.pause)
                print(f"warm build, three columns in one request (run {i + 1}) …", flush=True)
                w3.append(api_build(client, w3_names[i], THREE, rss_root=proc.pid, timeout=args.build_timeout))
                print(f"  {job_line(w3[-1])}", flush=True)
                time.sleep(args.pause)
            for job in (first, *w1, *w3):
                if job["state"] != "succeeded":
                    failures.append(f"bgix job on {job['table']} ended {job['state']}: {job.get('error')}")
            print("checking counts …", flush=True)
            for name, job, columns in [("first", first, [ONE]), *((n, j, [ONE]) for n, j in zip(w1_names, w1)),
                                       *((n, j, list(DISTINCT)) for n, j in zip(w3_names, w3))]:
                if job["state"] != "succeeded":
                    continue
                wait_served(client, name, set(columns))
                checked += check_counts(gen, columns, client, name, warehouses[name], failures)
            layouts = {n: index_layout(locations[n]) for n in ("rust1", "rust3", "first", w1_names[0], w3_names[0])}
    except BaseException:
        print(f"serve log tail:\n{log_tail(root / 'serve.log')}", file=sys.stderr)
        raise
    finally:
        if proc is not None:
            stop_server(proc)
        shutil.rmtree(root, ignore_errors=True)

    load1 = os.getloadavg()
    slots = args.master.removeprefix("local[").removesuffix("]")
    cores = int(slots) if slots.isdigit() else os.cpu_count() or 1
    w1_med, w3_med = median([j["seconds"] for j in w1]), median([j["seconds"] for j in w3])
    rust1, rust3 = rust["rust1"]["total"], rust["rust3"]["total"]
    ratio1, ratio3, first_ratio = rust1 / w1_med, rust3 / w3_med, first["seconds"] / w1_med
    met = {"one": ratio1 >= TARGETS["one"], "three": ratio3 >= TARGETS["three"],
           "first": first_ratio <= TARGETS["first"]}
    missed = [k for k, ok in met.items() if not ok]

    def runs(jobs: list[dict[str, Any]]) -> str:
        return " / ".join(f"{j['seconds']:.1f}" for j in jobs)

    def rust_line(name: str) -> str:
        r = rust[name]
        calls = ", ".join(f"{c} {s:.1f} s" for c, s in r["seconds"].items())
        return (f"{r['status']}: {r['total']:.1f} s ({calls}; child process {r['wall']:.1f} s), "
                f"peak RSS {mb(r['peak_rss'])}")

    lines = [
        "# Warm build benchmark: bitmap builds, bgix's warm service vs pypaimon-rust (`bench/bench_warm_build.py`)",
        "",
        f"Command: `SPARK_LOCAL_IP=127.0.0.1 PYSPARK_PYTHON=$PWD/.venv/bin/python .venv/bin/python "
        f"bench/bench_warm_build.py --rows {args.rows} --commits {args.commits} --repeats {args.repeats} "
        f"--master '{args.master}' --seed {args.seed} --pause {args.pause:g}`  ",
        f"git {git_sha()} · {platform.platform()} · {os.cpu_count()} cores · "
        f"{os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30:.0f} GiB RAM · Python "
        f"{platform.python_version()}  ",
        f"Date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(started))}, {time.time() - started:.0f} s in all · "
        f"load average at start {load0[0]:.1f}/{load0[1]:.1f}/{load0[2]:.1f}, at end "
        f"{load1[0]:.1f}/{load1[1]:.1f}/{load1[2]:.1f}",
        "",
        f"Table: written by pypaimon-rust ({t_write:.1f} s), row tracking + data evolution, unpartitioned, "
        f"{args.rows:,} rows in {args.commits} commits: `id` BIGINT, `c10k`, `c200`, `c50k` STRING with 10,000, 200 "
        "and 50,000 distinct values (uniform, seeded). Every build runs on its own copy of the unindexed table.",
        "",
        "## Targets",
        "",
        "| target | bgix | pypaimon-rust | ratio | met |",
        "|---|---|---|---|---|",
        f"| warm one column (`c10k`) ≥ 2× faster | median {w1_med:.1f} s (runs {runs(w1)} s) | one call "
        f"{rust1:.1f} s | **{ratio1:.2f}×** | {verdict(met['one'])} |",
        f"| warm three columns ≥ 4× faster | one request: median {w3_med:.1f} s (runs {runs(w3)} s) | three calls "
        f"{rust3:.1f} s | **{ratio3:.2f}×** | {verdict(met['three'])} |",
        f"| first build after start ≤ 1.5× warm one column | {first['seconds']:.1f} s (POST → succeeded); spawn → "
        f"succeeded {spawn_to_done:.1f} s (ready after {t_ready - t_spawn:.2f} s) | | **{first_ratio:.2f}×** the "
        f"warm median | {verdict(met['first'])} |",
        "",
        "bgix times are end to end from the client: POST /v1/create_global_index → the GET /v1/jobs/{id} poll (every "
        "50 ms) that sees `succeeded` (job start, Spark, build, Paimon commit). pypaimon-rust's are its calls alone, "
        "timed inside a child process (not its interpreter start).",
        "",
        "## Every build",
        "",
        "| build | figures |",
        "|---|---|",
        f"| bgix first build (`c10k`), JVM class archive present before: {had_archive} | {job_line(first)} |",
        *(f"| bgix warm one column, run {i + 1} | {job_line(j)} |" for i, j in enumerate(w1)),
        *(f"| bgix warm three columns, run {i + 1} | {job_line(j)} |" for i, j in enumerate(w3)),
        f"| pypaimon-rust, one call | {rust_line('rust1')} |",
        f"| pypaimon-rust, three calls | {rust_line('rust3')} |",
        "",
        f"Serve process tree RSS: {mb(idle_rss)} once ready, {mb(warm_idle_rss)} idle before the warm builds ("
        f"{args.pause:g} s after the first build ended; every build starts {args.pause:g} s after the last one ended); "
        f"peaks during builds above. The warm builds ran with the JVM class archive "
        f"{'in place' if archive else 'NOT in place'}.",
        "",
        "Index files: " + "; ".join(f"{n}: {layout_text(layout)}" for n, layout in layouts.items()) + ".",
        "",
        f"Correctness: {checked} counts (bgix's query and pypaimon-rust's SQL over each indexed copy) compared with "
        f"pyarrow's over the rows written: {'all equal' if not failures else '; '.join(failures[:5])}.",
        "",
        "Per core (the per-row path against in-process writers): bgix's warm one-column build "
        f"{args.rows / w1_med / cores / 1e6:.2f} M rows/s per core (rows / (wall × {cores} cores)) and "
        f"{args.rows / median([j['cpu'] for j in w1]) / 1e6:.2f} M rows per CPU second of the whole serve process "
        "tree (service, runner, JVM, Python workers; median run); "
        f"bgix's library writer in one process (pyarrow read of `{ONE}` + `write_index_files`, no Spark) "
        f"{args.rows / writer['cpu'] / 1e6:.2f} M rows per CPU second; pypaimon-rust's one call "
        f"{args.rows / rust['rust1']['cpu'] / 1e6:.2f} M rows per CPU second of its process (interpreter start "
        "included).",
        "",
        "Targets missed: " + (", ".join(missed) if missed else "none") + ".",
    ]
    return publish("\n".join(lines) + "\n", RESULTS, not args.no_write, [f"MISSED: {k}" for k in missed], failures)


if __name__ == "__main__":
    raise SystemExit(main())
