"""Index origins on one real table: a column indexed by pypaimon's create_global_index, one by a bgix build
(local engine), one by a DEIX writer without bgix's snapshot property (as Paimon Java commits).

The judge is pypaimon: which files each commit added is its own index manifest listing before and after
the commit, and who committed is the job id we gave or the writer we called; never origins.py's output.
"""
from __future__ import annotations

import random
from pathlib import Path

import pyarrow as pa

from pypaimon.globalindex.create_global_index import create_global_index
from pypaimon.index.index_file_handler import IndexFileHandler

from index_format.storage import Storage
from service.api.presenters import paimon_public
from service.build_job.main import run_job
from service.build_job.worker import build_tasks
from service.catalog import Catalog, Table
from service.jobs.jobspec import JobSpec
from service.tables.paimon import load_paimon_view, open_paimon_table, table_storage
from service.tables.build_tasks import RESULT_SCHEMA
from service.tables.paimon.commit import commit_index_files
from service.tables.paimon.index_entries import list_index_entries
from service.tables.paimon.origins import OriginsCache, file_origins, index_built_at
from service.tables.paimon.paimon_source import PaimonSource, built_files
from tests.unit.tables.paimon.paimon_tables import append, create_table, make_rows, pypaimon_table

JOB = "job-origins-1"


def _names(location: Path) -> set[str]:
    """pypaimon's own listing of the latest snapshot's bitmap index file names."""
    table = pypaimon_table(location)
    return {str(e.index_file.file_name) for e in IndexFileHandler(table=table).scan(None)
            if e.index_file.index_type == "bitmap"}


def _latest(location: Path) -> object:
    return pypaimon_table(location).snapshot_manager().get_latest_snapshot()


def _bgix_build(location: Path, wh: Path, data: Path, column: str) -> None:
    spec = {"job_id": JOB, "warehouse": str(wh), "allowed_roots": [str(data)], "table": "events",
            "index_column": column, "table_format": "paimon", "engine": "local",
            "options": {"sorted-index.records-per-range": "300"}}
    run_job(spec)


def _deix_writer_without_property(location: Path, column: str) -> None:
    """bgix's file writer and commit, but no `bgix.job-id` property: what a Paimon Java commit looks like."""
    pt = open_paimon_table(str(location))
    spec = JobSpec(job_id="deix", warehouse=str(location), table="events", index_column=column,
                   table_format="paimon", options={"sorted-index.records-per-range": "10000"})
    plan = PaimonSource(None, Table("events", str(location), "paimon")).plan_build(spec)  # type: ignore[arg-type]
    written = pa.Table.from_batches(list(build_tasks(range(plan.tasks), plan)), schema=RESULT_SCHEMA)
    assert written.num_rows
    commit_index_files(pt, built_files(plan, written), table_storage(pt))


def test_origins_of_pypaimon_bgix_and_deix_writers(tmp_path: Path) -> None:
    data = tmp_path / "data"
    location = create_table(data / "warehouse", "events", commits=2, rows=500)
    wh = tmp_path / "wh"
    wh.mkdir()
    Catalog(Storage(str(wh), [str(data)])).put_table(Table(name="events", location=str(location), format="paimon"))

    assert create_global_index(pypaimon_table(location), "status", index_type="bitmap") > 0
    by_pypaimon = _names(location)
    _bgix_build(location, wh, data, "flag")
    bgix_snapshot = _latest(location)
    assert bgix_snapshot.properties == {"bgix.job-id": JOB}
    by_bgix = _names(location) - by_pypaimon
    _deix_writer_without_property(location, "code")
    by_other = _names(location) - by_pypaimon - by_bgix
    # a later data commit: origins still come from the snapshots that added the files
    append(location.parent.parent, "events", make_rows(random.Random(4), 100))
    assert by_pypaimon and by_bgix and by_other

    table = open_paimon_table(str(location))
    entries = list_index_entries(table)
    origins = file_origins(table, entries)
    assert set(origins) == by_pypaimon | by_bgix | by_other
    assert {(o.writer, o.job_id, o.snapshot_id) for n, o in origins.items() if n in by_bgix} == \
        {("bgix", JOB, int(bgix_snapshot.id))}
    assert {origins[n].writer for n in by_pypaimon} == {"pypaimon"}
    assert {(origins[n].writer, origins[n].job_id) for n in by_other} == {("paimon", None)}
    assert {e.file_name for e in entries["flag"]} == by_bgix
    assert {e.file_name for e in entries["status"]} == by_pypaimon

    # the view groups them per column, with rows and ranges pypaimon's manifest gives
    view = load_paimon_view("events", str(location), table_storage(table))
    summary = {i.column: i.origins for i in view.indexes}
    assert [(o.writer, o.job_id) for o in summary["flag"]] == [("bgix", JOB)]
    assert [o.writer for o in summary["status"]] == ["pypaimon"]
    assert [o.writer for o in summary["code"]] == ["paimon"]
    for column, groups in summary.items():
        assert sum(g.files for g in groups) == len(entries[column])
        assert sum(g.rows for g in groups) == sum(e.row_count for e in entries[column])
        assert [list(r) for g in groups for r in g.row_ranges] == [[0, 999]]
    # and the API's table description carries them as they are
    shown = {i.column: i.origins for i in paimon_public(view.summary()).indexes}
    assert [(o.origin, o.job_id, o.snapshot_id) for o in shown["flag"]] == [("bgix", JOB, int(bgix_snapshot.id))]
    assert [(o.origin, o.files) for o in shown["status"]] == [("pypaimon", len(by_pypaimon))]


