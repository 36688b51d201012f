"""Name the broken file behind a failed pypaimon read: a metadata file (CorruptTableMetadataError) or a data file
(DataFileError), with what is wrong with it.

pypaimon fails on a broken schema, snapshot, manifest list, manifest or index manifest with whatever its JSON or
Avro decoder raised (JSONDecodeError, "cannot read header - is it an avro file?", EOFError, UnicodeDecodeError,
RuntimeError…), mostly without naming the file, and on a broken data file with pyarrow's error. Rather than guess
from those messages, a failed read is followed by a walk over the files it depended on, one at a time, read
the way pypaimon reads them; the first that does not read is named. When every file reads (the failure was
something else) or the storage itself does not answer, the original error propagates unchanged. Only failures
pay for the walk.

A missing index manifest is the one file pypaimon does not fail on: its IndexManifestFile.read answers "no
entries" when the file is absent, so a snapshot whose deletion vectors and index entries are lost would read as
one without any (and a commit over it would write a snapshot without them: deleted rows back). check_index_manifest
is bgix's own look before every index manifest read.

naming_corrupt_metadata (around any pypaimon metadata read: opening, planning, index manifest scans) ·
reading_metadata (the same for an open PaimonTable) · check_index_manifest (the named index manifest is there) ·
find_corrupt_metadata (the walk) · naming_data_files
(around a read of several data files) · find_broken_data_file (their walk) · reading_data_file (around a read of one).
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from functools import partial
from typing import Any, TypeVar

from index_format.errors import BgixError
from index_format.storage import Storage
from service.catalog.catalog_errors import CorruptTableMetadataError, DataFileError
from service.tables.paimon.confined_io import load_confined_table, refusal_in, roots_of
from service.tables.paimon.location import PaimonLocation, parse_location, to_storage_path
from service.tables.paimon.paimon_errors import NotAPaimonTableError, PaimonSnapshotNotFoundError

__all__ = ["check_index_manifest", "find_broken_data_file", "find_corrupt_metadata", "naming_corrupt_metadata",
           "naming_data_files", "os_error_in", "reading_data_file", "reading_metadata"]

T = TypeVar("T")
PaimonTable = Any   # service.tables.paimon.table.PaimonTable, which imports this module (no circle)
_SCAN_SNAPSHOT_ID = "scan.snapshot-id"
_REASON_CHARS = 300   # a decoder's message can quote the bytes it choked on
_MISSING_DATA = "the file is missing (the table's snapshot lists it)"
_MISSING = "the file is missing"


class _CannotTell(Exception):
    """The walk could not read a file for a reason that is not the file's (storage trouble): keep the original."""


def os_error_in(exc: BaseException) -> OSError | None:
    """The first OSError in `exc`'s cause chain (None when there is none)."""
    seen: BaseException | None = exc
    for _ in range(8):  # a short cause chain; never loop on a cycle
        if seen is None or isinstance(seen, OSError):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


def _raise_refusal(exc: BaseException) -> None:
    """Raise the PathNotAllowedError behind `exc` (pypaimon wraps what its confined FileIO raised), if any."""
    refused = refusal_in(exc)
    if refused is not None:
        raise refused from exc


def _storage_trouble(exc: BaseException) -> bool:
    """An OSError other than a missing file in `exc`'s chain: the store did not answer, the files may be fine."""
    cause = os_error_in(exc)
    return cause is not None and not isinstance(cause, FileNotFoundError)


def _reason(exc: BaseException) -> str:
    """What the decoder said, from the root of the chain (pypaimon re-raises it wrapped, with the path again)."""
    for _ in range(8):
        if exc.__cause__ is None:
            break
        exc = exc.__cause__
    text = f"{type(exc).__name__}: {exc}".replace("\n", " ")
    return text if len(text) <= _REASON_CHARS else text[:_REASON_CHARS] + "…"


