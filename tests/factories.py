"""Test-data builders shared by unit and e2e tests: generated Parquet tables and their row-id oracle.

The oracle (`oracle_table`) numbers rows independently of bgix: files in the given order, each file's
rows in pyarrow's read order, ids counted up from 0.
"""
from __future__ import annotations

import os
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq


def make_rows(n: int, seed: int = 0, *, null_fraction: float = 0.1, distinct: int = 40) -> pa.Table:
    """n rows: `s` string (nulls), `n` int32 (nulls), `b` bigint, `x` double (nulls, NaN-free), `flag` bool."""
    rng = np.random.default_rng(seed)
    nulls = rng.random(n) < null_fraction
    words = np.array([f"w{i:03d}" for i in range(distinct)] + ["", "émoji-😀", "zz"], dtype=object)
    s = words[rng.integers(0, len(words), n)]
    ints = rng.integers(-50, 50, n).astype(np.int32)
    int_nulls = rng.random(n) < null_fraction
    x = np.round(rng.normal(0, 10, n), 1)
    return pa.table({
        "s": pa.array(s, type=pa.string(), mask=nulls),
        "n": pa.array(ints, type=pa.int32(), mask=int_nulls),
        "b": pa.array(rng.integers(0, 1_000_000, n), type=pa.int64()),
        "x": pa.array(x, type=pa.float64(), mask=rng.random(n) < null_fraction),
        "flag": pa.array(rng.random(n) < 0.5, type=pa.bool_()),
    })


def random_array(rng: random.Random, values: Sequence[Any], *, null: float = 0.08, empty: float = 0.16,
                 longest: int = 4, null_element: float = 0.05) -> list[Any] | None:
    """One ARRAY cell for multivalue tests: NULL below `null`, [] below `empty`, else 1..`longest` elements drawn
    from `values` (repeats allowed), each NULL with probability `null_element`."""
    r = rng.random()
    if r < null:
        return None
    if r < empty:
        return []
    return [None if rng.random() < null_element else rng.choice(values) for _ in range(rng.randint(1, longest))]


@dataclass
class GeneratedTable:
    location: Path
    files: list[Path] = field(default_factory=list)   # in path order (= row-id order at creation)
    partition_columns: list[str] = field(default_factory=list)


def write_file(path: Path, table: pa.Table, row_group_size: int | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path, row_group_size=row_group_size)
    return path


def make_parquet_table(
    tmp_path: Path,
    name: str = "t",
    *,
    rows_per_file: Sequence[int] = (700, 1200, 500),
    partitions: Sequence[dict[str, str]] | None = None,
    seed: int = 0,
    row_group_size: int | None = 400,
) -> GeneratedTable:
    """A directory of Parquet files: one file per entry of rows_per_file, spread round-robin over the
    hive partitions (`dt=…/hh=…/part-00003.parquet`) when `partitions` is given."""
    location = tmp_path / name
    location.mkdir(parents=True, exist_ok=True)
    part_cols = list(partitions[0]) if partitions else []
    files = []
    for i, rows in enumerate(rows_per_file):
        sub = location
        if partitions:
            for k, v in partitions[i % len(partitions)].items():
                sub = sub / f"{k}={v}"
        files.append(write_file(sub / f"part-{i:05d}.parquet", make_rows(rows, seed * 1000 + i), row_group_size))
    return GeneratedTable(location, sorted(files), part_cols)


def append_file(gen: GeneratedTable, index: int, rows: int, seed: int,
                partition: dict[str, str] | None = None) -> Path:
    sub = gen.location
    for k, v in (partition or {}).items():
        sub = sub / f"{k}={v}"
    path = write_file(sub / f"part-{index:05d}.parquet", make_rows(rows, seed))
    gen.files.append(path)
    return path


def oracle_table(files_in_id_order: Sequence[Path], columns: Sequence[str]) -> pa.Table:
    """The given columns of every file plus `_row_id` (0, 1, … across files in the given order)
    and `_file` — computed with pyarrow only."""
    parts = []
    next_id = 0
    for f in files_in_id_order:
        t = pq.read_table(f, columns=list(columns))
        t = t.append_column("_row_id", pa.array(np.arange(next_id, next_id + t.num_rows), pa.int64()))
        t = t.append_column("_file", pa.array([os.fspath(f)] * t.num_rows, pa.string()))
        next_id += t.num_rows
        parts.append(t)
    return pa.concat_tables(parts)


