"""Index statistics benchmark (issue 10, item 8): `/indexes` and `/values` on a ~3M-distinct string index.

Builds in a temp dir a Parquet source and its index with the library writer, committed through the catalog:
table `big` (one index file, ~100 MB) and table `multi` (the same rows indexed as two files, so statistics need
a merge; that is the path the probe's slow first `/indexes` took). Then, on a real `bgix serve` bound to
127.0.0.1 with BGIX_CACHE_BYTES (default 256 MiB), times the first and warm `/indexes`, `/values?order=count`
(first page and a deep page), `/values?order=value` (deep page) and a prefix look-up, and reads the server's
RSS (VmRSS, peak VmHWM from /proc). Contenders in the same run on the same data:
  - "new": this tree, first process (computes and stores the statistics) and a second process (reads them);
  - "old": the committed tree (`git archive HEAD`, no stored statistics), unless --no-old;
  - "plain scan": pyarrow group-by count of the source Parquet column (what any ranking must at least do).

    .venv/bin/python bench/bench_index_stats.py [--rows 4000000] [--distinct 3000000] [--no-old]
"""
from __future__ import annotations

import argparse
import base64
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from _server import start_server, stop_server   # bench/ is on sys.path when a bench script runs

from index_format.global_index.writer import write_index_files
from index_format.options import IndexOptions
from index_format.storage import Storage
from index_format.types import parse_type
from service.catalog import Catalog, IndexFileEntry, Snapshot, SourceFile, Table
from service.tables.files.data_files import DataFileMap

REPO = Path(__file__).resolve().parents[1]
TARGET_S = 2.0


