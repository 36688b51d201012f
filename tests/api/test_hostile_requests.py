"""Every hostile or broken request of the hardening probe (issue 10), replayed against a real `bgix serve`
(token set, local build engine, loopback only): each gets its clean status, code and a message naming the
problem, nothing answers 500 `internal`, and the server keeps answering on the same connection.

Counts are checked against pandas on the source rows.
"""
from __future__ import annotations

import base64
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import numpy as np
import pandas as pd
import pytest

from tests.api.helpers import write_table
from tests.api.server import bgix_process, rss_bytes

TOKEN = "hostile-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
WORDS = ["alpha", "beta", "gamma", "delta"]


def _frame(rows: int = 3000) -> pd.DataFrame:
    rng = np.random.default_rng(10)
    s = pd.Series(np.array(WORDS, dtype=object)[rng.integers(0, len(WORDS), rows)])
    s[rng.random(rows) < 0.1] = None
    n = pd.array(rng.integers(-100, 100, rows), dtype="Int64")
    n[rng.random(rows) < 0.1] = pd.NA
    return pd.DataFrame({"s": s, "n": n})


class Server:
    def __init__(self, url: str, proc: object, root: Path, df: pd.DataFrame) -> None:
        self.url, self.proc, self.root, self.df = url, proc, root, df
        # One keep-alive connection for everything: an error must not cost the client its connection.
        self.http = httpx.Client(base_url=url, timeout=60.0, limits=httpx.Limits(max_connections=1))

    def query(self, table: str = "t", **body: object) -> httpx.Response:
        return self.http.post(f"/v1/tables/{table}/query", json=body)

    def build(self, table: str, column: str, **extra: object) -> dict[str, object]:
        r = self.http.post("/v1/create_global_index", headers=AUTH,
                           json={"table": table, "index_column": column, **extra})
        assert r.status_code == 202, r.text
        return self.wait(str(r.json()["job_id"]))

    def wait(self, job_id: str) -> dict[str, object]:
        for _ in range(600):
            job = self.http.get(f"/v1/jobs/{job_id}").json()
            if job["state"] not in ("queued", "running"):
                return dict(job)
            time.sleep(0.1)
        raise AssertionError(f"job {job_id} did not finish")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("hostile")
    df = _frame()
    write_table(root / "data" / "t", df, 3)
    env = {"BGIX_WAREHOUSE": str(root / "warehouse"), "BGIX_ALLOWED_ROOTS": str(root),
           "BGIX_BUILD_ENGINE": "local", "BGIX_TOKEN": TOKEN, "BGIX_SNAPSHOT_TTL_SECONDS": "0"}
    with bgix_process(env, root / "serve.log") as (url, proc):
        srv = Server(url, proc, root, df)
        r = srv.http.put("/v1/tables/t", headers=AUTH, json={"location": str(root / "data" / "t")})
        assert r.status_code == 200, r.text
        for column in ("s", "n"):
            assert srv.build("t", column)["state"] == "succeeded"
        yield srv
        srv.http.close()


def _error(r: httpx.Response, status: int, code: str) -> dict[str, object]:
    assert r.status_code == status, r.text
    err = r.json()["error"]
    assert err["code"] == code, r.text
    return dict(err)


def _count(df: pd.DataFrame, mask: pd.Series) -> int:
    return int(mask.fillna(False).astype(bool).sum())


# ---- 1. nesting ------------------------------------------------------------------------------------
def test_nested_parentheses_within_the_limit_answer_and_beyond_it_name_the_limit(server: Server) -> None:
    want = _count(server.df, server.df.s == "alpha")
    r = server.query(where="(" * 47 + "s = 'alpha'" + ")" * 47)
    assert r.status_code == 200 and r.json()["count"] == want, r.text
    err = _error(server.query(where="(" * 300 + "s = 'alpha'" + ")" * 300), 400, "predicate_limit")
    assert "BGIX_MAX_PREDICATE_DEPTH" in str(err["message"])
    deep_json: dict[str, object] = {"op": "eq", "column": "s", "value": "alpha"}
    for level in range(300):   # alternating AND/OR: real nesting (a NOT chain is flat)
        deep_json = {"op": "and" if level % 2 else "or", "args": [deep_json, {"op": "is_null", "column": "n"}]}
    err = _error(server.query(predicate=deep_json), 400, "predicate_limit")
    assert "BGIX_MAX_PREDICATE_DEPTH" in str(err["message"])


