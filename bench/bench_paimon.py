"""Paimon benchmark: bgix's create_global_index on a Paimon table through the API (Spark local[2]) vs pypaimon's
create_global_index, one column vs three in one request, and count queries on the Paimon table vs the same
data as a plain Parquet table.

One run, one table: pypaimon writes a row-tracking, data-evolution table (--rows rows in --commits commits;
`status` with --distinct distinct strings, `kind` with 10, `code` an int with 1,000) into a temp warehouse;
every contender builds on its own copy of that directory, so each indexes the same unindexed data.
  - pypaimon: `create_global_index(table, 'status', index_type='bitmap')` in this process.
  - bgix (--repeats times each, alternated, fresh copies; the median counts): a real `bgix serve` (BGIX_BUILD_ENGINE=spark, BGIX_SPARK_MASTER=--master); PUT the table as
    {"format": "paimon"}, POST /v1/create_global_index, poll GET /v1/jobs/{id} until it ends; end to end
    (job process spawn, Spark session, build, Paimon commit, the client's poll).
  - breakdown: the same job spec run directly (`python -m service.build_job.main --spec`), whose log names
    the time of each phase, and once with engine "local" (the same tasks in one process, no Spark).
  - queries: --queries back-to-back count queries `status = v` on the Paimon table (bgix's index) and on the
    plain table (same rows, index written with the library writer), interleaved; counts checked.
Prints ratios and targets (MISSED when one is missed; the exit status is 1 only when something failed)
and writes bench/results/paimon.md. Temp data lives under /tmp and is deleted at the end.

    SPARK_LOCAL_IP=127.0.0.1 PYSPARK_PYTHON=$PWD/.venv/bin/python .venv/bin/python bench/bench_paimon.py [--rows 10000000] [--repeats 3]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from _bench_env import REPO  # noqa: E402  (bench/_bench_env.py: sys.path and Spark's env, before the rest)

from index_format.global_index.writer import write_index_files  # noqa: E402
from index_format.options import IndexOptions  # noqa: E402
from index_format.storage import Storage  # noqa: E402
from index_format.types import parse_type  # noqa: E402
from service.catalog import Catalog, IndexFileEntry, Snapshot, SourceFile, Table  # noqa: E402
from service.jobs.jobspec import JobSpec  # noqa: E402
from service.tables.files.data_files import DataFileMap  # noqa: E402

from _server import start_server, stop_server  # noqa: E402  (bench/_server.py)

RESULTS = REPO / "bench" / "results" / "paimon.md"
DB, NAME = "db", "events"
KINDS = 10
CODES = 1000
TARGETS = {"build_ratio": 10.0, "three_vs_one": 1.5, "p50_ms": 3.0}
_PHASES = re.compile(r"job \w+: committed \((.*)\)")  # the build job's last log line (service.build_job.main)


# ---- the table -------------------------------------------------------------------------------------
def make_table(warehouse: Path, rows: int, commits: int, distinct: int, seed: int = 1) -> dict[str, np.ndarray]:
    """Write db.events with pypaimon in `commits` commits; returns the generated columns (row id order)."""
    from pypaimon import CatalogFactory, Schema

    from service.demo.paimon_events import append_arrow

    schema = pa.schema([("status", pa.string()), ("kind", pa.string()), ("code", pa.int32())])
    cat = CatalogFactory.create({"warehouse": str(warehouse)})
    cat.create_database(DB, True)
    cat.create_table(f"{DB}.{NAME}", Schema.from_pyarrow_schema(schema, options={
        "row-tracking.enabled": "true", "data-evolution.enabled": "true", "bucket": "-1"}), False)
    rng = np.random.default_rng(seed)
    cols = {"status": rng.integers(0, distinct, rows, dtype=np.int32),
            "kind": rng.integers(0, KINDS, rows, dtype=np.int32),
            "code": rng.integers(0, CODES, rows, dtype=np.int32)}
    words = {"status": status_words(distinct), "kind": pa.array([f"kind-{i}" for i in range(KINDS)])}
    bounds = np.linspace(0, rows, commits + 1).astype(np.int64)
    for lo, hi in zip(bounds[:-1], bounds[1:], strict=True):
        data = pa.table({"status": words["status"].take(pa.array(cols["status"][lo:hi])),
                         "kind": words["kind"].take(pa.array(cols["kind"][lo:hi])),
                         "code": pa.array(cols["code"][lo:hi])}, schema=schema)
        append_arrow(cat.get_table(f"{DB}.{NAME}"), data)
    return cols


def status_words(distinct: int) -> pa.Array:
    return pa.array([f"status-{i:05d}" for i in range(distinct)])


def copy_table(src: Path, root: Path, name: str) -> Path:
    """A private copy of the source warehouse; returns the table directory in it."""
    shutil.copytree(src, root / name / "warehouse")
    return root / name / "warehouse" / f"{DB}.db" / NAME


def pypaimon_build(location: Path) -> tuple[float, int]:
    """pypaimon's own create_global_index on `status` (bitmap): (seconds, index files added)."""
    from pypaimon import CatalogFactory
    from pypaimon.globalindex.create_global_index import create_global_index

    t0 = time.perf_counter()
    table = CatalogFactory.create({"warehouse": str(location.parent.parent)}).get_table(f"{DB}.{NAME}")
    files = create_global_index(table, "status", index_type="bitmap")
    return time.perf_counter() - t0, int(files)


