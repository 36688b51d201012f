"""The app of one `bgix serve --workers N` worker: uvicorn imports `create_worker_app` (factory=True) in each
worker process; settings come from the BGIX_* environment the workers inherit, the shared directory from
`_BGIX_WORKER_GROUP` (service.api.worker_group).

Adds to create_app(): the job runner of the group (service.api.jobs), a QueryService that announces commits
and drops to the other workers, and a middleware that re-resolves cached snapshot views when another worker
announced one and names the worker in the `X-Bgix-Worker` response header.
"""
from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from service.api.query_service import QueryService
from service.api.worker_group import ENV_VAR, WorkerGroup

if TYPE_CHECKING:
    from fastapi import FastAPI
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


def create_worker_app() -> FastAPI:
    """The uvicorn factory of a worker (`service.api.worker_app:create_worker_app`, factory=True)."""
    from service.api.app import create_app

    path = os.environ.get(ENV_VAR)
    if not path:
        raise RuntimeError(f"{ENV_VAR} is not set: start workers with `bgix serve --workers N`")
    return create_app(worker_group=WorkerGroup(Path(path)))