def test_not_chains_are_flat_not_deep(server: Server) -> None:
    df = server.df
    r = server.query(where="NOT " * 200 + "s = 'alpha'")
    assert r.status_code == 200 and r.json()["count"] == _count(df, df.s == "alpha"), r.text
    r = server.query(where="NOT " * 201 + "s = 'alpha'")
    assert r.status_code == 200 and r.json()["count"] == _count(df, df.s.notna() & (df.s != "alpha")), r.text


def test_a_wide_or_chain_still_works(server: Server) -> None:
    df = server.df
    terms = [f"n = {i}" for i in range(-100, 100)] * 20   # 4000 terms, flat
    r = server.query(where=" OR ".join(terms))
    assert r.status_code == 200 and r.json()["count"] == _count(df, df.n.notna()), r.text


# ---- 2. memory and size ------------------------------------------------------------------------------
def test_body_over_the_limit_is_413_before_reading(server: Server) -> None:
    values = [f"v{i:07d}" for i in range(1_000_000)]   # ~12 MB of JSON
    err = _error(server.query(predicate={"op": "in", "column": "s", "values": values}), 413, "body_too_large")
    assert "BGIX_MAX_BODY_BYTES" in str(err["message"])
    # The same without Content-Length (chunked): still refused.
    payload = json.dumps({"predicate": {"op": "in", "column": "s", "values": values}}).encode()

    def chunks() -> Iterator[bytes]:
        for i in range(0, len(payload), 1 << 20):
            yield payload[i:i + (1 << 20)]

    with httpx.Client(base_url=server.url, timeout=60.0) as fresh:
        r = fresh.post("/v1/tables/t/query", content=chunks(), headers={"content-type": "application/json"})
    _error(r, 413, "body_too_large")
    assert server.http.get("/healthz").status_code == 200


def test_in_list_and_literal_limits_name_the_setting(server: Server) -> None:
    err = _error(server.query(predicate={"op": "in", "column": "n", "values": list(range(150_000))}),
                 400, "predicate_limit")
    assert "BGIX_MAX_IN_VALUES" in str(err["message"])
    err = _error(server.query(where="s = '" + "x" * 100_000 + "'"), 400, "predicate_limit")
    assert "BGIX_MAX_LITERAL_BYTES" in str(err["message"])
    # SQL text is capped by the request schema (1,000,000 characters), which bounds what sqlglot may see.
    where = " OR ".join(f"(s LIKE 'v{i:07d}%')" for i in range(150_000))
    err = _error(server.query(where=where), 422, "invalid_request")
    assert err["details"]["errors"][0]["loc"] == ["body", "where"]  # type: ignore[index]


@pytest.mark.slow
def test_rss_stays_bounded_over_distinct_large_predicates(server: Server) -> None:
    df = server.df
    before = rss_bytes(server.proc)  # type: ignore[arg-type]
    for k in range(40):
        # ~900 KB each, all distinct: 70,000 short strings, one of them a real value.
        values = ", ".join(f"'k{k:02d}x{i:06d}'" for i in range(70_000))
        where = f"s IN ({values}, 'beta')"
        assert 850_000 < len(where) < 1_000_000
        r = server.query(where=where)
        assert r.status_code == 200 and r.json()["count"] == _count(df, df.s == "beta"), r.text[:300]
    grown = rss_bytes(server.proc) - before  # type: ignore[arg-type]
    assert grown < 60 * 1024 * 1024, f"RSS grew by {grown / 2**20:.1f} MiB over 40 distinct predicates"


# ---- 3. literals and cursors out of their domain ------------------------------------------------------
def test_literals_out_of_domain_are_400(server: Server) -> None:
    raw = b'{"predicate": {"op": "eq", "column": "s", "value": "\\ud800"}}'
    r = server.http.post("/v1/tables/t/query", content=raw, headers={"content-type": "application/json"})
    assert r.status_code == 400, r.text
    assert r.json()["error"]["code"] in ("invalid_literal", "invalid_predicate")
    r = server.query(where="n = " + "9" * 5000)
    err = _error(r, 400, "invalid_predicate")
    assert "5000 digits" in str(err["message"])
    # a number no BIGINT holds: SQL's answer (no row equals it), not an error
    r = server.query(where="n = 99999999999999999999", result="row_ids")
    assert r.status_code == 200 and r.json()["row_ids"] == [] and r.json()["exact"] is True, r.text
    _error(server.query(where="n = 'many'"), 400, "invalid_literal")   # another kind of literal still is


