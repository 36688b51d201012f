"""Orphan global index files on real Paimon tables (pypaimon writes the data, deletion vectors and snapshots;
bgix's own planner and worker write index files exactly as a build does).

What is referenced is judged by pypaimon's index manifest listing of each snapshot and tag, what a query answers
by pypaimon-rust's SQL (it reads the global indexes) against pyarrow over pypaimon's read, and what was removed by
the directory itself — never by the cleanup's own report alone.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from pypaimon.index.index_file_handler import IndexFileHandler
from pypaimon_rust.datafusion import SQLContext

from index_format.storage import Storage, local, temp_target
from service.build_job.main import run_job
from service.build_job.worker import build_tasks
from service.catalog import Catalog, Table
from service.jobs.inflight_builds import end_inflight, list_inflight, put_inflight
from service.jobs.jobspec import JobSpec
from service.catalog.model import JobRecord
from service.tables import open_source, remove_dead_build_files
from service.tables.build_tasks import RESULT_SCHEMA, job_stamp
from service.tables.paimon.drop import drop_column_indexes
from service.tables.paimon.orphan_files import OrphanScanError
from service.tables.paimon.paimon_source import PaimonSource
from tests.unit.tables.paimon.paimon_tables import create_table, delete_rows, pypaimon_read, pypaimon_table

R = {"sorted-index.records-per-range": "300"}


def _setup(tmp_path: Path) -> tuple[Path, Catalog, Path]:
    data = tmp_path / "data"
    location = create_table(data / "warehouse", "events", commits=2, rows=500)
    delete_rows(location, [3, 4, 5, 600])   # deletion-vector index files (`index-…`) in the same directory
    wh = tmp_path / "wh"
    wh.mkdir()
    catalog = Catalog(Storage(str(wh), [str(data)]))
    catalog.put_table(Table(name="events", location=str(location), format="paimon"))
    return location, catalog, wh


def _build(catalog: Catalog, wh: Path, job: str, column: str) -> None:
    run_job({"job_id": job, "warehouse": str(wh), "allowed_roots": [str(wh.parent / "data")], "table": "events",
             "index_column": column, "table_format": "paimon", "engine": "local", "options": dict(R)})


def _write_like_a_build(catalog: Catalog, location: Path, job: str, column: str) -> set[str]:
    """A build's index files, written by bgix's planner and worker for job `job`, never committed."""
    spec = JobSpec(job_id=job, warehouse=catalog.storage.root, table="events", index_column=column,
                   table_format="paimon", options=dict(R))
    plan = PaimonSource(catalog, Table("events", str(location), "paimon")).plan_build(spec)
    written = pa.Table.from_batches(list(build_tasks(range(plan.tasks), plan)), schema=RESULT_SCHEMA)
    assert written.num_rows > 1
    return {p.rsplit("/", 1)[-1] for p in written.column("path").to_pylist()}


def _dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def _mark_dead(wh: Path, job: str) -> None:
    """The in-flight marker of `job` as a build killed mid-way leaves it: naming a process that is gone."""
    path = wh / "jobs" / f"{job}.inflight"
    doc = json.loads(path.read_text())
    doc.update(pid=_dead_pid(), pid_start=None)
    path.write_text(json.dumps(doc))


def _names(location: Path) -> set[str]:
    return set(os.listdir(location / "index"))


def _referenced(location: Path) -> set[str]:
    """pypaimon's listing: index files named by any snapshot still present or any tag."""
    table = pypaimon_table(location)
    handler = IndexFileHandler(table=table)
    snaps = table.snapshot_manager().list_snapshots()
    tags = [table.tag_manager().get(t) for t in table.tag_manager().list_tags()] if (location / "tag").exists() else []
    return {str(e.index_file.file_name) for s in [*snaps, *tags] for e in handler.scan(s)}


def _age(path: Path, seconds: float) -> None:
    t = time.time() - seconds
    os.utime(path, (t, t))


def _rust_row_ids(location: Path, where: str) -> list[int]:
    ctx = SQLContext()
    ctx.register_catalog("p", {"warehouse": str(location.parent.parent)})
    ctx.set_current_catalog("p")
    got = pa.Table.from_batches(ctx.sql(f'SELECT "_ROW_ID" FROM db.{location.name} WHERE {where}'))
    return sorted(got.column("_ROW_ID").to_pylist()) if got.num_rows else []


def _truth(location: Path, column: str, value: object) -> list[int]:
    rows = pypaimon_read(location, [column])
    return sorted(rows.filter(pc.equal(rows.column(column), value)).column("_ROW_ID").to_pylist())


