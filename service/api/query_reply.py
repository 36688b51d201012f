"""The HTTP form of a query: a validated QueryRequest → the use case's QueryAsk, and its QueryReply → the response
(JSON through orjson, or the whole result as bytes — portable Roaring, or Paimon's GlobalIndexResultSerializer form —
with the answer's count, exactness, coverage and snapshots in headers). The route and its fast
path both answer through `answer_query`.
"""
from __future__ import annotations

import orjson
from fastapi.encoders import jsonable_encoder
from starlette.responses import Response

from service.api import schemas
from service.api.deps import Services
from service.query.run_query import QueryAsk, QueryReply, run_query


def answer_query(services: Services, name: str, body: schemas.QueryRequest, accept: str | None,
                 deadline: float) -> Response:
    """The whole query, on a query thread (service.query.run_query), as an HTTP response."""
    result = body.result
    if accept and schemas.ROARING_MEDIA_TYPE in accept and result == "row_ids" and body.order_by is None:
        result = "roaring"   # a bitmap holds no order: an ordered answer stays JSON
    ask = QueryAsk(where=body.where, predicate=body.predicate, result=result, limit=body.limit,
                   cursor=body.cursor, explain=body.explain, scan=body.scan,
                   order_by=None if body.order_by is None else (body.order_by.column,
                                                                body.order_by.direction == "desc"))
    return respond(run_query(services.query_service, services.metrics, name, ask, deadline))


_BINARY_MEDIA_TYPES = {"roaring": schemas.ROARING_MEDIA_TYPE,
                       "global_index_result": schemas.GLOBAL_INDEX_RESULT_MEDIA_TYPE}


def respond(reply: QueryReply) -> Response:
    headers = {} if reply.count is None else {schemas.COUNT_HEADER: str(reply.count)}
    if reply.binary is not None:
        # the bytes hold only row ids: what JSON says beside them rides in headers, so exactness is never lost
        headers[schemas.EXACT_HEADER] = "true" if reply.exact else "false"
        headers[schemas.COVERAGE_COMPLETE_HEADER] = "true" if reply.coverage_complete else "false"
        headers[schemas.SNAPSHOTS_HEADER] = ",".join(f"{c}={s}" for c, s in sorted(reply.snapshots.items()))
        return Response(reply.binary, media_type=_BINARY_MEDIA_TYPES[reply.result], headers=headers)
    payload = dict(reply.payload or {})
    if reply.explain is not None:
        payload["explain"] = jsonable_encoder(reply.explain)
    # orjson: several times faster than json.dumps on the hot path
    return Response(orjson.dumps(payload), media_type="application/json", headers=headers)
