"""Where a table's index view comes from, one source per table kind: bgix-managed tables (the catalog's
snapshots and row-id map) and Paimon tables (the Paimon snapshot's own index, data and deletion-vector files).

The query side asks only this module, so it never branches on the table format. The Paimon adapter (and
with it pypaimon) is imported on first use, so a service without Paimon tables does not load it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pyroaring import BitMap64

from index_format import ranges
from service.catalog import index_stats
from service.catalog.catalog import Catalog
from service.catalog.errors import CorruptDocumentError
from service.catalog.model import PAIMON, DataFile, Snapshot, Table

if TYPE_CHECKING:
    from service.catalog.paimon.view import PaimonView

__all__ = ["IndexViewSource", "drop_index", "is_paimon", "load_view_source", "refresh_source",
           "source_version"]

Range = tuple[int, int]


@dataclass(frozen=True)
class IndexViewSource:
    """A table's indexes, data files and row-id space at one version, in the catalog's shapes.

    `gone`: ids that name no live row (retired data files, Paimon deletion vectors), None when none.
    `retired_ranges`: the retired ids as ranges (bgix tables only; they count as covered).
    `live_ranges`: inclusive ranges of ids that hold rows; None means every id below total_rows.
    `version`: a cheap change token (the Paimon snapshot id) or None when there is none to compare.
    `broken_columns`: indexed columns left out of `columns` because their current snapshot document is
    corrupt; a query naming one must raise its error, queries on other columns go on.
    """

    table: Table
    columns: dict[str, Snapshot]
    data_files: list[DataFile]
    total_rows: int
    sparse: bool
    gone: BitMap64 | None
    retired_ranges: tuple[Range, ...] = ()
    live_ranges: tuple[Range, ...] | None = None
    version: int | None = None
    paimon: PaimonView | None = None
    broken_columns: dict[str, CorruptDocumentError] = field(default_factory=dict)


def is_paimon(table: Table) -> bool:
    return table.format == PAIMON


def load_view_source(catalog: Catalog, name: str) -> IndexViewSource:
    """The table's current view source.

    Raises:
        TableNotFoundError; CorruptDocumentError (table.json or the row-id map; a corrupt snapshot only
        lands in `broken_columns`); for Paimon tables also InvalidTableError (no longer a row-tracking Paimon
        table), PathNotAllowedError (files outside the roots), IndexFormatError (corrupt deletion vector).
    """
    t = catalog.get_table(name)
    if is_paimon(t):
        return _paimon_source(catalog, t)
    files = sorted(catalog.data_files(name), key=lambda f: f.first_row_id)
    total = max((f.first_row_id + f.row_count for f in files), default=0)
    # Ids from a table's own row-id column may have gaps: complements must not return them.
    sparse = t.row_id_column is not None
    gone: tuple[Range, ...] = ()
    if not sparse:  # with a row_id_column, ids are values: a retired file frees no id range
        gone = tuple(ranges.merge((f.first_row_id, f.end_row_id - 1) for f in catalog.retired_files(name)))
    snapshots, broken = catalog.load_indexes(name)
    return IndexViewSource(
        table=t, columns={s.column: s for s in snapshots}, data_files=files, total_rows=total,
        sparse=sparse, gone=ranges.to_bitmap(gone) if gone else None, retired_ranges=gone, broken_columns=broken)


def source_version(table: Table, storage_options: dict[str, object] | None = None) -> int | None:
    """The version a fresh view of `table` would have, when telling is cheap (Paimon: the latest snapshot
    id); None means "cannot tell", so the caller reloads."""
    if not is_paimon(table):
        return None
    from service.catalog import paimon
    sid = paimon.latest_snapshot_id(table.location, storage_options)
    return -1 if sid is None else sid  # -1: no snapshot yet (as _paimon_source records it)


def refresh_source(catalog: Catalog, table: Table) -> None:
    """Rescan what the source does not version itself: a bgix table's row-id map (Paimon versions its own)."""
    if not is_paimon(table):
        catalog.refresh_data_files(table.name)


def drop_index(catalog: Catalog, name: str, column: str) -> None:
    """Drop the column's index; the source data is untouched.

    bgix tables: the catalog removes the index's snapshots and files. Paimon tables: one new Paimon
    snapshot takes the column's bitmap global index entries out (index deletes, whoever wrote them); the
    files stay for the older snapshots that reference them. The serving side sees it on its next refresh.

    Raises:
        TableNotFoundError; IndexNotFoundError (the column has no index); for Paimon tables also
        InvalidTableError and whatever pypaimon's commit raises.
    """
    t = catalog.get_table(name)
    if is_paimon(t):
        from service.catalog import paimon
        paimon.drop_bitmap_index(t.location, column, storage_options=catalog.storage.storage_options)
        # bgix's statistics of those files live in the warehouse, not in the Paimon table.
        catalog.storage.delete(index_stats.stats_dir(name, column), recursive=True)
        return
    catalog.drop_index(name, column)


def _paimon_source(catalog: Catalog, t: Table) -> IndexViewSource:
    from service.catalog import paimon
    view = paimon.load_paimon_view(t.name, t.location, catalog.storage)
    return IndexViewSource(
        table=t, columns=view.columns, data_files=view.data_files, total_rows=view.total_rows, sparse=False,
        gone=view.deleted if view.deleted else None, live_ranges=view.row_ranges,
        version=view.snapshot_id if view.snapshot_id is not None else -1, paimon=view)