def test_cursor_with_numbers_out_of_range_is_400(server: Server) -> None:
    first = server.query(where="s = 'alpha'", result="row_ids", limit=5)
    assert first.status_code == 200 and first.json()["next_cursor"], first.text
    doc = json.loads(base64.urlsafe_b64decode(first.json()["next_cursor"] + "=="))
    for after in (2**64, 2**70, -5):
        forged = base64.urlsafe_b64encode(json.dumps({**doc, "a": after}).encode()).decode().rstrip("=")
        _error(server.query(where="s = 'alpha'", result="row_ids", limit=5, cursor=forged), 400, "invalid_cursor")
    err = _error(server.query(where="s = 'alpha'", result="row_ids", cursor="A" * 100_000), 422, "invalid_request")
    assert err["details"]["errors"][0]["loc"] == ["body", "cursor"]  # type: ignore[index]


def test_values_cursor_with_numbers_out_of_range_is_400(server: Server) -> None:
    first = server.http.get("/v1/tables/t/indexes/s/values", params={"limit": 1})
    assert first.status_code == 200 and first.json()["next_cursor"], first.text
    doc = json.loads(base64.urlsafe_b64decode(first.json()["next_cursor"] + "=="))
    for field, value in (("o", 2**64), ("o", -1), ("o", True), ("s", 2**70)):
        forged = base64.urlsafe_b64encode(json.dumps({**doc, field: value}).encode()).decode().rstrip("=")
        r = server.http.get("/v1/tables/t/indexes/s/values", params={"limit": 1, "cursor": forged})
        _error(r, 400, "invalid_cursor")


# ---- 4. table registration ------------------------------------------------------------------------------
def test_partition_columns_with_path_syntax_are_refused(server: Server) -> None:
    for bad in (["../x"], ["a/b"], [""], ["dt", "dt"]):
        r = server.http.put("/v1/tables/pbad", headers=AUTH,
                            json={"location": str(server.root / "data" / "t"), "partition_columns": bad})
        err = _error(r, 400, "invalid_option")
        assert "partition" in str(err["message"])
    assert server.http.get("/v1/tables/pbad").status_code == 404


def test_locations_overlapping_the_warehouse_are_refused(server: Server) -> None:
    for location in (server.root / "warehouse", server.root, server.root / "warehouse" / "tables" / "t"):
        r = server.http.put("/v1/tables/cat", headers=AUTH, json={"location": str(location)})
        err = _error(r, 403, "path_not_allowed")
        assert "warehouse" in str(err["message"])
    assert server.http.get("/v1/tables/cat").status_code == 404


# ---- 5. broken data files ----------------------------------------------------------------------------------
def test_broken_data_files_are_named_and_the_rest_listed(server: Server) -> None:
    loc = server.root / "data" / "broken"
    write_table(loc, server.df.iloc[:900], 3)
    (loc / "part-900.parquet").write_bytes(b"")
    (loc / "part-901.parquet").write_bytes(b"this is not parquet at all" * 10)
    os.mkfifo(loc / "part-902.parquet")
    r = server.http.put("/v1/tables/broken", headers=AUTH, json={"location": str(loc)})
    assert r.status_code == 200, r.text
    r = server.http.get("/v1/tables/broken/files", params={"refresh": "true"}, headers=AUTH)
    assert r.status_code == 200, r.text
    body = r.json()
    assert sum(f["row_count"] for f in body["files"]) == 900
    named = {Path(e["path"]).name for e in body["errors"]}
    assert named == {"part-900.parquet", "part-901.parquet", "part-902.parquet"}, body["errors"]
    # The build names the unreadable file instead of quietly indexing part of the table.
    r = server.http.post("/v1/create_global_index", headers=AUTH, json={"table": "broken", "index_column": "s"})
    if r.status_code == 202:
        job = server.wait(str(r.json()["job_id"]))
        assert job["state"] == "failed" and "part-90" in str(job["error"]), job
    else:
        err = _error(r, 422, "unreadable_data_file")
        assert "part-90" in str(err["message"])