def _every_snapshot_reads(location: Path) -> None:
    table = pypaimon_table(location)
    for snap in table.snapshot_manager().list_snapshots():
        pinned = table.copy({"scan.snapshot-id": str(snap.id)})
        rb = pinned.new_read_builder()
        rb.new_read().to_arrow(rb.new_scan().plan().splits())
        for e in IndexFileHandler(table=pinned).scan(snap):
            assert (location / "index" / e.index_file.file_name).exists(), (snap.id, e.index_file.file_name)


def test_a_killed_build_leaves_files_that_the_dead_build_cleanup_removes_exactly(tmp_path: Path) -> None:
    location, catalog, wh = _setup(tmp_path)
    _build(catalog, wh, "done", "status")                      # committed: must stay
    before = _names(location)
    assert any(n.startswith("index-") for n in before)          # deletion-vector files are there too
    put_inflight(catalog.storage, "killed", "events", str(location), "paimon")
    orphans = _write_like_a_build(catalog, location, "killed", "code")
    assert _names(location) == before | orphans
    # while its process lives (this one) nothing goes, whatever the age
    for n in orphans:
        _age(location / "index" / n, 7200)
    assert remove_dead_build_files(catalog) == []
    assert open_source(catalog, "events").remove_orphan_files(older_than_s=0, dry_run=False).removed == ()
    assert _names(location) == before | orphans
    tasks = wh / "jobs" / "killed.tasks"   # what its Spark tasks reported of their progress
    tasks.mkdir(parents=True)
    (tasks / "0.json").write_text('{"0": 10}')
    _mark_dead(wh, "killed")
    size = sum(os.path.getsize(location / "index" / n) for n in orphans)
    reports = remove_dead_build_files(catalog)
    assert not tasks.exists(), "the dead build's task reports went with its files"
    assert [sorted(f.file_name for f in r.removed) for r in reports] == [sorted(orphans)]
    assert all(f.job_id == "killed" for f in reports[0].removed) and reports[0].bytes == size
    assert _names(location) == before
    assert list_inflight(catalog.storage) == []                 # the marker went with them
    # the committed index still answers exactly (pypaimon-rust over it vs pyarrow over pypaimon's read)
    for value in ("ok", "error", ""):
        assert _rust_row_ids(location, f"status = '{value}'") == _truth(location, "status", value)
    _every_snapshot_reads(location)


def test_a_live_builds_temp_files_stay_and_a_failed_builds_files_go(tmp_path: Path) -> None:
    """A build's write temp file is named after the index file it becomes, so its job stamp keeps it while the
    build lives, whatever the age guard; a failed build marks its marker ended and its files, temp files too,
    go though its process (a build runner) lives on."""
    location, catalog, wh = _setup(tmp_path)
    _build(catalog, wh, "done", "status")
    before = _names(location)
    marker = put_inflight(catalog.storage, "failing", "events", str(location), "paimon")   # this process: live
    pending = _write_like_a_build(catalog, location, "failing", "code")
    target = location / "index" / next(iter(pending))
    temp = Path(local._write_temp(str(target), b"being written"))   # what write_atomic renames into place
    assert temp.name.startswith(".tmp-") and temp_target(temp.name) == target.name
    for n in (*pending, temp.name):
        _age(location / "index" / n, 7200)
    report = open_source(catalog, "events").remove_orphan_files(older_than_s=0, dry_run=False)
    assert report.removed == () and report.kept_in_flight == len(pending) + 1
    assert _names(location) == before | pending | {temp.name}
    end_inflight(catalog.storage, marker)
    reports = remove_dead_build_files(catalog)
    assert sorted(f.file_name for r in reports for f in r.removed) == sorted({*pending, temp.name})
    assert _names(location) == before and list_inflight(catalog.storage) == []
    _every_snapshot_reads(location)