def plain_table(root: Path, warehouse: Path, status: np.ndarray, distinct: int) -> None:
    """The same rows as one Parquet file registered as a bgix table named `plain`, with a bitmap index on
    `status` written by the library writer and committed through the catalog (as bench_service does)."""
    data = root / "plain"
    data.mkdir(parents=True)
    keys = status_words(distinct).take(pa.array(status))
    pq.write_table(pa.table({"status": keys}), data / "part-000.parquet", row_group_size=1 << 20)
    storage = Storage(str(warehouse), [str(root)])
    catalog = Catalog(storage)
    catalog.put_table(Table(name="plain", location=str(data)))
    files = DataFileMap(catalog).live("plain")
    options = IndexOptions()
    out_dir = catalog.index_dir("plain", "status")
    counter = iter(range(1_000_000))
    written = write_index_files(keys, np.arange(len(status), dtype=np.int64), parse_type("string"), options,
                                records_per_file=options.records_per_file,
                                new_path=lambda: f"{out_dir}/bench-{next(counter):05d}.index", storage=storage)
    entries = [IndexFileEntry(path=storage.relative(w.path), range_start=0, range_end=len(status) - 1,
                              row_count=w.row_count, file_size=w.file_size, meta_hex=w.meta.hex()) for w in written]
    catalog.commit("plain", "status", None, Snapshot(
        id=0, table="plain", column="status", key_type="string", files=entries, options=options.to_dict(),
        covered_ranges=[[0, len(status) - 1]], source_files=[SourceFile.of(f) for f in files],
        row_count=len(status)))


# ---- the service -----------------------------------------------------------------------------------
def register(client: httpx.Client, name: str, location: Path) -> None:
    client.put(f"/v1/tables/{name}", json={"format": "paimon", "location": str(location)}).raise_for_status()


def api_build(client: httpx.Client, table: str, columns: str) -> dict[str, Any]:
    """POST create_global_index, poll the job until it ends; the job record plus `seconds` (client side)."""
    t0 = time.perf_counter()
    r = client.post("/v1/create_global_index", json={"table": table, "index_column": columns,
                                                     "index_type": "bitmap"})
    r.raise_for_status()
    job_id = r.json()["job_id"]
    while True:
        job = client.get(f"/v1/jobs/{job_id}").json()
        if job["state"] not in ("queued", "running"):
            job["seconds"] = time.perf_counter() - t0
            job["seen_at"] = time.time()
            job["phases"] = job_log_phases(job_id)
            return job
        time.sleep(0.05)


