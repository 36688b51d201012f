"""The PySpark build job end to end on generated Parquet tables (one shared local[2] session).

Expected row ids come from pyarrow on the source files (tests.factories.oracle_table), never from bgix.
"""
from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from index_format.errors import InvalidOptionError
from index_format.range_bitmap import RangeBitmapReader
from index_format.sidecar import SIDECAR_SUFFIX
from index_format.storage import Storage
from index_format.types import parse_type
from service.build_job.main import run_job
from service.build_job.engines import WorkerFailedError
from service.catalog import Catalog, RowIdError, Table
from tests.factories import (
    append_file, assert_index_matches, index_answer, make_parquet_table, make_rows, oracle_table, write_file,
)

pytestmark = pytest.mark.spark
R = {"sorted-index.records-per-range": "1000"}


def _setup(tmp_path: Path, **kw: Any) -> tuple[Catalog, Any, Path]:
    gen = make_parquet_table(tmp_path, **kw)
    wh = tmp_path / "wh"
    wh.mkdir()
    cat = Catalog(Storage(str(wh), [str(tmp_path)]))
    cat.put_table(Table("t", str(gen.location), partition_columns=gen.partition_columns))
    return cat, gen, wh


def _spec(wh: Path, job: str, column: str, **kw: Any) -> dict[str, Any]:
    return {"job_id": job, "warehouse": str(wh), "allowed_roots": [str(wh.parent)], "table": "t",
            "index_column": column, "index_type": "bitmap", "options": dict(R), **kw}


def test_spark_row_index_is_the_pyarrow_position(spark: Any, tmp_path: Path) -> None:
    # Several row groups per file, a space in the path: Spark's (file_path, row_index) must name the same
    # row pyarrow reads at that position.
    gen = make_parquet_table(tmp_path / "a dir", rows_per_file=(900, 333), row_group_size=250)
    from service.build_job.engines import from_spark_path
    rows = spark.read.parquet(*[f"file://{f}" for f in gen.files]) \
        .select("b", "_metadata.file_path", "_metadata.row_index").collect()
    seen = {(from_spark_path(r.file_path), r.row_index): r.b for r in rows}
    expected = {}
    for f in gen.files:
        for i, b in enumerate(pq.read_table(f, columns=["b"]).column("b").to_pylist()):
            expected[(str(f.resolve()), i)] = b
    assert seen == expected


@pytest.mark.parametrize("scan", ["direct", "spark"])
def test_build_partitioned_table_answers_exactly(spark: Any, tmp_path: Path, scan: str) -> None:
    cat, gen, wh = _setup(tmp_path, rows_per_file=(700, 1300, 500, 900),
                          partitions=[{"dt": "2026-06-18", "hh": "0"}, {"dt": "2026-06-19", "hh": "1"}])
    oracle = oracle_table(gen.files, ["s", "n", "x"])
    for column, key_type in (("s", "string"), ("n", "int"), ("x", "double")):
        snap = run_job(_spec(wh, f"job-{column}", column, scan=scan), spark=spark)
        assert snap is not None and snap.key_type == key_type
        assert snap.row_count == oracle.num_rows == 3400
        assert assert_index_matches(cat, snap, oracle, column) >= 7
        # ranges never cross a partition boundary and never exceed records-per-range
        sidecar_rows: set[int] = set()
        for e in snap.files:
            assert e.range_end - e.range_start + 1 <= 1000 and e.partition
            # the Spark worker wrote a range sidecar beside each index file (issue 11)
            side = cat.storage.read_bytes(cat.storage.resolve(e.path) + SIDECAR_SUFFIX)
            assert e.sidecar_size == len(side)
            sc = RangeBitmapReader(side, parse_type(key_type))
            sidecar_rows |= {e.range_start + int(i) for i in sc.is_not_null()}
        assert sidecar_rows == set(pc.filter(oracle.column("_row_id"), pc.is_valid(oracle.column(column))).to_pylist())
        job = cat.get_job(f"job-{column}")
        assert job.state == "succeeded" and job.snapshot_id == snap.id
        assert job.progress["ranges_done"] == job.progress["ranges_total"] >= 4
        assert job.progress["rows_indexed"] == 3400


def test_partitions_argument_limits_the_build(spark: Any, tmp_path: Path) -> None:
    cat, gen, wh = _setup(tmp_path, rows_per_file=(300, 400, 500),
                          partitions=[{"dt": "d1", "hh": "0"}, {"dt": "d2", "hh": "1"}])
    snap = run_job(_spec(wh, "j1", "s", partitions="dt=d2,hh=1"), spark=spark)
    d2 = [f for f in gen.files if "dt=d2" in str(f)]
    assert {s.path for s in snap.source_files} == {str(f.resolve()) for f in d2}
    full = oracle_table(gen.files, ["s"])
    only_d2 = full.filter(pc.is_in(full.column("_file"), value_set=pa.array([str(f) for f in d2])))
    assert_index_matches(cat, snap, only_d2, "s")


