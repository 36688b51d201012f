"""Commit global index files bgix wrote into a Paimon table: one new snapshot through pypaimon's commit.

Each file becomes an IndexManifestEntry (add, its partition, bucket 0, its family's index type, GlobalIndexMeta
with the inclusive row range, the column's field id, the spec §4 metadata and the DEIX source marker).
Before committing, coverage is re-checked on the latest snapshot when another writer committed since the
build's scan; after committing, a file that overlaps another writer's index on the same column (a race in
the last instant; same family) makes this module take its own entries back out (index_deletes). When the commit fails
the written files are deleted unless a snapshot references them, so the table stays as it was. A commit whose
snapshot another writer's non-atomic rename replaced (pypaimon said written, no snapshot is ours) is made again.

A refresh or rebuild also takes index files out (`replaces`: stale files, or on a rebuild every file of the
column's family) in the same snapshot as it adds the new ones, so readers see the old entries or the new ones,
never neither; the conflict checks do not count the entries being replaced, and a replaced entry another writer
took out meanwhile is a conflict.
"""
from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pypaimon.globalindex.global_index_meta import GlobalIndexMeta
from pypaimon.index.index_file_meta import IndexFileMeta
from pypaimon.manifest.index_manifest_entry import IndexManifestEntry
from pypaimon.manifest.manifest_list_manager import ManifestListManager
from pypaimon.table.row.generic_row import GenericRow
from pypaimon.write.commit_message import CommitMessage

if TYPE_CHECKING:
    from pypaimon.table.file_store_table import FileStoreTable

from index_format import ranges
from index_format.families import BITMAP
from index_format.global_index.filemeta import deix_source_meta
from index_format.storage import Storage
from service.catalog.catalog_errors import CommitConflictError
from service.tables.paimon.broken_files import reading_metadata
from service.tables.paimon.index_entries import (
    GlobalIndexEntry, index_file_names, list_all_index_entries, scan_index_manifest,
)
from service.tables.paimon.location import PaimonLocation, to_storage_path
from service.tables.paimon.confined_io import load_confined_table, naming_refusals, roots_of
from service.tables.paimon.table import PaimonTable, reopen

__all__ = [
    "BuiltIndexFile", "SnapshotReplacedError", "commit_index_files", "commit_messages", "index_dir", "writable_table",
]

log = logging.getLogger("bgix.paimon.commit")


# A commit another writer's snapshot replaced is made again (nothing of it is referenced); more means a writer
# that keeps replacing snapshots, and the build fails cleanly.
_COMMIT_ATTEMPTS = 3


class SnapshotReplacedError(CommitConflictError):
    """pypaimon reported the commit written, but no snapshot after it is ours."""


@dataclass(frozen=True)
class BuiltIndexFile:
    """One index file a build wrote (not yet committed): its column, partition and inclusive row range."""

    column: str
    field_id: int
    partition_values: tuple[object, ...]
    row_range_start: int
    row_range_end: int
    path: str           # storage path (absolute)
    file_name: str
    file_size: int
    row_count: int
    index_meta: bytes
    index_type: str = BITMAP.name  # the family (index_format.families) that wrote it


def index_dir(table: PaimonTable) -> tuple[str, bool]:
    """(storage path of the directory index files go to, whether it is `global-index.external-path`)."""
    factory = table.table.path_factory().global_index_path_factory()
    return to_storage_path(str(factory.index_path())).rstrip("/"), bool(factory.is_external_path())