def job_log_phases(job_id: str) -> str:
    """The phase line of the job's own log, which the service keeps in its spec directory until the job
    process has exited (a peek at service internals, for the breakdown only; "" when already gone)."""
    for log in Path(tempfile.gettempdir()).glob(f"bgix-jobs-*/{job_id}.log"):
        try:
            found = _PHASES.search(log.read_text(errors="replace"))
        except OSError:
            continue
        if found:
            return found.group(1)
    return ""


def median_job(jobs: list[dict[str, Any]]) -> dict[str, Any]:
    return sorted(jobs, key=lambda j: j["seconds"])[len(jobs) // 2]


def runs(jobs: list[dict[str, Any]]) -> str:
    return " / ".join(f"{j['seconds']:.1f}" for j in jobs)


def job_timeline(job: dict[str, Any]) -> dict[str, float]:
    """Seconds from the request to the job process's own start record, its run, and the client seeing it."""
    ts = {k: datetime.fromisoformat(job[k]).timestamp() for k in ("created_at", "started_at", "finished_at")}
    return {"spawn": ts["started_at"] - ts["created_at"], "run": ts["finished_at"] - ts["started_at"],
            "seen": job["seen_at"] - ts["finished_at"]}


def wait_served(client: httpx.Client, table: str, columns: set[str], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while {i["column"] for i in client.get(f"/v1/tables/{table}/indexes").json()["indexes"]} < columns:
        if time.monotonic() > deadline:
            raise SystemExit(f"{table}: the built indexes {sorted(columns)} never showed up")
        time.sleep(0.1)


def count(client: httpx.Client, table: str, where: str) -> tuple[int, float]:
    t0 = time.perf_counter()
    r = client.post(f"/v1/tables/{table}/query", json={"where": where, "result": "count"})
    ms = (time.perf_counter() - t0) * 1000
    r.raise_for_status()
    return int(r.json()["count"]), ms


def query_latencies(client: httpx.Client, tables: list[str], n: int, distinct: int, truth: np.ndarray,
                    failures: list[str]) -> dict[str, np.ndarray]:
    """`n` back-to-back count queries per table on random status values, interleaved so that machine load
    hits both alike; every count is checked against numpy."""
    rng = np.random.default_rng(5)
    for t in tables:  # warm: open the readers once
        for v in rng.integers(0, distinct, 20):
            count(client, t, f"status = 'status-{int(v):05d}'")
    out: dict[str, list[float]] = {t: [] for t in tables}
    for v in rng.integers(0, distinct, n):
        for t in tables:
            got, ms = count(client, t, f"status = 'status-{int(v):05d}'")
            out[t].append(ms)
            if got != truth[v]:
                failures.append(f"{t}: count of status-{int(v):05d} is {got}, expected {truth[v]}")
    return {t: np.array(v) for t, v in out.items()}


def check_counts(client: httpx.Client, table: str, cols: dict[str, np.ndarray], failures: list[str]) -> None:
    """A few counts per column of a three-column build against numpy."""
    probes = {"status": lambda v: f"status = 'status-{v:05d}'", "kind": lambda v: f"kind = 'kind-{v}'",
              "code": lambda v: f"code = {v}"}
    for column, where in probes.items():
        truth = np.bincount(cols[column])
        for v in (0, len(truth) // 2, len(truth) - 1):
            got, _ = count(client, table, where(v))
            if got != truth[v]:
                failures.append(f"{table}: {where(v)} counted {got}, expected {truth[v]}")


# ---- the breakdown ---------------------------------------------------------------------------------
_CDS_WAIT = 90.0  # a new JVM class archive is promoted once unchanged for 60 s (service.build_job.engines)


def cds_archive_ready() -> bool:
    """Whether the build jobs' JVM class-data archive exists (checking promotes a settled one)."""
    from service.build_job.engines import light_driver_conf

    return "SharedArchiveFile" in light_driver_conf()["spark.driver.extraJavaOptions"]


def wait_for_cds_archive(timeout: float) -> bool:
    """Steady state for the timed builds: the archive the first job recorded, once it is promoted."""
    deadline = time.monotonic() + timeout
    while not cds_archive_ready():
        if time.monotonic() > deadline:
            return False
        time.sleep(2)
    return True


def direct_job(root: Path, warehouse: Path, table: str, columns: str, engine: str, master: str,
               ) -> tuple[float, str, str]:
    """Run the job spec the service would write, as the service runs it; (seconds, phases, log tail)."""
    spec = JobSpec(job_id=uuid.uuid4().hex, warehouse=str(warehouse), table=table, index_column=columns,
                   allowed_roots=[str(root)], spark_master=master, engine=engine, table_format="paimon")
    path = root / f"spec-{spec.job_id}.json"
    path.write_text(json.dumps(spec.to_dict()))
    t0 = time.time()
    proc = subprocess.run([sys.executable, "-m", "service.build_job.main", "--spec", str(path)], cwd=REPO,
                          capture_output=True, text=True, env=dict(os.environ), timeout=1800)
    log = proc.stdout + proc.stderr
    found = _PHASES.search(log)
    if proc.returncode != 0 or not found:
        raise SystemExit(f"direct {engine} job failed ({proc.returncode}): {log[-3000:]}")
    # Up to the commit's log line: a JVM recording its class archive may hold the pipes open after that.
    line = log[:found.end()].rsplit("\n", 1)[-1]
    committed = datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f").timestamp()
    return committed - t0, found.group(1), log


def phase_seconds(phases: str) -> dict[str, float]:
    out = {}
    for part in filter(None, phases.split(", ")):
        name, seconds, _ = part.rsplit(" ", 2)
        out[name] = float(seconds)
    return out


def task_count(log: str) -> str:
    found = re.search(r"(\d+) task\(s\), \d+ range\(s\), (\d+) row id", log)
    return f"{found.group(1)} task(s)" if found else "? task(s)"


# ---- report ----------------------------------------------------------------------------------------
def git_sha() -> str:
    try:
        out = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO,
                             capture_output=True, text=True, timeout=10).stdout.strip()
        sha = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True,
                             text=True, timeout=10).stdout.strip()
        return f"{sha}{' (uncommitted changes)' if out else ''}"
    except OSError:
        return "unknown"


def verdict(ok: bool) -> str:
    return "yes" if ok else "MISSED"


def breakdown_rows(api1: dict[str, Any], direct: tuple[float, str, str], local: tuple[float, str, str]
                   ) -> list[str]:
    tl = job_timeline(api1)
    d_total, d_phases, d_log = direct
    l_total, l_phases, l_log = local
    dp, lp = phase_seconds(d_phases), phase_seconds(l_phases)
    return [
        "| where the time goes | seconds |",
        "|---|---|",
        f"| API, one column (the median run): request → job process recorded itself running (spawn, Python "
        "start, imports) | "
        f"{tl['spawn']:.2f} |",
        f"| API, one column: job process running → job recorded succeeded | {tl['run']:.2f} |",
        *[f"| … {name} | {sec:.2f} |" for name, sec in phase_seconds(api1["phases"]).items()],
        f"| API, one column: succeeded → seen by the client's poll (50 ms) | {tl['seen']:.2f} |",
        f"| direct job run, Spark ({task_count(d_log)}): process start → commit logged | {d_total:.2f} |",
        *[f"| … {name} | {s:.2f} |" for name, s in dp.items()],
        f"| … process start, imports, job record (the rest) | {d_total - sum(dp.values()):.2f} |",
        f"| direct job run, engine local ({task_count(l_log)}, one process, no Spark): process start → commit "
        "logged | "
        f"{l_total:.2f} |",
        *[f"| … {name} | {s:.2f} |" for name, s in lp.items()],
        f"| … process start, imports, job record (the rest) | {l_total - sum(lp.values()):.2f} |",
    ]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--commits", type=int, default=5)
    ap.add_argument("--distinct", type=int, default=10_000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--repeats", type=int, default=3, help="bgix API builds of each kind (median reported)")
    ap.add_argument("--no-write", action="store_true", help="do not write bench/results/paimon.md")
    args = ap.parse_args()

    root = Path(tempfile.mkdtemp(prefix="bgix-bench-paimon-", dir="/tmp"))
    failures: list[str] = []
    proc = None
    load0 = os.getloadavg()
    try:
        print(f"writing {args.rows:,} rows in {args.commits} commits under {root}", flush=True)
        t0 = time.perf_counter()
        cols = make_table(root / "src", args.rows, args.commits, args.distinct)
        print(f"  {time.perf_counter() - t0:.1f} s", flush=True)
        src = root / "src"
        api_names = [f"{kind}{i}" for i in range(args.repeats) for kind in ("one", "three")]
        names = ("pypaimon", "warmup", *api_names, "direct", "local")
        locations = {n: copy_table(src, root, n) for n in names}
        truth = np.bincount(cols["status"], minlength=args.distinct)
        bgix_wh = root / "bgix-warehouse"
        for name in ("warmup", "direct", "local"):  # run as direct job processes; "one"/"three" via the API
            Catalog(Storage(str(bgix_wh), [str(root)])).put_table(
                Table(name=name, location=str(locations[name]), format="paimon"))

        had_archive = cds_archive_ready()
        print(f"first Spark build job of this run (JVM class archive present: {had_archive}) …", flush=True)
        warmup = direct_job(root, bgix_wh, "warmup", "status", "spark", args.master)
        print(f"  {warmup[0]:.1f} s ({warmup[1]})", flush=True)

        print("pypaimon create_global_index('status', 'bitmap') …", flush=True)
        py_s, py_files = pypaimon_build(locations["pypaimon"])
        print(f"  {py_s:.1f} s, {py_files} index file(s)", flush=True)
        if py_files < 1:
            failures.append("pypaimon added no index file")
        archive = wait_for_cds_archive(_CDS_WAIT)

        plain_table(root, bgix_wh, cols["status"], args.distinct)
        proc, url = start_server({"BGIX_WAREHOUSE": str(bgix_wh), "BGIX_ALLOWED_ROOTS": str(root),
                                  "BGIX_CACHE_BYTES": str(512 << 20), "BGIX_BUILD_ENGINE": "spark",
                                  "BGIX_SPARK_MASTER": args.master}, root / "serve.log")
        with httpx.Client(base_url=url, timeout=600) as client:
            for name in api_names:
                register(client, name, locations[name])
            ones, threes = [], []
            for i in range(args.repeats):  # alternated, each on a fresh copy: machine load hits both alike
                print(f"bgix API create_global_index, Spark {args.master}: 'status' (run {i + 1}) …", flush=True)
                ones.append(api_build(client, f"one{i}", "status"))
                print(f"  {ones[-1]['seconds']:.1f} s ({ones[-1]['state']}; {ones[-1]['phases']})", flush=True)
                print(f"bgix API: 'status,kind,code' in one request (run {i + 1}) …", flush=True)
                threes.append(api_build(client, f"three{i}", "status,kind,code"))
                print(f"  {threes[-1]['seconds']:.1f} s ({threes[-1]['state']}; {threes[-1]['phases']})", flush=True)
            for job in ones + threes:
                if job["state"] != "succeeded":
                    failures.append(f"job on {job['table']} ended {job['state']}: {job.get('error')}")
            one, three = median_job(ones), median_job(threes)
            print("breakdown: the same job run directly (Spark, then engine local) …", flush=True)
            direct = direct_job(root, bgix_wh, "direct", "status", "spark", args.master)
            local = direct_job(root, bgix_wh, "local", "status", "local", args.master)
            print(f"  Spark {direct[0]:.1f} s ({direct[1]}); local {local[0]:.1f} s ({local[1]})", flush=True)
            wait_served(client, "one0", {"status"})
            wait_served(client, "three0", {"status", "kind", "code"})
            check_counts(client, "three0", cols, failures)
            print(f"count queries: {args.queries} per table, interleaved …", flush=True)
            lat = query_latencies(client, ["one0", "plain"], args.queries, args.distinct, truth, failures)
    finally:
        if proc is not None:
            stop_server(proc)
        shutil.rmtree(root, ignore_errors=True)

    lat["one"] = lat.pop("one0")
    p50 = {t: float(np.percentile(v, 50)) for t, v in lat.items()}
    p99 = {t: float(np.percentile(v, 99)) for t, v in lat.items()}
    ratio = py_s / one["seconds"]
    three_one = three["seconds"] / one["seconds"]
    met = {"build": ratio >= TARGETS["build_ratio"], "three": three_one <= TARGETS["three_vs_one"],
           "p50": p50["one"] <= TARGETS["p50_ms"]}
    load1 = os.getloadavg()
    lines = [
        "# Paimon benchmark (`bench/bench_paimon.py`)",
        "",
        f"Command: `SPARK_LOCAL_IP=127.0.0.1 PYSPARK_PYTHON=$PWD/.venv/bin/python .venv/bin/python "
        f"bench/bench_paimon.py --rows {args.rows} --commits {args.commits} --distinct {args.distinct} "
        f"--queries {args.queries} --master '{args.master}'`  ",
        f"git {git_sha()} · {platform.platform()} · {os.cpu_count()} cores · Python {platform.python_version()}  ",
        f"Date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} · load average at start "
        f"{load0[0]:.1f}/{load0[1]:.1f}/{load0[2]:.1f}, at end {load1[0]:.1f}/{load1[1]:.1f}/{load1[2]:.1f} "
        f"(other processes on the machine slow every contender)",
        "",
        f"Table: pypaimon filesystem catalog, unpartitioned, `row-tracking.enabled`, `data-evolution.enabled`, "
        f"bucket -1; {args.rows:,} rows written in {args.commits} commits; `status` string with "
        f"{args.distinct:,} distinct values, `kind` string with {KINDS}, `code` int with {CODES}. Each build "
        "runs on its own copy of the table directory (the same unindexed data). bgix: `bgix serve` with "
        f"`BGIX_BUILD_ENGINE=spark`, `BGIX_SPARK_MASTER={args.master}`; each request spawns a build-job process "
        "with a fresh Spark session; times are end to end (POST → the client's poll sees `succeeded`).",
        "",
        "| measurement | bgix | baseline | ratio | target | met |",
        "|---|---|---|---|---|---|",
        f"| create_global_index `status` (bitmap), {args.rows:,} rows | {one['seconds']:.1f} s (API, Spark "
        f"{args.master}; median of {runs(ones)} s) | pypaimon `create_global_index`: {py_s:.1f} s "
        f"({py_files} file(s)) | {ratio:.1f}× faster | ≥ 10× | {verdict(met['build'])} |",
        f"| `status,kind,code` in one request | {three['seconds']:.1f} s (median of {runs(threes)} s) | one "
        f"column (above): {one['seconds']:.1f} s | {three_one:.2f}× | ≤ 1.5× | {verdict(met['three'])} |",
        f"| count `status = v`, {args.queries} back-to-back requests: p50 (p99) | Paimon table: {p50['one']:.2f} "
        f"({p99['one']:.2f}) ms | plain Parquet table: {p50['plain']:.2f} ({p99['plain']:.2f}) ms | "
        f"{p50['one'] / p50['plain']:.2f}× | p50 ≤ 3 ms, as the plain table | {verdict(met['p50'])} |",
        "",
        f"The timed bgix builds ran with the build jobs' JVM class-data archive "
        f"{'in place' if archive else 'NOT yet in place'} (service.build_job.engines.class_data_sharing_options: "
        "the first Spark job on a machine records it when its JVM exits, later jobs load Spark's classes from "
        f"it). The first Spark build job of this run, on its own copy, archive present before: {had_archive}: "
        f"{warmup[0]:.1f} s as a direct job run ({warmup[1]}).",
        "",
        *breakdown_rows(one, direct, local),
        "",
        f"Correctness: {2 * args.queries} query counts and 9 counts on the three-column build compared with "
        f"`numpy.bincount` ({'all equal' if not failures else '; '.join(failures[:5])}).",
    ]
    report = "\n".join(lines) + "\n"
    print(report)
    if not args.no_write:
        RESULTS.write_text(report)
    for name, ok in met.items():
        if not ok:
            print(f"MISSED: {name}", file=sys.stderr)
    if failures:
        print("FAILED:", failures[:10], file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
