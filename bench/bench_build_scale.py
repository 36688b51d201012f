"""Build scale benchmark (issue 22): bitmap builds from 1M to 100M rows, bgix's warm `bgix serve` (Spark) against
pypaimon-rust's `CALL sys.create_global_index`: wall time, rows/s, peak memory and the index files of each.

Per size in --sizes, a Paimon table written by pypaimon-rust (or pypaimon with --writer pypaimon), row tracking and
data evolution, in --commits commits, streamed in batches of 2^20 rows (bounded memory; the write's time and this
process's peak RSS are reported): `id` BIGINT, `c10k` STRING with --distinct values (uniform, seeded, numpy indices
into a dictionary of values) and a STRING partition column `part` with --partitions values (PARTITIONED BY).
  - bgix: ONE `bgix serve` for every size (BGIX_BUILD_ENGINE=spark, BGIX_SPARK_MASTER=--master), warmed up by a
    build on a tiny table first; per size one POST /v1/create_global_index (`c10k`, bitmap) on a copy of the table,
    polled until it ends. Peak RSS: the serve process tree (service, build processes, JVMs, Python workers),
    sampled from /proc every 0.25 s during the build; its idle RSS just before is reported too.
  - pypaimon-rust: `CALL sys.create_global_index(… index_type => 'bitmap')` on the table as written, in a child
    process of its own (peak RSS: the kernel's high-water mark for it), at most --rust-timeout seconds; a timeout or
    a kill (the OOM killer) is recorded, not fatal.
Partitioned tables: the tiny warm-up table is partitioned; a contender that refuses or fails on it gets unpartitioned
tables at every size (the same rows without `part`), and the output says so.
Correctness, per size and contender: for a few values (most and least frequent, a middle one, an absent one),
bgix's count on its table and pypaimon-rust's SQL `count(*)` over each indexed table (its scans use the global
indexes) must equal pyarrow's count over the rows written. Prints whether bgix's rows/s holds as rows grow (each
size at least 0.9× the smaller one's) and whether its peak RSS stays bounded (at most 2× per step in --sizes).
Exits 1 only when something is wrong (a wrong count, a failed bgix build). Writes bench/results/build_scale.md.
Tables live under /work/bench-tmp ($BGIX_BENCH_TMP): each copy is deleted as soon as its build is checked.

    SPARK_LOCAL_IP=127.0.0.1 PYSPARK_PYTHON=$PWD/.venv/bin/python .venv/bin/python bench/bench_build_scale.py \\
        [--sizes 1000000,10000000,100000000] [--writer rust|pypaimon] [--rust-timeout 1800]
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
    NAME, Generated, api_build, check_counts, copy_table, index_layout, layout_text, log_tail, mb, publish, register,
    rust_build, scratch_dir, serve_env, unregister, wait_served, write_table)
from _server import start_server, stop_server  # noqa: E402  (bench/_server.py)
from _tree_rss import TreeRss, tree_rss  # noqa: E402
from bench_paimon import _CDS_WAIT, git_sha, wait_for_cds_archive  # noqa: E402

RESULTS = REPO / "bench" / "results" / "build_scale.md"
COLUMN = "c10k"
WARMUP_ROWS = 50_000
RPS_HOLD = 0.9      # a larger size's rows/s must be at least this share of the next smaller size's
RSS_STEP = 2.0      # a larger size's peak RSS must be at most this multiple of the next smaller size's
WRITERS = {"rust": "pypaimon-rust", "pypaimon": "pypaimon"}


def write_pypaimon(warehouse: Path, gen: Generated, commits: int) -> Path:
    """pypaimon (Python) creates default.t like write_table does and writes `gen` in `commits` commits."""
    from pypaimon import CatalogFactory, Schema

    fields = [("id", pa.int64()), *((c, pa.string()) for c in gen.distinct)]
    schema = pa.schema(fields + ([("part", pa.string())] if gen.partitions else []))
    cat = CatalogFactory.create({"warehouse": str(warehouse)})
    cat.create_database("default", True)
    cat.create_table(f"default.{NAME}", Schema.from_pyarrow_schema(
        schema, partition_keys=gen.partition_keys or None,
        options={"row-tracking.enabled": "true", "data-evolution.enabled": "true", "bucket": "-1"}), False)
    for batches in gen.commits(commits):
        builder = cat.get_table(f"default.{NAME}").new_batch_write_builder()
        write, commit = builder.new_write(), builder.new_commit()
        try:
            for batch in batches:
                write.write_arrow_batch(batch)
            commit.commit(write.prepare_commit())
        finally:
            write.close()
            commit.close()
    return warehouse / "default.db" / NAME


class Scale:
    """One run: the serve, the scratch directory, what each contender accepts, and the figures per size."""

    def __init__(self, args: argparse.Namespace, root: Path) -> None:
        self.args, self.root = args, root
        self.failures: list[str] = []
        self.notes: list[str] = []
        self.partitioned = {"bgix": args.partitions > 0, "rust": args.partitions > 0}
        self.checked = 0
        self.rows: list[dict[str, Any]] = []

    def generated(self, rows: int, partitioned: bool) -> Generated:
        return Generated(rows, {COLUMN: self.args.distinct}, self.args.partitions if partitioned else 0,
                         seed=self.args.seed)

    def write(self, gen: Generated, name: str, commits: int) -> tuple[Path, float, int]:
        """The table `name` (its own warehouse under root), written by --writer; (warehouse, seconds, peak RSS of
        this process while writing)."""
        warehouse = self.root / name / "warehouse"
        writer = write_pypaimon if self.args.writer == "pypaimon" else write_table
        with TreeRss(descendants=False) as mem:   # not the serve process, a child of this one
            t0 = time.perf_counter()
            writer(warehouse, gen, commits)
            seconds = time.perf_counter() - t0
        return warehouse, seconds, mem.peak

    # ---- the warm-up: a tiny partitioned table tells what each contender accepts ----------------------
    def warm_up(self, client: httpx.Client, serve_pid: int) -> dict[str, Any]:
        gen = self.generated(WARMUP_ROWS, self.partitioned["bgix"])
        warehouse, _, _ = self.write(gen, "warmup", 2)
        probe_copy = copy_table(warehouse, self.root, "warmup_rust")
        location = warehouse / "default.db" / NAME
        register(client, "warmup", location)
        try:
            job = api_build(client, "warmup", COLUMN, rss_root=serve_pid, timeout=self.args.build_timeout)
            refused = "" if job["state"] == "succeeded" else f"job {job['state']}: {job.get('error')}"
        except httpx.HTTPStatusError as exc:
            job, refused = {}, f"HTTP {exc.response.status_code}: {exc.response.text[:300]}"
        if refused and self.partitioned["bgix"]:
            self.partitioned["bgix"] = False
            self.notes.append(f"bgix refused the partitioned warm-up table ({refused}): bgix builds on unpartitioned "
                              "tables at every size")
            unregister(client, "warmup")
            shutil.rmtree(self.root / "warmup")
            shutil.rmtree(self.root / "warmup_rust")
            return self.warm_up(client, serve_pid)
        if refused:
            raise SystemExit(f"bgix warm-up build failed: {refused}")
        wait_served(client, "warmup", {COLUMN})
        self.checked += check_counts(gen, [COLUMN], client, "warmup", warehouse, self.failures)
        if self.partitioned["rust"]:
            gen_p = gen if gen.partitions else self.generated(WARMUP_ROWS, True)
            if not gen.partitions:   # bgix fell back: write a partitioned probe for pypaimon-rust
                shutil.rmtree(self.root / "warmup_rust")
                probe_copy = self.write(gen_p, "warmup_rust", 2)[0] / "default.db" / NAME
            r = rust_build(probe_copy.parent.parent, [(COLUMN, "bitmap")], self.root / "warmup_rust.log",
                           timeout=min(self.args.rust_timeout, 600))
            if r["status"] != "ok":
                self.partitioned["rust"] = False
                self.notes.append(f"pypaimon-rust failed on the partitioned warm-up table ({r['status']}: "
                                  f"{r['error'][-300:]}): it builds on unpartitioned tables at every size")
            else:
                self.checked += check_counts(gen_p, [COLUMN], None, "warmup_rust", probe_copy.parent.parent,
                                             self.failures)
        unregister(client, "warmup")
        shutil.rmtree(self.root / "warmup", ignore_errors=True)
        shutil.rmtree(self.root / "warmup_rust", ignore_errors=True)
        return job

    # ---- one size ------------------------------------------------------------------------------------
    def size(self, client: httpx.Client, serve_pid: int, rows: int) -> dict[str, Any]:
        args = self.args
        out: dict[str, Any] = {"rows": rows, "writes": {}}
        sources: dict[bool, tuple[Generated, Path]] = {}
        for partitioned in sorted(set(self.partitioned.values()), reverse=True):
            gen = self.generated(rows, partitioned)
            name = f"src{rows}{'p' if partitioned else ''}"
            print(f"{rows:,} rows: {WRITERS[args.writer]} writes {'partitioned' if partitioned else 'unpartitioned'} "
                  f"default.{NAME} in {args.commits} commits …", flush=True)
            warehouse, seconds, peak = self.write(gen, name, args.commits)
            out["writes"][partitioned] = {"seconds": seconds, "peak_rss": peak, "bytes": dir_bytes(warehouse)}
            print(f"  {seconds:.1f} s ({rows / seconds:,.0f} rows/s), {dir_bytes(warehouse) / 1e6:,.0f} MB, this "
                  f"process's peak RSS {mb(peak)}", flush=True)
            sources[partitioned] = (gen, warehouse)

        gen, src = sources[self.partitioned["bgix"]]
        name = f"bgix{rows}"
        location = copy_table(src, self.root, name)
        register(client, name, location)
        idle = tree_rss(serve_pid)
        print(f"  bgix build (serve tree idle {mb(idle)}) …", flush=True)
        job = api_build(client, name, COLUMN, rss_root=serve_pid, timeout=args.build_timeout)
        print(f"  {job['seconds']:.1f} s ({job['state']}; {rows / job['seconds']:,.0f} rows/s; {job['phases']}; "
              f"progress {json.dumps(job['progress'])}), serve tree peak {mb(job['peak_rss'])}", flush=True)
        out["bgix"] = {"job": job, "idle_rss": idle}
        if job["state"] == "succeeded":
            wait_served(client, name, {COLUMN})
            self.checked += check_counts(gen, [COLUMN], client, name, location.parent.parent, self.failures)
            out["bgix"]["layout"] = index_layout(location)
        else:
            self.failures.append(f"bgix build at {rows:,} rows ended {job['state']}: {job.get('error')}")
        unregister(client, name)
        shutil.rmtree(self.root / name)
        time.sleep(args.pause)

        gen, src = sources[self.partitioned["rust"]]
        print(f"  pypaimon-rust create_global_index (child process, at most {args.rust_timeout:.0f} s) …", flush=True)
        r = rust_build(src, [(COLUMN, "bitmap")], self.root / f"rust{rows}.log", timeout=args.rust_timeout)
        print(f"  {r['status']}: {r['total']:.1f} s, peak RSS {mb(r['peak_rss'])}", flush=True)
        out["rust"] = r
        if r["status"] == "ok":
            self.checked += check_counts(gen, [COLUMN], None, f"rust{rows}", src, self.failures)
            out["rust"]["layout"] = index_layout(src / "default.db" / NAME)
        for _, warehouse in sources.values():
            shutil.rmtree(warehouse.parent)
        return out


def dir_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="1000000,10000000,100000000", help="rows per table, comma separated")
    ap.add_argument("--writer", choices=("rust", "pypaimon"), default="rust")
    ap.add_argument("--commits", type=int, default=4)
    ap.add_argument("--partitions", type=int, default=4, help="values of the partition column (0: unpartitioned)")
    ap.add_argument("--distinct", type=int, default=10_000)
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--rust-timeout", type=float, default=1800, help="seconds per pypaimon-rust build")
    ap.add_argument("--build-timeout", type=float, default=7200, help="seconds per bgix build")
    ap.add_argument("--pause", type=float, default=3.0, help="seconds after each bgix build")
    ap.add_argument("--no-write", action="store_true", help="do not write bench/results/build_scale.md")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]

    root = scratch_dir("bgix-bench-scale-")
    started, load0 = time.time(), os.getloadavg()
    run = Scale(args, root)
    proc = None
    try:
        print(f"scratch {root}; starting bgix serve (Spark {args.master}) …", flush=True)
        proc, url = start_server(serve_env(root, root / "bgix-warehouse", args.master), root / "serve.log",
                                 this_interpreter=True)
        with httpx.Client(base_url=url, timeout=600) as client:
            print(f"warm-up build on a {WARMUP_ROWS:,}-row table …", flush=True)
            warm = run.warm_up(client, proc.pid)
            print(f"  {warm.get('seconds', 0):.1f} s; partitioned tables: {run.partitioned}", flush=True)
            for note in run.notes:
                print(f"  NOTE: {note}", flush=True)
            archive = wait_for_cds_archive(_CDS_WAIT)
            time.sleep(args.pause)
            for rows in sizes:
                run.rows.append(run.size(client, proc.pid, rows))
    except BaseException:
        print(f"serve log tail:\n{log_tail(root / 'serve.log')}", file=sys.stderr)
        raise
    finally:
        if proc is not None:
            stop_server(proc)
        shutil.rmtree(root, ignore_errors=True)

    report, verdicts = render(args, run, warm, archive, started, load0)
    return publish(report, RESULTS, not args.no_write, verdicts, run.failures)


def render(args: argparse.Namespace, run: Scale, warm: dict[str, Any], archive: bool, started: float,
           load0: tuple[float, float, float]) -> tuple[str, list[str]]:
    """The markdown report and the verdict lines (rows/s holds, memory bounded)."""
    load1 = os.getloadavg()
    ok = [r for r in run.rows if r["bgix"]["job"]["state"] == "succeeded"]
    verdicts = []
    for small, big in zip(ok, ok[1:]):
        rps_s = small["rows"] / small["bgix"]["job"]["seconds"]
        rps_b = big["rows"] / big["bgix"]["job"]["seconds"]
        rss_s, rss_b = small["bgix"]["job"]["peak_rss"], big["bgix"]["job"]["peak_rss"]
        step = f"{small['rows']:,} → {big['rows']:,} rows"
        verdicts.append(f"{'holds' if rps_b >= RPS_HOLD * rps_s else 'FALLS'}: bgix rows/s {step}: "
                        f"{rps_s:,.0f} → {rps_b:,.0f} ({rps_b / rps_s:.2f}×, must be ≥ {RPS_HOLD}×)")
        verdicts.append(f"{'bounded' if rss_b <= RSS_STEP * rss_s else 'GROWS'}: bgix peak RSS {step}: "
                        f"{mb(rss_s)} → {mb(rss_b)} ({rss_b / rss_s:.2f}×, must be ≤ {RSS_STEP}×)")

    def part(who: str) -> str:
        return "partitioned" if run.partitioned[who] else "unpartitioned"

    lines = [
        "# Build scale benchmark: bitmap builds from 1M rows up, bgix's warm service vs pypaimon-rust "
        "(`bench/bench_build_scale.py`)",
        "",
        f"Command: `SPARK_LOCAL_IP=127.0.0.1 PYSPARK_PYTHON=$PWD/.venv/bin/python .venv/bin/python "
        f"bench/bench_build_scale.py --sizes {args.sizes} --writer {args.writer} --commits {args.commits} "
        f"--partitions {args.partitions} --distinct {args.distinct} --master '{args.master}' --seed {args.seed} "
        f"--rust-timeout {args.rust_timeout:g} --pause {args.pause:g}`  ",
        f"git {git_sha()} · {platform.platform()} · {os.cpu_count()} cores · "
        f"{os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30:.0f} GiB RAM · Python "
        f"{platform.python_version()}  ",
        f"Date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(started))}, {time.time() - started:.0f} s in all · "
        f"load average at start {load0[0]:.1f}/{load0[1]:.1f}/{load0[2]:.1f}, at end "
        f"{load1[0]:.1f}/{load1[1]:.1f}/{load1[2]:.1f}",
        "",
        f"Tables: written by {WRITERS[args.writer]} in {args.commits} commits (batches of 2^20 rows; the write column: "
        "its time, the table's size, this process's peak RSS), row tracking + data evolution: `id` BIGINT, "
        f"`{COLUMN}` STRING with {args.distinct:,} distinct values (uniform, seeded)"
        + (f", `part` STRING with {args.partitions} values, PARTITIONED BY (part)" if args.partitions else "")
        + f". bgix built on {part('bgix')} tables, pypaimon-rust on {part('rust')} ones.",
        *(f"NOTE: {n}" for n in run.notes),
        "",
        f"bgix: one `bgix serve`, Spark {args.master}, warmed up by a {WARMUP_ROWS:,}-row build "
        f"({warm.get('seconds', 0):.1f} s); JVM class archive {'in place' if archive else 'NOT in place'} for the "
        "timed builds. Time: POST /v1/create_global_index → the poll (every 50 ms) that sees the job end. Peak RSS: "
        "the serve process tree, sampled every 0.25 s during the build (idle: just before it). pypaimon-rust: the "
        "CALL alone, timed inside its child process; peak RSS is that child's high-water mark.",
        "",
        "| rows | write | bgix: time, rows/s | bgix peak RSS (idle) | bgix index | pypaimon-rust: time, rows/s "
        "| pypaimon-rust peak RSS | pypaimon-rust index |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in run.rows:
        writes = "; ".join(f"{'part.' if p else 'unpart.'} {w['seconds']:.1f} s, {w['bytes'] / 1e6:,.0f} MB, "
                           f"peak RSS {mb(w['peak_rss'])}" for p, w in r["writes"].items())
        job, rust = r["bgix"]["job"], r["rust"]
        bgix_time = (f"{job['seconds']:.1f} s, {r['rows'] / job['seconds']:,.0f}/s" if job["state"] == "succeeded"
                     else f"{job['state']} after {job['seconds']:.0f} s")
        rust_time = (f"{rust['total']:.1f} s, {r['rows'] / rust['total']:,.0f}/s" if rust["status"] == "ok"
                     else f"{rust['status']} after {rust['wall']:.0f} s")
        lines.append(f"| {r['rows']:,} | {writes} | {bgix_time} | {mb(job['peak_rss'])} "
                     f"({mb(r['bgix']['idle_rss'])}) | {layout_text(r['bgix'].get('layout', {}))} | {rust_time} | "
                     f"{mb(rust['peak_rss'])} | {layout_text(rust.get('layout', {}))} |")
    lines += ["", "bgix jobs (the job log's phases; the job record's progress):", ""]
    for r in run.rows:
        job = r["bgix"]["job"]
        tl = job.get("timeline") or {}
        spawn = f"spawn {tl['spawn']:.2f} s, run {tl['run']:.2f} s; " if tl else ""
        lines.append(f"- {r['rows']:,} rows: {spawn}{job['phases'] or 'no phase line'}; progress "
                     f"{json.dumps(job['progress'])}")
    wrong = "; ".join(run.failures[:5]) if run.failures else "all equal"
    lines += ["", "Verdicts: " + ("; ".join(verdicts) if verdicts else "one size only: none") + ".", "",
              f"Correctness: {run.checked} counts (bgix's query, pypaimon-rust's SQL over each indexed table) compared "
              f"with pyarrow's over the rows written: {wrong}."]
    return "\n".join(lines) + "\n", verdicts


if __name__ == "__main__":
    raise SystemExit(main())
