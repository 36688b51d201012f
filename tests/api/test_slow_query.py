"""A slow query never stalls the server: while one query is stuck reading its index, /healthz and point
queries on other columns keep answering (a real uvicorn on loopback), and a query over BGIX_QUERY_TIMEOUT_S
gets 503 query_timeout naming the budget, even while its read is still stuck.

Slowness is injected in-process: reads of the `country` index block on a gate the test opens.
Expected counts come from pandas on the source rows.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pandas as pd
import pytest
import uvicorn

from index_format.storage import RangeSource
from service.api.app import create_app
from service.server.settings import Settings
from tests.api.helpers import TestClient, make_settings, wait_job, write_table
from tests.api.predicates import make_frame
from tests.api.server import free_port

# client timeout of a request that must not wait behind the slow query: well under STUCK_MAX (a request queued
# behind the stuck one would wait that long), and loose enough for a loaded CI machine (2 s timed out there once)
FAST = 10.0
STUCK_MAX = 30.0    # a gated read gives up after this long even if the test never opens the gate


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, pd.DataFrame]:
    """A warehouse with table `t` and bitmap indexes on `status` and `country` (built through the API)."""
    root = tmp_path_factory.mktemp("slow")
    df = make_frame(np.random.default_rng(11), 600)
    write_table(root / "data" / "t", df, 2)
    with TestClient(create_app(make_settings(root))) as client:
        assert client.put("/v1/tables/t", json={"location": str(root / "data" / "t")}).status_code == 200
        for column in ("status", "country"):
            r = client.post("/v1/create_global_index", json={"table": "t", "index_column": column})
            assert r.status_code == 202, r.text
            assert wait_job(client, r.json()["job_id"])["state"] == "succeeded"
    return root, df


class _Gate:
    """Blocks every read of the `country` index until opened (or STUCK_MAX passes); counts blocked reads."""

    def __init__(self) -> None:
        self.open = threading.Event()
        self.entered = threading.Event()

    def wrap(self, source: RangeSource) -> RangeSource:
        gate = self

        class Gated:
            name = source.name
            size = source.size

            def read(self, offset: int, length: int) -> bytes:
                gate.entered.set()
                gate.open.wait(STUCK_MAX)
                return source.read(offset, length)

        return Gated()  # type: ignore[return-value]


@contextmanager
def _serve(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, _Gate]]:
    """Run create_app(settings) on a free 127.0.0.1 port in a thread; reads of the country index are gated."""
    app = create_app(settings)
    storage = app.state.services.storage
    gate = _Gate()
    real_open = storage.open_source

    def gated_open(path: str, size: int | None = None) -> RangeSource:
        source = real_open(path, size)
        return gate.wrap(source) if "/indexes/country/" in path else source

    monkeypatch.setattr(storage, "open_source", gated_open)
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning",
                                           access_log=False, lifespan="on"))
    thread = threading.Thread(target=server.run, name="uvicorn-test", daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while not server.started:  # bounded poll until uvicorn listens
            assert thread.is_alive(), "uvicorn exited while starting"
            assert time.monotonic() < deadline, "uvicorn did not start within 30 s"
            time.sleep(0.02)
        yield f"http://127.0.0.1:{port}", gate
    finally:
        gate.open.set()  # release stuck reads so the query threads end
        server.should_exit = True
        thread.join(timeout=30)
        assert not thread.is_alive(), "uvicorn did not stop"


def _count(df: pd.DataFrame, column: str, value: str) -> int:
    return int((df[column] == value).fillna(False).sum())


def _post_query(url: str, where: str, timeout: float) -> httpx.Response:
    return httpx.post(f"{url}/v1/tables/t/query", json={"where": where, "result": "count"}, timeout=timeout)


def test_healthz_and_point_queries_answer_while_a_query_is_stuck(
        indexed: tuple[Path, pd.DataFrame], monkeypatch: pytest.MonkeyPatch) -> None:
    root, df = indexed
    with _serve(make_settings(root, query_timeout_s=60.0), monkeypatch) as (url, gate):
        slow: dict[str, Any] = {}

        def run_slow() -> None:
            slow["response"] = _post_query(url, "country = 'DE'", timeout=STUCK_MAX + 30)

        slow_thread = threading.Thread(target=run_slow, name="slow-query")
        slow_thread.start()
        try:
            assert gate.entered.wait(10), "the slow query never reached its index read"
            answered = 0
            for i in range(50):  # bounded: each request must answer within FAST seconds
                if i % 2 == 0:
                    r = httpx.get(f"{url}/healthz", timeout=FAST)
                    assert r.status_code == 200, r.text
                else:
                    r = _post_query(url, "status = 'ok'", timeout=FAST)
                    assert r.status_code == 200, r.text
                    assert r.json()["count"] == _count(df, "status", "ok")
                answered += 1
            assert answered == 50
            assert slow_thread.is_alive() and "response" not in slow, "the slow query was not running throughout"
        finally:
            gate.open.set()
            slow_thread.join(timeout=STUCK_MAX + 60)
        assert not slow_thread.is_alive()
        r = slow["response"]
        assert r.status_code == 200, r.text
        assert r.json()["count"] == _count(df, "country", "DE")


def test_a_query_over_its_budget_gets_503_while_its_read_is_still_stuck(
        indexed: tuple[Path, pd.DataFrame], monkeypatch: pytest.MonkeyPatch) -> None:
    root, df = indexed
    # One query thread: the stuck query holds it, so a point query waits for a thread and times out
    # too (queued work is bounded by the budget), while /healthz, on the event loop, still answers.
    settings = make_settings(root, query_timeout_s=0.5, query_threads=1)
    with _serve(settings, monkeypatch) as (url, gate):
        start = time.monotonic()
        r = _post_query(url, "country = 'DE'", timeout=10)
        elapsed = time.monotonic() - start
        assert r.status_code == 503, r.text
        err = r.json()["error"]
        assert err["code"] == "query_timeout"
        assert "0.5 s" in err["message"] and "BGIX_QUERY_TIMEOUT_S" in err["message"]
        assert err["details"]["type"] == "QueryTimeoutError" and err["details"]["budget_s"] == 0.5
        assert elapsed < 5, f"the 503 took {elapsed:.1f} s; the budget is 0.5 s"
        assert gate.entered.is_set() and not gate.open.is_set()  # the read is still stuck

        r = _post_query(url, "status = 'ok'", timeout=10)
        assert r.status_code == 503 and r.json()["error"]["code"] == "query_timeout", r.text
        assert httpx.get(f"{url}/healthz", timeout=FAST).status_code == 200

        gate.open.set()  # the stuck thread ends at combine's next deadline check and frees itself
        for _ in range(50):  # bounded poll: the point query answers again once the thread is free
            r = _post_query(url, "status = 'ok'", timeout=FAST)
            if r.status_code == 200:
                break
            assert r.json()["error"]["code"] == "query_timeout", r.text
        assert r.status_code == 200, r.text
        assert r.json()["count"] == _count(df, "status", "ok")
