"""The hot path of POST /v1/tables/{name}/query as a pure ASGI layer, for the common well-formed request.

Why: profiling a warm point count showed most of the server's CPU in Starlette routing, FastAPI's request
parsing and dependency resolution, and the exception middlewares, not in the query. This layer matches the
path itself, validates the body with the route's own pydantic model (`QueryRequest.model_validate_json`),
and calls the route's `answer_query` (service.api.query_reply) on the query pool. Everything else goes through the full app unchanged:
another path or method, a body that is not `application/json`, an invalid body or table name (the full app
then writes the canonical 422 / 400 envelope), and deployments that require a token to read. A failure of
the query itself is turned into its envelope by the app's own exception handlers, so errors look the same
either way. `_LatencyMiddleware` (outside this layer) still times every request under the route's template.
"""
from __future__ import annotations

import re
from collections.abc import Awaitable
from functools import partial
from types import SimpleNamespace
from typing import cast

from fastapi import FastAPI
from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from service.api import schemas
from service.api.deps import Services
from service.api.guard import replay_body
from service.api.query_reply import answer_query

TEMPLATE = "/v1/tables/{name}/query"
_PATH = re.compile(r"/v1/tables/([^/]+)/query")
_NAME = re.compile(schemas.TABLE_NAME_PATTERN)


class QueryFastPath:
    """Pure ASGI middleware, inside the latency middleware (see the module docstring)."""

    def __init__(self, app: ASGIApp, services: Services, fastapi_app: FastAPI) -> None:
        self.app = app
        self.services = services
        self.fastapi_app = fastapi_app
        # what routing leaves in scope["route"] for the latency metric (only its template is read)
        self._route = SimpleNamespace(path=TEMPLATE)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or self.services.settings.read_token_required:
            await self.app(scope, receive, send)
            return
        m = _PATH.fullmatch(scope["path"])
        if m is None or _NAME.fullmatch(m.group(1)) is None:
            await self.app(scope, receive, send)
            return
        content_type = accept = None
        for key, value in scope["headers"]:
            if key == b"content-type":
                content_type = value
            elif key == b"accept":
                accept = value.decode("latin-1")
        body = await _read_body(receive)
        if body is None:
            return   # the client went away
        big = len(body) > _BIG_BODY
        try:
            if content_type != b"application/json":
                raise ValueError("not plain JSON")
            request = None if big else schemas.QueryRequest.model_validate_json(body)
        except (ValueError, ValidationError):
            await self.app(scope, replay_body(body, receive), send)   # the full app answers, with its envelope
            return
        scope["route"] = self._route   # the latency metric's label, as routing would set it
        try:
            if request is None:
                # a big body (a long predicate) is validated on the query thread too: ~10 ms per MB that
                # /healthz and point queries would otherwise wait behind on the event loop
                response = await self.services.query_pool.run(
                    partial(_validate_and_answer, self.services, m.group(1), body, accept))
            else:
                response = await self.services.query_pool.run(
                    partial(answer_query, self.services, m.group(1), request, accept))
        except Exception as exc:  # noqa: BLE001 — the app's handlers turn every failure into its envelope
            response = await self._handle(scope, exc)
        if response is None:   # a big body that is not a valid request: the full app answers, with its envelope
            del scope["route"]
            await self.app(scope, replay_body(body, receive), send)
            return
        await response(scope, receive, send)

    async def _handle(self, scope: Scope, exc: Exception) -> Response:
        handlers = self.fastapi_app.exception_handlers
        for cls in type(exc).__mro__:
            handler = handlers.get(cls)
            if handler is not None:
                # the handlers error_table registers are all coroutines (Starlette's type allows plain functions)
                return await cast("Awaitable[Response]", handler(Request(scope), exc))
        raise exc


# Bodies larger than this are validated on a query thread (a big predicate text or IN list), smaller on the loop.
_BIG_BODY = 64 * 1024


def _validate_and_answer(services: Services, name: str, body: bytes, accept: str | None,
                         deadline: float) -> Response | None:
    """answer_query of the validated body; None when it is not a valid QueryRequest."""
    try:
        request = schemas.QueryRequest.model_validate_json(body)
    except (ValueError, ValidationError):
        return None
    return answer_query(services, name, request, accept, deadline)


async def _read_body(receive: Receive) -> bytes | None:
    chunks: list[bytes] = []
    while True:
        message: Message = await receive()
        if message["type"] == "http.disconnect":
            return None
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return chunks[0] if len(chunks) == 1 else b"".join(chunks)
