"""The query fast path (service/api/fast_query.py) answers exactly as the full app does.

A body sent as `application/json` takes the fast path; the same body as `application/json; charset=utf-8`
goes through FastAPI's routing, parsing and exception middleware. Every request below, good or bad, must get
the same status, body and result headers both ways; counts are checked against pandas.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from service.api import fast_query
from service.api.app import create_app
from tests.api.helpers import TestClient, make_settings, wait_job, write_table
from tests.api.predicates import make_frame

FAST, FULL = "application/json", "application/json; charset=utf-8"

REQUESTS: list[tuple[str, bytes, dict[str, str]]] = [
    ("t", b'{"where": "age > 30", "result": "count"}', {}),
    ("t", b'{"where": "age = 31 OR age = 40", "result": "row_ids", "limit": 3}', {}),
    ("t", b'{"where": "age BETWEEN 10 AND 20", "result": "ranges"}', {}),
    ("t", b'{"where": "age > 30", "result": "files", "explain": true}', {}),
    ("t", b'{"predicate": {"op": "lt", "column": "age", "value": 25}, "result": "count"}', {}),
    ("t", b'{"where": "age > 30", "result": "row_ids"}', {"accept": "application/vnd.roaring"}),
    ("t", b'{"where": "nope = 1"}', {}),                                   # unknown column: 4xx from the query
    ("t", b'{"where": "age >"}', {}),                                      # parse error
    ("t", b'{"where": "age = \'x\'"}', {}),                               # bind error
    ("missing", b'{"where": "age = 1"}', {}),                              # unknown table
    ("t", b'{"where": "age = 1", "predicate": {"op": "is_null", "column": "age"}}', {}),   # both
    ("t", b'{"where": "age = 1", "bogus": 1}', {}),                        # extra field
    ("t", b'{"where": "age = 1", "limit": 0}', {}),                        # out of range
    ("t", b'{"where": "age = 1", ', {}),                                   # malformed JSON
    ("t", b'[1, 2]', {}),                                                  # not an object
    ("t", b'{"where": "age > 1", "cursor": "garbage"}', {}),               # bad cursor
    ("bad name!", b'{"where": "age = 1"}', {}),                            # table name pattern
]


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Any:
    root = tmp_path_factory.mktemp("fast")
    df = make_frame(np.random.default_rng(8), 400)
    write_table(root / "data" / "t", df, 2)
    with TestClient(create_app(make_settings(root))) as c:
        assert c.put("/v1/tables/t", json={"location": str(root / "data" / "t")}).status_code == 200
        job = c.post("/v1/create_global_index", json={"table": "t", "index_column": "age"}).json()
        assert wait_job(c, job["job_id"])["state"] == "succeeded"
        c.frame = df  # type: ignore[attr-defined]
        yield c


def _post(client: Any, table: str, body: bytes, headers: dict[str, str], content_type: str) -> Any:
    return client.post(f"/v1/tables/{table}/query", content=body, headers={"content-type": content_type, **headers})


@pytest.mark.parametrize("index", range(len(REQUESTS)))
def test_fast_and_full_paths_answer_alike(client: Any, index: int, monkeypatch: pytest.MonkeyPatch) -> None:
    table, body, headers = REQUESTS[index]
    calls: list[int] = []
    real = fast_query.answer_query
    monkeypatch.setattr(fast_query, "answer_query", lambda *a: calls.append(1) or real(*a))
    fast = _post(client, table, body, headers, FAST)
    took_fast_path = bool(calls)
    full = _post(client, table, body, headers, FULL)
    assert len(calls) == int(took_fast_path)      # the charset variant never takes the fast path
    assert took_fast_path == (index < 10 or index == 15)   # every request whose body and name are valid
    assert fast.status_code == full.status_code, (fast.text, full.text)
    assert fast.content == full.content
    for name in ("content-type", "x-bgix-count", "x-bgix-exact", "www-authenticate"):
        assert fast.headers.get(name) == full.headers.get(name), name
    if fast.status_code >= 400:
        assert set(fast.json()["error"]) == {"code", "message", "details"}


def test_well_formed_requests_take_the_fast_path_and_count_right(client: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    real = fast_query.answer_query
    monkeypatch.setattr(fast_query, "answer_query", lambda s, name, *a: calls.append(name) or real(s, name, *a))
    r = _post(client, "t", b'{"where": "age > 30", "result": "count"}', {}, FAST)
    assert r.status_code == 200 and calls == ["t"]
    assert r.json()["count"] == int((client.frame.age > 30).sum())
    assert _post(client, "t", b'{"where": "age >"}', {}, FAST).status_code == 400
    assert _post(client, "t", b'{"where": 5}', {}, FAST).status_code == 422   # schema: the full app answers
    assert calls == ["t", "t"]
    metrics = client.get("/metrics").text
    assert 'route="/v1/tables/{name}/query"' in metrics


def test_read_token_deployments_use_the_full_app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_table(tmp_path / "data" / "t", make_frame(np.random.default_rng(2), 50), 1)
    calls: list[int] = []
    monkeypatch.setattr(fast_query, "answer_query", lambda *a: calls.append(1))
    settings = make_settings(tmp_path, token="s3cret", read_token_required=True)
    with TestClient(create_app(settings)) as c:
        r = _post(c, "t", b'{"where": "age = 1"}', {}, FAST)
        assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer"
        assert calls == []