# -- metadata -------------------------------------------------------------------------------------------------
@contextmanager
def naming_corrupt_metadata(location: str, *, snapshot_id: int | None = None,
                            storage_options: Mapping[str, object] | None = None,
                            catalog_options: Mapping[str, str] | None = None) -> Iterator[None]:
    """Around a pypaimon read of the table at `location` (at `snapshot_id`, or its latest): a failure caused by a
    corrupt metadata file becomes CorruptTableMetadataError naming it, and so does "not a Paimon table" when the
    table's snapshots name a schema that is gone. bgix's own errors and storage trouble pass unchanged; a path
    outside the storage roots (confined_io) is raised as that PathNotAllowedError."""
    try:
        yield
    except NotAPaimonTableError:
        # pypaimon finds no table without a schema file; snapshots that name one make it a table that lost its schema
        found = find_corrupt_metadata(location, snapshot_id=snapshot_id, storage_options=storage_options,
                                      catalog_options=catalog_options)
        if found is None:
            raise
        raise found from None
    except BgixError:
        raise
    except Exception as exc:
        _raise_refusal(exc)
        if _storage_trouble(exc):
            raise
        found = find_corrupt_metadata(location, snapshot_id=snapshot_id, storage_options=storage_options,
                                      catalog_options=catalog_options)
        if found is None:
            raise
        raise found from exc


def reading_metadata(table: PaimonTable, snapshot_id: int | None = None) -> Any:
    """naming_corrupt_metadata for an open table, at `snapshot_id` (default: the one it is pinned at)."""
    return naming_corrupt_metadata(
        table.location.table_path, snapshot_id=table.snapshot_id if snapshot_id is None else snapshot_id,
        storage_options=table.storage_options, catalog_options=table.catalog_options)


def check_index_manifest(table: PaimonTable, snapshot: Any) -> None:
    """Before pypaimon reads `snapshot`'s index manifest (`snapshot`: any snapshot of `table`): the file it names
    is there. pypaimon would read a missing one as listing nothing (no index files, no deletion vectors).

    Raises:
        CorruptTableMetadataError: the snapshot names an index manifest that is missing (names it).
        PaimonSnapshotNotFoundError: the snapshot itself is gone too (expired while it was read).
        StorageUnavailableError: the storage did not answer.
    """
    name = getattr(snapshot, "index_manifest", None)
    if not name:
        return
    store = Storage(to_storage_path(table.location.table_path), [], dict(table.storage_options))
    rel = f"manifest/{name}"
    if store.exists(rel):
        return
    sid = int(snapshot.id)
    if not store.exists(f"snapshot/snapshot-{sid}"):
        raise PaimonSnapshotNotFoundError(
            f"Paimon table {table.location.identifier}: snapshot {sid} expired while it was read (its index "
            "manifest went with it); retry", table.location.table_path, sid)
    raise CorruptTableMetadataError(store.resolve(rel), f"{_MISSING} (snapshot {sid} names it)",
                                    f"Paimon index manifest of snapshot {sid}")


def find_corrupt_metadata(location: str, *, snapshot_id: int | None = None,
                          storage_options: Mapping[str, object] | None = None,
                          catalog_options: Mapping[str, str] | None = None) -> CorruptTableMetadataError | None:
    """The first metadata file of the table that does not read, in the order pypaimon reads them: the latest
    schema, the snapshot (`snapshot_id`, else the latest), that snapshot's schema, its manifest lists, each
    manifest they list, its index manifest. None when all of them read, or when the storage does not answer."""
    loc = parse_location(location)
    store = Storage(to_storage_path(loc.table_path), [], dict(storage_options or {}))
    try:
        _walk(loc, store, snapshot_id, dict(catalog_options or {}))
        return None
    except CorruptTableMetadataError as found:
        return found
    except Exception:   # _CannotTell, or a file that reads but says something odd: the walk must not hide the failure
        return None


