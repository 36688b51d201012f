"""Open a row-tracking Paimon table by its directory, pinned at one snapshot, through pypaimon.

pypaimon is the only reader of Paimon metadata here (catalog, schema, snapshots). Everything else
in this package takes the PaimonTable handle, so one snapshot answers every question asked of it.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, cast

from pypaimon.catalog.catalog_exception import CatalogException, TableNotExistException

from index_format.errors import PathNotAllowedError, StorageUnavailableError
from index_format.storage import Storage
from service.tables.paimon.broken_files import naming_corrupt_metadata, os_error_in
from service.tables.paimon.confined_io import (
    ConfinedFileIO, check_declared_paths, check_table_dir, declared_paths, load_confined_table, roots_of,
)
from service.tables.paimon.paimon_errors import (
    ROW_TRACKING_OPTION,
    NotAPaimonTableError,
    PaimonSnapshotNotFoundError,
    RowTrackingDisabledError,
)
from service.tables.paimon.location import PaimonLocation, parse_location, scheme_of, to_storage_path

if TYPE_CHECKING:
    from index_format.storage.paths import Roots
    from pypaimon.snapshot.snapshot import Snapshot
    from pypaimon.table.file_store_table import FileStoreTable

__all__ = ["PaimonTable", "catalog_options_for", "open_paimon_table", "reopen", "table_storage"]

_SCAN_SNAPSHOT_ID = "scan.snapshot-id"  # Paimon's time-travel option; pins reads and the schema
_S3_SCHEMES = ("s3", "s3a", "s3n")     # what pypaimon's PyArrowFileIO opens with pyarrow's S3FileSystem


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
    # What opened it (credentials, hence no repr): fsspec's options for our Storage, pypaimon's for its catalog.
    storage_options: Mapping[str, object] = field(default_factory=dict, repr=False)
    catalog_options: Mapping[str, str] = field(default_factory=dict, repr=False)
    # Where its files may be (confined_io): every file pypaimon touches for it, and table_storage's, lies under these.
    roots: tuple[str, ...] = ()

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


def catalog_options_for(location: str, storage_options: Mapping[str, object] | None) -> dict[str, str]:
    """pypaimon filesystem-catalog options that reach `location` the way fsspec does with `storage_options`.

    The one place bgix's storage options (fsspec/s3fs: key, secret, token, endpoint_url, client_kwargs,
    config_kwargs, use_ssl) become pypaimon's (its PyArrowFileIO builds a pyarrow S3FileSystem from
    fs.s3.accessKeyId / accessKeySecret / securityToken / endpoint / region / path-style-access).
    Only s3://, s3a:// and s3n:// locations get options; {} otherwise (local paths need none).
    With an endpoint (MinIO, moto, …) path-style addressing is used unless
    config_kwargs={"s3": {"addressing_style": "virtual"}} says otherwise, as botocore does.
    """
    if scheme_of(location) not in _S3_SCHEMES:
        return {}
    so = dict(storage_options or {})
    client = _options_in(so, "client_kwargs")
    config = _options_in(so, "config_kwargs")

    def first(*values: object) -> str | None:
        return next((str(v) for v in values if v not in (None, "")), None)

    out = {
        "fs.s3.accessKeyId": first(so.get("key"), so.get("username"), client.get("aws_access_key_id")),
        "fs.s3.accessKeySecret": first(so.get("secret"), so.get("password"), client.get("aws_secret_access_key")),
        "fs.s3.securityToken": first(so.get("token"), client.get("aws_session_token")),
        "fs.s3.region": first(client.get("region_name"), config.get("region_name"), so.get("region_name")),
    }
    endpoint = first(so.get("endpoint_url"), client.get("endpoint_url"))
    if endpoint is not None:
        use_ssl = so.get("use_ssl", client.get("use_ssl", True))
        if "://" not in endpoint:  # pyarrow, like botocore, takes the scheme from the endpoint when given
            endpoint = ("https://" if _truthy(use_ssl) else "http://") + endpoint
        out["fs.s3.endpoint"] = endpoint
    style = str(_options_in(config, "s3").get("addressing_style") or "auto").lower()
    out["fs.s3.path-style-access"] = "true" if style == "path" or (endpoint and style != "virtual") else "false"
    return {k: v for k, v in out.items() if v is not None}


def _options_in(options: Mapping[str, object], key: str) -> dict[str, object]:
    """The nested options under `key` (fsspec's client_kwargs, config_kwargs, …) as a dict; {} when absent."""
    return dict(cast("Mapping[str, object]", options.get(key) or {}))


def _truthy(value: object) -> bool:
    return value if isinstance(value, bool) else str(value).strip().lower() not in ("false", "0", "no", "off")


def open_paimon_table(location: str, *, snapshot_id: int | None = None,
                      catalog_options: Mapping[str, str] | None = None,
                      storage_options: Mapping[str, object] | None = None,
                      roots: Sequence[str] | None = None) -> PaimonTable:
    """Open `<warehouse>/<db>.db/<table>` with pypaimon's filesystem catalog, at `snapshot_id` or the latest.

    Every file pypaimon touches for the table goes through a ConfinedFileIO on `roots` (bgix's storage roots: the
    warehouse and BGIX_ALLOWED_ROOTS); the table directory, its symlinked entries and its declared external paths
    are checked against them before anything is read. None (library use, tests): the table directory and the
    external paths its own options declare.

    `storage_options` are bgix's fsspec options (BGIX_STORAGE_OPTIONS): pypaimon gets the matching catalog
    options (catalog_options_for), and table_storage() uses them for the table's index and vector files.
    `catalog_options` go to pypaimon's catalog as they are, over the derived ones (e.g. 'fs.s3.endpoint');
    the warehouse is derived from `location` and cannot be overridden.

    Raises:
        NotAPaimonTableError: the location has not the `<db>.db/<table>` shape or holds no Paimon schema.
        RowTrackingDisabledError: the table lacks `row-tracking.enabled=true`, so it has no `_ROW_ID`s.
        PaimonSnapshotNotFoundError: `snapshot_id` is not (or no longer) a snapshot of the table.
        StorageUnavailableError: pypaimon's file IO failed reading the location (object store unreachable,
            credentials refused); a missing bucket or table is NotAPaimonTableError.
        CorruptTableMetadataError: the latest schema, the snapshot or its schema does not read (names the file).
        PathNotAllowedError: the table, one of its metadata directories or declared external paths, or a file
            pypaimon reads lies outside `roots` (names it).
    """
    loc = parse_location(location)
    derived = {**catalog_options_for(loc.warehouse, storage_options), **dict(catalog_options or {})}
    confined = roots_of(list(roots) if roots is not None else [to_storage_path(loc.table_path)])
    check_table_dir(loc.table_path, confined)
    # A schema or snapshot file that does not read: name it (CorruptTableMetadataError) instead of pypaimon's error.
    with naming_corrupt_metadata(location, snapshot_id=snapshot_id, storage_options=storage_options,
                                 catalog_options=derived):
        table = _get_table(loc, location, derived, confined)
        if not table.options.row_tracking_enabled():
            raise RowTrackingDisabledError(
                f"Paimon table {loc.identifier} at {location!r} does not set '{ROW_TRACKING_OPTION}=true', "
                f"so its rows have no _ROW_ID; bitmap global indexes need it (set it when creating the table)",
                location)
        io = table.file_io
        assert isinstance(io, ConfinedFileIO)
        if roots is None:   # library use: the places the table's own options declare are allowed too
            io.roots = roots_of([*confined.all, *declared_paths(table.table_schema.options)])
        else:
            check_declared_paths(table.table_schema.options, confined, loc.table_path)
        return _pin(table, loc, location, snapshot_id, dict(storage_options or {}), derived, io.roots.all)


def _get_table(loc: PaimonLocation, location: str, options: dict[str, str], roots: Roots) -> FileStoreTable:
    try:
        table = load_confined_table(loc, options, roots)
    except PathNotAllowedError:
        raise
    except TableNotExistException as exc:
        raise NotAPaimonTableError(
            f"{location!r} is not a Paimon table: no schema under {loc.table_path}/schema", location) from exc
    except CatalogException as exc:  # e.g. a '$' name or a database pypaimon cannot list
        raise NotAPaimonTableError(f"{location!r} is not a Paimon table: {exc}", location) from exc
    except (OSError, RuntimeError) as exc:
        # pyarrow's file systems raise OSError (S3: network, credentials); pypaimon's schema manager wraps
        # it in RuntimeError("Failed to load schema from path: …"). Anything else is not ours to rename.
        cause = os_error_in(exc)
        if cause is None:
            raise
        raise StorageUnavailableError(
            f"pypaimon could not read the Paimon table at {location!r}: {type(cause).__name__}: {cause}") from exc
    return table


def _pin(table: FileStoreTable, loc: PaimonLocation, location: str, snapshot_id: int | None,
         storage_options: dict[str, object], catalog_options: dict[str, str], roots: tuple[str, ...]) -> PaimonTable:
    manager = table.snapshot_manager()
    if snapshot_id is None:
        snapshot = manager.get_latest_snapshot()
        if snapshot is None:
            return PaimonTable(loc, table, None, storage_options, catalog_options, roots)
    else:
        snapshot = manager.get_snapshot_by_id(int(snapshot_id))
        if snapshot is None:
            raise PaimonSnapshotNotFoundError(
                f"Paimon table {loc.identifier} has no snapshot {snapshot_id}", location, int(snapshot_id))
    pinned = table.copy({_SCAN_SNAPSHOT_ID: str(snapshot.id)})
    return PaimonTable(loc, pinned, snapshot, storage_options, catalog_options, roots)


def reopen(table: PaimonTable, snapshot_id: int | None = None) -> PaimonTable:
    """The same table opened again (latest snapshot, or `snapshot_id`) with the options that opened `table`."""
    return open_paimon_table(table.location.table_path, snapshot_id=snapshot_id, catalog_options=table.catalog_options,
                             storage_options=table.storage_options, roots=table.roots or None)


def table_storage(table: PaimonTable, storage_options: Mapping[str, object] | None = None) -> Storage:
    """A Storage rooted at the table directory confined to the table's roots (which hold its external index and
    data paths: open_paimon_table checked them), so an index file is never read or written elsewhere.

    `storage_options` are fsspec's (e.g. ``{"client_kwargs": {"endpoint_url": ...}}``), not pypaimon's;
    None: those that opened the table.
    """
    options = table.storage_options if storage_options is None else storage_options
    return Storage(to_storage_path(table.table_path), list(table.roots), dict(options))
