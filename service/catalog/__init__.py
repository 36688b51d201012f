"""The registry: tables, versioned index snapshots and job records as documents; re-exports only."""
from __future__ import annotations

from service.catalog.catalog import Catalog
from service.catalog.catalog_errors import (
    BuildInProgressError,
    CatalogError,
    CommitConflictError,
    IndexNotFoundError,
    JobNotFoundError,
    RowIdError,
    TableExistsError,
    TableNotFoundError,
)
from service.catalog.model import DataFile, IndexFileEntry, JobRecord, Snapshot, SourceFile, Table

__all__ = [
    "Catalog", "BuildInProgressError", "CatalogError", "CommitConflictError",
    "IndexNotFoundError", "JobNotFoundError", "RowIdError", "TableExistsError", "TableNotFoundError",
    "DataFile", "IndexFileEntry", "JobRecord", "Snapshot", "SourceFile", "Table",
]