def test_incremental_build_then_staleness_then_rebuild(spark: Any, tmp_path: Path) -> None:
    cat, gen, wh = _setup(tmp_path, rows_per_file=(800, 1500))
    first = run_job(_spec(wh, "j1", "s"), spark=spark)
    assert first.covered_ranges == [[0, 2299]]
    before = {e.path: (cat.storage.read_bytes(e.path), os.stat(cat.storage.resolve(e.path)).st_mtime_ns)
              for e in first.files}
    data_before = {f: (f.read_bytes(), f.stat().st_mtime_ns) for f in gen.files}
    old_files = list(gen.files)

    new = append_file(gen, 7, 1200, seed=77)
    second = run_job(_spec(wh, "j2", "s"), spark=spark)
    assert second.id == first.id + 1 and second.covered_ranges == [[0, 3499]]
    assert {e.path for e in first.files} < {e.path for e in second.files}
    added = [e for e in second.files if e.path not in before]
    assert {(e.range_start, e.range_end) for e in added} == {(2300, 3299), (3300, 3499)}
    for path, (data, mtime) in before.items():  # old index files untouched
        assert cat.storage.read_bytes(path) == data
        assert os.stat(cat.storage.resolve(path)).st_mtime_ns == mtime
    for f, (data, mtime) in data_before.items():
        assert f.read_bytes() == data and f.stat().st_mtime_ns == mtime
    assert_index_matches(cat, second, oracle_table([*old_files, new], ["s"]), "s")
    assert cat.get_job("j2").progress["ranges_total"] == 2  # only the new rows were built

    # nothing new → no new snapshot
    assert run_job(_spec(wh, "j3", "s"), spark=spark).id == second.id

    # rewrite a file: the index is marked stale, naming the file
    changed = old_files[0]
    write_file(changed, make_rows(300, seed=99))
    os.utime(changed, (time.time() + 10, time.time() + 10))
    third = run_job(_spec(wh, "j4", "s"), spark=spark)
    assert third.stale and {"path": str(changed.resolve()), "reason": "changed"} in third.stale_files

    # rebuild=true indexes the current files from scratch; ids: unchanged files keep theirs,
    # the rewritten file moved to the end of the id space.
    rebuilt = run_job(_spec(wh, "j5", "s", options={**R, "rebuild": "true"}), spark=spark)
    assert not rebuilt.stale and not rebuilt.stale_files
    oracle = oracle_table([old_files[1], new, changed], ["s"])
    ids = pa.array(list(range(800, 2300)) + list(range(2300, 3500)) + list(range(3500, 3800)), pa.int64())
    assert_index_matches(cat, rebuilt, oracle.set_column(1, "_row_id", ids), "s")


def test_failed_worker_keeps_the_previous_snapshot(spark: Any, tmp_path: Path) -> None:
    cat, gen, wh = _setup(tmp_path, rows_per_file=(600, 700))
    first = run_job(_spec(wh, "j1", "s"), spark=spark)
    new = append_file(gen, 5, 2500, seed=5)
    with pytest.raises(WorkerFailedError, match="InjectedFailure: test hook"):
        run_job(_spec(wh, "j2", "s", test_hooks={"fail_after_files": 1}), spark=spark)
    job = cat.get_job("j2")
    assert job.state == "failed" and "InjectedFailure" in (job.error or "")
    # the build's log beside its record holds Spark's whole report of the failed job group (the worker's
    # traceback), and the recorded failure
    from service.jobs.job_logs import read_job_log
    text = read_job_log(cat.storage, "j2") or ""
    assert "Spark job group bgix-j2 failed" in text and "Traceback" in text and "InjectedFailure" in text
    assert "job j2 failed: WorkerFailedError" in text
    assert cat.current_snapshot("t", "s") == first
    assert_index_matches(cat, first, oracle_table(gen.files[:2], ["s"]), "s")
    again = run_job(_spec(wh, "j3", "s"), spark=spark)
    # a task still running when the job failed may have left files; the next run collects them
    assert not cat.storage.list(cat.job_index_dir("t", "s", "j2"), recursive=True)
    assert_index_matches(cat, again, oracle_table([*gen.files[:2], new], ["s"]), "s")