def build(root: Path, rows: int, distinct: int) -> dict[str, int]:
    rng = np.random.default_rng(7)
    ids = np.concatenate([np.arange(distinct), rng.zipf(1.3, rows - distinct) % distinct])
    rng.shuffle(ids)
    vals = pa.array(np.char.add("v", np.char.zfill(ids.astype(str), 9)).astype(object))
    vals = pc.if_else(pa.array(rng.random(rows) < 0.01), pa.scalar(None, pa.string()), vals)
    storage = Storage(str(root / "warehouse"), [str(root / "data")])
    catalog = Catalog(storage)
    kt, opts = parse_type("string"), IndexOptions()
    sizes = {}
    for table, per_file in (("big", rows + 1), ("multi", rows // 2 + 1)):
        data = root / "data" / table
        data.mkdir(parents=True)
        pq.write_table(pa.table({"s": vals}), data / "part-000.parquet")
        catalog.put_table(Table(name=table, location=str(data)))
        files = DataFileMap(catalog).live(table)
        out_dir = catalog.index_dir(table, "s")
        counter = iter(range(100))
        t0 = time.perf_counter()
        written = write_index_files(vals, np.arange(rows, dtype=np.int64), kt, opts, records_per_file=per_file,
                                    new_path=lambda d=out_dir: f"{d}/b-{next(counter)}.index", storage=storage)
        sizes[table] = sum(w.file_size for w in written)
        print(f"  {table}: {len(written)} index file(s), {sizes[table] / 1e6:.1f} MB in "
              f"{time.perf_counter() - t0:.1f} s", flush=True)
        entries = [IndexFileEntry(path=storage.relative(w.path), range_start=0, range_end=rows - 1,
                                  row_count=w.row_count, file_size=w.file_size, meta_hex=w.meta.hex())
                   for w in written]
        catalog.commit(table, "s", None, Snapshot(
            id=0, table=table, column="s", key_type="string", files=entries, options=opts.to_dict(),
            covered_ranges=[[0, rows - 1]], source_files=[SourceFile.of(f) for f in files], row_count=rows))
    return sizes


def proc_mem(pid: int) -> tuple[float, float]:
    """(VmRSS, VmHWM) in MB."""
    got = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(("VmRSS", "VmHWM")):
            got[line.split(":")[0]] = int(line.split()[1]) / 1024
    return got["VmRSS"], got["VmHWM"]


def serve(root: Path, cache: int, pythonpath: str | None, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    env = {"BGIX_WAREHOUSE": str(root / "warehouse"), "BGIX_ALLOWED_ROOTS": str(root / "data"),
           "BGIX_CACHE_BYTES": str(cache), "BGIX_BUILD_ENGINE": "local"}
    return start_server(env, log, pythonpath=pythonpath)


def cursor(offset: int, snap: int, key: str) -> str:
    raw = json.dumps({"o": offset, "s": snap, "k": key}, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def timed(client: httpx.Client, path: str, params: dict | None = None) -> tuple[float, dict]:
    t0 = time.perf_counter()
    r = client.get(path, params=params)
    dt = time.perf_counter() - t0
    r.raise_for_status()
    return dt, r.json()


def measure(url: str, pid: int, table: str, deep: int, label: str) -> list[tuple[str, float, float, float]]:
    """(step, seconds, RSS MB after, peak RSS MB so far) for the look-ups, first then warm."""
    out = []
    with httpx.Client(base_url=url, timeout=600) as c:
        def step(name: str, path: str, params: dict | None = None) -> dict:
            dt, body = timed(c, path, params)
            rss, hwm = proc_mem(pid)
            out.append((f"{label} {table}: {name}", dt, rss, hwm))
            print(f"  {label:12s} {table:5s} {name:40s} {dt * 1000:9.1f} ms  RSS {rss:6.0f} MB  peak {hwm:6.0f} MB",
                  flush=True)
            return body
        idx = step("/indexes (first)", f"/v1/tables/{table}/indexes")
        snap = idx["indexes"][0]["snapshot_id"]
        step("/indexes (warm)", f"/v1/tables/{table}/indexes")
        values = f"/v1/tables/{table}/indexes/s/values"
        first = step("order=count page 1 (first)", values, {"order": "count", "limit": 100})
        step("order=count page 1 (warm)", values, {"order": "count", "limit": 100})
        deep_body = step(f"order=count offset {deep:,}", values,
                         {"order": "count", "limit": 100, "cursor": cursor(deep, snap, "count|None")})
        step(f"order=value offset {deep:,}", values,
             {"order": "value", "limit": 100, "cursor": cursor(deep, snap, "value|None")})
        step("order=count prefix v00012", values, {"order": "count", "limit": 100, "prefix": "v00012"})
    out.append((f"{label} {table}: top value", float(first["values"][0]["rows"]), 0.0, 0.0))
    out.append((f"{label} {table}: deep page first rows", float(deep_body["values"][0]["rows"]), 0.0, 0.0))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=4_000_000)
    ap.add_argument("--distinct", type=int, default=3_000_000)
    ap.add_argument("--cache-bytes", type=int, default=256 << 20)
    ap.add_argument("--no-old", action="store_true", help="skip the committed tree's server")
    ap.add_argument("--out", default=str(REPO / "bench" / "RESULTS.md"), help="file the section is appended to")
    args = ap.parse_args()
    deep = args.distinct * 2 // 3
    work = Path(tempfile.mkdtemp(prefix="bgix-stats-bench-"))
    results: list[tuple[str, float, float, float]] = []
    try:
        print(f"building {args.rows:,} rows, {args.distinct:,} distinct strings in {work}", flush=True)
        sizes = build(work, args.rows, args.distinct)
        t0 = time.perf_counter()
        col = pq.read_table(work / "data" / "big" / "part-000.parquet", columns=["s"]).column("s")
        counts = pa.table({"s": col}).group_by("s").aggregate([("s", "count")])
        ranked = counts.sort_by([("s_count", "descending"), ("s", "ascending")])
        scan_s = time.perf_counter() - t0
        top = ranked.column("s_count")[0].as_py()
        deep_truth = ranked.column("s_count")[deep].as_py()
        del col, counts, ranked
        print(f"  plain scan (pyarrow group-by + sort of the source column): {scan_s * 1000:.0f} ms", flush=True)
        runs: list[tuple[str, str | None]] = [("new", None), ("new-reopen", None)]
        if not args.no_old:
            old = work / "old-tree"
            old.mkdir()
            arch = subprocess.run(["git", "-C", str(REPO), "archive", "HEAD", "service", "index_format"],
                                  check=True, capture_output=True).stdout
            subprocess.run(["tar", "-x", "-C", str(old)], input=arch, check=True)
            runs.insert(0, ("old", str(old)))
        for label, pythonpath in runs:
            proc, url = serve(work, args.cache_bytes, pythonpath, work / f"{label}.log")
            try:
                for table in ("big", "multi"):
                    results += measure(url, proc.pid, table, deep, label)
            finally:
                stop_server(proc)
        by = {name: v for name, v, _, _ in results}
        for label in [r[0] for r in runs]:
            for table in ("big", "multi"):
                assert by[f"{label} {table}: top value"] == top, (label, table)
                assert by[f"{label} {table}: deep page first rows"] == deep_truth, (label, table)
        write_results(args, sizes, scan_s, results, [r[0] for r in runs], deep)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


def write_results(args: argparse.Namespace, sizes: dict[str, int], scan_s: float,
                  results: list[tuple[str, float, float, float]], labels: list[str], deep: int) -> None:
    rows = {name: (v, rss, hwm) for name, v, rss, hwm in results}
    steps = ["/indexes (first)", "/indexes (warm)", "order=count page 1 (first)", "order=count page 1 (warm)",
             f"order=count offset {deep:,}", f"order=value offset {deep:,}", "order=count prefix v00012"]
    git = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True,
                         text=True).stdout.strip()
    lines = [
        "",
        f"## Index statistics: `/indexes` and `/values` on a {args.distinct / 1e6:.0f}M-distinct string index (issue 10, item 8)",
        "",
        f"Command: `.venv/bin/python bench/bench_index_stats.py --rows {args.rows} --distinct {args.distinct}` — "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, git {git} (uncommitted changes), "
        f"BGIX_CACHE_BYTES={args.cache_bytes >> 20} MiB.",
        "",
        f"Index sizes: big (1 file) {sizes['big'] / 1e6:.0f} MB, multi (2 files) {sizes['multi'] / 1e6:.0f} MB. "
        f"Plain scan baseline (pyarrow read + group-by count + sort of the source column): {scan_s:.2f} s. "
        "`new` computes and stores the statistics on first use; `new-reopen` is a fresh server reading the "
        "stored documents; `old` is the committed tree. Every run returned the same top and deep-page counts "
        "as the pyarrow ranking.",
        "",
        "| step | " + " | ".join(f"{lb} s (RSS after / peak MB)" for lb in labels) + " | old ÷ new-reopen |",
        "|---|" + "---|" * (len(labels) + 1),
    ]
    for table in ("big", "multi"):
        for st in steps:
            cells = []
            for lb in labels:
                v = rows.get(f"{lb} {table}: {st}")
                cells.append("" if v is None else f"{v[0]:.3f} ({v[1]:.0f} / {v[2]:.0f})")
            o, n = rows.get(f"old {table}: {st}"), rows.get(f"new-reopen {table}: {st}")
            ratio = f"{o[0] / n[0]:.1f}×" if o and n and n[0] > 0 else ""
            lines.append(f"| {table}: {st} | " + " | ".join(cells) + f" | {ratio} |")
    reopen = [v for k, v in rows.items() if k.startswith("new-reopen") and "top value" not in k
              and "deep page" not in k]
    worst = max(v[0] for v in reopen)
    peaks = ", ".join(f"{lb} {max(v[2] for k, v in rows.items() if k.startswith(lb + ' ')):.0f} MB"
                      for lb in labels)
    lines += ["", f"After the first open every look-up took ≤ {worst:.2f} s (target {TARGET_S:.0f} s: "
              f"{'met' if worst < TARGET_S else 'missed'}). Server peak RSS (VmHWM) per contender: {peaks}, "
              f"with a {args.cache_bytes >> 20} MiB cache budget.", ""]
    with open(args.out, "a") as fh:
        fh.write("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    sys.exit(main())
