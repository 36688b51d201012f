"""The middleware of one worker of `bgix serve --workers N`: before each request it syncs the worker's query service
with the others' announcements (service.server.group_query), and it names the worker in the `X-Bgix-Worker`
response header.
"""
from __future__ import annotations

import os
from collections.abc import Callable

from starlette.types import ASGIApp, Message, Receive, Scope, Send

WORKER_HEADER = "x-bgix-worker"


class WorkerMiddleware:
    """Pure ASGI: syncs the snapshot generation before each request, names the worker in a response header."""

    def __init__(self, app: ASGIApp, sync: Callable[[], None]) -> None:
        self.app = app
        self.sync = sync   # GroupQueryService.sync_generation
        self.header = (WORKER_HEADER.encode(), str(os.getpid()).encode())

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        self.sync()

        async def send_wrapper(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", ()), self.header]
            await send(message)

        await self.app(scope, receive, send_wrapper)