def _walk(loc: PaimonLocation, store: Storage, snapshot_id: int | None, catalog_options: dict[str, str]) -> None:
    from pypaimon.common.json_util import JSON
    from pypaimon.schema.table_schema import TableSchema
    from pypaimon.snapshot.snapshot import Snapshot

    def json_file(rel: str, what: str, parse: Callable[[str], T]) -> T:
        return _check(store, rel, what, lambda: parse(store.read_bytes(rel).decode("utf-8")))

    schemas = _ids(store, "schema", "schema-")
    if schemas:
        json_file(f"schema/schema-{max(schemas)}", "Paimon schema (the latest)", TableSchema.from_json)
    if snapshot_id is None:
        snapshots = _ids(store, "snapshot", "snapshot-")
        if not snapshots:
            _check_hint(store)
            return None
        snapshot_id = max(snapshots)
    snap_rel = f"snapshot/snapshot-{snapshot_id}"
    if not _exists(store, snap_rel):
        return None   # expired (or never written): not a corrupt file
    what = f"snapshot {snapshot_id}"
    snap = json_file(snap_rel, f"Paimon {what}", lambda text: JSON.from_json(text, Snapshot))
    for field, value in (("baseManifestList", snap.base_manifest_list),
                         ("deltaManifestList", snap.delta_manifest_list)):
        if not isinstance(value, str) or not value:
            raise CorruptTableMetadataError(store.resolve(snap_rel), f"it names no {field}", f"Paimon {what}")
    if int(snap.schema_id) not in schemas:
        raise CorruptTableMetadataError(store.resolve(f"schema/schema-{snap.schema_id}"), "the file is missing",
                                        f"Paimon schema {snap.schema_id} (of {what})")
    if int(snap.schema_id) != max(schemas):
        json_file(f"schema/schema-{snap.schema_id}", f"Paimon schema {snap.schema_id} (of {what})",
                  TableSchema.from_json)
    try:
        _metadata_files(loc, store, snap, what, catalog_options, frozenset(schemas))
    except CorruptTableMetadataError as found:
        if found.reason.startswith("the file is missing") and not _exists(store, snap_rel):
            return None   # the snapshot expired while we looked: its files went with it
        raise
    return None


def _metadata_files(loc: PaimonLocation, store: Storage, snap: Any, what: str, catalog_options: dict[str, str],
                    schemas: frozenset[int]) -> None:
    """The snapshot's manifest lists, every manifest they list, the schema of every data file they list (`schemas`:
    the ids present) and its index manifest, with pypaimon's readers."""
    from pypaimon.manifest.index_manifest_file import IndexManifestFile
    from pypaimon.manifest.manifest_file_manager import ManifestFileManager
    from pypaimon.manifest.manifest_list_manager import ManifestListManager
    from pypaimon.schema.table_schema import TableSchema

    try:
        # confined to the table directory, where a snapshot's manifests are
        table = load_confined_table(loc, catalog_options, roots_of([store.root]))
        table = table.copy({_SCAN_SNAPSHOT_ID: str(snap.id)})
    except Exception as exc:   # the files checked so far read; something else is wrong
        raise _CannotTell() from exc
    lists = ManifestListManager(table)
    manifests: list[Any] = []
    for kind, name, size in (("base", snap.base_manifest_list, snap.base_manifest_list_size),
                             ("delta", snap.delta_manifest_list, snap.delta_manifest_list_size),
                             ("changelog", snap.changelog_manifest_list, snap.changelog_manifest_list_size)):
        if name:
            manifests.extend(_check(store, f"manifest/{name}", f"Paimon {kind} manifest list of {what}",
                                    partial(lists.read, name, size)))
    files = ManifestFileManager(table)

    def read_schema(rel: str) -> Any:
        return TableSchema.from_json(store.read_bytes(rel).decode("utf-8"))

    data_schemas: set[int] = set()
    for meta in manifests:
        entries = _check(store, f"manifest/{meta.file_name}", f"Paimon manifest of {what}",
                         partial(files.read, meta.file_name, file_size=meta.file_size))
        data_schemas.update(int(e.file.schema_id) for e in entries)
    for sid in sorted(data_schemas - {int(snap.schema_id)}):   # pypaimon reads each data file with its schema
        rel = f"schema/schema-{sid}"
        if sid not in schemas:
            raise CorruptTableMetadataError(store.resolve(rel), f"{_MISSING} (data files of {what} name it)",
                                            f"Paimon schema {sid}")
        _check(store, rel, f"Paimon schema {sid} (of data files of {what})",
               partial(read_schema, rel))
    if snap.index_manifest:
        rel = f"manifest/{snap.index_manifest}"
        if not _exists(store, rel):   # pypaimon reads a missing index manifest as no index files at all
            raise CorruptTableMetadataError(store.resolve(rel), f"{_MISSING} ({what} names it)",
                                            f"Paimon index manifest of {what}")
        _check(store, rel, f"Paimon index manifest of {what}",
               lambda: IndexManifestFile(table).read(snap.index_manifest))


