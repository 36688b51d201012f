"""Benchmark: the Spark build job vs a plain Spark scan through mapInArrow (same session, same data).

Usage: python bench/bench_build.py [--rows 20000000] [--files 8] [--distinct 10000] [--master local[2]]
Generates Parquet with pyarrow (cached under --data-dir), times the baseline (read the column, pass it
through mapInArrow returning only counts) and the build job, checks a few index answers against pyarrow,
samples the RSS of the whole process tree, and writes bench/results/build.md. Exits non-zero on failure.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from _bench_env import REPO  # noqa: E402  (bench/_bench_env.py: sys.path and Spark's env, before the rest)

from _tree_rss import TreeRss  # noqa: E402  (bench/_tree_rss.py)


def generate(data_dir: Path, rows: int, files: int, distinct: int, seed: int = 7) -> list[Path]:
    marker = data_dir / f"_bench_{rows}_{files}_{distinct}_{seed}"
    paths = [data_dir / f"part-{i:05d}.parquet" for i in range(files)]
    if marker.exists() and all(p.exists() for p in paths):
        return paths
    data_dir.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    words = pa.array([f"key-{i:06d}" for i in range(distinct)])
    per = rows // files
    for i, p in enumerate(paths):
        n = per if i < files - 1 else rows - per * (files - 1)
        idx = pa.array(rng.integers(0, distinct, n).astype(np.int32))
        col = pa.DictionaryArray.from_arrays(idx, words)
        pq.write_table(pa.table({"s": col, "v": pa.array(rng.integers(0, 1 << 40, n))}), p)
    marker.touch()
    return paths


def baseline(spark, files: list[Path], column: str) -> int:  # type: ignore[no-untyped-def]
    def count(batches):  # type: ignore[no-untyped-def]
        n = 0
        for b in batches:
            n += b.num_rows
        yield pa.RecordBatch.from_arrays([pa.array([n], pa.int64())], names=["n"])

    df = spark.read.parquet(*[f"file://{f}" for f in files]).select(column)
    return int(df.mapInArrow(count, "n long").groupBy().sum("n").collect()[0][0])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=20_000_000)
    ap.add_argument("--files", type=int, default=8)
    ap.add_argument("--distinct", type=int, default=10_000)
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--data-dir", default=os.path.join(tempfile.gettempdir(), "bgix-bench-build"))
    ap.add_argument("--records-per-range", type=int, default=10_000_000)
    ap.add_argument("--out", default=str(REPO / "bench" / "results" / "build.md"))
    args = ap.parse_args()

    from pyspark.sql import SparkSession

    from index_format.global_index.reader import open_index
    from index_format.storage import Storage
    from index_format.types import parse_type
    from service.build_job.main import run_job
    from service.catalog import Catalog, Table

    t0 = time.perf_counter()
    data_dir = Path(args.data_dir)
    files = generate(data_dir / "data", args.rows, args.files, args.distinct)
    gen_s = time.perf_counter() - t0
    print(f"data: {args.rows:,} rows in {len(files)} files ({sum(f.stat().st_size for f in files) / 1e6:.1f} MB), "
          f"{gen_s:.1f}s", flush=True)

    spark = (SparkSession.builder.master(args.master).appName("bgix-bench-build")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.driver.memory", "2g").config("spark.sql.shuffle.partitions", "2").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    baseline(spark, files, "s")  # warm-up over the full data (JIT, Python workers, page cache), untimed

    results: dict[str, object] = {}
    with TreeRss() as mem:
        t = time.perf_counter()
        n = baseline(spark, files, "s")
        results["baseline_s"] = time.perf_counter() - t
    results["baseline_peak_rss_mb"] = mem.peak / 2**20
    if n != args.rows:
        raise SystemExit(f"baseline counted {n} rows, expected {args.rows}")
    print(f"baseline (read + mapInArrow count): {results['baseline_s']:.1f}s", flush=True)

    snaps = {}
    for scan in ("direct", "spark"):
        wh = data_dir / f"wh-{os.getpid()}-{scan}"
        cat = Catalog(Storage(str(wh), [str(data_dir)]))
        cat.put_table(Table("bench", str(data_dir / "data")))
        spec = {"job_id": f"bench-{scan}", "warehouse": str(wh), "allowed_roots": [str(data_dir)],
                "table": "bench", "index_column": "s", "scan": scan,
                "options": {"sorted-index.records-per-range": str(args.records_per_range)}}
        with TreeRss() as mem:
            t = time.perf_counter()
            snap = run_job(spec, spark=spark)
            results[f"build_{scan}_s"] = time.perf_counter() - t
        results[f"build_{scan}_peak_rss_mb"] = mem.peak / 2**20
        assert snap is not None
        snaps[scan] = (cat, snap)
        print(f"build job (scan {scan}): {results[f'build_{scan}_s']:.1f}s, {len(snap.files)} files, "
              f"{sum(f.file_size for f in snap.files) / 1e6:.1f} MB", flush=True)

    t = time.perf_counter()
    n2 = baseline(spark, files, "s")
    results["baseline2_s"] = time.perf_counter() - t
    assert n2 == args.rows
    spark.stop()

    # correctness spot check: index row counts for a few keys vs pyarrow over the source files
    probe = ["key-000000", f"key-{args.distinct // 2:06d}", f"key-{args.distinct - 1:06d}", "absent"]
    for scan, (cat, snap) in snaps.items():
        kt = parse_type(snap.key_type)
        readers = [open_index(cat.storage.open_source(f.path, f.file_size), kt) for f in snap.files]
        for key in probe:
            got = sum(len(r.eq(key)) for r in readers)
            exp = sum(pc.sum(pc.equal(pq.read_table(f, columns=["s"]).column("s").cast(pa.string()), key)).as_py()
                      or 0 for f in files)
            if got != exp:
                raise SystemExit(f"scan {scan}: index answers {got} rows for {key!r}, pyarrow finds {exp}")
    results["spot_checks"] = len(probe) * len(snaps)
    snap = snaps["direct"][1]

    base = (results["baseline_s"] + results["baseline2_s"]) / 2  # type: ignore[operator]
    results["ratio"] = results["build_direct_s"] / base  # type: ignore[operator]
    results["ratio_scan_spark"] = results["build_spark_s"] / base  # type: ignore[operator]
    results["rows_per_s_build"] = args.rows / results["build_direct_s"]  # type: ignore[operator]
    results["rows_per_s_baseline"] = args.rows / base
    results["index_files"] = len(snap.files)
    results["index_mb"] = sum(f.file_size for f in snap.files) / 1e6
    write_report(args, results, files)
    print(json.dumps({k: round(v, 3) if isinstance(v, float) else v for k, v in results.items()}, indent=1))
    if results["ratio"] > 2.0:  # type: ignore[operator]
        print(f"target missed: build/baseline = {results['ratio']:.2f} > 2.0", file=sys.stderr)
    return 0


def write_report(args: argparse.Namespace, r: dict[str, object], files: list[Path]) -> None:
    import pyspark
    sha = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True,
                         text=True).stdout.strip() or "unknown"
    dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain"], capture_output=True,
                           text=True).stdout.strip()
    mem_gb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    f = lambda k: f"{r[k]:.1f}"  # noqa: E731
    text = f"""# Build job benchmark

