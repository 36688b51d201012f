"""Stale global index files on a Paimon table with `global-index.column-update-action=IGNORE`: a data-evolution
update of an indexed column (pypaimon's update_by_arrow_with_row_id) leaves the index files as they were. The
service must not serve them as covering their rows (the index shows `stale`, those rows are uncovered), an
incremental build refreshes exactly them in one Paimon snapshot, and `rebuild=true` replaces every file. A commit
after the refresh's scan does not make the files it replaces look like a conflict; their removal by another writer
does.

Judges: pypaimon (its table, update, index build, IndexFileHandler listing, its full read filtered in Python) and
pypaimon-rust's DataFusion SQL, whose scans use the global indexes (a stale or missing file shows as missing rows).
"""
from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pypaimon.globalindex.create_global_index import create_global_index
from pypaimon.index.index_file_handler import IndexFileHandler

from index_format.storage import Storage
from service.api.app import create_app
from service.build_job.main import run_job
from service.catalog import Catalog, CommitConflictError, Table
from service.tables.paimon import drop_column_indexes
from tests.api.helpers import TestClient, make_settings, wait_job
from tests.unit.tables.paimon import rust_tables as rt
from tests.unit.tables.paimon.paimon_tables import (
    FULL_OPTIONS, create_table, pypaimon_read, pypaimon_table, update_rows,
)

IGNORE = {**FULL_OPTIONS, "global-index.column-update-action": "IGNORE"}
UPDATED = [5, 6, 700, 701, 1490]      # in files of several commits and partitions
WHERE = "status = 'UPDATED'"


def _snapshot_id(location: Path) -> int:
    return int(pypaimon_table(location).snapshot_manager().get_latest_snapshot().id)


def _entries(location: Path, column: str = "status") -> dict[str, tuple[int, int]]:
    """pypaimon's listing of the latest snapshot's bitmap index files on `column`: file name → row range."""
    table = pypaimon_table(location)
    fid = next(int(f.id) for f in table.fields if f.name == column)
    out = {}
    for e in IndexFileHandler(table=table).scan(None):
        gim = e.index_file.global_index_meta
        if e.kind == 0 and e.index_file.index_type == "bitmap" and gim is not None and gim.index_field_id == fid:
            out[str(e.index_file.file_name)] = (int(gim.row_range_start), int(gim.row_range_end))
    return out


def _truth(location: Path, value: str = "UPDATED") -> list[int]:
    """pypaimon's full read filtered in Python: the live `_ROW_ID`s whose status is `value`."""
    t = pypaimon_read(location, ["status"]).to_pydict()
    return sorted(r for r, s in zip(t["_ROW_ID"], t["status"], strict=True) if s == value)


def _rust_ids(location: Path, value: str = "UPDATED") -> list[int]:
    """pypaimon-rust's SQL answer (its scan uses the table's global indexes)."""
    got = rt.run(rt.sql_context(location.parent.parent), f"SELECT \"_ROW_ID\" FROM db.events WHERE status = '{value}'")
    return sorted(got.column("_ROW_ID").to_pylist()) if got.num_rows else []


def _query(client: TestClient, where: str = WHERE, scan: str = "auto") -> dict[str, Any]:
    r = client.post("/v1/tables/events/query", json={"where": where, "limit": 100_000, "scan": scan})
    assert r.status_code == 200, r.text
    return r.json()


def _in(ranges: list[list[int]], rid: int) -> bool:
    return any(s <= rid <= e for s, e in ranges)


def _build(client: TestClient, **options: str) -> dict[str, Any]:
    body: dict[str, Any] = {"table": "events", "index_column": "status"}
    if options:
        body["options"] = options
    r = client.post("/v1/create_global_index", json=body)
    assert r.status_code == 202, r.text
    job = wait_job(client, r.json()["job_id"])
    assert job["state"] == "succeeded", job
    return job


def _status_index(client: TestClient) -> tuple[dict[str, Any], dict[str, Any]]:
    """(/indexes entry, the table's paimon.indexes entry) of the status bitmap index."""
    served = next(i for i in client.get("/v1/tables/events/indexes").json()["indexes"] if i["column"] == "status")
    listed = next(i for i in client.get("/v1/tables/events").json()["paimon"]["indexes"] if i["column"] == "status")
    return served, listed


def _updated_groups(location: Path) -> list[tuple[int, int]]:
    """Row ranges of pypaimon's data files that hold `status` only (the update files), from its own scan plan."""
    rb = pypaimon_table(location).new_read_builder()
    return sorted((int(f.first_row_id), int(f.first_row_id) + int(f.row_count) - 1)
                  for split in rb.new_scan().plan().splits() for f in split.files if f.write_cols == ["status"])


def _meets(r: tuple[int, int], groups: list[tuple[int, int]]) -> bool:
    return any(r[0] <= e and s <= r[1] for s, e in groups)


