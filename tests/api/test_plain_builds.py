"""Plain tables (Parquet/ORC/CSV/JSON under a location) take build requests as Paimon tables do (issue 33): several
columns and families in one request, a type the family cannot hold and an option of another family refused with
400 before any job starts (the same checks and words on both kinds), and a location that does not exist refused
when registering. pyarrow's reading of the data files is the judge of every answer."""
from __future__ import annotations

import random
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from service.api.app import create_app
from tests.api.helpers import TestClient, make_settings, wait_job
from tests.unit.tables.paimon.paimon_tables import create_table

TAGS = ["vip", "trial", "", "ü", "churned"]


def _rows(rng: random.Random, n: int) -> pa.Table:
    def tags() -> list[str | None] | None:
        r = rng.random()
        return None if r < 0.1 else [] if r < 0.15 else [
            None if rng.random() < 0.05 else rng.choice(TAGS) for _ in range(rng.randint(1, 3))]

    return pa.table({
        "uid": pa.array([None if rng.random() < 0.1 else rng.randint(-500, 500) for _ in range(n)], pa.int64()),
        "tags": pa.array([tags() for _ in range(n)], pa.list_(pa.string())),
        "code": pa.array([rng.randint(-40, 40) for _ in range(n)], pa.int32()),
    })


def _write(location: Path, index: int, rows: pa.Table) -> None:
    location.mkdir(parents=True, exist_ok=True)
    pq.write_table(rows, location / f"part-{index:03d}.parquet", row_group_size=150)


def _oracle(location: Path) -> pa.Table:
    """Every data file in path order (= row-id order), read by pyarrow: row id = position."""
    return pa.concat_tables(pq.read_table(p) for p in sorted(location.glob("*.parquet")))


def _ids(client: TestClient, where: str) -> list[int]:
    r = client.post("/v1/tables/t/query", json={"where": where, "limit": 100_000})
    assert r.status_code == 200, r.text
    assert r.json()["exact"] is True, r.json()
    return list(r.json()["row_ids"])


def _build(client: TestClient, **body: Any) -> dict[str, Any]:
    r = client.post("/v1/create_global_index", json={"table": "t", **body})
    assert r.status_code == 202, r.text
    return wait_job(client, r.json()["job_id"])


def _refused(client: TestClient, body: dict[str, Any], code: str = "invalid_option") -> dict[str, Any]:
    r = client.post("/v1/create_global_index", json=body)
    assert r.status_code == 400 and r.json()["error"]["code"] == code, r.text
    return dict(r.json()["error"])


@pytest.fixture()
def plain(tmp_path: Path) -> Iterator[tuple[TestClient, Path]]:
    location = tmp_path / "data" / "t"
    rng = random.Random(33)
    _write(location, 0, _rows(rng, 500))
    _write(location, 1, _rows(rng, 400))
    with TestClient(create_app(make_settings(tmp_path))) as client:
        assert client.put("/v1/tables/t", json={"location": str(location)}).status_code == 200
        yield client, location


def test_several_columns_and_families_in_one_request(plain: tuple[TestClient, Path]) -> None:
    client, location = plain
    job = _build(client, index_column="uid,tags", index_type="btree,multivalue")
    assert job["state"] == "succeeded" and job["snapshot_id"] == 1, job
    assert job["progress"]["rows_indexed"] == 2 * 900 and job["progress"]["ranges_done"] == 2, job

    def check() -> None:
        data = _oracle(location).to_pylist()
        uid = [r["uid"] for r in data]
        tags = [r["tags"] for r in data]
        some = next(u for u in uid if u is not None)
        assert _ids(client, f"uid = {some}") == [i for i, u in enumerate(uid) if u == some]
        assert _ids(client, "uid > 250") == [i for i, u in enumerate(uid) if u is not None and u > 250]
        assert _ids(client, "uid IS NULL") == [i for i, u in enumerate(uid) if u is None]
        for tag in ("vip", ""):
            assert _ids(client, f"array_contains(tags, '{tag}')") == [i for i, t in enumerate(tags)
                                                                      if t is not None and tag in t]
        indexes = client.get("/v1/tables/t/indexes").json()["indexes"]
        assert {(i["column"], i["index_type"], i["key_type"]) for i in indexes} == {
            ("uid", "btree", "bigint"), ("tags", "multivalue", "string")}
        assert all(i["covered_ranges"] == [[0, len(data) - 1]] for i in indexes), indexes

    check()
    # again, incrementally, after a file arrived: both columns take its rows, in one job
    _write(location, 2, _rows(random.Random(34), 300))
    job = _build(client, index_column="uid,tags", index_type="btree,multivalue")
    assert job["state"] == "succeeded" and job["snapshot_id"] == 2, job
    assert job["progress"]["rows_indexed"] == 2 * 300, job
    check()


def test_each_index_records_its_own_familys_options(plain: tuple[TestClient, Path]) -> None:
    client, _ = plain
    job = _build(client, index_column="uid,tags", index_type="btree,multivalue",
                 options={"btree-index.compression": "zstd", "multivalue-index.compression": "lz4"})
    assert job["state"] == "succeeded", job
    got = {i["column"]: i["options"] for i in client.get("/v1/tables/t/indexes").json()["indexes"]}
    assert (got["uid"]["btree-index.compression"], got["uid"]["multivalue-index.compression"]) == ("zstd", "none")
    assert (got["tags"]["btree-index.compression"], got["tags"]["multivalue-index.compression"]) == ("none", "lz4")


