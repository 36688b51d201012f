"""What makes an app one worker of `bgix serve --workers N` (service.api.worker_group): a QueryService that
announces commits and drops to the other workers, and a middleware that re-resolves cached snapshot views
when another worker announced one and names the worker in the `X-Bgix-Worker` response header.
"""
from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from service.api.query_service import QueryService
from service.api.worker_group import WorkerGroup

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

WORKER_HEADER = "x-bgix-worker"


class GroupQueryService(QueryService):
    """A QueryService that tells the other workers about commits and drops it learns of."""

    def __init__(self, *args: Any, group: WorkerGroup, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.group = group
        self._seen_generation = group.generation()
        self._announced: set[tuple[str, str, int]] = set()

    def invalidate(self, table: str | None = None) -> None:
        super().invalidate(table)
        self.group.bump()

    def note_snapshot(self, table: str, column: str, snapshot_id: int | None) -> None:
        super().note_snapshot(table, column, snapshot_id)
        if snapshot_id is None:
            return
        key = (table, column, snapshot_id)
        if key not in self._announced:   # GET /v1/jobs/{id} is polled: announce each commit once per worker
            if len(self._announced) > 10_000:
                self._announced.clear()
            self._announced.add(key)
            self.group.bump()

    def sync_generation(self) -> None:
        """Drop every cached view when another worker announced a change since the last request."""
        current = self.group.generation()
        if current != self._seen_generation:
            self._seen_generation = current
            super().invalidate(None)


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