def _check_uncovered_answer(client: TestClient, location: Path) -> dict[str, Any]:
    """The answer while stale: never a wrong row, every true row either returned or in an uncovered range."""
    truth = _truth(location)
    assert sorted(truth) == UPDATED
    q = _query(client, scan="never")
    uncovered = q["coverage"]["uncovered_ranges"]
    assert not q["coverage"]["complete"]
    assert set(q["row_ids"]) <= set(truth)
    assert all(r in q["row_ids"] or _in(uncovered, r) for r in truth)
    assert all(_in(uncovered, r) for r in UPDATED)   # the updated rows are not served from old files
    # by default the stale ranges are read through pypaimon (the update merged in): exactly the truth
    exact = _query(client)
    assert exact["row_ids"] == sorted(truth) and exact["exact"] is True and exact["coverage"]["complete"] is True
    assert exact["count"] == len(truth)
    return q


@pytest.fixture()
def paimon(tmp_path: Path) -> Iterator[tuple[TestClient, Path]]:
    location = create_table(tmp_path / "data" / "warehouse", "events", options=IGNORE, commits=3, rows=500)
    with TestClient(create_app(make_settings(tmp_path))) as client:
        r = client.put("/v1/tables/events", json={"format": "paimon", "location": str(location)})
        assert r.status_code == 200, r.text
        yield client, location


def test_update_makes_bgix_index_stale_and_incremental_build_refreshes_it(paimon: tuple[TestClient, Path]) -> None:
    client, location = paimon
    _build(client, **{"sorted-index.records-per-range": "200"})
    before = _entries(location)
    assert len(before) > 3 and not _status_index(client)[0]["stale"]

    update_rows(location, "status", UPDATED, ["UPDATED"] * len(UPDATED))
    groups = _updated_groups(location)
    expected_stale = {n for n, r in before.items() if _meets(r, groups)}
    assert expected_stale and expected_stale != set(before)
    _check_uncovered_answer(client, location)
    served, listed = _status_index(client)
    assert served["stale"] and listed["stale"]
    assert {s["index_file"] for s in listed["stale_files"]} == expected_stale
    assert all(s["reason"] == "updated" and s["baseline_from"] == "deix" for s in listed["stale_files"])
    assert all(any(s["data_file"].endswith(f.rsplit("/", 1)[-1]) for f in _update_paths(location))
               for s in listed["stale_files"])
    # the stale files' rows are exactly what is uncovered now
    stale_rows = {r for n in expected_stale for r in range(before[n][0], before[n][1] + 1)}
    assert {r for s, e in served["uncovered_ranges"] for r in range(s, e + 1)} == stale_rows

    sid = _snapshot_id(location)
    job = _build(client)   # incremental: no rebuild flag
    assert _snapshot_id(location) == sid + 1   # deletes and adds in ONE snapshot
    assert job["progress"]["rows_indexed"] == len(stale_rows) - _deleted_in(location, stale_rows)
    after = _entries(location)
    kept = set(before) - expected_stale
    assert set(after) & set(before) == kept            # the fresh files stay, the stale ones are gone
    new = {n: r for n, r in after.items() if n not in before}
    assert {r for s, e in new.values() for r in range(s, e + 1)} == stale_rows   # exactly the stale ranges

    q = _query(client)
    assert q["exact"] and q["coverage"]["complete"] and q["row_ids"] == _truth(location)
    for value in ("ok", "error"):   # the old values of the updated rows are gone from the answers
        q = _query(client, f"status = '{value}'")
        assert q["coverage"]["complete"] and q["row_ids"] == _truth(location, value)
    assert not _status_index(client)[0]["stale"] and not _status_index(client)[1]["stale"]
    assert _rust_ids(location) == _truth(location)
    # nothing more to do: the refreshed files' marker is newer than the update
    assert _build(client)["progress"]["rows_indexed"] == 0 and _snapshot_id(location) == sid + 1


def test_update_of_a_column_not_indexed_keeps_the_index_fresh(paimon: tuple[TestClient, Path]) -> None:
    client, location = paimon
    _build(client)
    update_rows(location, "code", UPDATED, [99] * len(UPDATED))
    served, listed = _status_index(client)
    assert not served["stale"] and not listed["stale"] and served["uncovered_ranges"] == []
    q = _query(client, "status = 'ok'")
    assert q["exact"] and q["coverage"]["complete"] and q["row_ids"] == _truth(location, "ok")


def test_pypaimon_index_without_marker_is_stale_after_an_update_and_refreshed(
        paimon: tuple[TestClient, Path]) -> None:
    client, location = paimon
    assert create_global_index(pypaimon_table(location), "status", index_type="bitmap") > 0
    assert not _status_index(client)[0]["stale"]      # rows appended before the build: not stale
    update_rows(location, "status", UPDATED, ["UPDATED"] * len(UPDATED))
    assert _rust_ids(location) != _truth(location)   # the judge itself answers wrongly from the stale file
    _check_uncovered_answer(client, location)
    served, listed = _status_index(client)
    assert served["stale"] and listed["stale"]
    assert {s["baseline_from"] for s in listed["stale_files"]} == {"anchor_files"}

    before = _entries(location)
    _build(client)
    after = _entries(location)
    assert not set(after) & {s["index_file"] for s in listed["stale_files"]}
    assert set(before) - set(after) == {s["index_file"] for s in listed["stale_files"]}
    q = _query(client)
    assert q["exact"] and q["coverage"]["complete"] and q["row_ids"] == _truth(location)
    assert not _status_index(client)[0]["stale"]
    assert _rust_ids(location) == _truth(location)