def file_id_oracle(paths: Sequence[Path]) -> list[tuple[str, int, int]]:
    """(path, first_row_id, rows) of files given ids in path order, rows counted by pyarrow (not by bgix)."""
    out, next_id = [], 0
    for p in sorted(str(x) for x in paths):
        n = pq.ParquetFile(p).metadata.num_rows
        out.append((p, next_id, n))
        next_id += n
    return out


def index_answer(catalog: object, snapshot: object, ask: object) -> object:
    """Global row ids answered by a snapshot's index files: `ask(reader)` per file, shifted by the file's
    range start (spec §5.1) and ORed. Uses the snapshot's family's reader; the expected side never does."""
    from pyroaring import BitMap64

    from index_format.families import family
    from index_format.types import parse_type

    kt = parse_type(snapshot.key_type)  # type: ignore[attr-defined]
    open_reader = family(snapshot.index_type).open_reader  # type: ignore[attr-defined]
    out = BitMap64()
    for f in snapshot.files:  # type: ignore[attr-defined]
        reader = open_reader(catalog.storage.open_source(f.path, f.file_size), kt)  # type: ignore[attr-defined]
        local = ask(reader)  # type: ignore[operator]
        out |= BitMap64(int(i) + f.range_start for i in local)
    return out


def _ids(oracle: pa.Table, mask: pa.Array | pa.ChunkedArray) -> set[int]:
    import pyarrow.compute as pc
    return set(pc.filter(oracle.column("_row_id"), mask).to_pylist())  # null mask → row dropped (SQL)


def assert_index_matches(catalog: object, snapshot: object, oracle: pa.Table, column: str) -> int:
    """Check many predicates: rows answered by the index == rows pyarrow finds in `oracle` (SQL null rules).

    Returns how many predicates were checked."""
    import pyarrow.compute as pc

    col = oracle.column(column)
    values = sorted(v for v in pc.unique(col).to_pylist() if v is not None)
    picks = sorted({values[0], values[len(values) // 3], values[len(values) // 2], values[-1]})
    checks: list[tuple[str, object, set[int]]] = [
        ("is_null", lambda r: r.null_rows(), _ids(oracle, pc.is_null(col))),
        ("is_not_null", lambda r: r.non_null_rows(), _ids(oracle, pc.is_valid(col))),
        ("in", lambda r: r.isin(picks[:3]), _ids(oracle, pc.is_in(col, value_set=pa.array(picks[:3], col.type)))),
    ]
    for v in picks:
        checks.append((f"eq {v!r}", lambda r, v=v: r.eq(v), _ids(oracle, pc.equal(col, pa.scalar(v, col.type)))))
    lo, hi = values[len(values) // 4], values[(3 * len(values)) // 4]
    checks.append((f"between {lo!r} {hi!r}", lambda r: r.range(lo, hi),
                   _ids(oracle, pc.and_(pc.greater_equal(col, pa.scalar(lo, col.type)),
                                        pc.less_equal(col, pa.scalar(hi, col.type))))))
    checks.append((f"> {hi!r}", lambda r: r.range(hi, None, low_inclusive=False),
                   _ids(oracle, pc.greater(col, pa.scalar(hi, col.type)))))
    if pa.types.is_string(col.type):
        checks.append(("starts_with w00", lambda r: r.starts_with("w00"),
                       _ids(oracle, pc.starts_with(col, pattern="w00"))))
        checks.append(("eq absent", lambda r: r.eq("not-there"), set()))
    for name, ask, expected in checks:
        got = set(index_answer(catalog, snapshot, ask))  # type: ignore[arg-type]
        assert got == expected, f"{column} {name}: {len(got)} rows from the index, {len(expected)} expected; " \
                                f"extra {sorted(got - expected)[:5]} missing {sorted(expected - got)[:5]}"
    return len(checks)


def observe_progress(catalog: Any, job_id: str, build: Callable[[], Any], poll_s: float = 0.05
                     ) -> tuple[Any, list[dict[str, Any]]]:
    """Run `build()` in a thread and read the job record's progress meanwhile, as a reader would:
    (build's result, every distinct progress seen while it ran, in order)."""
    import threading

    out: dict[str, Any] = {}

    def run() -> None:
        try:
            out["result"] = build()
        except BaseException as exc:  # re-raised in the caller's thread
            out["error"] = exc

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    seen: list[dict[str, Any]] = []
    while worker.is_alive():
        try:
            p = dict(catalog.get_job(job_id).progress)
        except Exception:   # not recorded yet
            p = None
        if p is not None and (not seen or p != seen[-1]):
            seen.append(p)
        time.sleep(poll_s)
    worker.join()
    if "error" in out:
        raise out["error"]
    return out.get("result"), seen
