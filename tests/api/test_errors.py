"""The single error envelope for every failure class, auth, path confinement, 409 on concurrent builds,
and a corrupt index file answered with 500 corrupt_index_file while the service keeps serving."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from index_format.errors import StorageUnavailableError
from service.api.app import create_app
from service.catalog import Catalog
from service.catalog.model import JobRecord
from tests.api.helpers import TestClient, make_settings, wait_job, write_table
from tests.api.predicates import make_frame


def assert_envelope(r, status: int, code: str) -> dict:
    assert r.status_code == status, r.text
    body = r.json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message", "details"}
    assert body["error"]["code"] == code, body
    assert isinstance(body["error"]["message"], str) and body["error"]["message"]
    return body["error"]


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    root = tmp_path_factory.mktemp("errors")
    df = make_frame(np.random.default_rng(3), 300)
    write_table(root / "data" / "t", df, 2)
    app = create_app(make_settings(root))
    with TestClient(app) as client:
        assert client.put("/v1/tables/t", json={"location": str(root / "data" / "t")}).status_code == 200
        for col in ("status", "age"):
            job = client.post("/v1/create_global_index", json={"table": "t", "index_column": col}).json()
            assert wait_job(client, job["job_id"])["state"] == "succeeded"
        yield client, root, df


def test_unknown_column_lists_the_tables_columns(small) -> None:
    client, _, df = small
    err = assert_envelope(client.post("/v1/tables/t/query", json={"where": "nope = 1"}), 400, "unknown_column")
    assert err["details"]["known"] == sorted(df.columns)   # a column with no index is read from the data
    assert "columns of the table: " + ", ".join(sorted(df.columns)) in err["message"]


def test_literal_of_another_kind_is_400(small) -> None:
    client, _, _ = small
    for where in ("age = 'abc'", "age = '1.5'", "age IN (1, 'x')", "status = 5", "age > TRUE"):
        err = assert_envelope(client.post("/v1/tables/t/query", json={"where": where}), 400, "invalid_literal")
        assert err["details"]["type"] == "BindError"


def test_numbers_the_column_cannot_hold_are_answered_as_sql_compares_them(small) -> None:
    """`age > 1.5` on a BIGINT column is `age >= 2`; past the type's range every value lies on one side; NULL rows
    stay UNKNOWN, so NOT leaves them out (pandas over the source rows is the judge)."""
    client, _, df = small
    age = df.age.astype("float64")   # NaN for NULL: every comparison with it is False, as SQL's UNKNOWN
    cases = {
        "age > 1.5": age > 1.5, "NOT age > 1.5": age <= 1.5, "age = 1.5": age == 1.5,
        "NOT age = 1.5": age.notna() & (age != 1.5), "age < 99999999999999999999": age.notna(),
        "NOT age < 99999999999999999999": age.notna() & age.isna(), "age IN (1, 2.5, 99999999999999999999)": age == 1,
        "age BETWEEN 17.5 AND 30.5": (age >= 17.5) & (age <= 30.5), "age < NULL OR age <= 3.5": age <= 3.5,
    }
    for where, mask in cases.items():
        r = client.post("/v1/tables/t/query", json={"where": where, "limit": 10_000})
        assert r.status_code == 200, (where, r.text)
        assert r.json()["exact"] is True and r.json()["row_ids"] == df.index[mask].tolist(), where


def test_parse_errors(small) -> None:
    client, _, _ = small
    err = assert_envelope(client.post("/v1/tables/t/query", json={"where": "status = "}), 400,
                          "invalid_predicate")
    assert "position" in err["details"]
    err = assert_envelope(client.post("/v1/tables/t/query", json={"predicate": {"op": "eq", "col": "x"}}),
                          400, "invalid_predicate")
    assert str(err["details"]["position"]).startswith("$")


def test_schema_failures_are_422_invalid_request(small) -> None:
    client, _, _ = small
    assert_envelope(client.post("/v1/tables/t/query", json={}), 422, "invalid_request")
    assert_envelope(client.post("/v1/tables/t/query", json={"where": "age = 1", "predicate": {}}), 422,
                    "invalid_request")
    assert_envelope(client.post("/v1/tables/t/query", json={"where": "age = 1", "limit": 100_001}), 422,
                    "invalid_request")
    assert_envelope(client.post("/v1/create_global_index", json={"table": "t"}), 422, "invalid_request")


def test_not_found(small) -> None:
    client, _, _ = small
    assert_envelope(client.get("/v1/tables/missing"), 404, "not_found")
    assert_envelope(client.post("/v1/tables/missing/query", json={"where": "a = 1"}), 404, "not_found")
    assert_envelope(client.get("/v1/jobs/0123abc"), 404, "not_found")
    assert_envelope(client.get("/v1/tables/t/indexes/score/values"), 404, "not_found")
    assert_envelope(client.get("/v1/nothing/here"), 404, "not_found")


def test_invalid_option_and_cursor(small) -> None:
    client, _, _ = small
    err = assert_envelope(client.post("/v1/create_global_index", json={
        "table": "t", "index_column": "country", "options": "bitmap-index.compression=snappy"}), 400,
        "invalid_option")
    assert "compression" in err["message"]
    assert_envelope(client.post("/v1/create_global_index", json={
        "table": "t", "index_column": "country", "options": {"no-such-option": "1"}}), 400, "invalid_option")
    assert_envelope(client.post("/v1/tables/t/query", json={"where": "age > 1", "cursor": "!!notacursor"}),
                    400, "invalid_cursor")


def test_second_build_of_same_index_is_409_naming_the_job(small) -> None:
    client, root, _ = small
    catalog = Catalog(client.app.state.services.storage)
    # An active record whose process is alive (this test process) stands for a running build.
    catalog.put_job(JobRecord(id="runningjob1", table="t", column="status", state="running", pid=os.getpid()))
    try:
        err = assert_envelope(client.post("/v1/create_global_index", json={"table": "t", "index_column": "status"}),
                              409, "conflict")
        assert err["details"]["job_id"] == "runningjob1" and "runningjob1" in err["message"]
    finally:
        catalog.update_job("runningjob1", state="failed", error="test")


def test_storage_unavailable_is_503(small, monkeypatch) -> None:
    client, _, _ = small
    engine = client.app.state.services.query_service

    def down(table: str) -> None:
        raise StorageUnavailableError("object store did not answer")

    monkeypatch.setattr(engine, "view", down)
    err = assert_envelope(client.post("/v1/tables/t/query", json={"where": "age = 1"}), 503, "storage_unavailable")
    assert "did not answer" in err["message"]


def test_unexpected_exception_is_500_internal_without_details(small, monkeypatch) -> None:
    client, _, _ = small
    engine = client.app.state.services.query_service

    def boom(table: str) -> None:
        raise RuntimeError("secret internals")

    monkeypatch.setattr(engine, "view", boom)
    quiet = TestClient(client.app, raise_server_exceptions=False)
    err = assert_envelope(quiet.get("/v1/tables/t/indexes"), 500, "internal")
    assert "secret" not in err["message"]


def test_drop_refused_while_a_build_runs(small) -> None:
    client, _, _ = small
    catalog = Catalog(client.app.state.services.storage)
    catalog.put_job(JobRecord(id="runningjob2", table="t", column="age", state="running", pid=os.getpid()))
    try:
        assert_envelope(client.post("/v1/drop_global_index", json={"table": "t", "index_column": "age"}), 409,
                        "conflict")
        assert_envelope(client.delete("/v1/tables/t"), 409, "conflict")
    finally:
        catalog.update_job("runningjob2", state="failed", error="test")
    assert client.get("/v1/tables/t").status_code == 200


def test_table_location_outside_roots_is_403(small, tmp_path: Path) -> None:
    client, root, _ = small
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (root / "data" / "link").symlink_to(outside)
    for location in (str(outside), str(root / "data" / ".." / ".." / "x"), str(root / "data" / "link"),
                     "http://example.com/data", f"file://{outside}", "/etc", "s3://bucket/x"):
        err = assert_envelope(client.put("/v1/tables/bad", json={"location": location}), 403, "path_not_allowed")
        assert err["details"]["type"] == "PathNotAllowedError"
    assert_envelope(client.get("/v1/tables/bad"), 404, "not_found")
    # names cannot escape the warehouse either
    assert client.put("/v1/tables/..", json={"location": str(root / "data" / "t")}).status_code in (404, 405, 422)
    assert client.get("/v1/tables/%2e%2e%2fx").status_code in (404, 422)


def test_corrupt_index_file_is_500_naming_the_file_and_service_keeps_serving(small) -> None:
    client, root, df = small
    services = client.app.state.services
    snap = services.catalog.current_snapshot("t", "status")
    path = services.storage.resolve(snap.files[0].path)
    original = Path(path).read_bytes()
    try:
        # Same size, garbage footer: the reader must name the file and the footer block.
        Path(path).write_bytes(original[:-48] + b"\xee" * 48)
        fresh = create_app(make_settings(root))
        with TestClient(fresh) as c2:
            err = assert_envelope(c2.post("/v1/tables/t/query", json={"where": "status = 'vip'"}), 500,
                                  "corrupt_index_file")
            assert path in err["message"] and err["details"]["path"] == path
            assert "footer" in (err["details"].get("block") or err["message"])
            ok = c2.post("/v1/tables/t/query", json={"where": "age > 10", "result": "count"})
            assert ok.status_code == 200
            assert ok.json()["count"] == int((df.age.notna() & (df.age > 10)).sum())
            metrics = c2.get("/metrics").text
            assert "bgix_corrupt_index_files_total 1.0" in metrics
    finally:
        Path(path).write_bytes(original)


def test_token_required_on_mutations_and_optionally_reads(tmp_path: Path) -> None:
    (tmp_path / "data" / "t").mkdir(parents=True)
    app = create_app(make_settings(tmp_path, token="s3cret"))
    with TestClient(app) as client:
        body = {"location": str(tmp_path / "data" / "t")}
        assert_envelope(client.put("/v1/tables/t", json=body), 401, "unauthorized")
        assert_envelope(client.put("/v1/tables/t", json=body, headers={"Authorization": "Bearer wrong"}),
                        401, "unauthorized")
        assert_envelope(client.post("/v1/drop_global_index", json={"table": "t", "index_column": "a"}),
                        401, "unauthorized")
        r = client.put("/v1/tables/t", json=body, headers={"Authorization": "Bearer s3cret"})
        assert r.status_code == 200, r.text
        assert client.get("/v1/tables/t").status_code == 200
        assert client.get("/healthz").status_code == 200
    app = create_app(make_settings(tmp_path, token="s3cret", read_token_required=True))
    with TestClient(app) as client:
        assert_envelope(client.get("/v1/tables"), 401, "unauthorized")
        assert client.get("/v1/tables", headers={"Authorization": "Bearer s3cret"}).status_code == 200


def test_drop_index_and_table_never_touch_source_data(small, tmp_path: Path) -> None:
    client, root, _ = small
    data = root / "data" / "t"
    before = sorted(p.name for p in data.iterdir())
    job = client.post("/v1/create_global_index", json={"table": "t", "index_column": "score"}).json()
    assert wait_job(client, job["job_id"])["state"] == "succeeded"
    counted = client.post("/v1/tables/t/query", json={"where": "score > 1", "result": "count"}).json()["count"]
    assert client.post("/v1/drop_global_index", json={"table": "t", "index_column": "score"}).status_code == 200
    # no index any more: by default read from the data (the count is unchanged), "scan": "never" covers nothing
    after = client.post("/v1/tables/t/query", json={"where": "score > 1", "result": "count"}).json()
    assert after["count"] == counted and after["exact"] is True and after["coverage"]["complete"] is True
    unindexed = client.post("/v1/tables/t/query", json={"where": "score > 1", "scan": "never"}).json()
    assert unindexed["row_ids"] == [] and unindexed["coverage"]["complete"] is False
    assert sorted(p.name for p in data.iterdir()) == before
