"""Paimon's bitmap file index V2 (index_format.file_index.bitmap_index) against a plain pyarrow filter on the same
column (issue 12; no Python peer reads or writes these files, so the baseline is "no index").

One column of --rows rows (BIGINT with --distinct values and 1% nulls, and STRING with the same distinct
count), in memory as Arrow. Measured in this process, the same run:

- write: `write_payload("bitmap", …)` for the whole column, against one `pyarrow.compute` filter pass
  (equal + indices) — the ratio says how many filter passes one index build costs;
- read: open the payload from bytes and answer `=`, `IN` (5 values), `!=` and `IS NULL` (Java's pruning
  answers, rows = positions), against the pyarrow filter giving the same positions (checked equal; for `!=`
  pyarrow's answer plus the null rows, as Paimon's bitmap reader answers). Point queries use fresh readers
  (cold: parse the head, find the block, decode one bitmap) and a warm reader.

Medians of --queries queries over sampled present keys. Writes bench/results/file_index.md.

    .venv/bin/python bench/bench_file_index.py [--rows 2000000] [--distinct 10000] [--queries 200]
"""
from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_ranges import git_sha  # noqa: E402  (bench/bench_ranges.py)

from index_format.file_index.formats import open_payload, write_payload  # noqa: E402
from index_format.file_index.result import Rows  # noqa: E402
from index_format.file_index.values import paimon_type  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results" / "file_index.md"


def _columns(rows: int, distinct: int, rng: np.random.Generator) -> dict[str, tuple[str, pa.Array]]:
    codes = rng.integers(0, distinct, rows)
    null = rng.random(rows) < 0.01
    ints = pa.array(codes * 7919 - 1_000_000_007, mask=null, type=pa.int64())
    words = np.array([f"key-{i:07d}-{'x' * (i % 13)}" for i in range(distinct)], dtype=object)
    strings = pa.array(words[codes], mask=null, type=pa.string())
    return {"bigint": ("BIGINT", ints), "string": ("STRING", strings)}


def _timed(fn: Callable[[], object], repeat: int = 1) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def _arrow_positions(col: pa.Array, mask: pa.Array) -> pa.Array:
    """The baseline's answer: matching positions as an Arrow array (not converted to Python)."""
    return pc.indices_nonzero(pc.fill_null(mask, False))


def _same(got: object, want: pa.Array) -> bool:
    """Our Rows against the baseline's positions, compared outside the timed part."""
    if not isinstance(got, Rows):
        return False
    ours = np.frombuffer(got.bitmap.to_array(), dtype=np.uint32)
    return np.array_equal(ours, want.to_numpy(zero_copy_only=False))


def _bench_column(name: str, type_name: str, col: pa.Array, queries: int, rng: np.random.Generator
                  ) -> dict[str, object]:
    kt = paimon_type(type_name)
    write_s, data = _timed(lambda: write_payload("bitmap", kt, col, {}), repeat=3)
    assert isinstance(data, bytes)
    filter_s, _ = _timed(lambda: pc.indices_nonzero(pc.fill_null(pc.equal(col, col[0]), False)), repeat=3)
    present = pc.unique(col.drop_null()).to_pylist()
    picks = [present[i] for i in rng.integers(0, len(present), queries)]
    warm = open_payload("bitmap", data, kt)

    def per_query(fn_ours: Callable[[object], object], fn_arrow: Callable[[object], object]) -> tuple[float, float]:
        ours, theirs = [], []
        for value in picks:
            t0 = time.perf_counter()
            got = fn_ours(value)
            t1 = time.perf_counter()
            want = fn_arrow(value)
            t2 = time.perf_counter()
            assert _same(got, want), (name, value)
            ours.append(t1 - t0)
            theirs.append(t2 - t1)
        return statistics.median(ours), statistics.median(theirs)

    null_rows = _arrow_positions(col, pc.is_null(col))
    out: dict[str, object] = {"column": name, "rows": len(col), "bytes": len(data), "write_s": write_s,
                              "filter_s": filter_s}
    out["eq_cold"] = per_query(lambda v: open_payload("bitmap", data, kt).eq(v),
                               lambda v: _arrow_positions(col, pc.equal(col, v)))
    out["eq_warm"] = per_query(lambda v: warm.eq(v), lambda v: _arrow_positions(col, pc.equal(col, v)))
    five = [picks[i:i + 5] for i in range(0, len(picks), 5)]
    ours, theirs = [], []
    for vals in five:
        t0 = time.perf_counter()
        got = open_payload("bitmap", data, kt).isin(vals)
        t1 = time.perf_counter()
        want = _arrow_positions(col, pc.is_in(col, value_set=pa.array(vals, type=col.type)))
        t2 = time.perf_counter()
        assert _same(got, want)
        ours.append(t1 - t0)
        theirs.append(t2 - t1)
    out["in5_cold"] = (statistics.median(ours), statistics.median(theirs))

    def ne_arrow(v: object) -> pa.Array:
        # Paimon's bitmap `!=` includes the null rows: (v <> x) OR (v IS NULL)
        return _arrow_positions(col, pc.or_kleene(pc.not_equal(col, v), pc.is_null(col)))
    out["ne_cold"] = per_query(lambda v: open_payload("bitmap", data, kt).ne(v), ne_arrow)
    t0 = time.perf_counter()
    got = open_payload("bitmap", data, kt).is_null()
    t1 = time.perf_counter()
    assert _same(got, null_rows)
    out["is_null_cold"] = (t1 - t0, _timed(lambda: _arrow_positions(col, pc.is_null(col)), 3)[0])
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--distinct", type=int, default=10_000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    rng = np.random.default_rng(12)
    started, load0 = time.time(), os.getloadavg()
    results = [_bench_column(name, t, col, args.queries, rng)
               for name, (t, col) in _columns(args.rows, args.distinct, rng).items()]
    lines = [
        f"# Bitmap file index V2 vs a pyarrow filter ({args.rows:,} rows, {args.distinct:,} distinct, 1% nulls)",
        "",
        f"`.venv/bin/python bench/bench_file_index.py --rows {args.rows} --distinct {args.distinct} "
        f"--queries {args.queries}` · commit {git_sha()} · {platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} cores · load {load0[0]:.2f} → {os.getloadavg()[0]:.2f} · "
        f"{time.strftime('%Y-%m-%d %H:%M', time.localtime(started))}",
        "",
        "| column | payload | write | one pyarrow filter | write ÷ filter |",
        "|---|---|---|---|---|",
    ]
    for r in results:
        lines.append(f"| {r['column']} | {r['bytes']:,} B | {r['write_s'] * 1e3:.0f} ms | "
                     f"{r['filter_s'] * 1e3:.1f} ms | {r['write_s'] / r['filter_s']:.1f} |")
    lines += ["", "| column | query | bgix (p50) | pyarrow filter (p50) | speed-up |", "|---|---|---|---|---|"]
    for r in results:
        for key, label in (("eq_cold", "`=` fresh reader"), ("eq_warm", "`=` warm reader"),
                           ("in5_cold", "`IN` 5 values, fresh"), ("ne_cold", "`!=` fresh (nulls included)"),
                           ("is_null_cold", "`IS NULL` fresh")):
            ours, theirs = r[key]  # type: ignore[misc]
            lines.append(f"| {r['column']} | {label} | {ours * 1e3:.3f} ms | {theirs * 1e3:.3f} ms | "
                         f"{theirs / ours:.0f}× |")
    text = "\n".join(lines) + "\n"
    print(text)
    if not args.no_write:
        RESULTS.write_text(text, encoding="utf-8")
        print(f"wrote {RESULTS.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
