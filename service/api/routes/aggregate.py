"""Aggregates: GROUP BY counts, sums, min, max and averages under a filter, from the indexes' bitmaps.

The route only waits: the use case (service.query.run_aggregate) runs on the app's query threads under the
BGIX_QUERY_TIMEOUT_S budget, as queries do.
"""
from __future__ import annotations

from functools import partial

import orjson
from starlette.responses import Response

from fastapi import APIRouter

from service.api import schemas
from service.api.deps import ReadServicesDep, Services
from service.api.routes.tables import ERRORS, TableName
from service.query.run_aggregate import AggregateAsk, MetricAsk, OrderAsk, run_aggregate

router = APIRouter(prefix="/v1/tables", tags=["query"])


@router.post("/{name}/aggregate", response_model=schemas.AggregateResponse | schemas.AggregatePlanResponse,
             responses=ERRORS)
async def aggregate(name: TableName, body: schemas.AggregateRequest, services: ReadServicesDep) -> Response:
    """Groups of the rows where the predicate is TRUE (every live row without one) by up to three indexed
    columns, with `count` (default), `sum`, `min`, `max`, `avg`: counts are intersection cardinalities of the
    filter's and each key's bitmaps, sums key × cardinality; rows removed by deletion vectors never count. NULL is a
    group; an ARRAY column's elements are its groups. Over the groups cap: 400 too_many_groups; over the time
    budget: 503 query_timeout. With `"explain": "plan"`: the plan only (AggregatePlanResponse)."""
    return await services.query_pool.run(partial(_answer, services, name, body))


def _answer(services: Services, name: str, body: schemas.AggregateRequest, deadline: float) -> Response:
    ask = AggregateAsk(
        where=body.where, predicate=body.predicate, group_by=tuple(body.group_by),
        metrics=tuple(MetricAsk(m.op, m.column, m.name) for m in body.metrics),
        order_by=tuple(OrderAsk(o.by, o.direction == "desc") for o in body.order_by),
        limit=body.limit, cursor=body.cursor, explain=body.explain, scan=body.scan)
    payload = run_aggregate(services.query_service, services.metrics, name, ask, deadline)
    return Response(orjson.dumps(payload, default=str), media_type="application/json")
