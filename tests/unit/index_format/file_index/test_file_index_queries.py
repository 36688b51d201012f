"""Every reference query, asked as SQL through the one evaluation (parse → coerce → evaluate), answered
as Paimon's Java reader answered it — for every payload type over Java's bytes and over ours, and for
every container query over the container Java wrote.
"""
from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest
from pyroaring import BitMap

from index_format.file_index.file_predicate import (
    TopN, check_literals, evaluate, evaluate_top_n, readers_by_column,
)
from index_format.file_index.formats import open_payload, write_payload
from index_format.file_index.query_text import parse_query
from index_format.file_index.result import REMAIN, SKIP, FileIndexResult, Rows
from index_format.file_index.schema import key_type_of, parse_schema
from index_format.file_index.values import paimon_type
from tests.file_index_vectors import Query, VectorEntry, load_queries, load_rows, load_vectors, query_sql

PAYLOADS = [v for v in load_vectors() if v.index_type != "container"]
CONTAINERS = [v for v in load_vectors(index_type="container") if v.queries is not None]


@cache
def _rows(path: Path, data_type: str) -> list[object]:
    return load_rows(path, data_type)


def _expected(q: Query) -> str:
    if q.outcome in ("true", "REMAIN"):
        return "REMAIN"
    if q.outcome in ("false", "SKIP"):
        return "SKIP"
    return "ROWS"


def _ask(text: str, readers_of, types) -> FileIndexResult:  # type: ignore[no-untyped-def]
    node, top = parse_query(text)
    check_literals(node, types)
    result = evaluate(node, readers_of)
    return result if top is None else evaluate_top_n(top, readers_of, result)


def _check(q: Query, got: FileIndexResult, *, skip_or_empty: bool = False) -> None:
    want = _expected(q)
    if skip_or_empty and want == "ROWS" and q.count == 0:
        # Java's container answer is SKIP or an empty bitmap depending on HashSet order (README)
        assert got is SKIP or (isinstance(got, Rows) and not got.bitmap), q.label
        return
    if want == "ROWS":
        assert isinstance(got, Rows), (q.label, got)
        assert list(got.bitmap) == q.rows, q.label
    else:
        assert got is (REMAIN if want == "REMAIN" else SKIP), (q.label, got)


@pytest.mark.parametrize("which", ["java", "ours"])
@pytest.mark.parametrize("v", PAYLOADS, ids=lambda v: v.id)
def test_payload_queries_as_sql(v: VectorEntry, which: str) -> None:
    kt = paimon_type(v.data_type)
    if which == "java":
        data = v.file.read_bytes()
    else:
        data = write_payload(v.index_type, kt, _rows(v.input, v.data_type), v.options)
        assert data == v.file.read_bytes()
    reader = open_payload(v.index_type, data, kt, path=str(v.file))
    readers_of = readers_by_column({"v": [reader]}, ["v"])
    assert v.queries is not None
    for q in load_queries(v.queries):
        _check(q, _ask(query_sql(q, v.data_type), readers_of, {"v": kt}))


@pytest.mark.parametrize("v", CONTAINERS, ids=lambda v: v.id)
def test_container_queries_as_sql(v: VectorEntry) -> None:
    from index_format.file_index.container import read_container
    schema = parse_schema(v.data_type)
    container = read_container(v.file.read_bytes(), path=str(v.file))
    types = {c: key_type_of(schema, c) for c in {c for c, *_ in container.entries} | dict(schema).keys()}
    types = {c: kt for c, kt in types.items() if kt is not None}
    readers_of = readers_by_column({c: container.readers(c, kt) for c, kt in types.items()}, list(types))
    assert v.queries is not None
    queries = load_queries(v.queries, container=True)
    assert len(queries) == v.query_count
    for q in queries:
        assert q.column is not None
        data_type = dict(schema).get(q.column) or "STRING"  # m[k]: the map's STRING values
        _check(q, _ask(query_sql(q, data_type, q.column), readers_of, types), skip_or_empty=True)


# ---- the algebra and the fold, written from Java's FileIndexResult / BitmapIndexResult / FileIndexPredicate

def _r(*rows: int) -> Rows:
    return Rows(BitMap(rows))


