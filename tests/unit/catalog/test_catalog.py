"""Catalog: table registry, the row-id map, snapshot commits (CAS), job records, garbage collection."""
from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from index_format.storage import Storage
from service.catalog import (
    Catalog, CommitConflictError, IndexFileEntry, IndexNotFoundError, JobNotFoundError, JobRecord,
    Snapshot, Table, TableExistsError, TableNotFoundError, BuildInProgressError,
)
from service.jobs.active_builds import active_jobs, check_no_active_build, collect_garbage
from service.tables.files.data_files import DataFileMap
from tests.factories import append_file, make_parquet_table


@pytest.fixture()
def catalog(tmp_path: Path) -> Catalog:
    wh = tmp_path / "wh"
    wh.mkdir()
    return Catalog(Storage(str(wh), allowed_roots=[str(tmp_path)]))


def _snap(column: str = "s", files: list[IndexFileEntry] | None = None) -> Snapshot:
    return Snapshot(id=0, table="t", column=column, key_type="string", files=files or [])


def test_tables_register_get_list_drop(catalog: Catalog, tmp_path: Path) -> None:
    gen = make_parquet_table(tmp_path)
    t = catalog.put_table(Table("t", str(gen.location)))
    assert catalog.get_table("t").location == str(gen.location.resolve())
    assert catalog.put_table(Table("t", str(gen.location))).created_at == t.created_at  # idempotent
    with pytest.raises(TableExistsError):
        catalog.put_table(Table("t", str(gen.location), row_id_column="b"))
    assert [x.name for x in catalog.list_tables()] == ["t"]
    catalog.drop_table("t")
    with pytest.raises(TableNotFoundError):
        catalog.get_table("t")
    assert gen.files[0].exists()  # data is never touched


def test_row_id_map_is_path_ordered_and_stable(catalog: Catalog, tmp_path: Path) -> None:
    gen = make_parquet_table(tmp_path, rows_per_file=(300, 200, 100),
                             partitions=[{"dt": "2026-06-18"}, {"dt": "2026-06-19"}])
    catalog.put_table(Table("t", str(gen.location), partition_columns=["dt"]))
    files = DataFileMap(catalog).live("t")
    # oracle: sort paths, count rows with pyarrow, cumulate
    expected, next_id = [], 0
    for p in sorted(str(f) for f in gen.files):
        expected.append((p, next_id, pq.ParquetFile(p).metadata.num_rows))
        next_id += expected[-1][2]
    assert [(f.path, f.first_row_id, f.row_count) for f in files] == expected
    assert files[0].partition == {"dt": "2026-06-18"}

    # A new file sorting *before* the others still gets ids after the current maximum.
    new = append_file(gen, 0, 50, seed=9, partition={"dt": "2026-06-17"})
    files2 = DataFileMap(catalog).refresh("t")
    assert [(f.path, f.first_row_id) for f in files2[:3]] == [(p, i) for p, i, _ in expected]
    assert (files2[-1].path, files2[-1].first_row_id, files2[-1].row_count) == (str(new), next_id, 50)

    # A rewritten file is retired and re-added at the end; a removed one is retired.
    changed = Path(expected[0][0])
    pq.write_table(pq.read_table(changed).slice(0, 10), changed)
    os.utime(changed, (time.time() + 5, time.time() + 5))
    Path(expected[1][0]).unlink()
    files3 = DataFileMap(catalog).refresh("t")
    by_path = {f.path: f for f in files3}
    assert by_path[str(changed)].first_row_id == next_id + 50 and by_path[str(changed)].row_count == 10
    assert expected[1][0] not in by_path
    assert {f.path for f in DataFileMap(catalog).retired("t")} == {expected[0][0], expected[1][0]}
    assert by_path[expected[2][0]].first_row_id == expected[2][1]


def test_commit_is_compare_and_swap(catalog: Catalog) -> None:
    assert catalog.current_snapshot("t", "s") is None
    s1 = catalog.commit("t", "s", None, _snap())
    assert s1.id == 1 and catalog.current_snapshot("t", "s") == s1
    with pytest.raises(CommitConflictError):
        catalog.commit("t", "s", None, _snap())
    s2 = catalog.commit("t", "s", 1, _snap())
    assert (s2.id, s2.parent_id) == (2, 1)
    with pytest.raises(CommitConflictError):
        catalog.commit("t", "s", 1, _snap())
    assert catalog.current_snapshot("t", "s").id == 2
    assert catalog.get_snapshot("t", "s", 1) == s1  # older versions stay readable