def test_columns_whose_indexes_disagree_on_an_option_are_refused_naming_it(plain: tuple[TestClient, Path]) -> None:
    """One build writes every column with one set of options: a shared option the two indexes were built with
    differently, and that the request leaves out, cannot be served; the refusal says so."""
    client, _ = plain
    assert _build(client, index_column="uid", index_type="btree",
                  options={"sorted-index.records-per-range": "500"})["state"] == "succeeded"
    err = _refused(client, {"table": "t", "index_column": "uid,tags", "index_type": "btree,multivalue"})
    assert err["details"]["option"] == "sorted-index.records-per-range", err
    for words in ("'uid'", "'tags'", "'500'", "'10000000'", "give the option in the request"):
        assert words in err["message"], err
    job = _build(client, index_column="uid,tags", index_type="btree,multivalue",
                 options={"sorted-index.records-per-range": "500"})
    assert job["state"] == "succeeded", job


@pytest.fixture()
def both(tmp_path: Path) -> Iterator[TestClient]:
    """A plain table `t` and a Paimon table `p`, each with an INT column `code` and no ARRAY column in `p`."""
    _write(tmp_path / "data" / "t", 0, _rows(random.Random(1), 200))
    paimon = create_table(tmp_path / "data" / "warehouse", "events", commits=1, rows=200)
    with TestClient(create_app(make_settings(tmp_path))) as client:
        assert client.put("/v1/tables/t", json={"location": str(tmp_path / "data" / "t")}).status_code == 200
        assert client.put("/v1/tables/p", json={"location": str(paimon), "format": "paimon"}).status_code == 200
        yield client


@pytest.mark.parametrize(("column", "index_type", "options", "option", "words"), [
    # a family that cannot hold the column's type (issue 33: plain tables accepted it and failed in the job)
    ("code", "multivalue", None, None, "column 'code' has type {type}; a multivalue index needs an ARRAY column"),
    # an option of another family (issue 33: accepted, and recorded on a plain table as if applied)
    ("code", "btree", {"bitmap-index.compression": "zstd"}, "bitmap-index.compression",
     "option 'bitmap-index.compression' belongs to the bitmap index family; this build makes btree indexes"),
    ("code", "bitmap", "btree-index.bloom-filter.enabled=true", "btree-index.bloom-filter.enabled",
     "option 'btree-index.bloom-filter.enabled' belongs to the btree index family"),
])
def test_a_request_either_kind_cannot_serve_is_refused_alike(both: TestClient, column: str, index_type: str,
                                                             options: Any, option: str | None, words: str) -> None:
    client = both
    for table, spelled in (("t", "int32"), ("p", "INT")):
        err = _refused(client, {"table": table, "index_column": column, "index_type": index_type,
                                **({"options": options} if options is not None else {})})
        assert words.format(type=spelled) in err["message"], err
        assert err["details"].get("option") == option, err
    assert client.get("/v1/jobs").json()["jobs"] == []   # no job started


def test_a_list_column_for_a_family_of_values_names_multivalue(plain: tuple[TestClient, Path]) -> None:
    client, _ = plain
    err = _refused(client, {"table": "t", "index_column": "uid,tags", "index_type": "btree"})
    assert err["message"].startswith("column 'tags' has type list<") and err["message"].endswith(
        "string>, which a btree index cannot hold; index its elements with index_type 'multivalue'"), err
    err = _refused(client, {"table": "t", "index_column": "tags", "index_type": "btree",
                            "options": {"multivalue-index.compression": "zstd"}})
    assert err["details"]["option"] == "multivalue-index.compression", err   # the option first: before any read
    assert client.get("/v1/tables/t/indexes").json()["indexes"] == []


def test_registering_a_location_that_does_not_exist_is_refused(tmp_path: Path) -> None:
    data = tmp_path / "data"
    (data / "gone").mkdir(parents=True)
    _write(data / "gone", 0, _rows(random.Random(2), 50))
    with TestClient(create_app(make_settings(tmp_path))) as client:
        for name, body in (("x", {"location": str(data / "nosuch")}),
                           ("y", {"location": str(data / "nosuch" / "db.db" / "t"), "format": "paimon"})):
            r = client.put(f"/v1/tables/{name}", json=body)
            err = r.json()["error"]
            assert r.status_code == 400 and err["code"] == "invalid_table", r.text
            assert err["message"] == f"location {body['location']} does not exist", err
            assert err["details"]["location"] == body["location"], err
            assert client.get(f"/v1/tables/{name}").status_code == 404   # nothing registered
        assert client.get("/v1/tables").json()["tables"] == []
        # a location that goes away after registering: a build names the column that exists nowhere
        assert client.put("/v1/tables/g", json={"location": str(data / "gone")}).status_code == 200
        shutil.rmtree(data / "gone")
        r = client.post("/v1/create_global_index", json={"table": "g", "index_column": "uid"})
        err = r.json()["error"]
        assert r.status_code == 400 and err["code"] == "unknown_column", r.text
        assert "no column 'uid'" in err["message"] and "holds no data file" in err["message"], err
        assert client.get("/v1/jobs").json()["jobs"] == []
