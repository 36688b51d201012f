"""Catalog errors: missing/duplicate tables, indexes and jobs, lost commit races.

All derive from index_format.errors.BgixError; imports nothing but index_format.errors.
"""
from __future__ import annotations

from index_format.errors import BgixError, PathNotAllowedError, UnknownColumnError


class CatalogError(BgixError):
    """Root of the catalog's own errors."""


class TableNotFoundError(CatalogError):
    """No table registered under this name."""


class TableExistsError(CatalogError):
    """A table with this name is already registered (with a different definition)."""


class IndexNotFoundError(CatalogError):
    """The table has no committed index on this column."""


class JobNotFoundError(CatalogError):
    """No job record with this id."""


class BuildInProgressError(CatalogError):
    """Another build of the same (table, column) index is queued or running; `job_id` names it."""

    def __init__(self, message: str, job_id: str | None = None) -> None:
        super().__init__(message)
        self.job_id = job_id


class InvalidTextError(CatalogError):
    """A string of a request or a table definition that is not valid Unicode (a lone surrogate such as the
    JSON escape "\\ud800"): it cannot be encoded as UTF-8, so it could be stored but never shown. `position`
    names where (a JSON path such as `$.options`)."""

    def __init__(self, message: str, position: str | None = None) -> None:
        super().__init__(message)
        self.position = position


class CommitConflictError(CatalogError):
    """Another writer committed first: the expected snapshot id is no longer current.

    The caller reloads the current snapshot and retries (or gives up).
    """


class LocationNotAllowedError(PathNotAllowedError, CatalogError):
    """A table location outside the allowed roots, or inside the warehouse's own catalog directories."""


class RowIdError(CatalogError):
    """Row ids cannot be derived for this table (bad row_id_column values, unsupported format)."""


class InvalidTableError(CatalogError):
    """The location holds no table bgix can serve as registered (e.g. not a Paimon table, or one
    without row tracking): the request is wrong, not the service."""


class LocationNotFoundError(InvalidTableError):
    """A table registered at a location that does not exist (a mistyped path): registering it would succeed and
    every build would index nothing. `location` names it."""

    def __init__(self, location: str) -> None:
        super().__init__(f"location {location} does not exist")
        self.location = location


class UnsupportedOperationError(CatalogError):
    """The operation is not (yet) available for this kind of table."""


class CorruptDocumentError(CatalogError):
    """A catalog JSON document (table, snapshot, row-id map, job) that does not parse; `path` names it.
    Only requests that need that document fail."""

    def __init__(self, message: str, path: str) -> None:
        super().__init__(message)
        self.path = path

    def __reduce__(self) -> tuple[type, tuple[str, str]]:
        return (type(self), (str(self), self.path))


class DataFileError(CatalogError):
    """A table data file that cannot be read (empty, not the table's format, not a regular file); `path`
    names it and `reason` says why."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"data file {path!r} cannot be read: {reason}")
        self.path = path
        self.reason = reason

    def __reduce__(self) -> tuple[type, tuple[str, str]]:
        return (type(self), (self.path, self.reason))   # crosses process boundaries (build workers)


class CorruptTableMetadataError(CatalogError):
    """A metadata file of a registered table's own format (a Paimon schema, snapshot, manifest list, manifest or
    index manifest) that cannot be read; `path` names it, `reason` says what is wrong and `what` what the file is
    (e.g. "base manifest list of snapshot 4"). The table is broken, not the service: only requests that need
    that table fail."""

    def __init__(self, path: str, reason: str, what: str = "metadata file") -> None:
        super().__init__(f"{what} {path!r} cannot be read: {reason}")
        self.path = path
        self.reason = reason
        self.what = what

    def __reduce__(self) -> tuple[type, tuple[str, str, str]]:
        return (type(self), (self.path, self.reason, self.what))   # crosses process boundaries (build workers)


__all__ = [
    "CatalogError", "TableNotFoundError", "TableExistsError", "IndexNotFoundError",
    "JobNotFoundError", "BuildInProgressError", "CommitConflictError", "LocationNotAllowedError",
    "RowIdError", "InvalidTableError", "UnsupportedOperationError", "CorruptDocumentError", "DataFileError",
    "CorruptTableMetadataError", "InvalidTextError", "LocationNotFoundError",
]


class UnknownTableColumnError(UnknownColumnError):
    """create_global_index names a column the table's data files do not have; `known` lists theirs."""

    def __init__(self, table: str, column: str, known: list[str], why: str | None = None) -> None:
        super().__init__(column, known)
        self.args = (f"table {table!r} has no column {column!r}; "
                     + (why if why is not None else f"its columns: {', '.join(self.known) or '(none)'}"),)
