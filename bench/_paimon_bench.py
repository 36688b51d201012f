"""Shared by the Paimon build benchmarks: seeded tables that pypaimon-rust writes in streamed commits, private copies
of them, bgix builds through the HTTP API, pypaimon-rust builds in a child process (time and peak memory), counts from
both judges, and the index files a build committed.

    from _paimon_bench import Generated, api_build, rust_build   # bench/ is on sys.path when a bench script runs
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from _bench_env import REPO  # noqa: E402  (bench/_bench_env.py: sys.path and Spark's env, before the rest)
from tests.unit.tables.paimon import rust_tables as rt  # noqa: E402

from _tree_rss import TreeRss, tree_cpu  # noqa: E402  (bench/_tree_rss.py)
from bench_paimon import _PHASES, job_log_phases, job_timeline  # noqa: E402

NAME = "t"                       # every benchmark table is default.t in its own warehouse
BATCH_ROWS = 1 << 20             # rows per Arrow batch handed to the writer: bounds the writer's input memory


def scratch_dir(prefix: str) -> Path:
    """A new directory for one run's tables, under $BGIX_BENCH_TMP (default /work/bench-tmp: large tables need the
    big disk); the caller deletes it."""
    base = Path(os.environ.get("BGIX_BENCH_TMP", "/work/bench-tmp"))
    base.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=prefix, dir=base))


# ---- the table -------------------------------------------------------------------------------------
class Generated:
    """A seeded table: `id` BIGINT (the row number), STRING columns with `distinct[name]` values each drawn
    uniformly (`<name>-<i:05d>`), and with `partitions` > 0 a STRING partition column `part` (`p0`, `p1`, …).

    Each column draws from its own generator, so the same seed gives the same column values with or without the
    partition column. Rows are produced in batches of BATCH_ROWS (numpy indices into the column's dictionary of
    values, decoded by pyarrow), never all at once; `counts` is filled, by pyarrow over every batch written, as the
    batches go out.
    """

    def __init__(self, rows: int, distinct: Mapping[str, int], partitions: int = 0, seed: int = 1) -> None:
        self.rows, self.distinct, self.partitions, self.seed = rows, dict(distinct), partitions, seed
        self.counts: dict[str, dict[str, int]] = {c: {} for c in distinct}

    @property
    def partition_keys(self) -> list[str]:
        return ["part"] if self.partitions else []

    def ddl(self) -> str:
        cols = ["id BIGINT", *(f"{c} STRING" for c in self.distinct)] + (["part STRING"] if self.partitions else [])
        return ", ".join(cols)

    @staticmethod
    def value(column: str, i: int) -> str:
        return f"{column}-{int(i):05d}"

    def commits(self, n: int) -> Iterator[Iterator[pa.RecordBatch]]:
        """`n` commits of consecutive rows, each a lazy stream of batches."""
        rngs = {c: np.random.default_rng([self.seed, k]) for k, c in enumerate(self.distinct)}
        part_rng = np.random.default_rng([self.seed, len(self.distinct)])
        words = {c: pa.array([self.value(c, i) for i in range(d)]) for c, d in self.distinct.items()}
        parts = pa.array([f"p{i}" for i in range(self.partitions)])
        bounds = np.linspace(0, self.rows, n + 1).astype(np.int64)

        def batches(lo: int, hi: int) -> Iterator[pa.RecordBatch]:
            for start in range(lo, hi, BATCH_ROWS):
                end = min(hi, start + BATCH_ROWS)
                cols: dict[str, pa.Array] = {"id": pa.array(np.arange(start, end, dtype=np.int64))}
                for c, d in self.distinct.items():
                    idx = pa.array(rngs[c].integers(0, d, end - start, dtype=np.int32))
                    cols[c] = pa.DictionaryArray.from_arrays(idx, words[c]).dictionary_decode()
                    self._count(c, cols[c])
                if self.partitions:
                    idx = pa.array(part_rng.integers(0, self.partitions, end - start, dtype=np.int32))
                    cols["part"] = pa.DictionaryArray.from_arrays(idx, parts).dictionary_decode()
                yield pa.RecordBatch.from_pydict(cols)

        for lo, hi in zip(bounds[:-1], bounds[1:], strict=True):
            yield batches(int(lo), int(hi))

    def _count(self, column: str, values: pa.Array) -> None:
        counts = self.counts[column]
        vc = pc.value_counts(values)
        for v, n in zip(vc.field("values").to_pylist(), vc.field("counts").to_pylist(), strict=True):
            counts[v] = counts.get(v, 0) + n

    def probes(self, column: str) -> list[tuple[str, int]]:
        """A few (value, rows) to check per column: the most and least frequent, a middle one and an absent one."""
        ranked = sorted(self.counts[column].items(), key=lambda kv: (-kv[1], kv[0]))
        picks = [ranked[0], ranked[len(ranked) // 2], ranked[-1]]
        return [*picks, (f"{column}-absent", 0)]


def write_table(warehouse: Path, gen: Generated, commits: int) -> Path:
    """pypaimon-rust creates default.t (row tracking, data evolution) and writes `gen` in `commits` commits;
    returns the table directory."""
    location = rt.create_table(warehouse, NAME, gen.ddl(), partition_keys=gen.partition_keys)
    for batches in gen.commits(commits):
        rt.append(warehouse, NAME, batches)
    return location


def copy_table(src: Path, root: Path, name: str, table: str = NAME) -> Path:
    """A private copy of the warehouse `src`; returns the directory of default.<table> in it."""
    shutil.copytree(src, root / name / "warehouse")
    return root / name / "warehouse" / f"{rt.DB}.db" / table


def index_layout(location: Path) -> dict[tuple[str, str], tuple[int, int]]:
    """Per (column, index type) of the table's committed global indexes: (files, bytes)."""
    from service.tables.paimon import list_all_index_entries, open_paimon_table

    out = {}
    for (column, index_type), entries in list_all_index_entries(open_paimon_table(str(location))).items():
        out[(column, index_type)] = (len(entries), sum(int(e.file_size) for e in entries))
    return out