@pytest.mark.parametrize("scan", ["direct", "spark"])
def test_row_id_column_table(spark: Any, tmp_path: Path, scan: str) -> None:
    import numpy as np
    loc = tmp_path / "rid"
    rng = np.random.default_rng(3)
    ids = rng.permutation(np.arange(10_000, 10_000 + 3000) * 3)
    files = []
    for i in range(3):
        t = make_rows(1000, seed=i).append_column("rid", pa.array(ids[i * 1000:(i + 1) * 1000], pa.int64()))
        files.append(write_file(loc / f"f{i}.parquet", t))
    wh = tmp_path / "wh"
    cat = Catalog(Storage(str(wh), [str(tmp_path)]))
    cat.put_table(Table("t", str(loc), row_id_column="rid"))
    snap = run_job(_spec(wh, "j1", "s", scan=scan), spark=spark)
    oracle = pa.concat_tables([pq.read_table(f, columns=["s", "rid"]) for f in files])
    oracle = oracle.append_column("_row_id", oracle.column("rid"))
    assert assert_index_matches(cat, snap, oracle, "s") > 5
    assert len({(e.range_start, e.range_end) for e in snap.files}) == 3


def test_bad_arguments_are_clear_errors(spark: Any, tmp_path: Path) -> None:
    cat, gen, wh = _setup(tmp_path, rows_per_file=(100,))
    with pytest.raises(InvalidOptionError, match="bitmap"):
        run_job(_spec(wh, "j1", "s", index_type="bloom"), spark=spark)
    with pytest.raises(InvalidOptionError, match="sorted-index.records-per-rang"):
        run_job(_spec(wh, "j2", "s", options={"sorted-index.records-per-rang": "5"}), spark=spark)
    with pytest.raises(InvalidOptionError, match="not partitioned"):
        run_job(_spec(wh, "j3", "s", partitions="dt=1"), spark=spark)
    csv_loc = tmp_path / "csv"
    csv_loc.mkdir()
    (csv_loc / "a.csv").write_text("k,v\na,1\nb,2\n")
    cat.put_table(Table("c", str(csv_loc), format="csv"))
    with pytest.raises(RowIdError, match="row_id_column"):
        run_job({**_spec(wh, "j4", "k"), "table": "c", "scan": "spark"}, spark=spark)
    assert cat.get_job("j4").state == "failed"
    # the direct scan reads csv with pyarrow, whose positions are the row-id map's
    snap = run_job({**_spec(wh, "j5", "v"), "table": "c"}, spark=spark)
    assert set(index_answer(cat, snap, lambda r: r.eq(2))) == {1}


@pytest.mark.parametrize("scan", ["direct", "spark"])
def test_several_columns_of_a_plain_table_in_one_spark_build(spark: Any, tmp_path: Path, scan: str) -> None:
    """Issue 33: a plain table takes several columns and families per build, each scan reading them together."""
    cat, gen, wh = _setup(tmp_path, rows_per_file=(700, 1300))
    oracle = oracle_table(gen.files, ["s", "n"])
    result = run_job(_spec(wh, "both", "s,n", index_type="bitmap,btree", scan=scan), spark=spark)
    assert result is not None and result.id == 1 and set(result.snapshots) == {"s", "n"}
    for column, family, key_type in (("s", "bitmap", "string"), ("n", "btree", "int")):
        snap = cat.current_snapshot("t", column)
        assert (snap.index_type, snap.key_type, snap.row_count, snap.job_id) == (family, key_type, 2000, "both")
        assert assert_index_matches(cat, snap, oracle, column) >= 7
    assert cat.get_job("both").progress["rows_indexed"] == 2 * 2000


def test_spark_build_progress_moves_while_its_tasks_run(spark: Any, tmp_path: Path) -> None:
    # 4 plan tasks in ONE Spark task (max-parallelism 1): an accumulator reaches the driver only when its Spark
    # task ends, so only the task's own reports can show the plan tasks done meanwhile
    cat, gen, wh = _setup(tmp_path, rows_per_file=(1000, 1000, 1000, 1000), row_group_size=250)
    from tests.factories import observe_progress
    spec = _spec(wh, "job-p", "s", test_hooks={"sleep_per_batch": 0.4})
    spec["options"] = {**spec["options"], "sorted-index.build.max-parallelism": "1"}
    snap, seen = observe_progress(cat, "job-p", lambda: run_job(spec, spark=spark))
    assert snap is not None and snap.row_count == 4000
    final = cat.get_job("job-p").progress
    assert (final["fraction"], final["rows_indexed"], final["ranges_done"], final["ranges_total"]) == (1.0, 4000, 4, 4)
    moving = [p for p in seen if 0 < p["fraction"] < 1 and 0 < p["ranges_done"] < 4 and 0 < p["rows_indexed"] < 4000]
    assert moving, seen
    assert all(p["ranges_total"] == 4 for p in seen if p["ranges_total"]), seen
    # the tasks' report directory is gone with the build
    assert not (wh / "jobs" / "job-p.tasks").exists()