def test_rebuild_replaces_every_entry_in_one_snapshot(paimon: tuple[TestClient, Path]) -> None:
    client, location = paimon
    assert create_global_index(pypaimon_table(location), "status", index_type="bitmap") > 0
    update_rows(location, "status", UPDATED, ["UPDATED"] * len(UPDATED))
    _build(client)                                  # some files bgix's, the rest pypaimon's
    before = _entries(location)
    sid = _snapshot_id(location)
    job = _build(client, rebuild="true", **{"sorted-index.records-per-range": "300"})
    assert _snapshot_id(location) == sid + 1
    after = _entries(location)
    assert not set(after) & set(before)             # every old entry replaced, whoever wrote it
    live = sorted(pypaimon_read(location, ["status"]).column("_ROW_ID").to_pylist())
    covered = sorted(r for s, e in after.values() for r in range(s, e + 1))
    assert len(covered) == len(set(covered)) and set(live) <= set(covered)   # no overlap, every live row
    assert job["progress"]["rows_indexed"] == len(live)
    origins = _status_index(client)[1]["origins"]
    assert [o["origin"] for o in origins] == ["bgix"] and origins[0]["job_id"] == job["id"]
    assert _rust_ids(location) == _truth(location)
    q = _query(client)
    assert q["exact"] and q["coverage"]["complete"] and q["row_ids"] == _truth(location)


def _update_paths(location: Path) -> list[str]:
    rb = pypaimon_table(location).new_read_builder()
    return [str(f.file_name) for split in rb.new_scan().plan().splits() for f in split.files
            if f.write_cols == ["status"]]


def _deleted_in(location: Path, rows: set[int]) -> int:
    """Row ids of `rows` pypaimon's read does not return (none here: the table has no deletes)."""
    live = set(pypaimon_read(location, ["status"]).column("_ROW_ID").to_pylist())
    return len(rows - live)


# -- races between a refresh's scan and its commit (run_job's pause_before_commit hook) --------------------------
def _paused_refresh(tmp_path: Path) -> tuple[Path, threading.Thread, Path, dict[str, Any], set[str]]:
    """A bgix index on status made stale by an update, and a refresh job paused before its commit; returns
    (table, job thread, gate, job outcome, the stale files pypaimon lists that the refresh replaces)."""
    location = create_table(tmp_path / "data" / "warehouse", "events", options=IGNORE, commits=2, rows=400)
    wh = tmp_path / "wh"
    wh.mkdir()
    Catalog(Storage(str(wh), [str(tmp_path / "data")])).put_table(
        Table(name="events", location=str(location), format="paimon"))

    def spec(job: str, **kw: Any) -> dict[str, Any]:
        return {"job_id": job, "warehouse": str(wh), "allowed_roots": [str(tmp_path / "data")], "table": "events",
                "index_column": "status", "table_format": "paimon", "engine": "local",
                "options": {"sorted-index.records-per-range": "100"}, **kw}
    run_job(spec("first"))
    before = _entries(location)
    update_rows(location, "status", UPDATED[:2], ["UPDATED"] * 2)
    stale = {n for n, r in before.items() if _meets(r, _updated_groups(location))}
    assert stale
    gate = tmp_path / "gate"
    gate.mkdir()
    out: dict[str, Any] = {}

    def go() -> None:
        try:
            out["result"] = run_job(spec("refresh", test_hooks={"pause_before_commit": str(gate)}))
        except BaseException as exc:  # noqa: BLE001 - reported to the test
            out["error"] = exc
    th = threading.Thread(target=go)
    th.start()
    deadline = time.monotonic() + 30
    while not (gate / "ready").exists():
        assert time.monotonic() < deadline and th.is_alive(), out
        time.sleep(0.05)
    return location, th, gate, out, stale


def test_a_refresh_replaces_its_stale_files_after_an_unrelated_commit(tmp_path: Path) -> None:
    location, th, gate, out, stale = _paused_refresh(tmp_path)
    before = _entries(location)
    update_rows(location, "code", [1], [7])   # another writer commits between the scan and the commit
    (gate / "go").touch()
    th.join(60)
    assert "error" not in out, out
    after = _entries(location)
    assert not set(after) & stale and set(before) - stale <= set(after)
    assert _rust_ids(location) == _truth(location) == UPDATED[:2]


def test_a_refresh_whose_stale_files_another_writer_took_out_fails_cleanly(tmp_path: Path) -> None:
    location, th, gate, out, stale = _paused_refresh(tmp_path)
    drop_column_indexes(str(location), "status")
    sid = _snapshot_id(location)
    (gate / "go").touch()
    th.join(60)
    assert isinstance(out.get("error"), CommitConflictError) and "taken out" in str(out["error"]), out
    assert _snapshot_id(location) == sid and _entries(location) == {}   # the table as the other writer left it