def test_a_bgix_file_whose_commit_expired_falls_back_to_its_marker(tmp_path: Path) -> None:
    data = tmp_path / "data"
    location = create_table(data / "warehouse", "events", commits=1, rows=300)
    wh = tmp_path / "wh"
    wh.mkdir()
    Catalog(Storage(str(wh), [str(data)])).put_table(Table(name="events", location=str(location), format="paimon"))
    _bgix_build(location, wh, data, "status")
    bgix_id = int(_latest(location).id)
    append(location.parent.parent, "events", make_rows(random.Random(5), 50))
    # expire the bgix snapshot the way Paimon's expiry does for its metadata: the snapshot file goes
    (location / "snapshot" / f"snapshot-{bgix_id}").unlink()
    assert pypaimon_table(location).snapshot_manager().get_snapshot_by_id(bgix_id) is None
    table = open_paimon_table(str(location))
    origins = file_origins(table, list_index_entries(table))
    assert origins and {o.writer for o in origins.values()} == {"paimon"}


def test_built_at_is_the_commit_that_added_the_files_or_their_mtime_once_it_expired(tmp_path: Path) -> None:
    """index_built_at: the commit time pypaimon records for the snapshot that added the index's files, whatever
    came after; once that snapshot has expired, the view falls back to the newest file's modification time."""
    data = tmp_path / "data"
    location = create_table(data / "warehouse", "events", commits=3, rows=100)
    assert create_global_index(pypaimon_table(location), "status", index_type="bitmap") > 0
    built = _latest(location)
    for i in range(5):
        append(location.parent.parent, "events", make_rows(random.Random(20 + i), 10))
    table = open_paimon_table(str(location))
    names = frozenset(e.file_name for e in list_index_entries(table)["status"])
    cache = OriginsCache()
    assert index_built_at(table, names, cache) == built.time_millis / 1000
    assert index_built_at(table, names, cache) == built.time_millis / 1000   # from the cache
    storage = Storage(str(tmp_path / "wh"), [str(data)])
    view = load_paimon_view("events", str(location), storage)
    assert view.columns["status"].created_at == built.time_millis / 1000
    assert view.created_at == _latest(location).time_millis / 1000 > view.columns["status"].created_at

    for sid in range(1, int(built.id) + 1):   # expiry: the snapshots up to the build go, EARLIEST moves on
        (location / "snapshot" / f"snapshot-{sid}").unlink()
    (location / "snapshot" / "EARLIEST").write_text(str(int(built.id) + 1))
    table = open_paimon_table(str(location))
    assert index_built_at(table, names) is None
    newest = max((location / "index" / n).stat().st_mtime for n in names)
    assert load_paimon_view("events", str(location), storage).columns["status"].created_at == newest


def test_the_origins_cache_forgets_a_recreated_table_and_only_it() -> None:
    """A table dropped and created again at its directory reuses snapshot ids: its cached commits go (by its
    exact directory: `…/t2` beside `…/t` keeps its own), and the cache keeps its `size` most recent commits."""
    from types import SimpleNamespace
    from typing import Any

    from service.tables.paimon.origins import OriginsCache, _Commit

    cache = OriginsCache(size=3)
    old = _Commit(1000, "job-a", frozenset({"f1"}))
    cache.put(("/w/db.db/t", 1), old)
    cache.put(("/w/db.db/t2", 1), _Commit(1000, None, frozenset()))
    same: Any = SimpleNamespace(table_path="/w/db.db/t", snapshot_id=1, snapshot=SimpleNamespace(time_millis=1000))
    cache.forget_if_recreated(same)
    assert cache.get(("/w/db.db/t", 1)) is old
    recreated: Any = SimpleNamespace(table_path="/w/db.db/t", snapshot_id=1,
                                     snapshot=SimpleNamespace(time_millis=2000))
    cache.forget_if_recreated(recreated)
    assert cache.get(("/w/db.db/t", 1)) is None
    assert cache.get(("/w/db.db/t2", 1)) is not None
    for sid in range(2, 6):
        cache.put(("/w/db.db/t2", sid), _Commit(sid, None, frozenset()))
    assert cache.get(("/w/db.db/t2", 1)) is None and cache.get(("/w/db.db/t2", 5)) is not None
