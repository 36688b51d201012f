"""Range sidecars written by the build job beside each index file (issue 11, part 3).

Every sidecar answers ranges with exactly the rows pyarrow finds in the source data; the option turns them
off; file rotation gives each file its own sidecar holding that file's rows only; dropping the index, the
garbage collector and a failed build treat a sidecar like its index file.
"""
from __future__ import annotations

import datetime as dt
import decimal
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from index_format.global_index.reader import open_index
from index_format.global_index.writer import write_index_files
from index_format.options import IndexOptions
from index_format.range_bitmap import RangeBitmapReader
from index_format.sidecar import SIDECAR_SUFFIX
from index_format.sidecar.build import build_sidecar
from index_format.sidecar.derive import derive_sidecar
from index_format.storage import BytesSource, Storage
from index_format.types import parse_type
from service.build_job.main import run_job
from service.build_job.worker import InjectedFailure, build_batches, build_tasks
from service.catalog import Catalog, Table
from service.jobs.jobspec import JobSpec
from service.catalog.model import JobRecord
from service.tables.build_tasks import RESULT_SCHEMA, ROW_ID, BuildPlan, BuildRange, FileNames
from service.jobs.active_builds import collect_garbage
from tests.factories import append_file, assert_index_matches, make_parquet_table, oracle_table

R = {"sorted-index.records-per-range": "1000"}


def _catalog(tmp_path: Path) -> tuple[Catalog, Path]:
    wh = tmp_path / "wh"
    wh.mkdir(exist_ok=True)
    return Catalog(Storage(str(wh), [str(tmp_path)])), wh


def _spec(wh: Path, job: str, column: str, options: dict[str, str] | None = None, **kw: Any) -> dict[str, Any]:
    return {"job_id": job, "warehouse": str(wh), "allowed_roots": [str(wh.parent)], "table": "t",
            "index_column": column, "options": {**R, **(options or {})}, "engine": "local", **kw}


def _sidecar_files(cat: Catalog, column: str) -> set[str]:
    return {p for p in cat.storage.list(cat.index_dir("t", column), recursive=True) if p.endswith(SIDECAR_SUFFIX)}


