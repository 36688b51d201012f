"""Requests bgix must refuse before anything is stored (issue 34), against a real `bgix serve` (token set, local
build engine, loopback only): strings that cannot be encoded as UTF-8 (a lone surrogate, the JSON escape
"\\ud800") are 400 wherever they appear and store nothing; one broken table document never fails GET /v1/tables
(it is listed under `errors`); request fields are strict (no `true` → 1, no "yes" → true); a 5,000-digit
integer is refused for its size, not as "nested too deeply".

Bodies are written by hand (json.dumps would escape the surrogate the same way, but a hand-written body shows
exactly what travels). Counts are checked against pandas on the source rows.
"""
from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import numpy as np
import pandas as pd
import pytest

from tests.api.helpers import write_table
from tests.api.server import bgix_process

TOKEN = "text-token"
AUTH = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
LONE = "\\ud800"   # as it travels in a JSON body: a lone high surrogate

pytestmark = pytest.mark.slow   # a `bgix serve` process and one build


class Server:
    def __init__(self, url: str, root: Path, df: pd.DataFrame) -> None:
        self.url, self.root, self.df = url, root, df
        self.http = httpx.Client(base_url=url, timeout=60.0)

    def send(self, method: str, path: str, body: str) -> httpx.Response:
        return self.http.request(method, path, content=body.encode("ascii"), headers=AUTH)

    def wait(self, job_id: str) -> dict[str, object]:
        for _ in range(600):
            job = self.http.get(f"/v1/jobs/{job_id}").json()
            if job["state"] not in ("queued", "running"):
                return dict(job)
            time.sleep(0.1)
        raise AssertionError(f"job {job_id} did not finish")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("text")
    rng = np.random.default_rng(34)
    df = pd.DataFrame({"u": rng.integers(0, 50, 2000), "s": np.array(["a", "b", "c"], dtype=object)[rng.integers(0, 3, 2000)]})
    write_table(root / "data" / "t", df, 2)
    env = {"BGIX_WAREHOUSE": str(root / "warehouse"), "BGIX_ALLOWED_ROOTS": str(root),
           "BGIX_BUILD_ENGINE": "local", "BGIX_TOKEN": TOKEN, "BGIX_SNAPSHOT_TTL_SECONDS": "0"}
    with bgix_process(env, root / "serve.log") as (url, _):
        srv = Server(url, root, df)
        r = srv.http.put("/v1/tables/t", headers=AUTH, json={"location": str(root / "data" / "t")})
        assert r.status_code == 200, r.text
        r = srv.http.post("/v1/create_global_index", headers=AUTH, json={"table": "t", "index_column": "u"})
        assert r.status_code == 202, r.text
        assert srv.wait(r.json()["job_id"])["state"] == "succeeded"
        yield srv
        srv.http.close()


def _refused_as_text(r: httpx.Response, position: str) -> None:
    assert r.status_code == 400, r.text
    err = r.json()["error"]
    assert err["code"] == "invalid_text", r.text
    assert err["details"]["position"] == position and "not valid Unicode" in err["message"], r.text


def test_a_lone_surrogate_in_a_registration_is_400_and_stores_nothing(server: Server) -> None:
    loc = json.dumps(str(server.root / "data" / "t"))
    cases = {
        "rid": (f'{{"location": {loc}, "row_id_column": "{LONE}"}}', "$.row_id_column"),
        "parts": (f'{{"location": {loc}, "partition_columns": ["{LONE}"]}}', "$.partition_columns[0]"),
        "loc": (f'{{"location": {loc[:-1]}{LONE}"}}', "$.location"),
    }
    for name, (body, position) in cases.items():
        _refused_as_text(server.send("PUT", f"/v1/tables/{name}", body), position)
        assert not (server.root / "warehouse" / "tables" / name).exists()
        assert server.http.get(f"/v1/tables/{name}").status_code == 404
    # the listing still answers, with the one good table only
    r = server.http.get("/v1/tables")
    assert r.status_code == 200, r.text
    assert [t["name"] for t in r.json()["tables"]] == ["t"] and r.json().get("errors", []) == []