def test_concurrent_commits_threads_exactly_one_wins(catalog: Catalog) -> None:
    catalog.commit("t", "s", None, _snap())
    results: list[str] = []
    barrier = threading.Barrier(8)

    def attempt(i: int) -> None:
        barrier.wait()
        try:
            catalog.commit("t", "s", 1, _snap(files=[IndexFileEntry(f"f{i}", 0, 9, 10, 1, "")]))
            results.append("won")
        except CommitConflictError:
            results.append("lost")

    threads = [threading.Thread(target=attempt, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert sorted(results) == ["lost"] * 7 + ["won"]
    assert catalog.current_snapshot("t", "s").id == 2


_COMMIT_SCRIPT = """
import sys, time
from index_format.storage import Storage
from service.catalog import Catalog, CommitConflictError, Snapshot
cat = Catalog(Storage(sys.argv[1]))
start = float(sys.argv[2])
while time.time() < start:
    time.sleep(0.001)
try:
    cat.commit("t", "s", 1, Snapshot(id=0, table="t", column="s", key_type="string", job_id=sys.argv[3]))
    print("won")
except CommitConflictError:
    print("lost")
"""


def test_concurrent_commits_processes_exactly_one_wins(catalog: Catalog) -> None:
    catalog.commit("t", "s", None, _snap())
    start = time.time() + 2.0
    procs = [subprocess.Popen([sys.executable, "-c", _COMMIT_SCRIPT, catalog.storage.root, str(start), f"p{i}"],
                              stdout=subprocess.PIPE, text=True) for i in range(3)]
    outs = [p.communicate(timeout=60)[0].strip() for p in procs]
    assert sorted(outs) == ["lost", "lost", "won"]
    winner = catalog.current_snapshot("t", "s")
    assert winner.id == 2 and winner.job_id == f"p{outs.index('won')}"


def test_jobs_and_progress(catalog: Catalog) -> None:
    with pytest.raises(JobNotFoundError):
        catalog.get_job("nope")
    job = catalog.put_job(JobRecord(id="j1", table="t", column="s", spec={"k": 1}))
    catalog.write_progress("j1", {"ranges_total": 4, "ranges_done": 1, "fraction": 0.25})
    got = catalog.get_job("j1")
    assert got.progress == {"fraction": 0.25, "rows_indexed": 0, "ranges_done": 1, "ranges_total": 4}
    assert got.spec == {"k": 1} and got.created_at == job.created_at
    catalog.update_job("j1", state="running", pid=os.getpid())
    with pytest.raises(BuildInProgressError):
        check_no_active_build(catalog, "t", "s")
    check_no_active_build(catalog, "t", "s", except_job="j1")
    # a job whose process is gone does not block builds
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait(timeout=30)
    catalog.update_job("j1", pid=dead.pid)
    check_no_active_build(catalog, "t", "s")
    assert [j.id for j in catalog.list_jobs()] == ["j1"]


def test_garbage_collection_keeps_referenced_and_live_job_files(catalog: Catalog) -> None:
    st = catalog.storage
    for rel in ("jobA/a.index", "jobB/b.index", "jobC/c.index"):
        st.write_atomic(f"{catalog.index_dir('t', 's')}/{rel}", b"x")
    ref = st.relative(f"{catalog.index_dir('t', 's')}/jobA/a.index")
    catalog.commit("t", "s", None, _snap(files=[IndexFileEntry(ref, 0, 9, 10, 1, "")]))
    catalog.put_job(JobRecord(id="jobC", table="t", column="s", state="running", pid=os.getpid()))
    deleted = collect_garbage(catalog, "t", "s")
    assert [Path(p).name for p in deleted] == ["b.index"]
    assert st.exists(ref)
    catalog.drop_index("t", "s")
    assert catalog.current_snapshot("t", "s") is None
    assert not st.exists(ref)
    with pytest.raises(IndexNotFoundError):
        catalog.drop_index("t", "s")


def test_concurrent_refresh_never_hands_out_ids_twice(catalog: Catalog, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    gen = make_parquet_table(tmp_path, rows_per_file=(100,))
    catalog.put_table(Table("t", str(gen.location)))
    DataFileMap(catalog).refresh("t")
    other = Catalog(Storage(catalog.storage.root, [str(tmp_path)]))
    late = append_file(gen, 5, 30, seed=1)
    original = catalog.storage.write_if_absent
    raced: list[Path] = []

    def racing(path: str, data: bytes) -> bool:
        if not raced and "/files/" in path:
            # a competing scan commits first and sees one more file, sorting before ours
            raced.append(append_file(gen, 3, 20, seed=2))
            DataFileMap(other).refresh("t")
        return original(path, data)

    monkeypatch.setattr(catalog.storage, "write_if_absent", racing)
    files = DataFileMap(catalog).refresh("t")
    got = {Path(f.path).name: (f.first_row_id, f.row_count) for f in files}
    assert got == {"part-00000.parquet": (0, 100), raced[0].name: (100, 20), late.name: (120, 30)}
    assert DataFileMap(catalog).live("t") == DataFileMap(other).live("t")


def test_active_build_check_names_the_job_per_index_or_per_table(catalog: Catalog) -> None:
    catalog.put_job(JobRecord(id="queued1", table="t", column="s"))  # queued: no process recorded yet
    catalog.put_job(JobRecord(id="other", table="u", column="s", state="running", pid=os.getpid()))
    with pytest.raises(BuildInProgressError, match="index t.s is already being built by job queued1") as err:
        check_no_active_build(catalog, "t", "s")
    assert err.value.job_id == "queued1"
    with pytest.raises(BuildInProgressError, match="table 't' is already being built by job queued1"):
        check_no_active_build(catalog, "t")
    check_no_active_build(catalog, "t", "n")
    assert [j.id for j in active_jobs(catalog, "t")] == ["queued1"]
    catalog.update_job("queued1", state="failed")
    check_no_active_build(catalog, "t")


def test_table_location_rules(catalog: Catalog, tmp_path: Path) -> None:
    from index_format.errors import PathNotAllowedError
    from service.catalog.catalog_errors import LocationNotAllowedError
    with pytest.raises(PathNotAllowedError, match="absolute path") as rel:
        catalog.put_table(Table("t", "data/t"))
    assert not isinstance(rel.value, LocationNotAllowedError)  # relative: a bad argument, not a refusal
    for bad in ("/etc", str(tmp_path / "wh" / "tables" / "x"), str(tmp_path / "wh" / "jobs"), "s3://b/x"):
        with pytest.raises(LocationNotAllowedError):
            catalog.put_table(Table("t", bad))
    assert catalog.check_location(str(tmp_path / "data")) == str(tmp_path / "data")
    assert catalog.check_location(str(tmp_path / "wh" / "tablesx")) == str(tmp_path / "wh" / "tablesx")
    assert catalog.list_tables() == []
