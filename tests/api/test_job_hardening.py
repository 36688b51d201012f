"""create_global_index never "succeeds" at nothing (issue 10): out-of-range options, malformed or empty
partition selections and option changes without `rebuild` are refused before a job starts; a build that
has nothing to do says so in its record; `rebuild` applies new options."""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from service.api.app import create_app
from service.jobs.jobspec import NOTHING_TO_BUILD
from tests.api.helpers import TestClient, make_settings, wait_job, write_table

BLOCK = "bitmap-index.dictionary-block-size"
BUDGET = "bitmap-index.fallback-scan-max-size"


def _frame(rows: int, seed: int = 1) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"s": rng.choice(["a", "b", "c", None], rows), "n": rng.integers(0, 50, rows)})


@pytest.fixture()
def client(tmp_path: Path) -> Iterator[TestClient]:
    write_table(tmp_path / "data" / "t", _frame(300), 3)
    for dt in ("1", "2"):
        write_table(tmp_path / "data" / "p" / f"dt={dt}", _frame(40, int(dt)), 1)
    with TestClient(create_app(make_settings(tmp_path))) as c:
        assert c.put("/v1/tables/t", json={"location": str(tmp_path / "data" / "t")}).status_code == 200
        assert c.put("/v1/tables/p", json={"location": str(tmp_path / "data" / "p"),
                                           "partition_columns": ["dt"]}).status_code == 200
        yield c


def _build(client: TestClient, **body: Any) -> dict[str, Any]:
    r = client.post("/v1/create_global_index", json={"table": "t", "index_column": "s", **body})
    assert r.status_code == 202, r.text
    job = wait_job(client, r.json()["job_id"])
    assert job["state"] == "succeeded", job
    return job


def _refused(client: TestClient, body: dict[str, Any], option: str) -> str:
    r = client.post("/v1/create_global_index", json=body)
    assert r.status_code == 400, r.text
    err = r.json()["error"]
    assert err["code"] == "invalid_option" and err["details"]["option"] == option, err
    return str(err["message"])


def _index(client: TestClient, table: str = "t") -> dict[str, Any]:
    (index,) = client.get(f"/v1/tables/{table}/indexes").json()["indexes"]
    return index


def _message(client: TestClient, job_id: str) -> str | None:
    # The job record keeps the note in its progress; GET /v1/jobs/{id} shows it as `message`.
    shown = client.get(f"/v1/jobs/{job_id}").json()["message"]
    assert shown == client.app.state.services.catalog.get_job(job_id).progress.get("message")
    return shown  # type: ignore[no-any-return]


@pytest.mark.parametrize(("key", "value", "allowed"), [
    (BLOCK, "99999 tb", "1 b..64 mb"),
    (BLOCK, "65 mb", "1 b..64 mb"),
    (BLOCK, "0 b", "1 b..64 mb"),
    (BUDGET, "3 gb", "0 b..2 gb"),
    ("sorted-index.records-per-range", "0", "1..2147483647"),
    ("sorted-index.records-per-range", "2147483648", "1..2147483647"),
    ("sorted-index.build.max-parallelism", "1000000", "1..65536"),
    ("sorted-index.build.max-parallelism", "-3", "1..65536"),
    ("bitmap-index.compression-level", "23", "1..22"),
])
def test_out_of_range_options_name_option_value_and_range(client: TestClient, key: str, value: str,
                                                          allowed: str) -> None:
    msg = _refused(client, {"table": "t", "index_column": "s", "options": {key: value}}, key)
    assert key in msg and repr(value) in msg and f"allowed {allowed}" in msg
    assert client.get("/v1/jobs").json()["jobs"] == []  # refused before anything started


def test_huge_option_values_are_refused_without_echoing_them(client: TestClient) -> None:
    value = "9" * 5000
    msg = _refused(client, {"table": "t", "index_column": "s",
                            "options": {"sorted-index.records-per-range": value}}, "sorted-index.records-per-range")
    assert len(msg) < 500


