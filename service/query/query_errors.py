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


class AggregateError(fmt.BgixError):
    """An aggregate request the service cannot answer as asked (400 invalid_aggregate): a metric of a column that
    has no numeric index, an order_by naming neither a group column nor a metric, a column grouped twice."""


class NotGroupableError(AggregateError):
    """A group or metric column of the table that no index of a family bgix reads covers (400 no_index)."""

    def __init__(self, column: str, indexed: list[str]) -> None:
        super().__init__(f"column {column!r} has no index to group or aggregate by; indexed columns: "
                         f"{', '.join(sorted(indexed)) or '(none)'} (build one with POST /v1/create_global_index)")
        self.column = column


class TooManyGroupsError(AggregateError):
    """An aggregate past its groups cap (400 too_many_groups)."""

    def __init__(self, columns: str, cap: int) -> None:
        super().__init__(f"grouping by {columns} gives more than {cap} groups (the aggregate groups cap); narrow "
                         "`where` or group by fewer or coarser columns")
        self.cap = cap


class AggregateTooLargeError(AggregateError):
    """An aggregate whose bitmap work would pass its cap (400 aggregate_too_large): groups × keys of a later
    group column or of a metric column."""

    def __init__(self, work: int, cap: int) -> None:
        super().__init__(f"this aggregate needs {work} bitmap intersections, more than its cap of {cap}: narrow "
                         "`where`, group by fewer columns, or aggregate a column with fewer distinct values")
        self.cap = cap


class OrderByError(fmt.BgixError):
    """A query's `order_by` the service cannot answer (400 invalid_order_by): an ARRAY column, a result other than
    row_ids."""