def commit_index_files(table: PaimonTable, files: Sequence[BuiltIndexFile], storage: Storage, *,
                       properties: dict[str, str] | None = None,
                       replaces: Sequence[GlobalIndexEntry] = ()) -> int:
    """Commit `files` (built from `table`'s snapshot) as one new snapshot, taking the index files `replaces`
    (entries of that snapshot) out in the same snapshot; returns its id.

    Raises:
        CommitConflictError: another writer indexed some of these rows since the scan, or took a replaced
            entry out (nothing of ours is committed then, and our files are deleted).
        CorruptTableMetadataError: the latest snapshot's manifest lists or index manifest are missing or do not
            read (names the file; nothing is committed, our files are deleted).
        Anything pypaimon's commit raises (our files are deleted unless a snapshot references them).
    """
    if table.snapshot_id is None:
        raise CommitConflictError("the build scanned no snapshot; nothing to commit")
    committing = False   # until pypaimon is asked to commit, no snapshot can reference our files
    try:
        for attempt in range(1, _COMMIT_ATTEMPTS + 1):
            latest = reopen(table)
            _check_base(latest)
            if latest.snapshot_id != table.snapshot_id:
                _check_still_uncovered(latest, files, since=table.snapshot_id, replaced=replaces)
            writable = writable_table(table.location, table.catalog_options, table.roots)
            messages = _messages(writable, files, table.snapshot_id, external=index_dir(table)[1], kind=0)
            messages += _replace_messages(writable, replaces)
            committing = True
            try:
                sid = commit_messages(writable, messages, after=latest.snapshot_id or 0, properties=properties)
            except SnapshotReplacedError:
                if attempt == _COMMIT_ATTEMPTS:
                    raise
                log.warning("another writer's snapshot replaced this commit's (attempt %d of %d); committing again",
                            attempt, _COMMIT_ATTEMPTS)
                continue
            _check_no_overlap_after(table, files, writable, sid)
            return sid
        raise AssertionError("unreachable")  # the loop returns or raises
    except BaseException:
        _delete_unreferenced(table, files, storage, committing)
        raise


def _check_base(latest: PaimonTable) -> None:
    """What pypaimon's commit reads of the snapshot it builds on reads: its manifest lists (their entries are
    carried over) and its index manifest. pypaimon reads a missing index manifest as listing nothing, so it would
    commit a snapshot without the deletion vectors and index files the lost one listed: deleted rows back for
    every reader. Raises CorruptTableMetadataError naming the file."""
    if latest.snapshot is None:
        return
    scan_index_manifest(latest, latest.snapshot, lambda _: False)
    with reading_metadata(latest):
        ManifestListManager(latest.table).read_all(latest.snapshot)


def _check_still_uncovered(latest: PaimonTable, files: Sequence[BuiltIndexFile], since: int,
                           replaced: Sequence[GlobalIndexEntry] = ()) -> None:
    entries = list_all_index_entries(latest, tuple({f.index_type for f in files} | {e.index_type for e in replaced}))
    present = {e.file_name for es in entries.values() for e in es}
    for r in replaced:
        if r.file_name not in present:
            raise CommitConflictError(
                f"column {r.column!r}: index file {r.file_name} (rows {r.row_range_start}..{r.row_range_end}) "
                f"this build replaces was taken out by another writer after snapshot {since} (the build's scan); "
                "rerun the build")
    gone = {r.file_name for r in replaced}
    for f in files:
        covered = [(e.row_range_start, e.row_range_end) for e in entries.get((f.column, f.index_type), ())
                   if e.file_name not in gone]
        if ranges.intersect([(f.row_range_start, f.row_range_end)], covered):
            raise CommitConflictError(
                f"column {f.column!r}: rows {f.row_range_start}..{f.row_range_end} were indexed by another "
                f"writer after snapshot {since} (the build's scan); rerun the build to index what is left")


def _check_no_overlap_after(table: PaimonTable, files: Sequence[BuiltIndexFile], writable: FileStoreTable,
                            sid: int) -> None:
    """A writer that committed an index on our column between our check and our commit: take ours back."""
    mine = {f.file_name for f in files}
    entries = list_all_index_entries(reopen(table, sid), tuple({f.index_type for f in files}))
    for f in files:
        others = [(e.row_range_start, e.row_range_end) for e in entries.get((f.column, f.index_type), ())
                  if e.file_name not in mine]
        if ranges.intersect([(f.row_range_start, f.row_range_end)], others):
            commit_messages(writable, _messages(writable, files, table.snapshot_id or 0,
                                                external=index_dir(table)[1], kind=1, deletes=True), after=sid)
            raise CommitConflictError(
                f"column {f.column!r}: another writer indexed rows {f.row_range_start}..{f.row_range_end} "
                "at the same time; this build's index files were taken back out")


