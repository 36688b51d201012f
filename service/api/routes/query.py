"""Predicate queries: count, row ids, runs, portable Roaring bytes, or matches per data file.

The route only waits: evaluation and result shaping run on the app's query threads under the
BGIX_QUERY_TIMEOUT_S budget (service.api.executor), so a slow query never stalls the event loop.
"""
from __future__ import annotations

from functools import partial

import orjson
from typing import Annotated

from fastapi import APIRouter, Header
from fastapi.encoders import jsonable_encoder
from fastapi.responses import Response

from service.api import schemas
from service.api.deps import ReadServicesDep, Services
from service.api.results import (
    Cursor, file_matches, file_matches_by_value, page_ids, page_runs, query_fingerprint,
)
from service.api.routes.tables import ERRORS, TableName

router = APIRouter(prefix="/v1/tables", tags=["query"])

_ROARING_RESPONSE: dict[int | str, dict[str, object]] = {
    200: {"description": "JSON result, or the whole result as portable 64-bit Roaring bytes",
          "content": {schemas.ROARING_MEDIA_TYPE: {"schema": {"type": "string", "format": "binary"}}},
          "headers": {schemas.COUNT_HEADER: {"schema": {"type": "integer"},
                                             "description": "rows in a Roaring result"}}},
}


@router.post("/{name}/query", response_model=schemas.QueryResponse,
             responses={**ERRORS, **_ROARING_RESPONSE})
async def query(name: TableName, body: schemas.QueryRequest, services: ReadServicesDep,
                accept: Annotated[str | None, Header(include_in_schema=False)] = None) -> Response:
    """Rows where the predicate is TRUE (SQL three-valued logic) across every file and row range of each
    referenced column's current snapshot. Where a column has indexes of several families, each predicate leaf
    is answered by the index that answers it best (docs/index-families.md). Over the time budget
    (BGIX_QUERY_TIMEOUT_S): 503 query_timeout."""
    return await services.query_pool.run(partial(answer_query, services, name, body, accept))


def answer_query(services: Services, name: str, body: schemas.QueryRequest, accept: str | None,
            deadline: float) -> Response:
    """The whole query, on a query thread: parse, evaluate (stops at `deadline`), shape the result."""
    qs = services.query_service
    result = body.result
    if accept and schemas.ROARING_MEDIA_TYPE in accept and result == "row_ids":
        result = "roaring"
    node = qs.parse(body.where, body.predicate, deadline)   # a parse past the budget stops too
    outcome = qs.query(name, node, explain=body.explain, deadline=deadline, text=body.where,
                       count_only=result == "count")
    answer = outcome.answer
    rows = answer.rows
    count = answer.row_count()
    services.metrics.queries.labels(result=result).inc()
    headers = {schemas.COUNT_HEADER: str(count)}
    if result == "roaring":
        headers["X-Bgix-Exact"] = "true" if answer.exact else "false"
        headers["X-Bgix-Coverage-Complete"] = "false" if outcome.uncovered else "true"
        headers["X-Bgix-Snapshots"] = ",".join(f"{c}={s}" for c, s in sorted(outcome.used.items()))
        return Response(rows.serialize(), media_type=schemas.ROARING_MEDIA_TYPE, headers=headers)

    after = -1
    if body.cursor is not None:
        cursor = Cursor.decode(body.cursor)
        cursor.check(outcome.used, query_fingerprint(name, body.where, body.predicate, result))
        after = cursor.after
    payload: dict[str, object] = {
        "result": result, "count": count, "exact": bool(answer.exact), "snapshots": outcome.used,
        "coverage": {"complete": not outcome.uncovered, "uncovered_ranges": outcome.uncovered},
        "next_cursor": None,
    }
    last: int | None = None
    if result == "row_ids":
        ids, last = page_ids(rows, after, body.limit)
        payload["row_ids"] = ids
    elif result == "ranges":
        runs, last = page_runs(rows, after, body.limit)
        payload["ranges"] = runs
    elif result == "files":
        ids, last = page_ids(rows, after, body.limit)
        view = outcome.view
        if view.table.row_id_column is None:
            payload["files"] = file_matches(rows, view.data_files, ids)
        else:  # ids are values of the row-id column: only the files' own ids tell where they are
            payload["files"] = file_matches_by_value(
                rows, view.data_files, ids, lambda f: qs.file_row_ids(view.table, f))
    if last is not None:
        fingerprint = query_fingerprint(name, body.where, body.predicate, result)
        payload["next_cursor"] = Cursor(last, outcome.used, fingerprint).encode()
    if body.explain:
        payload["explain"] = jsonable_encoder(answer.explain or {})
    # orjson: several times faster than json.dumps on the hot path
    return Response(orjson.dumps(payload), media_type="application/json", headers=headers)
