"""Errors of the Paimon table source, rooted in the catalog's own error classes (and, for an unknown
column, index_format's UnknownColumnError, which the API already maps to 400).

Callers (the HTTP API, the build job) already map the catalog classes these derive from, so a Paimon
problem surfaces like any other catalog problem. Imports only the errors modules.
"""
from __future__ import annotations

from index_format.errors import UnknownColumnError
from service.catalog.catalog_errors import InvalidTableError, RowIdError, TableNotFoundError

__all__ = ["NotAPaimonTableError", "PaimonColumnNotFoundError", "PaimonSnapshotNotFoundError",
           "RowTrackingDisabledError"]

ROW_TRACKING_OPTION = "row-tracking.enabled"


class NotAPaimonTableError(InvalidTableError, TableNotFoundError):
    """The location is not `<warehouse>/<db>.db/<table>` or holds no Paimon schema there.

    `location` is the path as the caller gave it.
    """

    def __init__(self, message: str, location: str) -> None:
        super().__init__(message)
        self.location = location


class PaimonSnapshotNotFoundError(TableNotFoundError):
    """The table exists but has no snapshot with the requested id (expired or never written)."""

    def __init__(self, message: str, location: str, snapshot_id: int) -> None:
        super().__init__(message)
        self.location = location
        self.snapshot_id = snapshot_id


class RowTrackingDisabledError(InvalidTableError, RowIdError):
    """A Paimon table without `row-tracking.enabled=true`: it has no `_ROW_ID`s to answer in.

    Row tracking can only be set when a table is created, so the fix is a new table.
    """

    option = ROW_TRACKING_OPTION

    def __init__(self, message: str, location: str) -> None:
        super().__init__(message)
        self.location = location


class PaimonColumnNotFoundError(UnknownColumnError):
    """A read or index request names a column the Paimon table (at its pinned snapshot) does not have."""

    def __init__(self, column: str, known: list[str], identifier: str) -> None:
        super().__init__(column, known)
        self.args = (f"Paimon table {identifier} has no column {column!r}; columns: {', '.join(known)}",)