def _messages(writable: FileStoreTable, files: Sequence[BuiltIndexFile], scanned: int, *, external: bool, kind: int,
              deletes: bool = False) -> list[CommitMessage]:
    fields = writable.partition_keys_fields
    source = deix_source_meta(scanned)
    by_partition: dict[tuple[object, ...], list[IndexManifestEntry]] = {}
    for f in files:
        meta = IndexFileMeta(
            index_type=f.index_type, file_name=f.file_name, file_size=f.file_size, row_count=f.row_count,
            global_index_meta=GlobalIndexMeta(
                row_range_start=f.row_range_start, row_range_end=f.row_range_end, index_field_id=f.field_id,
                extra_field_ids=None, index_meta=f.index_meta, source_meta=source),
            external_path=f.path if external else None)
        by_partition.setdefault(f.partition_values, []).append(IndexManifestEntry(
            kind=kind, partition=GenericRow(list(f.partition_values), fields), bucket=0, index_file=meta))
    out = []
    for values, entries in by_partition.items():
        if deletes:
            out.append(CommitMessage(partition=values, bucket=0, new_files=[], index_deletes=entries))
        else:
            out.append(CommitMessage(partition=values, bucket=0, new_files=[], index_adds=entries))
    return out


def _replace_messages(writable: FileStoreTable, replaced: Sequence[GlobalIndexEntry]) -> list[CommitMessage]:
    """Index deletes for the entries `replaced` (pypaimon takes an entry out by its file name, in its partition)."""
    fields = writable.partition_keys_fields
    keys = list(writable.partition_keys)
    by_partition: dict[tuple[object, ...], list[IndexManifestEntry]] = {}
    for e in replaced:
        values = tuple(e.partition.get(k) for k in keys)
        meta = IndexFileMeta(
            index_type=e.index_type, file_name=e.file_name, file_size=e.file_size, row_count=e.row_count,
            global_index_meta=GlobalIndexMeta(
                row_range_start=e.row_range_start, row_range_end=e.row_range_end, index_field_id=e.index_field_id,
                extra_field_ids=None if e.extra_field_ids is None else list(e.extra_field_ids),
                index_meta=e.index_meta, source_meta=e.source_meta),
            external_path=e.external_path)
        by_partition.setdefault(values, []).append(IndexManifestEntry(
            kind=1, partition=GenericRow(list(values), fields), bucket=e.bucket, index_file=meta))
    return [CommitMessage(partition=values, bucket=0, new_files=[], index_deletes=entries)
            for values, entries in by_partition.items()]


def writable_table(location: PaimonLocation, catalog_options: Mapping[str, str] | None = None,
                   roots: Sequence[str] = ()) -> FileStoreTable:
    """A fresh, unpinned pypaimon table to commit through (a PaimonTable is pinned: a time-travel copy), writing
    nothing outside `roots` (confined_io; default: the table directory); on local disk its snapshot rename never
    replaces another writer's snapshot (no_replace_io)."""
    return load_confined_table(location, dict(catalog_options or {}),
                               roots_of(list(roots) or [to_storage_path(location.table_path)]))


def commit_messages(writable: FileStoreTable, messages: Sequence[CommitMessage], *, after: int,
                    properties: dict[str, str] | None = None) -> int:
    """Commit `messages` through `writable` as one new snapshot; returns its id (the first of ours after `after`)."""
    wb = writable.new_batch_write_builder()
    commit = wb.new_commit()
    try:
        with naming_refusals():   # a manifest or snapshot that would be written outside the roots
            commit.commit(list(messages), snapshot_properties=properties)
    finally:
        commit.close()
    return _our_snapshot(writable, wb.commit_user, after=after)


def _our_snapshot(writable: FileStoreTable, commit_user: str, after: int) -> int:
    manager = writable.snapshot_manager()
    latest = manager.get_latest_snapshot()
    sid = int(latest.id)
    while sid > after:
        snap = manager.get_snapshot_by_id(sid)
        if snap is not None and snap.commit_user == commit_user:
            return sid
        sid -= 1
    raise SnapshotReplacedError(
        f"no snapshot after {after} is this commit's (user {commit_user}) although pypaimon reported it written: "
        "another writer's rename replaced it (its snapshot write is not atomic), or the commit was empty")


def _delete_unreferenced(table: PaimonTable, files: Sequence[BuiltIndexFile], storage: Storage,
                         committed: bool = True) -> None:
    """Delete our `files` no snapshot references; `committed` False: no commit was tried, none can (our file names
    are new), so every one goes, even when the table's index manifest does not read."""
    referenced: frozenset[str] = frozenset()
    try:
        if committed:
            latest = reopen(table)
            referenced = index_file_names(latest, latest.snapshot)
    except Exception:
        log.warning("could not list the table's index files; keeping ours", exc_info=True)
        return
    for f in files:
        if f.file_name not in referenced:
            try:
                storage.delete(f.path)
            except Exception:
                log.warning("could not delete uncommitted index file %s", f.path, exc_info=True)
