"""POST /v1/drop_global_index on a Paimon table: one new Paimon snapshot of index deletes for that column's bitmap
global index files (as Paimon's drop_global_index); data and files untouched, the other column's index intact.

The judge is pypaimon (its table, its index build, its IndexFileHandler over the latest snapshot, its read of
[columns, _ROW_ID]) and a pandas oracle (tests/api/predicates.py); never our own output.
"""
from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from pypaimon.globalindex.create_global_index import create_global_index
from pypaimon.index.index_file_handler import IndexFileHandler

from service.api.app import create_app
from service.catalog import Catalog
from service.catalog.model import JobRecord
from tests.api.helpers import TestClient, make_settings
from tests.api.predicates import expected_ids
from tests.unit.tables.paimon.paimon_tables import create_table, pypaimon_read, pypaimon_table

TOKEN = {"Authorization": "Bearer s3cret"}
COLUMNS = ["status", "flag", "code"]


def _snapshot_id(location: Path) -> int:
    return int(pypaimon_table(location).snapshot_manager().get_latest_snapshot().id)


def _bitmap_entries(location: Path) -> dict[int, set[tuple[Any, ...]]]:
    """pypaimon's own listing of the latest snapshot's bitmap global index files, by indexed field id."""
    table = pypaimon_table(location)
    out: dict[int, set[tuple[Any, ...]]] = {}
    for e in IndexFileHandler(table=table).scan(None):
        gim = e.index_file.global_index_meta
        if e.kind == 0 and e.index_file.index_type == "bitmap" and gim is not None:
            out.setdefault(int(gim.index_field_id), set()).add(
                (tuple(e.partition.values), e.bucket, e.index_file.file_name, gim.row_range_start,
                 gim.row_range_end))
    return out


def _frame(location: Path) -> pd.DataFrame:
    df = pypaimon_read(location, COLUMNS).to_pandas().set_index("_ROW_ID").sort_index()
    df["status"] = df["status"].astype("string")
    df["code"] = df["code"].astype("Int64")
    return df


@pytest.fixture()
def paimon(tmp_path: Path) -> Iterator[tuple[TestClient, Path]]:
    """A small partitioned row-tracking table with pypaimon-built bitmap indexes on `status` and `flag`."""
    location = create_table(tmp_path / "data" / "warehouse", "events", commits=2, rows=400)
    for col in ("status", "flag"):
        assert create_global_index(pypaimon_table(location), col, index_type="bitmap") > 0
    app = create_app(make_settings(tmp_path, token="s3cret", snapshot_ttl_seconds=0.2))
    with TestClient(app) as client:
        r = client.put("/v1/tables/events", json={"format": "paimon", "location": str(location)}, headers=TOKEN)
        assert r.status_code == 200, r.text
        yield client, location


def _drop(client: TestClient, column: str, headers: dict[str, str] | None = TOKEN) -> Any:
    return client.post("/v1/drop_global_index", json={"table": "events", "index_column": column}, headers=headers)