def _bounds(values: list[Any]) -> list[tuple[Any, Any]]:
    """Several ranges over the column's values: single keys, wide spans, open ends, empty ones."""
    v = sorted(values)
    a, b, c = v[len(v) // 5], v[len(v) // 2], v[(4 * len(v)) // 5]
    return [(v[0], v[-1]), (a, c), (b, b), (None, a), (c, None), (a, b), (c, a)]


def _expected(oracle: pa.Table, column: str, start: int, end: int, lo: Any, hi: Any) -> set[int]:
    col, rid = oracle.column(column), oracle.column("_row_id")
    mask = pc.and_(pc.greater_equal(rid, start), pc.less_equal(rid, end))
    if lo is not None:
        mask = pc.and_(mask, pc.greater_equal(col, pa.scalar(lo, col.type)))
    if hi is not None:
        mask = pc.and_(mask, pc.less_equal(col, pa.scalar(hi, col.type)))
    return set(pc.filter(rid, mask).to_pylist())   # null values drop out (SQL)


def _check_sidecars(cat: Catalog, snap: Any, oracle: pa.Table, column: str) -> int:
    """Each entry's sidecar answers ranges with the rows pyarrow finds (one file per range here)."""
    kt = parse_type(snap.key_type)
    values = [x for x in pc.unique(oracle.column(column)).to_pylist() if x is not None]
    checked = 0
    for e in snap.files:
        path = cat.storage.resolve(e.path) + SIDECAR_SUFFIX
        data = cat.storage.read_bytes(path)
        assert e.sidecar_size == len(data)
        sc = RangeBitmapReader(data, kt)
        for lo, hi in _bounds(values):
            got = {e.range_start + int(i) for i in sc.range(lo, hi)}
            assert got == _expected(oracle, column, e.range_start, e.range_end, lo, hi), (e.path, lo, hi)
            checked += 1
        rid = oracle.column("_row_id")
        inside = pc.and_(pc.greater_equal(rid, e.range_start), pc.less_equal(rid, e.range_end))
        non_null = set(pc.filter(rid, pc.and_(inside, pc.is_valid(oracle.column(column)))).to_pylist())
        assert {e.range_start + int(i) for i in sc.is_not_null()} == non_null
    return checked


@pytest.mark.parametrize("column", ["s", "n", "x"])
def test_local_build_writes_a_sidecar_beside_each_index_file(tmp_path: Path, column: str) -> None:
    gen = make_parquet_table(tmp_path, rows_per_file=(700, 1200, 500))
    cat, wh = _catalog(tmp_path)
    cat.put_table(Table("t", str(gen.location)))
    snap = run_job(_spec(wh, "j1", column))
    assert len(snap.files) == 3 and all(e.sidecar_size for e in snap.files)
    oracle = oracle_table(gen.files, [column])
    assert _check_sidecars(cat, snap, oracle, column) >= 3 * 7
    # the sidecar lives beside its index file and nothing else is left in the data directory
    files = {cat.storage.resolve(e.path) for e in snap.files}
    assert _sidecar_files(cat, column) == {p + SIDECAR_SUFFIX for p in files}
    # the committed snapshot round-trips sidecar_size
    assert cat.current_snapshot("t", column) == snap

    # an incremental build adds sidecars for its new files only; the old ones stay referenced
    append_file(gen, 7, 300, seed=7)
    second = run_job(_spec(wh, "j2", column))
    assert len(second.files) == 4 and all(e.sidecar_size for e in second.files)
    _check_sidecars(cat, second, oracle_table(gen.files, [column]), column)
    assert assert_index_matches(cat, second, oracle_table(gen.files, [column]), column) > 5


def test_option_off_writes_no_sidecar(tmp_path: Path) -> None:
    gen = make_parquet_table(tmp_path, rows_per_file=(700, 500))
    cat, wh = _catalog(tmp_path)
    cat.put_table(Table("t", str(gen.location)))
    snap = run_job(_spec(wh, "j1", "s", {"bgix.range-sidecar": "false"}))
    assert snap.files and all(e.sidecar_size is None for e in snap.files)
    assert not _sidecar_files(cat, "s")


def test_unsupported_type_writes_no_sidecar(tmp_path: Path) -> None:
    loc = tmp_path / "dec"
    loc.mkdir()
    vals = [None if i % 7 == 0 else decimal.Decimal(i) / 100 for i in range(300)]
    pq.write_table(pa.table({"d": pa.array(vals, pa.decimal128(30, 2))}), loc / "a.parquet")
    cat, wh = _catalog(tmp_path)
    cat.put_table(Table("t", str(loc)))
    snap = run_job(_spec(wh, "j1", "d"))
    assert snap.files and all(e.sidecar_size is None for e in snap.files)
    assert not _sidecar_files(cat, "d")


def _range_rows(reader: Any) -> dict[Any, set[int]]:
    return {k: {int(i) for i in rows} for k, rows in reader.key_rows()}


def test_rotation_gives_each_file_its_own_sidecar(tmp_path: Path) -> None:
    """One range cut into several files (records-per-range 100 → 120 records per file): each file's sidecar
    holds exactly that file's rows (same local ids), and together they answer like the source data."""
    rng = np.random.default_rng(5)
    start, end = 5_000, 5_999   # a range of 1000 row ids, 700 of them present (rows of other files: gaps)
    ids = np.sort(rng.choice(np.arange(start, end + 1), 700, replace=False)).astype(np.int64)
    words = np.array([f"k{i:02d}" for i in range(37)], dtype=object)
    keys = pa.array(words[rng.integers(0, len(words), 700)], pa.string(), mask=rng.random(700) < 0.15)
    wh = tmp_path / "wh"
    storage = Storage(str(wh), [str(tmp_path)])
    opts = IndexOptions(records_per_range=100)
    plan = BuildPlan(columns={"k": "string"}, ranges=(BuildRange("k", start, end, 700),), task_rows=(),
                     reader=None, names=FileNames(storage.resolve("out")), options=opts.to_dict(),
                     storage_config=storage.to_config())
    perm = rng.permutation(700)   # rows arrive in any order, in several batches
    batches = [pa.RecordBatch.from_arrays([keys.take(pa.array(p)), pa.array(ids[p])], names=["k", ROW_ID])
               for p in np.array_split(perm, 4)]
    result = pa.Table.from_batches(list(build_batches(batches, plan)), schema=RESULT_SCHEMA)
    rows = result.to_pylist()
    assert len(rows) == 6   # 700 records, 120 per file
    kt = parse_type("string")
    oracle = pa.table({"k": keys, "_row_id": pa.array(ids)})
    union: dict[tuple[Any, Any], set[int]] = {}
    seen_ids: set[int] = set()
    for row in rows:
        data = storage.read_bytes(row["path"])
        side = storage.read_bytes(row["path"] + SIDECAR_SUFFIX)
        assert row["sidecar_size"] == len(side)
        index, sc = open_index(BytesSource(data), kt), RangeBitmapReader(side, kt)
        per_key = _range_rows(index)
        # the same rows under the same keys, as local ids of the range
        assert {int(i) for i in sc.is_not_null()} == set().union(set(), *per_key.values())
        for key, local in per_key.items():
            assert {int(i) for i in sc.eq(key.decode())} == local
        assert not seen_ids & {int(i) for i in sc.is_not_null()}   # no row in two files
        seen_ids |= {int(i) for i in sc.is_not_null()}
        # and the derived sidecar (slow path) is the same payload
        assert derive_sidecar(index, end - start + 1, chunk_size=opts.range_sidecar_chunk_size) == side
        for lo, hi in _bounds(words.tolist()):
            union.setdefault((lo, hi), set()).update(start + int(i) for i in sc.range(lo, hi))
    for (lo, hi), got in union.items():
        assert got == _expected(oracle, "k", start, end, lo, hi), (lo, hi)
    assert len(seen_ids) == int(pc.sum(pc.is_valid(keys)).as_py())


@pytest.mark.parametrize("type_, values", [
    ("string", ["b", "a", "émoji-😀", "", "zz", None, "a"]),
    ("int", [5, -3, 2**31 - 1, -(2**31), None, 5, 0]),
    ("bigint", [2**40, -1, None, 7, 7, -(2**62)]),
    ("double", [1.5, -2.25, float("inf"), float("-inf"), None, 1.5, 1e-300]),
    ("float", [1.5, -2.25, None, 3.0, 1.5]),
    ("boolean", [True, False, None, True]),
    ("date", [dt.date(2020, 1, 1), dt.date(1960, 5, 5), None, dt.date(2020, 1, 1)]),
    ("timestamp(3)", [dt.datetime(2020, 1, 1, 1, 2, 3, 4000), dt.datetime(1969, 12, 31, 23, 59, 59), None]),
    ("timestamp(6)", [dt.datetime(2020, 1, 1, 1, 2, 3, 4), dt.datetime(1969, 12, 31, 23, 59, 59, 999999)]),
    ("decimal(10,2)", [None, decimal.Decimal("1.25"), decimal.Decimal("-7.50")]),
])
def test_built_sidecar_equals_the_derived_one(type_: str, values: list[Any]) -> None:
    """The fast path (codes from the writer's sort) writes the same bytes as deriving from the bitmap file."""
    kt = parse_type(type_)
    rng = np.random.default_rng(len(values))
    keys = [values[i] for i in rng.integers(0, len(values), 400)]
    local = rng.permutation(1000)[:400]   # gaps: 1000 rows in the range, 400 of them in this file

    class Mem:
        def __init__(self) -> None:
            self.data: dict[str, bytes] = {}

        def write_atomic(self, path: str, data: bytes) -> None:
            self.data[path] = data

    mem = Mem()
    seq = iter(range(100))
    written = write_index_files(keys, local, kt, None, records_per_file=150, new_path=lambda: f"f{next(seq)}",
                                storage=mem, keep_rows=True)  # type: ignore[arg-type]
    assert len(written) == 3
    arr = pa.array(keys, pa.timestamp("us") if type_.startswith("timestamp") else None)
    for w in written:
        assert w.rows is not None
        built = build_sidecar(kt, arr, w.rows, 1000, chunk_size=64)
        assert built == derive_sidecar(open_index(BytesSource(mem.data[w.path]), kt), 1000, chunk_size=64)


def test_keep_rows_is_opt_in_and_matches_the_files() -> None:
    kt = parse_type("int")
    keys = [3, None, 1, 3, 2, None, 1]

    class Mem:
        def write_atomic(self, path: str, data: bytes) -> None:
            pass

    seq = iter(range(100))
    plain = write_index_files(keys, list(range(7)), kt, None, records_per_file=3, new_path=lambda: f"f{next(seq)}",
                              storage=Mem())  # type: ignore[arg-type]
    assert all(w.rows is None for w in plain)
    seq = iter(range(100))
    kept = write_index_files(keys, list(range(7)), kt, None, records_per_file=3, new_path=lambda: f"f{next(seq)}",
                             storage=Mem(), keep_rows=True)  # type: ignore[arg-type]
    assert kept == plain   # rows do not take part in equality
    # nulls first (rows 1, 5), then key order: 1 (rows 2, 6), 2 (row 4), 3 (rows 0, 3)
    got = [(w.rows.rows.tolist(), w.rows.row_ids.tolist(), w.rows.key_starts.tolist()) for w in kept if w.rows]
    assert got == [([2], [2], [0]), ([6, 4, 0], [6, 4, 0], [0, 1, 2]), ([3], [3], [0])]


def test_drop_index_and_garbage_collection_follow_the_index_file(tmp_path: Path) -> None:
    gen = make_parquet_table(tmp_path, rows_per_file=(700, 500))
    cat, wh = _catalog(tmp_path)
    cat.put_table(Table("t", str(gen.location)))
    first = run_job(_spec(wh, "j1", "s"))
    sidecars = _sidecar_files(cat, "s")
    assert len(sidecars) == len(first.files) == 2
    assert sidecars <= cat.referenced_files("t", "s")
    # an unreferenced index file and its sidecar (a crashed job's leftovers) are collected together
    stray = cat.index_dir("t", "s") + "/jdead/000000000000-000000000999-abc-0000.index"
    cat.storage.write_atomic(stray, b"x")
    cat.storage.write_atomic(stray + SIDECAR_SUFFIX, b"y")
    deleted = set(collect_garbage(cat, "t", "s"))
    assert deleted == {stray, stray + SIDECAR_SUFFIX}
    assert _sidecar_files(cat, "s") == sidecars   # referenced sidecars are kept
    # a rebuild keeps the old snapshot's files (still retained) and adds its own sidecars
    rebuilt = run_job(_spec(wh, "j2", "s", {"rebuild": "true"}))
    assert all(e.sidecar_size for e in rebuilt.files)
    assert _sidecar_files(cat, "s") == sidecars | {cat.storage.resolve(e.path) + SIDECAR_SUFFIX
                                                   for e in rebuilt.files}
    _check_sidecars(cat, first, oracle_table(gen.files, ["s"]), "s")
    cat.drop_index("t", "s")
    assert not cat.storage.list(cat.index_dir("t", "s"), recursive=True)


def test_failed_build_leaves_the_previous_index_and_its_sidecars(tmp_path: Path) -> None:
    gen = make_parquet_table(tmp_path, rows_per_file=(700, 500))
    cat, wh = _catalog(tmp_path)
    cat.put_table(Table("t", str(gen.location)))
    first = run_job(_spec(wh, "j1", "s"))
    before = {p: cat.storage.read_bytes(p) for p in _sidecar_files(cat, "s")}
    append_file(gen, 5, 2500, seed=5)
    with pytest.raises(InjectedFailure):
        run_job(_spec(wh, "j2", "s", test_hooks={"fail_after_files": 1}))
    assert cat.get_job("j2").state == "failed"
    assert cat.current_snapshot("t", "s") == first
    # the failed job's files (index files and sidecars) are gone; the previous ones are untouched
    assert not cat.storage.list(cat.job_index_dir("t", "s", "j2"), recursive=True)
    assert {p: cat.storage.read_bytes(p) for p in _sidecar_files(cat, "s")} == before
    _check_sidecars(cat, first, oracle_table(gen.files[:2], ["s"]), "s")
    # every sidecar on disk belongs to a referenced index file
    assert _sidecar_files(cat, "s") <= cat.referenced_files("t", "s")
    again = run_job(_spec(wh, "j3", "s"))
    assert all(e.sidecar_size for e in again.files)
    _check_sidecars(cat, again, oracle_table(gen.files, ["s"]), "s")


def test_paimon_build_tasks_write_no_sidecar_into_the_table(tmp_path: Path) -> None:
    """Paimon tables get their sidecars derived lazily into bgix's warehouse, never written by the build."""
    from service.tables.paimon.paimon_source import PaimonSource
    from tests.unit.tables.paimon.paimon_tables import create_table

    location = create_table(tmp_path / "pwh", "events", commits=2, rows=300)
    spec = JobSpec(job_id="p", warehouse=str(tmp_path / "wh"), table="events", index_column="status,code",
                   table_format="paimon", options=IndexOptions(records_per_range=250))
    plan = PaimonSource(None, Table("events", str(location), "paimon")).plan_build(spec)  # type: ignore[arg-type]
    built = pa.Table.from_batches(list(build_tasks(range(plan.tasks), plan)), schema=RESULT_SCHEMA).to_pylist()
    assert len(built) >= 4 and all(f["path"].endswith(".index") for f in built)
    assert not list(location.rglob(f"*{SIDECAR_SUFFIX}"))


def test_a_sidecar_that_cannot_be_built_does_not_fail_the_build(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from service.build_job import worker

    def broken(*args: Any, **kwargs: Any) -> bytes:
        raise ValueError("cannot encode")

    monkeypatch.setattr(worker, "build_sidecar", broken)
    gen = make_parquet_table(tmp_path, rows_per_file=(700, 500))
    cat, wh = _catalog(tmp_path)
    cat.put_table(Table("t", str(gen.location)))
    snap = run_job(_spec(wh, "j1", "s"))
    assert snap.files and all(e.sidecar_size is None for e in snap.files)
    assert not _sidecar_files(cat, "s")
    assert_index_matches(cat, snap, oracle_table(gen.files, ["s"]), "s")


def test_a_job_cancelled_before_its_process_starts_builds_nothing(tmp_path: Path) -> None:
    """With several workers a cancel can reach the record before the build process starts: the process
    must leave the record cancelled and write nothing (issue 11, workers)."""
    gen = make_parquet_table(tmp_path, rows_per_file=(300,))
    cat, wh = _catalog(tmp_path)
    cat.put_table(Table("t", str(gen.location)))
    cat.put_job(JobRecord(id="jc", table="t", column="s", state="cancelled"))
    assert run_job(_spec(wh, "jc", "s")) is None
    assert cat.get_job("jc").state == "cancelled"
    assert cat.current_snapshot("t", "s") is None
    assert not cat.storage.list(cat.index_dir("t", "s"), recursive=True)