@pytest.mark.parametrize("left,right,and_,or_", [
    (REMAIN, REMAIN, REMAIN, REMAIN),
    (REMAIN, SKIP, SKIP, REMAIN),
    (SKIP, REMAIN, SKIP, REMAIN),
    (SKIP, SKIP, SKIP, SKIP),
    (REMAIN, _r(1), _r(1), REMAIN),      # REMAIN.and(x) = x; REMAIN.or(x) = REMAIN
    (_r(1), REMAIN, _r(1), REMAIN),      # bitmap.and(REMAIN) keeps the bitmap; or(REMAIN) = REMAIN
    (_r(1), SKIP, SKIP, _r(1)),
    (SKIP, _r(1), SKIP, _r(1)),
    (_r(1, 2), _r(2, 3), _r(2), _r(1, 2, 3)),
    (_r(), REMAIN, _r(), REMAIN),
    (REMAIN, _r(), _r(), REMAIN),        # an empty bitmap does not remain...
    (_r(1), _r(), _r(), _r(1)),
])
def test_result_algebra(left: FileIndexResult, right: FileIndexResult, and_: FileIndexResult,
                        or_: FileIndexResult) -> None:
    assert left.and_(right) == and_
    assert left.or_(right) == or_
    assert _r().remain() is False and _r(0).remain() is True


class _Fixed:
    """A reader whose answers are given per literal (to watch the fold order)."""

    index_type = "fixed"
    kt = paimon_type("INT")

    def __init__(self, answers: dict[object, FileIndexResult]) -> None:
        self.answers = answers
        self.asked: list[object] = []

    def eq(self, value: object) -> FileIndexResult:
        self.asked.append(value)
        return self.answers[value]


def test_and_chain_folds_left_and_stops_at_the_first_non_remaining_answer() -> None:
    r = _Fixed({1: _r(1, 2), 2: _r(), 3: SKIP, 4: _r(4)})
    readers_of = readers_by_column({"v": [r]}, ["v"])  # type: ignore[list-item]
    node, _ = parse_query("v = 1 AND v = 2 AND v = 3 AND v = 4")
    got = evaluate(node, readers_of)
    assert got == _r() and r.asked == [1, 2]   # Java returns the empty bitmap, never asks 3 and 4
    r.asked.clear()
    node, _ = parse_query("v = 3 OR v = 1 OR v = 4")
    assert evaluate(node, readers_of) == _r(1, 2, 4) and r.asked == [3, 1, 4]


def test_leaf_ands_every_index_of_the_column_in_order() -> None:
    a, b = _Fixed({1: _r(1, 2, 3)}), _Fixed({1: _r(2, 3, 9)})
    readers_of = readers_by_column({"v": [a, b]}, ["v"])  # type: ignore[list-item]
    assert evaluate(parse_query("v = 1")[0], readers_of) == _r(2, 3)
    skip_first = _Fixed({1: SKIP})
    never = _Fixed({})
    readers_of = readers_by_column({"v": [skip_first, never]}, ["v"])  # type: ignore[list-item]
    assert evaluate(parse_query("v = 1")[0], readers_of) is SKIP and never.asked == []
    assert evaluate(parse_query("v = 1")[0], readers_by_column({}, ["v"])) is REMAIN  # no index


def test_not_is_pushed_down_and_unanswerable_shapes_remain() -> None:
    kt = paimon_type("INT")
    data = write_payload("range-bitmap", kt, [1, 2, None, 4], {})
    readers_of = readers_by_column({"v": [open_payload("range-bitmap", data, kt)]}, ["v"])
    assert evaluate(parse_query("NOT v = 1")[0], readers_of) == _r(1, 3)       # → v <> 1, nulls excluded
    assert evaluate(parse_query("NOT (v < 2 OR v > 3)")[0], readers_of) == _r(1)
    assert evaluate(parse_query("v NOT BETWEEN 1 AND 2")[0], readers_of) is REMAIN
    assert evaluate(parse_query("v = NULL")[0], readers_of) is REMAIN
    top = evaluate_top_n(TopN("v", 2, descending=True, nulls_first=False), readers_of)
    assert top == _r(1, 3)
    narrowed = evaluate(parse_query("v < 4")[0], readers_of)
    assert evaluate_top_n(TopN("v", 1, descending=True, nulls_first=False), readers_of, narrowed) == _r(1)
    assert evaluate_top_n(TopN("v", 5, descending=True, nulls_first=False), readers_of, narrowed) is narrowed


def test_bad_literals_and_unknown_columns_are_errors() -> None:
    from index_format.errors import BindError, ParseError, UnknownColumnError
    kt = paimon_type("INT")
    with pytest.raises(BindError, match="'abc'"):
        check_literals(parse_query("v = 'abc'")[0], {"v": kt})
    with pytest.raises(UnknownColumnError):
        check_literals(parse_query("w = 1")[0], {"v": kt})
    with pytest.raises(ParseError, match="LIMIT"):
        parse_query("v = 1 ORDER BY v")
    node, top = parse_query("v = 'ORDER BY x' ORDER BY v NULLS LAST, w LIMIT 3")
    assert top == TopN("v", 3, descending=False, nulls_first=False, strict=False)