# ---- 6. corrupt catalog documents ----------------------------------------------------------------------
def test_a_corrupt_document_fails_only_what_needs_it(server: Server) -> None:
    df = server.df
    loc = server.root / "data" / "docs"
    write_table(loc, df, 3)
    assert server.http.put("/v1/tables/docs", headers=AUTH, json={"location": str(loc)}).status_code == 200
    for column in ("s", "n"):
        assert server.build("docs", column)["state"] == "succeeded"
    n_snaps = sorted((server.root / "warehouse" / "tables" / "docs" / "indexes" / "n" / "snapshots").glob("*.json"))
    assert n_snaps
    n_snaps[-1].write_text("{not json")
    r = server.query("docs", where="s = 'beta'")
    assert r.status_code == 200 and r.json()["count"] == _count(df, df.s == "beta"), r.text
    err = _error(server.query("docs", where="n > 0"), 500, "corrupt_catalog_document")
    assert n_snaps[-1].name in str(err["message"])
    indexes = server.http.get("/v1/tables/docs/indexes").json()
    assert [i["column"] for i in indexes["indexes"]] == ["s"]
    assert [(e["column"], e["error"]["code"]) for e in indexes["errors"]] == [("n", "corrupt_catalog_document")]
    assert indexes["errors"][0]["error"]["details"]["path"].endswith(n_snaps[-1].name)

    # A garbage table.json: the list shows the rest and flags this one; DELETE still cleans up.
    table_json = server.root / "warehouse" / "tables" / "docs" / "table.json"
    table_json.write_text("garbage")
    r = server.http.get("/v1/tables")
    assert r.status_code == 200, r.text
    assert "t" in {t["name"] for t in r.json()["tables"]}
    flagged = {e["name"]: e["error"] for e in r.json()["errors"]}
    assert flagged["docs"]["code"] == "corrupt_catalog_document" and "table.json" in flagged["docs"]["message"]
    _error(server.http.get("/v1/tables/docs"), 500, "corrupt_catalog_document")
    assert server.http.delete("/v1/tables/docs", headers=AUTH).status_code == 200
    assert server.http.get("/v1/tables/docs").status_code == 404
    assert sorted(p.name for p in loc.iterdir()) == ["part-000.parquet", "part-001.parquet", "part-002.parquet"]


# ---- 7. canonical column names -------------------------------------------------------------------------
def test_a_column_in_another_case_reports_its_snapshot(server: Server) -> None:
    df = server.df
    r = server.query(where="S = 'alpha'", result="row_ids", limit=3)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["count"] == _count(df, df.s == "alpha")
    assert set(body["snapshots"]) == {"s"}


# ---- 9. smaller items -------------------------------------------------------------------------------------
def test_absurd_option_values_and_empty_partitions_are_400(server: Server) -> None:
    r = server.http.post("/v1/create_global_index", headers=AUTH, json={
        "table": "t", "index_column": "s", "options": {"bitmap-index.dictionary-block-size": "99999 tb"}})
    err = _error(r, 400, "invalid_option")
    assert "dictionary-block-size" in str(err["message"])
    r = server.http.post("/v1/create_global_index", headers=AUTH,
                         json={"table": "t", "index_column": "s", "partitions": "dt="})
    err = _error(r, 400, "invalid_option")
    assert "dt=" in str(err["message"]) or "partition" in str(err["message"])


@pytest.mark.parametrize(("where", "words"), [
    ("s = 'alpha' /*", "comment"),
    ("n = 0x10", "hex"),
    ("s = $$a$$", "dollar"),
])
def test_parse_messages_name_the_real_problem(server: Server, where: str, words: str) -> None:
    err = _error(server.query(where=where), 400, "invalid_predicate")
    assert words in str(err["message"]).lower(), err


def test_bad_json_bodies_get_invalid_request_with_the_position(server: Server) -> None:
    r = server.http.post("/v1/tables/t/query", content=b'{"where": "s = 1",', headers={"content-type": "application/json"})
    err = _error(r, 422, "invalid_request")
    assert "position 18" in str(err["message"]) and err["details"]["position"] == 18  # type: ignore[index]
    r = server.http.post("/v1/tables/t/query", content=b"[" * 100_000 + b"]" * 100_000,
                         headers={"content-type": "application/json"})
    _error(r, 422, "invalid_request")


def test_path_errors_have_one_status(server: Server) -> None:
    for location in ("relative/path", "/etc", "file:///etc"):
        _error(server.http.put("/v1/tables/p", headers=AUTH, json={"location": location}), 403, "path_not_allowed")


def test_nothing_was_an_internal_error(server: Server) -> None:
    # Runs last in this module: every request above got a named error, none the 500 `internal` of a bug.
    assert server.http.get("/healthz").status_code == 200
    log = (server.root / "serve.log").read_text(errors="replace")
    assert "internal error" not in log and "Traceback" not in log, log[-3000:]