def test_a_lone_surrogate_in_a_build_or_a_query_is_400(server: Server) -> None:
    build = [
        ('{"table": "t", "index_column": "u", "options": {"' + LONE + '": "1"}}', "$.options"),
        ('{"table": "t", "index_column": "u", "options": {"bitmap-index.compression": "' + LONE + '"}}',
         "$.options.bitmap-index.compression"),
        ('{"table": "t", "index_column": "' + LONE + '"}', "$.index_column"),
        ('{"table": "t", "index_column": "u", "partitions": "' + LONE + '=1"}', "$.partitions"),
        ('{"table": "t", "index_column": "u", "partitions": [{"k": "' + LONE + '"}]}', "$.partitions[0].k"),
    ]
    for body, position in build:
        _refused_as_text(server.send("POST", "/v1/create_global_index", body), position)
    _refused_as_text(server.send("POST", "/v1/drop_global_index", '{"table": "t", "index_column": "u' + LONE + '"}'),
                     "$.index_column")
    _refused_as_text(server.send("POST", "/v1/tables/t/query", '{"where": "s = \'' + LONE + '\'"}'), "$.where")
    _refused_as_text(server.send("POST", "/v1/tables/t/query", '{"where": "u = 1", "cursor": "' + LONE + '"}'),
                     "$.cursor")
    # inside a JSON predicate its reader names the place (400 invalid_predicate), never 500
    for body in ('{"predicate": {"op": "eq", "column": "u", "value": "' + LONE + '"}}',
                 '{"predicate": {"op": "eq", "column": "' + LONE + '", "value": 1}}',
                 '{"predicate": {"op": "' + LONE + '", "column": "u", "value": 1}}',
                 '{"predicate": {"op": "eq", "column": "u", "value": 1, "' + LONE + '": 1}}'):
        r = server.send("POST", "/v1/tables/t/query", body)
        assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_predicate", r.text
    # nothing was started, and the server answers as before
    assert [j["index_column"] for j in server.http.get("/v1/jobs").json()["jobs"]] == ["u"]
    r = server.http.post("/v1/tables/t/query", json={"where": "u = 7", "result": "count"})
    assert r.status_code == 200 and r.json()["count"] == int((server.df.u == 7).sum()), r.text


def test_a_broken_table_document_is_listed_with_its_error(server: Server) -> None:
    """A table.json an older version stored with a lone surrogate (JSON keeps it as an escape): the list names
    it under `errors`, the other tables are listed, GET names the document, DELETE still removes it."""
    d = server.root / "warehouse" / "tables" / "old"
    d.mkdir(parents=True)
    (d / "table.json").write_text(
        '{"name": "old", "location": ' + json.dumps(str(server.root / "data" / "t")) + ', "format": "parquet", '
        '"partition_columns": [], "row_id_column": "' + LONE + '", "created_at": 1.0}')
    r = server.http.get("/v1/tables")
    assert r.status_code == 200, r.text
    body = r.json()
    assert [t["name"] for t in body["tables"]] == ["t"] and body["count"] == 1
    errors = {e["name"]: e["error"] for e in body["errors"]}
    assert errors["old"]["code"] == "corrupt_catalog_document", body
    assert "row_id_column" in errors["old"]["message"] and "table.json" in errors["old"]["message"]
    r = server.http.get("/v1/tables/old")
    assert r.status_code == 500 and r.json()["error"]["code"] == "corrupt_catalog_document", r.text
    assert server.http.delete("/v1/tables/old", headers=AUTH).status_code == 200
    assert server.http.get("/v1/tables").json().get("errors", []) == []


def test_request_fields_are_strict(server: Server) -> None:
    """`limit: true` is not 1 and `explain: "yes"` is not true (pydantic's lax mode took both)."""
    for extra in ('"limit": true', '"explain": "yes"', '"limit": "5"', '"explain": 1'):
        r = server.send("POST", "/v1/tables/t/query", '{"where": "u = 7", ' + extra + '}')
        assert r.status_code == 422 and r.json()["error"]["code"] == "invalid_request", (extra, r.text)
        field = extra.split('"')[1]
        assert [e["loc"] for e in r.json()["error"]["details"]["errors"]] == [["body", field]], r.text
    r = server.send("POST", "/v1/remove_orphan_files", '{"table": "t", "dry_run": "yes"}')
    assert r.status_code == 422, r.text
    # the same fields in their own types still work
    r = server.send("POST", "/v1/tables/t/query", '{"where": "u = 7", "limit": 2, "explain": true}')
    assert r.status_code == 200 and r.json()["count"] == int((server.df.u == 7).sum()), r.text
    assert len(r.json()["row_ids"]) == min(2, r.json()["count"]) and r.json()["explain"] is not None


def test_a_huge_integer_is_refused_for_its_size(server: Server) -> None:
    digits = "9" * 5000
    r = server.send("POST", "/v1/tables/t/query", '{"predicate": {"op": "eq", "column": "u", "value": ' + digits + "}}")
    assert r.status_code == 422 and r.json()["error"]["code"] == "invalid_request", r.text
    message = r.json()["error"]["message"]
    assert "5000 digits" in message and "nested" not in message, message
    r = server.send("POST", "/v1/tables/t/query", '{"where": "u = ' + digits + '"}')
    assert r.status_code == 400 and "5000 digits" in r.json()["error"]["message"], r.text
