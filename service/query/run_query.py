"""The query use case: parse, evaluate (stopping at a deadline), page and shape one query's answer, whoever asks
(POST /v1/tables/{name}/query's route and its fast path both call run_query on a query thread).

The reply names no HTTP: service.api.query_reply turns it into a response.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from index_format import global_index_result
from service.observability.metrics import Metrics
from index_format import ranges
from service.query.ordered_rows import ordered_page
from service.query.query_errors import InvalidCursorError, OrderByError, SnapshotChangedError
from service.query.query_service import QueryOutcome, QueryService
from service.query.row_scan import planned_scan
from service.query.results import (
    Cursor, decode_cursor, encode_cursor, file_matches, file_matches_by_value, page_ids, page_runs, query_fingerprint,
)


@dataclass(frozen=True, slots=True)
class QueryAsk:
    """One query as asked: SQL `where` or a JSON `predicate`, the result kind and its paging."""

    where: str | None
    predicate: Mapping[str, Any] | None
    result: str = "row_ids"        # count | row_ids | ranges | files | roaring | global_index_result
    limit: int = 10_000
    cursor: str | None = None
    explain: bool | str = False   # True: with the answer; "plan": the plan only (nothing read)
    scan: str = "auto"            # "auto": what no index answers is read within the budget; "never": indexes only
    order_by: tuple[str, bool] | None = None   # (column, descending): rows in that column's order (row_ids)


@dataclass(frozen=True, slots=True)
class QueryReply:
    """A query's answer: `binary` holds the whole result as bytes (result "roaring": portable Roaring64;
    "global_index_result": Paimon's GlobalIndexResultSerializer version 2); otherwise `payload` is the JSON object
    of the result (its `explain` left as the engine made it). A plan (`"explain": "plan"`) has no count."""

    result: str
    count: int | None
    exact: bool
    snapshots: dict[str, int]
    coverage_complete: bool
    binary: bytes | None = None
    payload: dict[str, object] | None = None
    explain: dict[str, Any] | None = None


def run_query(qs: QueryService, metrics: Metrics, name: str, ask: QueryAsk, deadline: float) -> QueryReply:
    """The whole query, on a query thread: parse, evaluate (stops at `deadline`), page the result; with
    `explain="plan"` parse and plan only."""
    result = ask.result
    if ask.order_by is not None and result != "row_ids":   # refused before any work; never an unordered answer
        raise OrderByError(f"order_by needs result 'row_ids', not {result!r}")
    node = qs.parse(ask.where, ask.predicate, deadline)   # a parse past the budget stops too
    if ask.explain == "plan":
        return _plan_reply(qs, metrics, name, ask, node)
    outcome = qs.query(name, node, explain=bool(ask.explain), deadline=deadline, text=ask.where,
                       count_only=result == "count", scan=ask.scan)
    answer = outcome.answer
    rows = answer.rows
    count = answer.row_count()
    metrics.queries.labels(result=result).inc()
    explain = (answer.explain or {}) if ask.explain else None

    def reply(binary: bytes | None = None, payload: dict[str, object] | None = None) -> QueryReply:
        return QueryReply(result=result, count=count, exact=bool(answer.exact), snapshots=outcome.used,
                          coverage_complete=not outcome.uncovered, binary=binary, payload=payload,
                          explain=explain)

    if result == "roaring":
        return reply(binary=rows.serialize())
    if result == "global_index_result":   # for JVM drivers: what Paimon Java's scans take (withGlobalIndexResult)
        return reply(binary=global_index_result.encode(rows))

    if ask.order_by is not None:
        return reply(payload=_ordered_payload(qs, name, ask, outcome, count, deadline))
    fingerprint = query_fingerprint(name, ask.where, ask.predicate, result)
    after = -1
    if ask.cursor is not None:
        cursor = Cursor.decode(ask.cursor)
        cursor.check(outcome.used, fingerprint)
        after = cursor.after
    payload: dict[str, object] = {
        "result": result, "count": count, "exact": bool(answer.exact), "snapshots": outcome.used,
        "coverage": {"complete": not outcome.uncovered, "uncovered_ranges": outcome.uncovered},
        "next_cursor": None,
    }
    last: int | None = None
    if result == "row_ids":
        ids, last = page_ids(rows, after, ask.limit)
        payload["row_ids"] = ids
    elif result == "ranges":
        runs, last = page_runs(rows, after, ask.limit)
        payload["ranges"] = runs
    elif result == "files":
        ids, last = page_ids(rows, after, ask.limit)
        view = outcome.view
        if view.table.row_id_column is None:
            payload["files"] = file_matches(view.data_files, ids)
        else:  # ids are values of the row-id column: only the files' own ids tell where they are
            payload["files"] = file_matches_by_value(
                view.data_files, ids, lambda f: qs.file_row_ids(view.table, f))
    if last is not None:
        payload["next_cursor"] = Cursor(last, outcome.used, fingerprint).encode()
    return reply(payload=payload)


def _ordered_payload(qs: QueryService, name: str, ask: QueryAsk, outcome: QueryOutcome, count: int,
                     deadline: float) -> dict[str, object]:
    """Result row_ids in the order of one column (service.query.ordered_rows), paged by offset."""
    assert ask.order_by is not None
    column, desc = ask.order_by
    fingerprint = query_fingerprint(name, ask.where, ask.predicate, f"row_ids order by {column} {desc}")
    used = outcome.used
    offset = 0
    if ask.cursor is not None:
        at, query, snaps = decode_cursor(ask.cursor, ("o", "q", "s"))
        if not isinstance(at, int) or isinstance(at, bool) or not 0 <= at < (1 << 62):
            raise InvalidCursorError("invalid cursor")
        offset = at
        if query != fingerprint:
            raise InvalidCursorError("cursor belongs to a different query")
        if snaps != {**used, "_v": outcome.view.version}:
            raise SnapshotChangedError("the table changed since the first page; restart paging without a cursor")
    page = ordered_page(qs, outcome.view, outcome.answer.rows, column, desc=desc, offset=offset, limit=ask.limit,
                        scan=ask.scan, deadline=deadline)
    uncovered = ranges.merge([*(tuple(r) for r in outcome.uncovered), *ranges.of_bitmap(page.uncovered)])
    used = {**used, page.column: outcome.view.columns[page.column].snapshot.id}
    payload: dict[str, object] = {
        "result": "row_ids", "count": count, "exact": bool(outcome.answer.exact) and not page.uncovered,
        "snapshots": used, "coverage": {"complete": not uncovered, "uncovered_ranges": [list(r) for r in uncovered]},
        "row_ids": page.row_ids, "order_values": page.values, "next_cursor": None,
    }
    if page.more:
        payload["next_cursor"] = encode_cursor({"o": offset + ask.limit, "q": fingerprint,
                                                "s": {**outcome.used, "_v": outcome.view.version}})
    return payload


def _plan_reply(qs: QueryService, metrics: Metrics, name: str, ask: QueryAsk, node: Any) -> QueryReply:
    plan, needs, used = qs.plan(name, node, text=ask.where, count_only=ask.result == "count")
    metrics.queries.labels(result="plan").inc()
    uncovered = [list(r) for r in plan.coverage.uncovered or ()]   # the view's rows outside the plan's coverage
    payload: dict[str, object] = {"result": "plan", "snapshots": used,
                                  "coverage": {"complete": not uncovered, "uncovered_ranges": uncovered},
                                  "plan": plan.to_json(), "scan": planned_scan(needs, ask.scan, qs.scan_max_rows)}
    return QueryReply(result="plan", count=None, exact=False, snapshots=used, coverage_complete=not uncovered,
                      payload=payload)