@pytest.mark.parametrize(("partitions", "named"), [
    ("dt=", "dt="),
    ("dt=1;", "dt=1;"),
    (";", ";"),
    ("dt=1,dt=2", "dt=1,dt=2"),
    ("=1", "=1"),
    ([{}], "[{}]"),
    ([{"dt": ""}], "dt="),
    ("dt=9", "dt=9"),               # well formed, matches no data file
    ("dt=1;dt=9", "dt=9"),          # the spec that matches nothing is named
])
def test_bad_or_empty_partition_selection_is_refused_up_front(client: TestClient, partitions: object,
                                                              named: str) -> None:
    msg = _refused(client, {"table": "p", "index_column": "s", "partitions": partitions}, "partitions")
    assert named in msg, msg
    assert client.get("/v1/jobs").json()["jobs"] == []
    assert client.get("/v1/tables/p/indexes").json()["indexes"] == []


def test_a_matching_partition_selection_builds_only_it(client: TestClient) -> None:
    r = client.post("/v1/create_global_index", json={"table": "p", "index_column": "s", "partitions": "dt=2"})
    assert r.status_code == 202, r.text
    job = wait_job(client, r.json()["job_id"])
    assert job["state"] == "succeeded" and job["progress"]["rows_indexed"] == 40


def test_changed_options_without_rebuild_are_refused_and_rebuild_applies_them(client: TestClient) -> None:
    _build(client, options={BLOCK: "256 b"})
    before = _index(client)
    assert before["snapshot_id"] == 1 and before["options"][BLOCK] == "256 b"
    msg = _refused(client, {"table": "t", "index_column": "s",
                            "options": {BLOCK: "1 kb", "bitmap-index.compression": "zstd"}}, BLOCK)
    for part in (BLOCK, "'256 b'", "'1 kb'", "bitmap-index.compression", "'zstd'", "rebuild=true"):
        assert part in msg, msg
    assert _index(client) == before  # the index did not change
    # the same request with rebuild rebuilds every range with the new options
    job = _build(client, options={BLOCK: "1 kb", "bitmap-index.compression": "zstd", "rebuild": "true"})
    assert job["snapshot_id"] == 2 and job["progress"]["rows_indexed"] == 300
    after = _index(client)
    assert after["snapshot_id"] == 2
    assert after["options"][BLOCK] == "1 kb" and after["options"]["bitmap-index.compression"] == "zstd"
    body = client.post("/v1/tables/t/query", json={"where": "s = 'a'", "result": "count"}).json()
    assert body["count"] == int((_frame(300).s == "a").sum())


def test_incremental_build_keeps_the_index_options(client: TestClient, tmp_path: Path) -> None:
    _build(client, options={BLOCK: "256 b", "bitmap-index.compression": "zstd"})
    write_table(tmp_path / "extra", _frame(50, 9), 1)
    (tmp_path / "extra" / "part-000.parquet").rename(tmp_path / "data" / "t" / "part-009.parquet")
    # options left out are the index's (not the defaults): the snapshot must not claim "none" for zstd files
    job = _build(client)
    assert job["snapshot_id"] == 2 and job["progress"]["rows_indexed"] == 50
    index = _index(client)
    assert index["options"][BLOCK] == "256 b" and index["options"]["bitmap-index.compression"] == "zstd"
    assert index["uncovered_ranges"] == []


def test_a_build_with_nothing_to_do_says_so(client: TestClient) -> None:
    _build(client, options={BLOCK: "256 b"})
    before = _index(client)
    job = _build(client, options={BLOCK: "256 b"})  # same options, every row covered
    assert job["progress"]["rows_indexed"] == 0 and job["snapshot_id"] == before["snapshot_id"]
    assert _message(client, job["id"]) == NOTHING_TO_BUILD
    assert _index(client) == before


