"""Range-bitmap sidecar reader timings: warm range / eq / count_range and the cold first query.

Plain script, not a test. Builds payloads with `write_from_codes` (bigint keys, codes in random row order)
and prints absolute medians (time.perf_counter and thread CPU time, >= 20 warm runs over seeded random
bounds; "narrow" = bounds at most 100 keys apart).

    .venv/bin/python bench/bench_range_sidecar.py                 # 10M rows, 1M and 10k distinct
    .venv/bin/python bench/bench_range_sidecar.py --rows 1000000  # quicker
"""
from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from index_format.range_bitmap import RangeBitmapReader, write_from_codes  # noqa: E402
from index_format.types import parse_type  # noqa: E402

KT = parse_type("bigint")


def build(rows: int, distinct: int, seed: int = 7) -> tuple[bytes, np.ndarray]:
    rng = np.random.default_rng(seed)
    keys = np.cumsum(rng.integers(1, 1000, distinct, dtype=np.int64)) - 500 * distinct
    codes = rng.integers(0, distinct, rows, dtype=np.int64)
    codes[: distinct] = rng.permutation(distinct)          # every key present
    rng.shuffle(codes)
    return write_from_codes(KT, keys, codes, rows), keys


def median_ms(fn, args_list) -> tuple[float, float]:
    """(median wall ms, median thread-CPU ms): the CPU column is steadier on a shared machine."""
    wall, cpu = [], []
    for args in args_list:
        t, c = time.perf_counter(), time.thread_time()
        fn(*args)
        cpu.append(time.thread_time() - c)
        wall.append(time.perf_counter() - t)
    return statistics.median(wall) * 1e3, statistics.median(cpu) * 1e3


def fmt(ms: float) -> str:
    return f"{ms * 1e3:8.0f} µs" if ms < 1 else f"{ms:8.2f} ms"


def run(rows: int, distinct: int, runs: int) -> list[tuple[str, tuple[float, float]]]:
    t = time.perf_counter()
    payload, keys = build(rows, distinct)
    print(f"# built {rows:,} rows / {distinct:,} distinct: {len(payload) / 1e6:.1f} MB in "
          f"{time.perf_counter() - t:.1f} s", file=sys.stderr)
    rng = np.random.default_rng(11)
    k = [int(x) for x in keys]
    pairs = []
    for _ in range(runs):
        a, b = sorted(rng.integers(0, distinct, 2))
        pairs.append((k[a], k[b]))
    narrow = []
    for _ in range(runs):
        a = int(rng.integers(0, max(distinct - 101, 1)))
        narrow.append((k[a], k[min(a + int(rng.integers(1, 101)), distinct - 1)]))
    lows = [(lo, None) for lo, _ in pairs]
    highs = [(None, hi) for _, hi in pairs]
    eqs = [(lo,) for lo, _ in pairs]

    out = []
    # cold: fresh reader, first two-sided range (header, dictionary blocks, every slice decoded)
    colds, cold_cpu = [], []
    for lo, hi in pairs[:5]:
        r = RangeBitmapReader(payload, KT)
        gc.collect()
        t0, c0 = time.perf_counter(), time.thread_time()
        r.range(lo, hi)
        cold_cpu.append(time.thread_time() - c0)
        colds.append(time.perf_counter() - t0)
    out.append(("cold first range", (statistics.median(colds) * 1e3, statistics.median(cold_cpu) * 1e3)))

    r = RangeBitmapReader(payload, KT)
    for lo, hi in pairs:       # warm every slice and dictionary block that the bounds touch
        r.range(lo, hi)
        r.eq(lo)
    gc.collect()
    out.append(("range lo..hi", median_ms(r.range, pairs)))
    out.append(("range lo..hi narrow (<=100 keys)", median_ms(r.range, narrow)))
    out.append(("range lo.. (ge)", median_ms(r.range, lows)))
    out.append(("range ..hi (le)", median_ms(r.range, highs)))
    out.append(("eq", median_ms(r.eq, eqs)))
    out.append(("count_range lo..hi", median_ms(r.count_range, pairs)))
    out.append(("count_range lo..", median_ms(r.count_range, lows)))
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--distinct", type=int, nargs="*", default=[1_000_000, 10_000])
    ap.add_argument("--runs", type=int, default=31)
    a = ap.parse_args()
    print("| rows | distinct | op | median wall | median CPU |")
    print("|---:|---:|---|---:|---:|")
    for d in a.distinct:
        for op, (wall, cpu) in run(a.rows, d, a.runs):
            print(f"| {a.rows:,} | {d:,} | {op} | {fmt(wall).strip()} | {fmt(cpu).strip()} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
