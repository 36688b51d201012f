"""Predicate queries: count, row ids, runs, portable Roaring bytes, Paimon's GlobalIndexResult bytes, or matches per
data file.

The route only waits: evaluation and result shaping run on the app's query threads under the
BGIX_QUERY_TIMEOUT_S budget (service.query.executor), so a slow query never stalls the event loop.
"""
from __future__ import annotations

from functools import partial
from typing import Annotated

from fastapi import APIRouter, Header, Query
from fastapi.responses import Response

from service.api import schemas
from service.api.deps import ReadServicesDep
from service.api.query_reply import answer_query
from service.api.routes.tables import ERRORS, TableName

router = APIRouter(prefix="/v1/tables", tags=["query"])

_BYTES = {"schema": {"type": "string", "format": "binary"}}
_BINARY_RESPONSE: dict[int | str, dict[str, object]] = {
    200: {"description": "JSON result, or the whole result as bytes: portable 64-bit Roaring (`result: roaring`, or "
                         "`Accept: application/vnd.bgix.roaring64` with `row_ids`) or Paimon's "
                         "GlobalIndexResultSerializer version 2, unscored (`result: global_index_result`), with the "
                         "JSON answer's count, exact, coverage.complete and snapshots in headers",
          "content": {schemas.ROARING_MEDIA_TYPE: _BYTES, schemas.GLOBAL_INDEX_RESULT_MEDIA_TYPE: _BYTES},
          "headers": {
              schemas.COUNT_HEADER: {"schema": {"type": "integer"}, "description": "rows in a binary result"},
              schemas.EXACT_HEADER: {"schema": {"type": "string", "enum": ["true", "false"]},
                                     "description": "a binary result's `exact`: false when the rows are not "
                                                    "exactly the matching rows (a leaf the indexes declined)"},
              schemas.COVERAGE_COMPLETE_HEADER: {"schema": {"type": "string", "enum": ["true", "false"]},
                                        "description": "a binary result's `coverage.complete`: false when rows no "
                                                       "index covers are left out (the JSON result lists them)"},
              schemas.SNAPSHOTS_HEADER: {"schema": {"type": "string"},
                                         "description": "a binary result's `snapshots`: column=snapshot_id, "
                                                        "comma separated"}}},
}


@router.post("/{name}/query", response_model=schemas.QueryResponse | schemas.QueryPlanResponse,
             responses={**ERRORS, **_BINARY_RESPONSE})
async def query(name: TableName, body: schemas.QueryRequest, services: ReadServicesDep,
                accept: Annotated[str | None, Header(include_in_schema=False)] = None) -> Response:
    """Rows where the predicate is TRUE (SQL three-valued logic) across every file and row range of each
    referenced column's current snapshot. Where a column has indexes of several families, each predicate leaf
    is answered by the index that answers it best (docs/index-families.md). Over the time budget
    (BGIX_QUERY_TIMEOUT_S): 503 query_timeout. With `"explain": "plan"`: the plan only (QueryPlanResponse)."""
    return await services.query_pool.run(partial(answer_query, services, name, body, accept))


@router.get("/{name}/plan", response_model=schemas.QueryPlanResponse, responses=ERRORS)
async def plan(name: TableName, services: ReadServicesDep,
               where: Annotated[str, Query(max_length=1_000_000, description="SQL WHERE text")],
               result: schemas.ResultKind = "row_ids") -> Response:
    """How `where` would be answered, made from manifest metadata without opening any index file: the same
    as POST /v1/tables/{name}/query with `"explain": "plan"`."""
    body = schemas.QueryRequest(where=where, result=result, explain="plan")
    return await services.query_pool.run(partial(answer_query, services, name, body, None))
