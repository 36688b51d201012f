"""spark_filter benchmark (issue 23, item 9): a bgix answer → a DataFrame of exactly those rows, in local Spark.

One run, one table: the demo's events table (--rows rows in --files Parquet files, seed 7) in a temp directory;
the answer (the row ids where the predicate holds) and the expected rows come from pyarrow over the source files.
Per query, three contenders build a DataFrame and run it to the end (`write.format("noop")`: every column of every
row materialised, nothing collected to Python):
  - plain: `spark.read.parquet(all files).filter(where)`, Spark's own scan and filter: the baseline of the ratios;
  - old: `filter_by_row_ids` as it was before this change (service/spark_filter.py at --old-commit, loaded from
    git): a union of per-file reads filtered by a broadcast left-semi join against a DataFrame of the ids;
  - new: `filter_by_row_ids` of this tree: per-file local positions as range predicates or a broadcast bit mask.
Measured per run: plan time (building the DataFrame, before any action), the largest serialized task of the
action (Spark's TaskSetManager "Starting task … N bytes" log lines; Spark warns above 1000 KiB) and the total
time (plan + action). Each contender runs once to warm up, then --repeats times, the contenders taking turns;
medians count. The new DataFrame's rows are checked against pyarrow's (every column, by row id) and the old
one's row ids too; the exit status is 1 on a wrong answer. Writes bench/results/spark_filter.md.

    SPARK_LOCAL_IP=127.0.0.1 PYSPARK_PYTHON=$PWD/.venv/bin/python .venv/bin/python bench/bench_spark_filter.py [--rows 2000000] [--files 8] [--repeats 3]
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import types
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq
from pyroaring import BitMap64

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from service import spark_filter as new_filter  # noqa: E402
from service.build_job.engines import spark_process_env  # noqa: E402
from service.demo.events import write_events  # noqa: E402

spark_process_env(os.environ)   # Spark's Python and address, as bgix's own builds set them

RESULTS = REPO / "bench" / "results" / "spark_filter.md"
OLD_COMMIT = "3650594"  # main before issue 23's item 9
QUERIES = {  # where (Spark SQL) → the same predicate in pyarrow
    "scattered ids: status = 'error'": ("status = 'error'", lambda t: pc.equal(t["status"], "error")),
    "runs: ts < '2026-10-02'": ("ts < timestamp'2026-10-02 00:00:00'",
                               lambda t: pc.less(t["ts"], pa.scalar(datetime(2026, 10, 2), pa.timestamp("us")))),
}
TASK_LINE = re.compile(rb"Starting task .* (\d+) bytes\)")


def old_module(commit: str) -> types.ModuleType:
    """service/spark_filter.py as of `commit`, importable under another name."""
    source = subprocess.run(["git", "-C", str(REPO), "show", f"{commit}:service/spark_filter.py"],
                            check=True, capture_output=True, text=True).stdout
    module = types.ModuleType("bgix_old_spark_filter")
    exec(compile(source, f"{commit}:service/spark_filter.py", "exec"), module.__dict__)  # noqa: S102
    return module


class TaskLog:
    """The JVM's stderr, redirected to a file at the fd level before Spark starts; parsed for task sizes."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.console = os.fdopen(os.dup(2), "w", buffering=1)  # our own messages still reach the terminal
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(fd, 2)
        os.close(fd)
        self.offset = 0

    def max_task_bytes(self) -> int:
        """The largest task started since the last call."""
        data = self.path.read_bytes()
        new, self.offset = data[self.offset:], len(data)
        return max((int(m.group(1)) for m in TASK_LINE.finditer(new)), default=0)


def start_spark():  # type: ignore[no-untyped-def]
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master("local[2]").appName("bench-spark-filter")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "2").config("spark.driver.memory", "2g")
             .config("spark.sql.session.timeZone", "UTC").getOrCreate())
    spark.sparkContext.setLogLevel("WARN")
    jvm = spark.sparkContext._jvm
    jvm.org.apache.logging.log4j.core.config.Configurator.setLevel(
        "org.apache.spark.scheduler.TaskSetManager", jvm.org.apache.logging.log4j.Level.INFO)
    return spark


def table(directory: Path, rows: int, files: int) -> tuple[list[dict], list[Path]]:
    paths = write_events(directory, rows=rows, files=files, seed=7)
    entries, first = [], 0
    for path in sorted(paths):
        n = pq.ParquetFile(path).metadata.num_rows
        entries.append({"path": str(path), "first_row_id": first, "row_count": n})
        first += n
    return entries, sorted(paths)


def truth(paths: list[Path], mask: Callable[[pa.Table], pa.Array]) -> pa.Table:
    """The matching source rows with their row ids (path order, position in file), by pyarrow."""
    parts, first = [], 0
    for path in paths:
        t = pq.read_table(path)
        t = t.append_column("_row_id", pa.array(np.arange(first, first + t.num_rows, dtype=np.int64)))
        parts.append(t.filter(mask(t)))
        first += t.num_rows
    return pa.concat_tables(parts)


