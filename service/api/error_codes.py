"""Exception → (HTTP status, error code): the one table both the service (service.api.error_table, which writes
the envelope) and the client (which maps an envelope back to an exception class) read. No web framework here:
the client imports it.
"""
from __future__ import annotations

from index_format import errors as fmt
from service.catalog import catalog_errors as cat
from service.catalog.catalog_errors import LocationNotAllowedError
from service.query.query_errors import (
    AggregateError, AggregateTooLargeError, InvalidCursorError, NotGroupableError, OrderByError,
    SnapshotChangedError, TooManyGroupsError,
)


class UnauthorizedError(fmt.BgixError):
    """Missing or wrong bearer token."""


class BodyTooLargeError(fmt.BgixError):
    """A request body over BGIX_MAX_BODY_BYTES (413); refused before it is read into memory."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"request body is larger than {limit} bytes (BGIX_MAX_BODY_BYTES)")
        self.limit = limit


# Most specific classes first: the first isinstance match wins.
ERROR_TABLE: tuple[tuple[type[BaseException], int, str], ...] = (
    (UnauthorizedError, 401, "unauthorized"),
    (LocationNotAllowedError, 403, "path_not_allowed"),
    (fmt.PathNotAllowedError, 403, "path_not_allowed"),   # one status for every path refusal
    (BodyTooLargeError, 413, "body_too_large"),
    (fmt.UnknownColumnError, 400, "unknown_column"),
    (fmt.PredicateLimitError, 400, "predicate_limit"),
    (fmt.ParseError, 400, "invalid_predicate"),
    (fmt.BindError, 400, "invalid_literal"),
    (fmt.PredicateError, 400, "invalid_predicate"),
    (fmt.InvalidOptionError, 400, "invalid_option"),
    (cat.InvalidTextError, 400, "invalid_text"),
    (fmt.UnsupportedTypeError, 400, "unsupported_type"),
    (InvalidCursorError, 400, "invalid_cursor"),
    (TooManyGroupsError, 400, "too_many_groups"),
    (AggregateTooLargeError, 400, "aggregate_too_large"),
    (NotGroupableError, 400, "no_index"),
    (AggregateError, 400, "invalid_aggregate"),
    (OrderByError, 400, "invalid_order_by"),
    (cat.InvalidTableError, 400, "invalid_table"),       # before TableNotFoundError: a bad location
    (cat.UnsupportedOperationError, 400, "unsupported_operation"),
    (cat.TableNotFoundError, 404, "not_found"),
    (cat.IndexNotFoundError, 404, "not_found"),
    (cat.JobNotFoundError, 404, "not_found"),
    (cat.TableExistsError, 409, "conflict"),
    (cat.BuildInProgressError, 409, "conflict"),
    (cat.CommitConflictError, 409, "conflict"),
    (SnapshotChangedError, 409, "conflict"),
    (cat.DataFileError, 422, "unreadable_data_file"),
    (cat.CorruptTableMetadataError, 422, "corrupt_table_metadata"),   # the table's files, like a data file
    (cat.RowIdError, 422, "invalid_row_ids"),
    (cat.CorruptDocumentError, 500, "corrupt_catalog_document"),
    (fmt.IndexFormatError, 500, "corrupt_index_file"),
    (fmt.StorageUnavailableError, 503, "storage_unavailable"),
    (fmt.QueryTimeoutError, 503, "query_timeout"),
)


def classify(exc: BaseException) -> tuple[int, str]:
    """(status, code) of an exception; unknown BgixErrors are 500 internal."""
    for cls, status, code in ERROR_TABLE:
        if isinstance(exc, cls):
            return status, code
    return 500, "internal"