def test_drop_commits_index_deletes_for_one_column_only(paimon: tuple[TestClient, Path]) -> None:
    client, location = paimon
    ids = {f.name: int(f.id) for f in pypaimon_table(location).fields}
    before_sid = _snapshot_id(location)
    before = _bitmap_entries(location)
    assert set(before) == {ids["status"], ids["flag"]}
    data_before = _frame(location)
    files = {p.name for p in (location / "index").iterdir()}
    assert {e[2] for es in before.values() for e in es} <= files
    served = {i["column"] for i in client.get("/v1/tables/events/indexes").json()["indexes"]}
    assert served == {"status", "flag"}
    # /indexes stored bgix's statistics of both columns in the warehouse (outside the Paimon table)
    stats = Path(client.app.state.services.settings.warehouse) / "tables" / "events" / "indexes"
    assert {c for c in ("status", "flag") if any((stats / c / "stats").glob("*.json"))} == {"status", "flag"}
    assert client.post("/v1/tables/events/query", json={"where": "status = 'ok'"}).status_code == 200

    # same auth rules as plain tables: a mutation needs the token
    assert _drop(client, "status", headers=None).status_code == 401
    assert _snapshot_id(location) == before_sid

    r = _drop(client, "status")
    assert r.status_code == 200, r.text
    assert r.json() == {"table": "events", "index_column": "status", "dropped": True}

    # pypaimon: exactly one new snapshot; no bitmap entries on status; flag's entries unchanged
    assert _snapshot_id(location) == before_sid + 1
    after = _bitmap_entries(location)
    assert ids["status"] not in after
    assert after == {ids["flag"]: before[ids["flag"]]}
    # data untouched (same rows, same values), and the index files are still on disk (older snapshots)
    pd.testing.assert_frame_equal(_frame(location), data_before)
    assert {p.name for p in (location / "index").iterdir()} == files
    assert not (stats / "status" / "stats").exists() and any((stats / "flag" / "stats").glob("*.json"))

    # the serving side: status has no index any more; its rows are read from the data (exact), or with
    # "scan": "never" not answered (coverage says every row is missing); flag still exact from its index
    p_status = {"op": "eq", "column": "status", "value": "ok"}
    got = client.post("/v1/tables/events/query", json={"where": "status = 'ok'", "limit": 100_000,
                                                       "explain": True}).json()
    assert got["row_ids"] == sorted(expected_ids(p_status, data_before)) and got["exact"] is True
    assert got["coverage"]["complete"] is True and got["explain"]["scan"]["decision"] == "scanned"
    assert got["explain"]["scan"]["columns"][0]["reason"] == "no index on the column"
    got = client.post("/v1/tables/events/query", json={"where": "status = 'ok'", "scan": "never"}).json()
    assert got["row_ids"] == [] and got["coverage"]["complete"] is False
    err = client.post("/v1/tables/events/query", json={"where": "nope = 'ok'"})
    assert err.status_code == 400 and err.json()["error"]["code"] == "unknown_column", err.text
    for p in ({"op": "eq", "column": "flag", "value": True}, {"op": "is_null", "column": "flag"},
              {"op": "ne", "column": "flag", "value": True}):
        got = client.post("/v1/tables/events/query", json={"predicate": p, "limit": 100_000}).json()
        assert got["row_ids"] == sorted(expected_ids(p, data_before)) and got["exact"] is True, p
        assert got["coverage"] == {"complete": True, "uncovered_ranges": []}
    shown = client.get("/v1/tables/events").json()["paimon"]
    assert shown["snapshot_id"] == before_sid + 1
    assert {i["column"] for i in shown["indexes"]} == {"flag"}
    assert {i["column"] for i in client.get("/v1/tables/events/indexes").json()["indexes"]} == {"flag"}

    # dropping again, or a column with no index (or no such column): 404 and no new snapshot
    for column in ("status", "code", "nope"):
        r = _drop(client, column)
        assert r.status_code == 404 and r.json()["error"]["code"] == "not_found", (column, r.text)
    assert _snapshot_id(location) == before_sid + 1


def test_other_servers_see_the_drop_on_their_next_refresh(paimon: tuple[TestClient, Path],
                                                          tmp_path: Path) -> None:
    client, location = paimon
    other = create_app(make_settings(tmp_path, token="s3cret", snapshot_ttl_seconds=0.2))
    with TestClient(other) as second:
        assert {i["column"] for i in second.get("/v1/tables/events/indexes").json()["indexes"]} == {"status", "flag"}
        assert _drop(client, "flag").status_code == 200
        deadline = time.monotonic() + 20
        while {i["column"] for i in second.get("/v1/tables/events/indexes").json()["indexes"]} != {"status"}:
            assert time.monotonic() < deadline, "the other server never saw the drop"
            time.sleep(0.05)
        got = second.post("/v1/tables/events/query", json={"where": "flag = true", "scan": "never"})
        assert got.status_code == 200 and got.json()["coverage"]["complete"] is False   # no index: nothing covered


def test_drop_refused_while_a_build_of_the_column_runs(paimon: tuple[TestClient, Path]) -> None:
    client, location = paimon
    catalog = Catalog(client.app.state.services.storage)
    catalog.put_job(JobRecord(id="paimonbuild", table="events", column="flag,status", state="running",
                              pid=os.getpid()))
    sid = _snapshot_id(location)
    try:
        r = _drop(client, "status")
        assert r.status_code == 409 and r.json()["error"]["code"] == "conflict", r.text
    finally:
        catalog.update_job("paimonbuild", state="failed", error="test")
    assert _snapshot_id(location) == sid
    assert _drop(client, "status").status_code == 200
