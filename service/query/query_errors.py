"""The query engine's own errors (service.api.error_table maps them to HTTP statuses)."""
from __future__ import annotations

from index_format import errors as fmt


class InvalidCursorError(fmt.BgixError):
    """A paging cursor that does not decode or belongs to another query."""


class SnapshotChangedError(fmt.BgixError):
    """A paging cursor taken on a snapshot that is no longer current."""


class QueryBudgetError(fmt.QueryTimeoutError):
    """A query ran past BGIX_QUERY_TIMEOUT_S (503); the message names the budget and the setting."""

    def __init__(self, budget_s: float) -> None:
        super().__init__(budget_s)
        self.args = (f"query exceeded its {budget_s:g} s time budget (BGIX_QUERY_TIMEOUT_S)",)
