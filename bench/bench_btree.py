"""btree index builds: bgix's writer against pypaimon-rust's `CALL sys.create_global_index(..., 'btree')`.

    PYTHONPATH=. .venv/bin/python bench/bench_btree.py [--rows 10000000] [--repeat 2]

For each key shape (distinct BIGINT, 10,000 distinct BIGINT) it makes a pypaimon-rust table of `--rows` rows,
times the CALL (which reads the table and writes one btree file per 100,000-row range), reads the column back,
and times bgix on the same rows: as one file of all rows (`write_btree_bytes`), and cut like pypaimon-rust into
100,000-row ranges — whose files must equal pypaimon-rust's byte for byte. Prints a markdown report and writes it
to bench/results/btree.md.
"""
from __future__ import annotations

import argparse
import glob
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
from pypaimon_rust.datafusion import SQLContext

from index_format.btree.btree_writer import write_btree_bytes
from index_format.types import parse_type

SHARD = 100_000
SHAPES = {"distinct": "(value * 7919) % {n}", "10k distinct": "(value * 7919) % 10000"}


def _table(wh: str, rows: int, expr: str) -> SQLContext:
    ctx = SQLContext()
    ctx.register_catalog("p", {"warehouse": wh})
    ctx.set_current_catalog("p")
    ctx.sql("CREATE TABLE t (id BIGINT, uid BIGINT) WITH "
            "('row-tracking.enabled'='true','data-evolution.enabled'='true')")
    ctx.sql(f"INSERT INTO t (id, uid) SELECT value, {expr.format(n=rows)} FROM generate_series(0, {rows - 1})")
    return ctx


def _rust_build(rows: int, expr: str) -> tuple[float, list[bytes], pa.Table]:
    wh = tempfile.mkdtemp(prefix="bench-btree-")
    try:
        ctx = _table(wh, rows, expr)
        t = time.perf_counter()
        ctx.sql("CALL sys.create_global_index(table => 'default.t', index_column => 'uid', index_type => 'btree')")
        took = time.perf_counter() - t
        files = [Path(f).read_bytes() for f in glob.glob(os.path.join(wh, "default.db/t/index/btree-*.index"))]
        table = pa.Table.from_batches(ctx.sql('SELECT "_ROW_ID", uid FROM t'))
        return took, files, table
    finally:
        shutil.rmtree(wh, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    kt = parse_type("bigint")
    write_btree_bytes(pa.array([1, 2]), [0, 1], kt)   # imports
    lines = [f"# btree builds, {args.rows:,} BIGINT rows ({os.cpu_count()} cores, {time.strftime('%Y-%m-%d %H:%M')})",
             "", "| keys | pypaimon-rust CALL | bgix one file | bgix 100k-row ranges | ranges = rust's bytes | "
             "speed-up (one file / ranges) |", "|---|---|---|---|---|---|"]
    for shape, expr in SHAPES.items():
        rust, one, shards = [], [], []
        same = None
        for _ in range(args.repeat):
            took, rust_files, table = _rust_build(args.rows, expr)
            rust.append(took)
            rid = table.column(0).to_numpy()
            keys = table.column(1)
            order = np.argsort(rid, kind="stable")
            rid, keys = rid[order], keys.take(pa.array(order))
            t = time.perf_counter()
            write_btree_bytes(keys, rid, kt)
            one.append(time.perf_counter() - t)
            t = time.perf_counter()
            ours = []
            for start in range(0, len(rid), SHARD):
                ours.append(write_btree_bytes(keys[start:start + SHARD], rid[start:start + SHARD] - start, kt)[0])
            shards.append(time.perf_counter() - t)
            same = sorted(ours) == sorted(rust_files)
            del table, keys, rid
        r, o, s = statistics.median(rust), statistics.median(one), statistics.median(shards)
        lines.append(f"| {shape} | {r:.2f} s | {o:.2f} s | {s:.2f} s | {'yes' if same else 'NO'} | "
                     f"{r / o:.1f}× / {r / s:.1f}× |")
    lines += ["", f"Medians of {args.repeat} runs. pypaimon-rust's time includes reading the table's data files; "
              "bgix's starts from the column in memory (the rows pypaimon-rust read back, in row-id order)."]
    report = "\n".join(lines) + "\n"
    print(report)
    out = Path(__file__).resolve().parent / "results"
    out.mkdir(exist_ok=True)
    (out / "btree.md").write_text(report, encoding="utf-8")


if __name__ == "__main__":
    main()