def layout_text(layout: Mapping[tuple[str, str], tuple[int, int]]) -> str:
    return ", ".join(f"{c} {t}: {n} file(s) {size / 1e6:.1f} MB" for (c, t), (n, size) in sorted(layout.items()))


def rust_count(warehouse: Path, where: str, table: str = NAME) -> int:
    """pypaimon-rust's `SELECT count(*) … WHERE <where>` (its scan uses the table's global indexes)."""
    got = rt.run(rt.sql_context(warehouse), f"SELECT count(*) AS n FROM {rt.DB}.{table} WHERE {where}")
    return int(got.column("n")[0].as_py())


# ---- pypaimon-rust builds --------------------------------------------------------------------------
# The child imports only what the procedure needs, so its peak RSS is pypaimon-rust's (plus an interpreter).
_RUST_CHILD = """
import json, sys, time
from pathlib import Path
from tests.unit.tables.paimon.rust_tables import create_index
warehouse, table, options, *calls = sys.argv[1:]
for call in calls:
    column, family = call.split(":")
    t0 = time.perf_counter()
    create_index(Path(warehouse), table, column, family, options or None)
    print(json.dumps({"column": column, "seconds": time.perf_counter() - t0}), flush=True)
"""


def rust_build(warehouse: Path, calls: Sequence[tuple[str, str]], log: Path, *, table: str = NAME,
               options: str | None = None, timeout: float = 1800.0) -> dict[str, Any]:
    """pypaimon-rust's `CALL sys.create_global_index`, one call per (column, index type), in order, in one child
    process that nothing else runs in. Returns `status` ("ok", "timeout" after `timeout` seconds, "killed by signal
    N" — 9 unasked is the kernel's OOM killer as a rule — or "failed (exit N)"), `seconds` per finished call (timed
    in the child, around the call alone), `total` (their sum), `wall` (the child's life), `cpu` (its CPU seconds,
    user + system, interpreter start included), `peak_rss` (bytes: the
    child's own high-water mark from the kernel, wait4's ru_maxrss) and `error` (the log's tail)."""
    cmd = [sys.executable, "-c", _RUST_CHILD, str(warehouse), table, options or "", *(f"{c}:{t}" for c, t in calls)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)}
    out_path = log.with_suffix(".out")
    t0 = time.perf_counter()
    with open(out_path, "wb") as out, open(log, "wb") as err:
        proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=out, stderr=err)
        timed_out = False
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() - t0 > timeout:
                proc.kill()
                pid, status, usage = os.wait4(proc.pid, 0)
                timed_out = True
                break
            time.sleep(0.05)
    wall = time.perf_counter() - t0
    proc.returncode = code = os.waitstatus_to_exitcode(status)   # reaped here: Popen must not wait again
    seconds = {}
    for line in out_path.read_text().splitlines():
        rec = json.loads(line)
        seconds[rec["column"]] = float(rec["seconds"])
    if timed_out:
        state = "timeout"
    elif code < 0:
        state = f"killed by signal {-code}"
    elif code:
        state = f"failed (exit {code})"
    else:
        state = "ok"
    return {"status": state, "seconds": seconds, "total": sum(seconds.values()), "wall": wall,
            "cpu": usage.ru_utime + usage.ru_stime, "peak_rss": int(usage.ru_maxrss) * 1024,
            "error": "" if state == "ok" else log.read_text()[-1500:]}