Command: `{Path(sys.executable).name} bench/bench_build.py --rows {args.rows} --files {args.files} \
--distinct {args.distinct} --master {args.master}`
Git: `{sha}`{' (uncommitted changes in the working tree)' if dirty else ''}; run {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}
Machine: {os.cpu_count()} cores, {mem_gb:.0f} GB RAM, {platform.platform()}; Python {platform.python_version()},
pyspark {pyspark.__version__}, pyarrow {pa.__version__}. Other work was running on the same cores.

Data: {args.rows:,} rows, one string column with {args.distinct:,} distinct values, {len(files)} Parquet files
({sum(p.stat().st_size for p in files) / 1e6:.0f} MB); `sorted-index.records-per-range` = {args.records_per_range:,}.

| contender | time (s) | rows/s | peak RSS of process tree (MB) |
|---|---|---|---|
| baseline: read column + `mapInArrow` returning counts (run 1) | {f('baseline_s')} | {args.rows / r['baseline_s']:,.0f} | {f('baseline_peak_rss_mb')} |
| baseline (run 2, after the build) | {f('baseline2_s')} | {args.rows / r['baseline2_s']:,.0f} | |
| build job, default scan "direct" (one Spark task per range, worker reads with pyarrow) | {f('build_direct_s')} | {r['rows_per_s_build']:,.0f} | {f('build_direct_peak_rss_mb')} |
| build job, scan "spark" (Spark scan + `_metadata` row ids → `mapInArrow`) | {f('build_spark_s')} | {args.rows / r['build_spark_s']:,.0f} | {f('build_spark_peak_rss_mb')} |

Build / baseline (mean of both timed baseline runs, after one untimed warm-up run): **{r['ratio']:.2f}×** with the default scan (target ≤ 2×);
{r['ratio_scan_spark']:.2f}× with scan "spark". Index: {r['index_files']} files,
{r['index_mb']:.1f} MB. {r['spot_checks']} equality answers checked against pyarrow counts.
"""
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(text)


if __name__ == "__main__":
    sys.exit(main())
