"""What makes a query service one worker's of `bgix serve --workers N` (service.server.worker_group): it announces
commits and drops to the other workers, and re-resolves cached snapshot views when another worker announced one
(service.api.worker_middleware calls it before each request).
"""
from __future__ import annotations

from typing import Any

from service.query.query_service import QueryService
from service.server.worker_group import WorkerGroup


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