# ---- bgix through the API --------------------------------------------------------------------------
def serve_env(root: Path, warehouse: Path, master: str, **extra: str) -> dict[str, str]:
    """Environment for a Spark-engine `bgix serve` over this checkout's code (its build jobs too) that may read
    anything under `root`."""
    return {"BGIX_WAREHOUSE": str(warehouse), "BGIX_ALLOWED_ROOTS": str(root), "BGIX_BUILD_ENGINE": "spark",
            "BGIX_SPARK_MASTER": master,
            "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p), **extra}


def register(client: httpx.Client, name: str, location: Path) -> None:
    client.put(f"/v1/tables/{name}", json={"format": "paimon", "location": str(location)}).raise_for_status()


def unregister(client: httpx.Client, name: str) -> None:
    """Forget the table (DELETE /v1/tables/{name}) before its directory goes."""
    client.delete(f"/v1/tables/{name}").raise_for_status()


def api_build(client: httpx.Client, table: str, columns: str, index_type: str = "bitmap", *,
              rss_root: int | None = None, timeout: float | None = None,
              options: Mapping[str, str] | None = None) -> dict[str, Any]:
    """POST /v1/create_global_index, poll GET /v1/jobs/{id} until the job ends.

    Returns the job record as the service reports it (`state`, `progress`, …) plus `seconds` (client side, from
    the POST to the poll that saw the job end), `posted`/`ended` (time.perf_counter() at those two points),
    `phases` (the build job's timing line from its log, "" when the service keeps no such log where
    bench_paimon.job_log_phases looks), `timeline` (spawn / run / seen, from the record's timestamps) and, with
    `rss_root`, `peak_rss` (bytes: that process tree, sampled, during the build) and `cpu` (CPU seconds that tree
    used from the POST to the end). `options`: the request's index options. After `timeout` seconds the job
    is cancelled and `state` is "timeout". A refused request raises httpx.HTTPStatusError.
    """
    cpu0 = tree_cpu(rss_root) if rss_root else 0.0
    with TreeRss(rss_root) if rss_root else _NoRss() as mem:
        posted = time.perf_counter()
        r = client.post("/v1/create_global_index", json={"table": table, "index_column": columns,
                                                         "index_type": index_type,
                                                         **({"options": dict(options)} if options else {})})
        r.raise_for_status()
        job_id = r.json()["job_id"]
        phases, log = "", None
        while True:
            job = client.get(f"/v1/jobs/{job_id}").json()
            # the job's log goes once the service sees its process exit: read its phase line while it is there
            log = log or next(Path(tempfile.gettempdir()).glob(f"bgix-jobs-*/{job_id}.log"), None)
            if log is not None and not phases:
                try:
                    found = _PHASES.search(log.read_text(errors="replace"))
                    phases = found.group(1) if found else ""
                except OSError:
                    pass
            if job["state"] not in ("queued", "running"):
                break
            if timeout is not None and time.perf_counter() - posted > timeout:
                client.post(f"/v1/jobs/{job_id}/cancel")
                job["state"], job["error"] = "timeout", f"no end within {timeout:.0f} s: cancelled"
                break
            time.sleep(0.05)
        ended = time.perf_counter()
    job.update(seconds=ended - posted, posted=posted, ended=ended, seen_at=time.time(),
               phases=phases or job_log_phases(job_id))
    job["timeline"] = job_timeline(job) if job.get("started_at") and job.get("finished_at") else {}
    if rss_root:
        job["peak_rss"] = mem.peak
        job["cpu"] = tree_cpu(rss_root) - cpu0
    return job


class _NoRss:
    peak = 0

    def __enter__(self) -> _NoRss:
        return self

    def __exit__(self, *exc: object) -> None:
        pass


def bgix_count(client: httpx.Client, table: str, where: str) -> int:
    """bgix's count for `where`; a query that is not exact or not fully covered raises (a benchmark failure)."""
    r = client.post(f"/v1/tables/{table}/query", json={"where": where, "result": "count"})
    r.raise_for_status()
    body = r.json()
    if not body.get("exact", True) or not body.get("coverage", {}).get("complete", True):
        raise RuntimeError(f"{table}: {where!r} answered inexactly or with incomplete coverage: {body}")
    return int(body["count"])


def wait_served(client: httpx.Client, table: str, columns: set[str], timeout: float = 60) -> None:
    """Until the table lists an index on every one of `columns` (the watcher picks a Paimon commit up in a poll)."""
    deadline = time.monotonic() + timeout
    while not columns <= {i["column"] for i in client.get(f"/v1/tables/{table}/indexes").json()["indexes"]}:
        if time.monotonic() > deadline:
            raise RuntimeError(f"{table}: the built indexes {sorted(columns)} never showed up")
        time.sleep(0.1)


def check_counts(gen: Generated, columns: Sequence[str], client: httpx.Client | None, table: str,
                 warehouse: Path, failures: list[str]) -> int:
    """For a few values per column, bgix's count on `table` (when `client` is given) and pypaimon-rust's SQL count
    over `warehouse` (reading the global indexes built there) against pyarrow's count over the rows written; a
    difference goes to `failures`. Returns the counts compared."""
    checked = 0
    for column in columns:
        for value, want in gen.probes(column):
            where = f"{column} = '{value}'"
            judges = [("pypaimon-rust SQL", lambda w=where: rust_count(warehouse, w))]
            if client is not None:
                judges.insert(0, ("bgix", lambda w=where: bgix_count(client, table, w)))
            for judge, ask in judges:
                try:
                    got: int | str = ask()
                except Exception as exc:   # a failing query is a wrong answer here, reported with the rest
                    got = f"error {type(exc).__name__}: {exc}"
                checked += 1
                if got != want:
                    failures.append(f"{table}: {judge} counts {got} rows for {where}, pyarrow counted {want}")
    return checked


def log_tail(path: Path, chars: int = 4000) -> str:
    """The end of a log file, for a failure's message ("" when there is none)."""
    try:
        return path.read_text(errors="replace")[-chars:]
    except OSError:
        return ""


def median(values: Sequence[float]) -> float:
    return float(np.median(np.asarray(values, dtype=float))) if values else float("nan")


def publish(report: str, path: Path, write: bool, notes: Sequence[str], failures: Sequence[str]) -> int:
    """Print a run's report (and write it to `path` unless not `write`), then its verdict `notes`; the exit status:
    1 when something was wrong (`failures`), else 0 — a missed target is a note, not a failure."""
    print(report)
    if write:
        path.write_text(report, encoding="utf-8")
    for note in notes:
        print(note)
    if failures:
        print("WRONG:", list(failures[:10]), file=sys.stderr)
        return 1
    return 0


def verdict(ok: bool) -> str:
    """A target's cell in a report: met, or MISSED (which the benches also print on a line of its own)."""
    return "met" if ok else "MISSED"


def mb(n: float) -> str:
    return f"{n / 2**20:,.0f} MiB"


# ---- latency figures -------------------------------------------------------------------------------
def pct(values: Sequence[float], q: float) -> float:
    """The q-th percentile of `values` (nan when there are none)."""
    return float(np.percentile(np.asarray(values, dtype=float), q)) if len(values) else float("nan")


def flat(by_key: Mapping[str, Sequence[float]], only: set[str] | None = None) -> list[float]:
    """Every latency of `by_key` (question → its latencies), or of the questions in `only`."""
    return [ms for k, v in by_key.items() if only is None or k in only for ms in v]


def own_cpu(pid: int) -> float:
    """user + system CPU seconds of the serving process itself (its threads; not its build runner)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss(pid: int) -> int:
    """The process's resident set in bytes (0 when it is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def niced() -> str:
    """`nice -n N ` when this process runs niced (the report's command line says how it was run), else ''."""
    import os
    n = os.nice(0)
    return f"nice -n {n} " if n else ""


def run_lines(cmd: str, started: float, load0: tuple[float, float, float]) -> list[str]:
    """A report's command, git, machine, date and load lines (markdown, each ending in a line break)."""
    import platform

    from bench_paimon import git_sha
    load1 = os.getloadavg()
    return [
        f"Command: `{cmd}`  ",
        f"git {git_sha()} · {platform.platform()} · {os.cpu_count()} cores · Python {platform.python_version()}  ",
        f"Date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(started))}, {time.time() - started:.0f} s in all · "
        f"load average at start {load0[0]:.1f}/{load0[1]:.1f}/{load0[2]:.1f}, at end "
        f"{load1[0]:.1f}/{load1[1]:.1f}/{load1[2]:.1f} (other processes on the machine slow every contender)",
    ]
