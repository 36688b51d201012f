"""Paimon tables behind the table-source seam (pypaimon is imported only inside this package); re-exports only.

paimon_errors · location (`<warehouse>/<db>.db/<table>`) · table (open, pin a snapshot, Storage) · key_types ·
description (fields, options, data files) · index_entries (global index files of every family) · origins (who wrote
each index file: bgix, pypaimon, a DEIX writer such as Paimon Java) ·
deletions (deleted `_ROW_ID`s) · rows (splits, `[columns…, _ROW_ID]` reads) · stale_index (index files a
data-evolution update made stale) · view (what the query side serves) ·
build_plan (unindexed and stale ranges to build, per split) · commit (index files → one new Paimon snapshot) ·
drop (a column's global index files → index deletes in one new Paimon snapshot) · paimon_source (the
TableSource).
"""
from __future__ import annotations

from service.tables.paimon.deletions import DeletionVectorRef, deleted_row_ids, list_deletion_vectors
from service.tables.paimon.description import (
    PaimonDataFile,
    PaimonField,
    PaimonTableDescription,
    RowRangeGroup,
    describe_table,
)
from service.tables.paimon.drop import drop_column_indexes
from service.tables.paimon.paimon_errors import (
    NotAPaimonTableError,
    PaimonColumnNotFoundError,
    PaimonSnapshotNotFoundError,
    RowTrackingDisabledError,
)
from service.tables.paimon.index_entries import GlobalIndexEntry, list_all_index_entries, list_index_entries
from service.tables.paimon.key_types import key_type_of_spelling
from service.tables.paimon.location import PaimonLocation, parse_location, to_storage_path
from service.tables.paimon.rows import ROW_ID, plan_splits, read_rows
from service.tables.paimon.table import PaimonTable, open_paimon_table, table_storage
from service.tables.paimon.view import PaimonView, latest_snapshot_id, load_paimon_view

__all__ = [
    "ROW_ID", "GlobalIndexEntry", "DeletionVectorRef", "NotAPaimonTableError", "PaimonColumnNotFoundError",
    "PaimonDataFile", "PaimonField", "PaimonLocation", "PaimonSnapshotNotFoundError",
    "PaimonTable", "PaimonTableDescription", "PaimonView", "RowRangeGroup", "RowTrackingDisabledError",
    "deleted_row_ids", "describe_table", "drop_column_indexes", "key_type_of_spelling", "latest_snapshot_id",
    "list_all_index_entries", "list_index_entries", "list_deletion_vectors", "load_paimon_view", "open_paimon_table",
    "parse_location", "plan_splits", "read_rows", "table_storage", "to_storage_path",
]