def test_old_snapshots_tags_and_branches_keep_their_files(tmp_path: Path) -> None:
    location, catalog, wh = _setup(tmp_path)
    _build(catalog, wh, "b1", "status")
    table = pypaimon_table(location)
    indexed = table.snapshot_manager().get_latest_snapshot()
    files = {n for n in _names(location) if "-global-index-" in n}
    assert files and files <= _referenced(location)
    table.tag_manager().create_tag(indexed, "before-drop")
    drop_column_indexes(str(location), "status")                # the latest snapshot no longer names them
    latest = pypaimon_table(location).snapshot_manager().get_latest_snapshot()
    assert not {str(e.index_file.file_name) for e in IndexFileHandler(table=table).scan(latest)} & files
    source = open_source(catalog, "events")
    for n in files:
        _age(location / "index" / n, 7200)
    # an older snapshot still names them
    report = source.remove_orphan_files(older_than_s=0, dry_run=False)
    assert report.removed == () and report.kept_referenced == len(files) and _names(location) >= files
    # that snapshot expires: the tag still names them
    (location / "snapshot" / f"snapshot-{indexed.id}").unlink()
    assert source.remove_orphan_files(older_than_s=0, dry_run=False).removed == ()
    # the tag goes, a branch made from it names them
    branch = location / "branch" / "branch-b"
    (branch / "snapshot").mkdir(parents=True)
    shutil.copytree(location / "schema", branch / "schema")
    shutil.move(str(location / "tag" / "tag-before-drop"), branch / "snapshot" / f"snapshot-{indexed.id}")
    assert files & _referenced(location) == set()                # main's snapshots and tags no longer do
    assert source.remove_orphan_files(older_than_s=0, dry_run=False).removed == ()
    assert _names(location) >= files
    # the branch goes too: nothing names them, and the build that wrote them is over
    shutil.rmtree(location / "branch")
    dry = source.remove_orphan_files(older_than_s=3600, dry_run=True)
    assert {f.file_name for f in dry.removed} == files and {f.job_id for f in dry.removed} == {"b1"}
    assert dry.bytes == sum(os.path.getsize(location / "index" / n) for n in files)
    assert _names(location) >= files                             # a dry run removes nothing
    source.remove_orphan_files(older_than_s=3600, dry_run=False)
    assert not _names(location) & files
    assert any(n.startswith("index-") for n in _names(location))  # deletion vectors untouched
    _every_snapshot_reads(location)


def test_running_builds_and_young_foreign_files_are_kept(tmp_path: Path) -> None:
    location, catalog, wh = _setup(tmp_path)
    _build(catalog, wh, "b1", "status")
    committed = _names(location)
    put_inflight(catalog.storage, "running", "events", str(location), "paimon")   # this process: live
    pending = _write_like_a_build(catalog, location, "running", "code")
    some = next(n for n in committed if "-global-index-" in n)
    foreign_young = "btree-global-index-0b0e5d4c-1c6e-4a5e-9f00-3f1d2a4b5c6d.index"
    foreign_old = "bitmap-global-index-7d9c1a2b-3e4f-4a5b-8c6d-7e8f9a0b1c2d.index"
    for name in (foreign_young, foreign_old):
        shutil.copy(location / "index" / some, location / "index" / name)
    for n in (*pending, foreign_old):
        _age(location / "index" / n, 7200)
    report = open_source(catalog, "events").remove_orphan_files(older_than_s=3600, dry_run=False)
    assert [f.file_name for f in report.removed] == [foreign_old] and report.removed[0].job_id is None
    assert report.kept_in_flight == len(pending) and report.kept_young == 1
    assert _names(location) == committed | pending | {foreign_young}
    # a job record still queued (its process not started yet) protects its files too
    catalog.put_job(JobRecord(id="queued", table="events", column="flag", spec={}))
    queued = _write_like_a_build(catalog, location, "queued", "flag")
    for n in queued:
        _age(location / "index" / n, 7200)
    report = open_source(catalog, "events").remove_orphan_files(older_than_s=3600, dry_run=False)
    assert report.removed == () and report.kept_in_flight == len(pending) + len(queued)
    assert {n[len("bitmap-global-index-"):][:18].replace("-", "") for n in queued} == {job_stamp("queued")}


def test_unreadable_index_manifest_stops_the_cleanup(tmp_path: Path) -> None:
    location, catalog, wh = _setup(tmp_path)
    _build(catalog, wh, "b1", "status")
    orphan = "bitmap-global-index-7d9c1a2b-3e4f-4a5b-8c6d-7e8f9a0b1c2d.index"
    shutil.copy(next(p for p in (location / "index").iterdir() if "-global-index-" in p.name),
                location / "index" / orphan)
    _age(location / "index" / orphan, 7200)
    # an older snapshot (the deletes'), not the latest: every present snapshot counts
    snap = next(s for s in pypaimon_table(location).snapshot_manager().list_snapshots() if s.index_manifest)
    assert snap.id < pypaimon_table(location).snapshot_manager().get_latest_snapshot().id
    (location / "manifest" / snap.index_manifest).unlink()
    with pytest.raises(OrphanScanError, match="missing"):
        open_source(catalog, "events").remove_orphan_files(older_than_s=0, dry_run=False)
    assert (location / "index" / orphan).exists()