def test_scan_budget_applies_without_rebuild(client: TestClient) -> None:
    # A query-time option: the index takes it as a new snapshot of the same files.
    _build(client)
    before = _index(client)
    job = _build(client, options={BUDGET: "1 mb"})
    assert job["progress"]["rows_indexed"] == 0 and job["snapshot_id"] == before["snapshot_id"] + 1
    msg = _message(client, job["id"])
    assert msg is not None and msg.startswith(NOTHING_TO_BUILD) and BUDGET in msg
    after = _index(client)
    assert after["options"][BUDGET] == "1 mb" and after["files"] == before["files"]


def test_a_build_on_a_table_without_data_files_is_refused_naming_why(tmp_path: Path) -> None:
    """Issue 33: a column that exists nowhere (the location holds no data file yet) is refused before any job starts,
    not "built" into nothing; once a file arrives, the build runs."""
    loc = tmp_path / "data" / "e"
    loc.mkdir(parents=True)
    with TestClient(create_app(make_settings(tmp_path))) as c:
        assert c.put("/v1/tables/e", json={"location": str(loc)}).status_code == 200
        r = c.post("/v1/create_global_index", json={"table": "e", "index_column": "s"})
        err = r.json()["error"]
        assert r.status_code == 400 and err["code"] == "unknown_column", r.text
        assert "no column 's'" in err["message"] and f"{loc} holds no data file" in err["message"], err
        assert c.get("/v1/jobs").json()["jobs"] == []   # no job recorded
        write_table(loc, _frame(30), 1)
        job = wait_job(c, c.post("/v1/create_global_index", json={"table": "e", "index_column": "s"}).json()["job_id"])
        assert job["state"] == "succeeded" and job["snapshot_id"] == 1, job


@pytest.mark.parametrize("column", [" ", " , "])
def test_blank_index_column_is_400(client: TestClient, column: str) -> None:
    r = client.post("/v1/create_global_index", json={"table": "t", "index_column": column})
    assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_option", r.text


@pytest.fixture()
def paimon(tmp_path: Path) -> Iterator[tuple[TestClient, Path]]:
    from tests.unit.tables.paimon.paimon_tables import create_table
    location = create_table(tmp_path / "data" / "warehouse", "events", commits=1, rows=200)
    with TestClient(create_app(make_settings(tmp_path))) as c:
        assert c.put("/v1/tables/events", json={"format": "paimon", "location": str(location)}).status_code == 200
        yield c, location


def test_paimon_bad_partitions_are_refused_up_front(paimon: tuple[TestClient, Path]) -> None:
    from tests.unit.tables.paimon.paimon_tables import pypaimon_table
    client, location = paimon
    sid = pypaimon_table(location).snapshot_manager().get_latest_snapshot().id
    body = {"table": "events", "index_column": "status"}
    assert "2030-01-01" in _refused(client, {**body, "partitions": "dt=2030-01-01"}, "partitions")
    assert "hh" in _refused(client, {**body, "partitions": "hh=1"}, "partitions")
    assert client.get("/v1/jobs").json()["jobs"] == []
    assert pypaimon_table(location).snapshot_manager().get_latest_snapshot().id == sid


def test_paimon_build_with_nothing_to_do_says_so(paimon: tuple[TestClient, Path]) -> None:
    client, _ = paimon
    body = {"table": "events", "index_column": "status", "partitions": "dt=2024-01-02"}
    first = wait_job(client, client.post("/v1/create_global_index", json=body).json()["job_id"])
    assert first["state"] == "succeeded" and first["progress"]["rows_indexed"] > 0
    assert _message(client, first["id"]) is None
    again = wait_job(client, client.post("/v1/create_global_index", json=body).json()["job_id"])
    assert again["state"] == "succeeded" and again["progress"]["rows_indexed"] == 0
    assert again["snapshot_id"] == first["snapshot_id"]
    assert _message(client, again["id"]) == NOTHING_TO_BUILD
