"""The client keeps each answer's exactness (service.query_answer, service.client) against a scripted service
(httpx.MockTransport): roaring answers ask for their coverage, commits between the two requests are retried,
the strict calls raise InexactAnswerError for every kind of inexact answer, and errors map back to their class."""
from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from pyroaring import BitMap64

from service.api import schemas
from service.client import Client, InexactAnswerError, SnapshotRaceError
from service.query.query_errors import SnapshotChangedError
from service.query_answer import Coverage, QueryAnswer, ids_of_ranges, row_runs

Handler = Callable[[dict[str, Any]], httpx.Response]


def _client(handler: Handler, seen: list[dict[str, Any]] | None = None, **kwargs: Any) -> Client:
    def route(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        if seen is not None:
            seen.append(body)
        return handler(body)
    return Client("http://bgix", transport=httpx.MockTransport(route), **kwargs)


def _roaring(ids: list[int], *, exact: bool = True, complete: bool = True, snapshots: str = "s=3") -> httpx.Response:
    return httpx.Response(200, content=BitMap64(ids).serialize(), headers={
        "content-type": schemas.ROARING_MEDIA_TYPE, schemas.COUNT_HEADER: str(len(ids)),
        schemas.EXACT_HEADER: str(exact).lower(), schemas.COVERAGE_COMPLETE_HEADER: str(complete).lower(),
        schemas.SNAPSHOTS_HEADER: snapshots})


def _json(result: str, count: int, *, exact: bool = True, uncovered: list[list[int]] | None = None,
          snapshots: dict[str, int] | None = None, **more: Any) -> httpx.Response:
    return httpx.Response(200, json={
        "result": result, "count": count, "exact": exact, "snapshots": snapshots or {"s": 3},
        "coverage": {"complete": not uncovered, "uncovered_ranges": uncovered or []}, "next_cursor": None, **more})


def test_a_complete_roaring_answer_is_one_request_and_works_as_a_set() -> None:
    seen: list[dict[str, Any]] = []
    with _client(lambda b: _roaring([1, 2, 5]), seen) as client:
        answer = client.query("t", where="s = 'a'")
        assert answer.is_exact and answer.rows == BitMap64([1, 2, 5]) and answer.snapshots == {"s": 3}
        assert len(answer) == 3 and 5 in answer and list(answer) == [1, 2, 5]
        assert list(client.rows("t", where="s = 'a'")) == [1, 2, 5]
    assert len(seen) == 2 and seen[0] == {"result": "roaring", "explain": False, "where": "s = 'a'"}


def test_an_incomplete_roaring_answer_fetches_its_uncovered_ranges() -> None:
    seen: list[dict[str, Any]] = []

    def handler(body: dict[str, Any]) -> httpx.Response:
        if body["result"] == "roaring":
            return _roaring([1, 2], complete=False)
        assert body["result"] == "ranges" and body["limit"] == 1
        return _json("ranges", 2, uncovered=[[100, 149]], ranges=[[1, 2]])

    with _client(handler, seen) as client:
        answer = client.query("t", where="s = 'a'")
        assert answer.coverage == Coverage(False, ((100, 149),)) and answer.exact and not answer.is_exact
        with pytest.raises(InexactAnswerError, match="50 rows no index covers") as info:
            len(answer)
        assert info.value.answer is answer
        assert answer.candidates(()) == BitMap64([1, 2, *range(100, 150)])
        with pytest.raises(InexactAnswerError):
            client.rows("t", where="s = 'a'")
        assert list(client.rows("t", where="s = 'a'", allow_inexact=True)) == [1, 2]


def test_a_commit_between_answer_and_coverage_is_asked_again() -> None:
    calls = {"n": 0}

    def handler(body: dict[str, Any]) -> httpx.Response:
        calls["n"] += 1
        if body["result"] == "roaring":
            return _roaring([1], complete=False, snapshots=f"s={calls['n']}")
        return _json("ranges", 1, uncovered=[[9, 9]], snapshots={"s": 3})   # matches the second roaring answer

    with _client(handler) as client:
        answer = client.query("t", where="s = 'a'")
        assert answer.snapshots == {"s": 3} and answer.coverage.uncovered_ranges == ((9, 9),)
    with _client(lambda b: _roaring([1], complete=False, snapshots="s=1") if b["result"] == "roaring"
                 else _json("ranges", 1, uncovered=[[9, 9]], snapshots={"s": 2})) as client:
        with pytest.raises(SnapshotRaceError):
            client.query("t", where="s = 'a'")


def test_declined_answers_make_every_row_a_candidate() -> None:
    with _client(lambda b: _roaring([], exact=False) if b["result"] == "roaring" else _json(b["result"], 0,
                                                                                             exact=False)) as c:
        answer = c.query("t", where="NOT array_contains(tags, 'x')")
        assert answer.declined and answer.candidate_ranges([(0, 9)]) == [(0, 9)]
        with pytest.raises(InexactAnswerError, match="declined the whole predicate"):
            c.count("t", where="NOT array_contains(tags, 'x')")
        assert c.count("t", where="NOT array_contains(tags, 'x')", allow_inexact=True) == 0
    superset = QueryAnswer("t", "roaring", exact=False, coverage=Coverage(True), count=2, rows=BitMap64([3, 4]))
    assert not superset.declined and superset.candidates([(0, 9)]) == BitMap64([3, 4])
    assert "superset" in str(InexactAnswerError(superset))


def test_row_ids_check_every_page_and_json_answers_keep_their_fields() -> None:
    pages = iter([_json("row_ids", 3, row_ids=[1, 2], next_cursor="c1"),
                  _json("row_ids", 3, row_ids=[7], uncovered=[[7, 8]])])
    with _client(lambda b: next(pages)) as client:
        with pytest.raises(InexactAnswerError):
            client.row_ids("t", where="s = 'a'", page_size=2)
    explain = {"files_read": 1, "plan": {"tree": "x"}}
    with _client(lambda b: _json("count", 4, explain=explain)) as client:
        answer = client.query("t", predicate={"op": "eq", "column": "s", "value": "a"}, result="count",
                              explain=True)
        assert answer.count == 4 and answer.explain == explain and answer.plan == {"tree": "x"}
        assert answer.predicate == {"op": "eq", "column": "s", "value": "a"}
        with pytest.raises(TypeError, match="no row set"):
            len(answer)
    with _client(lambda b: httpx.Response(200, json={
            "result": "plan", "snapshots": {}, "coverage": {"complete": True, "uncovered_ranges": []},
            "plan": {"leaves": []}})) as client:
        plan = client.query("t", where="s = 'a'", explain="plan")
        assert plan.result == "plan" and plan.plan == {"leaves": []} and plan.count is None and not plan.exact


def test_query_options_ride_with_every_query() -> None:
    seen: list[dict[str, Any]] = []
    with _client(lambda b: _json("count", 1), seen, query_options={"scan": "never"}) as client:
        client.count("t", where="s = 'a'")
    assert seen[0]["scan"] == "never"


def test_error_classes_of_the_servers_table_come_back_as_themselves() -> None:
    envelope = {"error": {"code": "conflict", "message": "snapshot changed",
                          "details": {"type": "SnapshotChangedError"}}}
    with _client(lambda b: httpx.Response(409, json=envelope)) as client:
        with pytest.raises(SnapshotChangedError) as info:
            client.count("t", where="s = 'a'")
    assert info.value.status == 409   # type: ignore[attr-defined]  # set on rebuilt errors


def test_row_runs_and_ranges_round_trip() -> None:
    ids = BitMap64([0, 1, 2, 5, 7, 8, 2**40])
    assert row_runs(ids) == [(0, 2), (5, 5), (7, 8), (2**40, 2**40)]
    assert ids_of_ranges(row_runs(ids)) == ids
    assert row_runs(BitMap64()) == []
