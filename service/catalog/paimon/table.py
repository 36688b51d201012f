"""Open a row-tracking Paimon table by its directory, pinned at one snapshot, through pypaimon.

pypaimon is the only reader of Paimon metadata here (catalog, schema, snapshots). Everything else
in this package takes the PaimonTable handle, so one snapshot answers every question asked of it.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pypaimon import CatalogFactory
from pypaimon.catalog.catalog_exception import CatalogException, TableNotExistException

from index_format.storage import Storage
from service.catalog.paimon.errors import (
    ROW_TRACKING_OPTION,
    NotAPaimonTableError,
    PaimonSnapshotNotFoundError,
    RowTrackingDisabledError,
)
from service.catalog.paimon.location import PaimonLocation, parse_location, to_storage_path

if TYPE_CHECKING:
    from pypaimon.snapshot.snapshot import Snapshot
    from pypaimon.table.file_store_table import FileStoreTable

__all__ = ["PaimonTable", "open_paimon_table", "table_storage"]

_SCAN_SNAPSHOT_ID = "scan.snapshot-id"  # Paimon's time-travel option; pins reads and the schema


@dataclass(frozen=True)
class PaimonTable:
    """A pypaimon table pinned at `snapshot` (None: the table has no snapshot yet).

    `table` is a time-travel copy: its schema is the snapshot's and its scans read that snapshot.
    Commit through a fresh, unpinned table, never through this one. The handle pickles (pypaimon's
    table and snapshot objects do), so a Spark driver can ship it to tasks.
    """

    location: PaimonLocation
    table: FileStoreTable
    snapshot: Snapshot | None

    @property
    def snapshot_id(self) -> int | None:
        return None if self.snapshot is None else int(self.snapshot.id)

    @property
    def table_path(self) -> str:
        """The table directory as pypaimon spells it (prefix of data, index and manifest paths)."""
        return str(self.table.table_path)

    def partition_dict(self, partition_row: object) -> dict[str, object]:
        """A pypaimon partition row (GenericRow) as {partition key: value}; {} when unpartitioned."""
        values = list(getattr(partition_row, "values", None) or ())
        return dict(zip(self.table.partition_keys, values, strict=False))


def open_paimon_table(location: str, *, snapshot_id: int | None = None,
                      catalog_options: Mapping[str, str] | None = None) -> PaimonTable:
    """Open `<warehouse>/<db>.db/<table>` with pypaimon's filesystem catalog, at `snapshot_id` or the latest.

    `catalog_options` go to pypaimon's catalog as they are (e.g. 'fs.s3.endpoint' for object stores);
    the warehouse is derived from `location` and cannot be overridden.

    Raises:
        NotAPaimonTableError: the location has not the `<db>.db/<table>` shape or holds no Paimon schema.
        RowTrackingDisabledError: the table lacks `row-tracking.enabled=true`, so it has no `_ROW_ID`s.
        PaimonSnapshotNotFoundError: `snapshot_id` is not (or no longer) a snapshot of the table.
    """
    loc = parse_location(location)
    options = {**dict(catalog_options or {}), "warehouse": loc.warehouse}
    try:
        table = CatalogFactory.create(options).get_table(loc.identifier)
    except TableNotExistException as exc:
        raise NotAPaimonTableError(
            f"{location!r} is not a Paimon table: no schema under {loc.table_path}/schema", location) from exc
    except CatalogException as exc:  # e.g. a '$' name or a database pypaimon cannot list
        raise NotAPaimonTableError(f"{location!r} is not a Paimon table: {exc}", location) from exc
    if not table.options.row_tracking_enabled():
        raise RowTrackingDisabledError(
            f"Paimon table {loc.identifier} at {location!r} does not set '{ROW_TRACKING_OPTION}=true', "
            f"so its rows have no _ROW_ID; bitmap global indexes need it (set it when creating the table)",
            location)
    return _pin(table, loc, location, snapshot_id)


def _pin(table: FileStoreTable, loc: PaimonLocation, location: str, snapshot_id: int | None) -> PaimonTable:
    manager = table.snapshot_manager()
    if snapshot_id is None:
        snapshot = manager.get_latest_snapshot()
        if snapshot is None:
            return PaimonTable(loc, table, None)
    else:
        snapshot = manager.get_snapshot_by_id(int(snapshot_id))
        if snapshot is None:
            raise PaimonSnapshotNotFoundError(
                f"Paimon table {loc.identifier} has no snapshot {snapshot_id}", location, int(snapshot_id))
    pinned = table.copy({_SCAN_SNAPSHOT_ID: str(snapshot.id)})
    return PaimonTable(loc, pinned, snapshot)


def table_storage(table: PaimonTable, storage_options: Mapping[str, object] | None = None) -> Storage:
    """A Storage rooted at the table directory that may also read the table's external index/data paths.

    `storage_options` are fsspec's (e.g. ``{"client_kwargs": {"endpoint_url": ...}}``), not pypaimon's.
    """
    core = table.table.options
    extra = [p for p in (core.global_index_external_path(), *(core.data_file_external_paths() or ())) if p]
    return Storage(to_storage_path(table.table_path), [to_storage_path(p) for p in extra],
                   dict(storage_options or {}))
