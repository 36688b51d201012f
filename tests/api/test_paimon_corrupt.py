"""Broken Paimon tables through the HTTP API: a corrupt metadata file is 422 corrupt_table_metadata naming the file
at every entry point (register, show, indexes, query, build, drop index), before registration and after it (a
restarted service over the same warehouse); a PUT that fails registers nothing; a build over a corrupt data file
fails naming it and commits nothing; a healthy table in the same service answers throughout.

Judges: pypaimon (which file plays which part, its snapshot manager and index manifest, its read of the rows for
the healthy table's answers); the damage is seeded (tests/unit/tables/paimon/corrupt_tables.py).
"""
from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pypaimon.globalindex.create_global_index import create_global_index
from pypaimon.index.index_file_handler import IndexFileHandler

from service.api.app import create_app
from tests.api.helpers import TestClient, make_settings, wait_job
from tests.unit.tables.paimon.corrupt_tables import (
    METADATA_PARTS, break_dictionary_indices, corrupt, data_files, deletion_vector_file, metadata_file,
)
from tests.unit.tables.paimon.paimon_tables import create_table, delete_rows, pypaimon_read, pypaimon_table

OK = {"op": "eq", "column": "status", "value": "ok"}
PLAIN = {"row-tracking.enabled": "true", "data-evolution.enabled": "true", "file.compression": "none"}


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A warehouse with `bad` (to be broken) and `good`: pypaimon bitmap index on status, a deletion vector."""
    warehouse = tmp_path_factory.mktemp("base") / "data" / "wh"
    for name in ("bad", "good"):
        location = create_table(warehouse, name, commits=2, rows=300)
        assert create_global_index(pypaimon_table(location), "status", index_type="bitmap") > 0
        delete_rows(location, [1, 5, 7])
    return warehouse


@pytest.fixture()
def root(base: Path, tmp_path: Path) -> Path:
    shutil.copytree(base, tmp_path / "data" / "wh")
    return tmp_path


def _location(root: Path, name: str) -> Path:
    return root / "data" / "wh" / "db.db" / name


def _app(root: Path) -> TestClient:
    return TestClient(create_app(make_settings(root)))


def _put(client: TestClient, root: Path, name: str) -> Any:
    return client.put(f"/v1/tables/{name}", json={"format": "paimon", "location": str(_location(root, name))})


def _named(r: Any, broken: Path, status: int = 422, code: str = "corrupt_table_metadata") -> None:
    assert r.status_code == status, r.text
    err = r.json()["error"]
    assert err["code"] == code, err
    assert err["details"]["path"] == str(broken) and str(broken) in err["message"], err


def _good_answers(client: TestClient, root: Path) -> None:
    """`good` answers as pypaimon reads it."""
    rows = pypaimon_read(_location(root, "good"), ["status"]).to_pylist()
    want = sorted(r["_ROW_ID"] for r in rows if r["status"] == "ok")
    r = client.post("/v1/tables/good/query", json={"predicate": OK, "limit": 100_000})
    assert r.status_code == 200, r.text
    assert r.json()["row_ids"] == want and r.json()["coverage"]["complete"] is True


def _not_registered(client: TestClient, name: str) -> None:
    assert name not in [t["name"] for t in client.get("/v1/tables").json()["tables"]]
    assert client.get(f"/v1/tables/{name}").status_code == 404
    r = client.post(f"/v1/tables/{name}/query", json={"predicate": OK})
    assert r.status_code == 404 and r.json()["error"]["code"] == "not_found", r.text


# junk and random bytes in turn (tests/unit/tables/paimon/test_paimon_broken_files.py tries every damage on each)
@pytest.mark.parametrize(("part", "how"), [(p, ("junk", "random")[i % 2]) for i, p in enumerate(METADATA_PARTS)])
def test_a_put_over_corrupt_metadata_names_the_file_and_registers_nothing(root: Path, part: str, how: str) -> None:
    broken = metadata_file(_location(root, "bad"), part)
    corrupt(broken, how, seed=len(part))
    with _app(root) as client:
        assert _put(client, root, "good").status_code == 200
        _named(_put(client, root, "bad"), broken)
        _not_registered(client, "bad")
        _good_answers(client, root)


def test_a_put_over_a_corrupt_deletion_vector_registers_nothing(root: Path) -> None:
    broken = deletion_vector_file(_location(root, "bad"))
    corrupt(broken, "truncate")
    with _app(root) as client:
        _named(_put(client, root, "bad"), broken, 500, "corrupt_index_file")
        _not_registered(client, "bad")
        assert _put(client, root, "good").status_code == 200
        _good_answers(client, root)


@pytest.mark.parametrize("part", ["manifest", "snapshot", "index_manifest"])
def test_corrupted_after_registration_every_entry_point_names_the_file(root: Path, part: str) -> None:
    bad = _location(root, "bad")
    with _app(root) as client:
        assert _put(client, root, "bad").status_code == 200 and _put(client, root, "good").status_code == 200
        assert client.post("/v1/tables/bad/query", json={"predicate": OK}).status_code == 200
    broken = metadata_file(bad, part)
    sid = pypaimon_table(bad).snapshot_manager().get_latest_snapshot().id
    corrupt(broken, "random", seed=5)
    with _app(root) as client:   # a restart: nothing cached
        assert "bad" in [t["name"] for t in client.get("/v1/tables").json()["tables"]]
        _named(client.get("/v1/tables/bad"), broken)
        _named(client.get("/v1/tables/bad/indexes"), broken)
        _named(client.get("/v1/tables/bad/indexes/status/values"), broken)
        _named(client.post("/v1/tables/bad/query", json={"predicate": OK}), broken)
        _named(client.post("/v1/tables/bad/query", json={"where": "status = 'ok'"}), broken)
        _named(client.post("/v1/drop_global_index", json={"table": "bad", "index_column": "status"}), broken)
        r = client.post("/v1/create_global_index", json={"table": "bad", "index_column": "flag"})
        if r.status_code == 202:   # refused when the job runs, not when it is asked for
            job = wait_job(client, r.json()["job_id"])
            assert job["state"] == "failed" and str(broken) in job["error"], job
        else:
            _named(r, broken)
        _good_answers(client, root)
        # a PUT of the same definition fails the same way and leaves the registration as it was
        _named(_put(client, root, "bad"), broken)
        assert "bad" in [t["name"] for t in client.get("/v1/tables").json()["tables"]]
        assert client.delete("/v1/tables/bad").status_code == 200   # dropping never reads the table
        _not_registered(client, "bad")
        _good_answers(client, root)
    assert (bad / "snapshot" / f"snapshot-{sid + 1}").exists() is False   # nothing was committed to the table


def _bitmap_entries(location: Path) -> set[str]:
    return {e.index_file.file_name for e in IndexFileHandler(table=pypaimon_table(location)).scan(None)
            if e.kind == 0 and e.index_file.index_type == "bitmap"}


@pytest.mark.parametrize("how", ["dictionary", "junk"])
def test_a_build_over_a_corrupt_data_file_names_it_and_commits_nothing(tmp_path: Path, how: str) -> None:
    """`dictionary`: bit-packed dictionary indices past the dictionary's end, which only fail when decoded (the
    tester's `Index not in dictionary bounds`); `junk`: no Parquet file at all."""
    warehouse = tmp_path / "data" / "wh"
    bad = create_table(warehouse, "bad", options=PLAIN, commits=3, rows=400)
    create_table(warehouse, "good", commits=2, rows=300)
    assert create_global_index(pypaimon_table(_location(tmp_path, "good")), "status", index_type="bitmap") > 0
    broken = data_files(bad)[1]
    if how == "dictionary":
        break_dictionary_indices(broken, "status")
    else:
        corrupt(broken, "junk")
    sid = pypaimon_table(bad).snapshot_manager().get_latest_snapshot().id
    with _app(tmp_path) as client:
        assert _put(client, tmp_path, "bad").status_code == 200 and _put(client, tmp_path, "good").status_code == 200
        r = client.post("/v1/create_global_index", json={"table": "bad", "index_column": "status"})
        assert r.status_code == 202, r.text
        job = wait_job(client, r.json()["job_id"])
        assert job["state"] == "failed", job
        assert str(broken) in job["error"], job["error"]
        _good_answers(client, tmp_path)
    assert pypaimon_table(bad).snapshot_manager().get_latest_snapshot().id == sid
    assert _bitmap_entries(bad) == set()
    index_dir = bad / "index"
    assert not index_dir.exists() or not any(index_dir.iterdir())   # the tasks' files were taken back