def run(log: TaskLog, build: Callable[[], object]) -> tuple[float, int, float]:
    """(plan seconds, largest task bytes, total seconds) of building the DataFrame and running it to the end."""
    log.max_task_bytes()  # forget earlier tasks
    t0 = time.perf_counter()
    df = build()
    t1 = time.perf_counter()
    df.write.format("noop").mode("overwrite").save()  # type: ignore[attr-defined]
    t2 = time.perf_counter()
    time.sleep(0.2)  # the last task lines reach the log
    return t1 - t0, log.max_task_bytes(), t2 - t0


def check(spark, df, expected: pa.Table, full: bool) -> str:  # type: ignore[no-untyped-def]
    got = df.toPandas().sort_values("_row_id").reset_index(drop=True) if full else None
    want = expected.to_pandas().sort_values("_row_id").reset_index(drop=True)
    if not full:
        ids = sorted(r[0] for r in df.select("_row_id").collect())
        return "ok" if ids == list(want["_row_id"]) else "WRONG row ids"
    import pandas as pd

    try:
        pd.testing.assert_frame_equal(got[list(want.columns)], want, check_dtype=False)
    except AssertionError as e:
        return f"WRONG rows: {str(e)[:200]}"
    return "ok"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--files", type=int, default=8)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--old-commit", default=OLD_COMMIT)
    args = ap.parse_args()

    work = Path(tempfile.mkdtemp(prefix="bgix-bench-sf-"))
    log = TaskLog(work / "spark-stderr.log")
    say = lambda *a: print(*a, file=log.console, flush=True)  # noqa: E731
    started, load0 = datetime.now(timezone.utc), os.getloadavg()
    failed = False
    lines: list[str] = []
    try:
        files, paths = table(work / "events", args.rows, args.files)
        old = old_module(args.old_commit)
        spark = start_spark()
        for title, (where, mask) in QUERIES.items():
            expected = truth(paths, mask)
            ids = BitMap64(expected["_row_id"].to_numpy().astype(np.uint64))
            runs = len(new_filter._runs(new_filter._sorted_ids(ids)))
            contenders: dict[str, Callable[[], object]] = {
                "plain scan + filter": lambda: spark.read.parquet(*[str(p) for p in paths]).filter(where),
                "old spark_filter": lambda: old.filter_by_row_ids(spark, files, ids),
                "new spark_filter": lambda: new_filter.filter_by_row_ids(spark, files, ids),
            }
            verdicts = {"old spark_filter": check(spark, old.filter_by_row_ids(spark, files, ids), expected, False),
                        "new spark_filter": check(spark, new_filter.filter_by_row_ids(spark, files, ids),
                                                  expected, True)}
            failed |= any(v != "ok" for v in verdicts.values())
            say(f"{title}: {len(ids):,} ids in {runs:,} runs; answers {verdicts}")
            for build in contenders.values():  # warm-up
                run(log, build)
            samples: dict[str, list[tuple[float, int, float]]] = {name: [] for name in contenders}
            for r in range(args.repeats):
                order = list(contenders) if r % 2 == 0 else list(reversed(contenders))
                for name in order:
                    samples[name].append(run(log, contenders[name]))
                    say(f"  {name}: plan {samples[name][-1][0]:.3f} s, task {samples[name][-1][1]:,} B, "
                        f"total {samples[name][-1][2]:.2f} s")
            med = {name: tuple(statistics.median(s[k] for s in samples[name]) for k in range(3))
                   for name in contenders}
            base = med["plain scan + filter"]
            lines += [f"**{title}** — {len(ids):,} matching rows of {args.rows:,} in {runs:,} runs, "
                      f"{args.files} files; answers checked: {verdicts}", "",
                      "| contender | plan time | ×plain | largest task | ×plain | total | ×plain |",
                      "|---|---|---|---|---|---|---|"]
            for name, (plan, task, total) in med.items():
                lines.append(f"| {name} | {plan:.3f} s | {plan / base[0]:.2f} | {task / 1024:,.1f} KiB | "
                             f"{task / base[1]:.2f} | {total:.2f} s | {total / base[2]:.2f} |")
            lines.append("")
        spark.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    load1 = os.getloadavg()
    header = [f"# spark_filter (issue 23, item 9): run of {started:%Y-%m-%d %H:%M} UTC", "",
              f"Spark local[2], {os.cpu_count()} cores; load average {load0[0]:.1f} at start, {load1[0]:.1f} at "
              f"end; medians of {args.repeats} after a warm-up; old = service/spark_filter.py at {args.old_commit}.",
              ""]
    report = "\n".join(header + lines)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(report + "\n")
    print(report)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
