"""`bgix file build` as a whole process (start-up, imports, Parquet read, write) against pypaimon's
BitmapIndexWriter loop on the same rows (issue 11): 3M rows, 10k distinct strings by default.

Our figure is the wall time of the `bgix file build` process (median of --repeat runs); pypaimon's is its
per-row `write` loop plus `finish` in this process, on the keys already in memory (its imports and the
Parquet read are not counted). Both files must give the same rows for sampled keys (read back with bgix's
reader). Writes bench/results/cli_build.md.

The command runs as the `bgix` console script does (`main()` of service.cli with the process's own argv), with
this interpreter and this checkout's modules first on PYTHONPATH, so the installed script's editable install
(possibly another worktree) is never what gets timed. `--pythonpath DIR` times another source tree instead
(e.g. an export of an older commit, for before/after figures).

    .venv/bin/python bench/bench_cli_build.py [--rows 3000000] [--distinct 10000] [--repeat 3] [--pythonpath DIR]
"""
from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from index_format.global_index.reader import open_index

from bench_format import pypaimon_write, string_keys  # bench/bench_format.py
from bench_ranges import git_sha

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results" / "cli_build.md"
# what the `bgix` console script runs
BGIX_MAIN = "import sys; from service.cli import main; sys.exit(main())"
TARGET = 10.0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=3_000_000)
    ap.add_argument("--distinct", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--pythonpath", default=str(REPO), help="source tree whose `bgix` is timed (default: this one)")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bgix-bench-cli-"))
    started, load0 = time.time(), os.getloadavg()
    keys, values = string_keys(args.rows, args.distinct, np.random.default_rng(5))
    import pyarrow as pa
    pq.write_table(pa.table({"s": keys}), tmp / "in.parquet")
    # As on a user's machine, Python may cache bytecode (a sandbox's PYTHONDONTWRITEBYTECODE=1 would make every
    # run compile the project's modules again); the first run, which may write that cache, is reported apart.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = os.pathsep.join([args.pythonpath] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    probe = subprocess.run([sys.executable, "-c", "import service; print(service.__file__)"], env=env, check=True,
                           capture_output=True, text=True, cwd=tmp).stdout.strip()
    if not Path(probe).resolve().is_relative_to(Path(args.pythonpath).resolve()):
        raise SystemExit(f"`bgix` would run {probe}, not {args.pythonpath}'s")
    ours = []
    for i in range(args.repeat + 1):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", BGIX_MAIN, "file", "build", str(tmp / "in.parquet"), "--column", "s",
                        "-o", str(tmp / "ours.index")], check=True, capture_output=True, env=env, cwd=tmp)
        ours.append(time.perf_counter() - t0)
    first, ours = ours[0], ours[1:]
    from pypaimon.globalindex.key_serializer import StringSerializer
    pylist = keys.to_pylist()
    (tmp / "py").mkdir()
    t0 = time.perf_counter()
    theirs_path = pypaimon_write(pylist, StringSerializer(), str(tmp / "py"))
    theirs = time.perf_counter() - t0
    failures = []
    mine, other = open_index(str(tmp / "ours.index"), "string"), open_index(theirs_path, "string")
    for v in values[:: max(1, len(values) // 50)]:
        if mine.eq(v) != other.eq(v):
            failures.append(f"key {v!r}: the two files disagree")
    med = statistics.median(ours)
    ratio = theirs / med
    load1 = os.getloadavg()
    text = "\n".join([
        "# `bgix file build` (whole process) vs pypaimon's writer loop",
        "",
        f"Command: `.venv/bin/python bench/bench_cli_build.py --rows {args.rows} --distinct {args.distinct} --repeat "
        f"{args.repeat}`" + (f" (timing `{args.pythonpath}`)" if Path(args.pythonpath).resolve() != REPO else "")
        + f" — {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(started))}",
        "",
        f"- git {git_sha()} · {platform.platform()} · {os.cpu_count()} cores · load average at start {load0[0]:.1f}, "
        f"at end {load1[0]:.1f}",
        "",
        "| contender | time | rows/s |",
        "|---|---|---|",
        f"| `bgix file build` process (median of {args.repeat}: {', '.join(f'{t:.2f}' for t in ours)} s) | "
        f"{med:.2f} s | {args.rows / med / 1e6:.2f} M |",
        f"| pypaimon `BitmapIndexWriter.write` loop + `finish`, keys in memory | {theirs:.2f} s | "
        f"{args.rows / theirs / 1e6:.2f} M |",
        "",
        f"The first `bgix file build` run (not in the median; it may write Python's bytecode cache) took {first:.2f} s.",
        "",
        f"Ratio: **{ratio:.1f}×** (target ≥ {TARGET:.0f}×: {'met' if ratio >= TARGET else 'MISSED'}). "
        f"Same rows for {len(values[:: max(1, len(values) // 50)])} sampled keys: "
        + ("yes." if not failures else "NO: " + "; ".join(failures[:3])),
        "",
    ])
    print(text)
    if not args.no_write:
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        RESULTS.write_text(text, encoding="utf-8")
    return 2 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
