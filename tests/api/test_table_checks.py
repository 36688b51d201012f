"""Smaller defects of issue 34, each against the real table kind: a Paimon column's btree build runs beside a
bitmap build of the same column (its indexes are keyed by (column, family)) while the same family is still 409;
DELETE /v1/tables/{name} closes the open files of the dropped table's cached readers; a row_id_column the table
does not have is refused at PUT (400, naming it), on plain and Paimon tables.

pypaimon (its index listing) and pyarrow (the written schema) are the judges; open files are read from /proc.
"""
from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from pypaimon.globalindex.create_global_index import create_global_index
from pypaimon.index.index_file_handler import IndexFileHandler

from service.api.app import create_app
from service.catalog import Catalog
from service.catalog.model import JobRecord
from tests.api.helpers import TestClient, make_settings, wait_job, write_table
from tests.unit.tables.paimon.paimon_tables import create_table, pypaimon_table


def _open_files_under(directory: Path) -> list[str]:
    """Paths under `directory` this process holds open (Linux /proc)."""
    out = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith(str(directory) + "/"):
            out.append(target)
    return out


def _index_types(location: Path, column: str) -> set[str]:
    """pypaimon's listing: the index types of the latest snapshot's global index files on `column`."""
    table = pypaimon_table(location)
    field_id = {f.name: int(f.id) for f in table.fields}[column]
    return {e.index_file.index_type for e in IndexFileHandler(table=table).scan(None)
            if e.kind == 0 and e.index_file.global_index_meta is not None
            and int(e.index_file.global_index_meta.index_field_id) == field_id}


@pytest.fixture()
def paimon(tmp_path: Path) -> Iterator[tuple[TestClient, Path]]:
    location = create_table(tmp_path / "data" / "warehouse", "events", commits=2, rows=300)
    with TestClient(create_app(make_settings(tmp_path))) as client:
        r = client.put("/v1/tables/events", json={"format": "paimon", "location": str(location)})
        assert r.status_code == 200, r.text
        yield client, location


@pytest.mark.slow   # a build
def test_a_btree_build_runs_beside_a_bitmap_build_of_the_same_paimon_column(paimon: tuple[TestClient, Path]) -> None:
    client, location = paimon
    catalog = Catalog(client.app.state.services.storage)
    # A live process stands in for the running bitmap build of `status` (liveness checks the pid).
    catalog.put_job(JobRecord(id="bitmap01", table="events", column="status", state="running", pid=os.getpid(),
                              spec={"index_type": "bitmap"}))
    try:
        r = client.post("/v1/create_global_index", json={"table": "events", "index_column": "status",
                                                         "index_type": "bitmap"})
        assert r.status_code == 409 and "bitmap01" in r.json()["error"]["message"], r.text
        r = client.post("/v1/create_global_index", json={"table": "events", "index_column": "flag,status",
                                                         "index_type": "bitmap"})
        assert r.status_code == 409, r.text   # one of its (column, family) pairs is being built
        r = client.post("/v1/create_global_index", json={"table": "events", "index_column": "status",
                                                         "index_type": "btree"})
        assert r.status_code == 202, r.text
        job = wait_job(client, r.json()["job_id"])
        assert job["state"] == "succeeded", job
    finally:
        catalog.update_job("bitmap01", state="failed", error="test")
    assert _index_types(location, "status") == {"btree"}


def test_a_plain_table_column_still_has_one_build_at_a_time(tmp_path: Path) -> None:
    """A plain table keeps one index per column (another family replaces it): any build of it is the conflict."""
    write_table(tmp_path / "data" / "t", pd.DataFrame({"u": np.arange(100)}), 1)
    with TestClient(create_app(make_settings(tmp_path))) as client:
        assert client.put("/v1/tables/t", json={"location": str(tmp_path / "data" / "t")}).status_code == 200
        catalog = Catalog(client.app.state.services.storage)
        catalog.put_job(JobRecord(id="bitmap02", table="t", column="u", state="running", pid=os.getpid(),
                                  spec={"index_type": "bitmap"}))
        try:
            r = client.post("/v1/create_global_index", json={"table": "t", "index_column": "u", "index_type": "btree"})
            assert r.status_code == 409 and "bitmap02" in r.json()["error"]["message"], r.text
        finally:
            catalog.update_job("bitmap02", state="failed", error="test")


def test_delete_closes_the_dropped_tables_open_index_files(paimon: tuple[TestClient, Path]) -> None:
    client, location = paimon
    assert create_global_index(pypaimon_table(location), "status", index_type="bitmap") > 0
    r = client.post("/v1/tables/events/query", json={"where": "status IS NOT NULL", "result": "count"})
    assert r.status_code == 200, r.text
    assert _open_files_under(location / "index"), "the query opened no index file: nothing to check"
    r = client.post("/v1/tables/events/query", json={"where": "status = 'error'", "result": "count"})
    assert r.status_code == 200, r.text   # a look-up: decodes a dictionary block
    qs = client.app.state.services.query_service
    assert qs.blocks.bytes > 0, "the query decoded no block: nothing to check"
    assert client.delete("/v1/tables/events").status_code == 200
    assert _open_files_under(location / "index") == []
    assert qs.blocks.bytes == 0 and qs.bitmaps.bytes == 0   # nor does it keep the dropped table's decoded blocks


def test_a_row_id_column_the_table_lacks_is_refused_at_put(paimon: tuple[TestClient, Path], tmp_path: Path) -> None:
    client, location = paimon
    plain = tmp_path / "data" / "plain"
    write_table(plain, pd.DataFrame({"id": np.arange(50), "v": np.arange(50) % 3}), 2)
    r = client.put("/v1/tables/plain", json={"location": str(plain), "row_id_column": "nope"})
    assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_option", r.text
    message = r.json()["error"]["message"]
    assert "'nope'" in message and "id, v" in message, message
    assert r.json()["error"]["details"].get("option") == "row_id_column"
    assert client.get("/v1/tables/plain").status_code == 404
    # the column it does have is accepted
    r = client.put("/v1/tables/plain", json={"location": str(plain), "row_id_column": "id"})
    assert r.status_code == 200 and r.json()["row_id_column"] == "id", r.text
    # a Paimon table takes its row ids from _ROW_ID: a row_id_column is refused, naming it
    r = client.put("/v1/tables/p2", json={"format": "paimon", "location": str(location), "row_id_column": "nope"})
    assert r.status_code == 400 and "'nope'" in r.json()["error"]["message"], r.text
    assert client.get("/v1/tables/p2").status_code == 404