def _check(store: Storage, rel: str, what: str, read: Callable[[], T]) -> T:
    """`read()`'s result; CorruptTableMetadataError naming `rel` when its bytes do not read, _CannotTell when the
    storage does not answer."""
    try:
        return read()
    except _CannotTell:
        raise
    except Exception as exc:
        cause = os_error_in(exc)
        if isinstance(cause, FileNotFoundError):
            raise CorruptTableMetadataError(store.resolve(rel), "the file is missing", what) from exc
        if cause is not None or (isinstance(exc, BgixError) and not isinstance(exc, CorruptTableMetadataError)):
            raise _CannotTell() from exc   # storage trouble (Storage raises StorageUnavailableError)
        raise CorruptTableMetadataError(store.resolve(rel), _reason(exc), what) from exc


def _check_hint(store: Storage) -> None:
    """No snapshot file: a `snapshot/LATEST` that names one anyway is what pypaimon refuses to open."""
    rel = "snapshot/LATEST"
    try:
        hint = store.read_bytes(rel) if store.exists(rel) else b""
    except Exception as exc:
        raise _CannotTell() from exc
    if hint.strip():
        raise CorruptTableMetadataError(store.resolve(rel), "it names a snapshot but the table has no snapshot file",
                                        "Paimon snapshot hint")


def _ids(store: Storage, directory: str, prefix: str) -> list[int]:
    """The N of every `<directory>/<prefix>N` file."""
    try:
        names = [p.rstrip("/").rsplit("/", 1)[-1] for p in store.list(directory)]
    except Exception as exc:
        raise _CannotTell() from exc
    return [int(n[len(prefix):]) for n in names if n.startswith(prefix) and n[len(prefix):].isdigit()]


def _exists(store: Storage, rel: str) -> bool:
    try:
        return store.exists(rel)
    except Exception as exc:
        raise _CannotTell() from exc


# -- data files -----------------------------------------------------------------------------------------------
@contextmanager
def naming_data_files(table: PaimonTable, files: Iterable[Any]) -> Iterator[None]:
    """Around a read of the data files `files` (pypaimon DataFileMeta) of `table`: a failure caused by one of them
    (the one that does not read again on its own) becomes DataFileError naming it; other failures and bgix's own
    errors pass unchanged (a file outside the storage roots: its PathNotAllowedError)."""
    try:
        yield
    except BgixError:
        raise
    except Exception as exc:   # OSError included: pyarrow raises it for bytes that do not decompress
        _raise_refusal(exc)
        found = find_broken_data_file(table, files)
        if found is None:
            raise
        raise found from exc


@contextmanager
def reading_data_file(meta: Any) -> Iterator[None]:
    """Around a read of the one data file `meta` (pypaimon DataFileMeta): what the reader raises becomes
    DataFileError naming it and saying why (as plain tables' scan.reading does); bgix's own errors pass (a file
    outside the storage roots: its PathNotAllowedError)."""
    try:
        yield
    except BgixError:
        raise
    except Exception as exc:   # OSError included: pyarrow raises it for bytes that do not decompress
        _raise_refusal(exc)
        path = to_storage_path(str(meta.external_path or meta.file_path))
        if isinstance(os_error_in(exc), FileNotFoundError):
            raise DataFileError(path, _MISSING_DATA) from exc
        raise DataFileError(path, _reason(exc)) from exc


def find_broken_data_file(table: PaimonTable, files: Iterable[Any]) -> DataFileError | None:
    """The first of `files` whose whole content pyarrow cannot read (Parquet and ORC; other formats are not
    looked at), or that is missing; None when they all read."""
    file_io = table.table.file_io
    seen: set[str] = set()
    for meta in files:
        raw = str(meta.external_path or meta.file_path)
        if raw in seen:
            continue
        seen.add(raw)
        path = to_storage_path(raw)
        try:
            _read_whole(file_io, raw)
        except Exception as exc:
            cause = os_error_in(exc)
            if isinstance(cause, FileNotFoundError):
                return DataFileError(path, _MISSING_DATA)
            return DataFileError(path, _reason(exc))
    return None


def _read_whole(file_io: Any, raw: str) -> None:
    name = raw.rsplit("/", 1)[-1].lower()
    if not name.endswith((".parquet", ".orc")):
        return
    with file_io.filesystem.open_input_file(file_io.to_filesystem_path(raw)) as source:
        if name.endswith(".parquet"):
            import pyarrow.parquet as pq
            table = pq.ParquetFile(source).read()
        else:
            import pyarrow.orc as orc
            table = orc.ORCFile(source).read()
    table.validate(full=True)
