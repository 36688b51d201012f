"""Drop a column's global indexes (every family bgix knows, or one) from a Paimon table: one new snapshot of
index deletes, through pypaimon.

Follows pypaimon's own `globalindex.drop_global_index` (GlobalIndexDropper): scan the latest snapshot's index
manifest, turn every matching entry into a delete (kind 1, same partition, bucket and IndexFileMeta) and
commit them as CommitMessages grouped by partition, with no data files. Data is untouched.

One difference: pypaimon matches entries whose indexed field ids are exactly [the column's id]; here every
entry of the families dropped whose `index_field_id` is the column's goes (extra field ids or not), because
that is what the serving side reads as the column's index (index_entries.list_index_entries).

The index files themselves stay in storage: older snapshots still reference them (time travel, readers
pinned to them), and Paimon's snapshot expiry / orphan-file cleanup owns deleting them.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

from pypaimon.manifest.index_manifest_entry import IndexManifestEntry
from pypaimon.write.commit_message import CommitMessage

from service.catalog.catalog_errors import IndexNotFoundError
from service.tables.paimon.commit import commit_messages, writable_table
from index_format.families import FAMILIES, family
from service.tables.paimon.index_entries import scan_index_manifest
from service.tables.paimon.rows import plan_splits
from service.tables.paimon.table import open_paimon_table

__all__ = ["drop_column_indexes"]

_ADD, _DELETE = 0, 1  # IndexManifestEntry.kind


def drop_column_indexes(location: str, column: str, *, index_type: str | None = None,
                      catalog_options: Mapping[str, str] | None = None,
                      storage_options: Mapping[str, object] | None = None,
                      properties: dict[str, str] | None = None,
                      roots: Sequence[str] | None = None) -> tuple[int, int]:
    """Commit index deletes for every global index file of `column` in the latest snapshot, of family
    `index_type` or (None) of every family bgix knows.

    Returns (the new snapshot's id, how many index files it took out).

    Raises:
        IndexNotFoundError: the latest snapshot has no such global index on `column` (or no such column).
        NotAPaimonTableError, RowTrackingDisabledError, PathNotAllowedError (outside `roots`): see open_paimon_table.
        CorruptTableMetadataError: a metadata file of the latest snapshot does not read (nothing is committed).
        Anything pypaimon's commit raises (then nothing was committed).
    """
    latest = open_paimon_table(location, catalog_options=catalog_options, storage_options=storage_options,
                               roots=roots)
    # pypaimon would commit over manifests it cannot read (it carries them over by name): name a broken one first
    plan_splits(latest)
    types = tuple(FAMILIES) if index_type is None else (family(index_type).name,)
    fields = {str(f.name): int(f.id) for f in latest.table.fields}
    field_id = fields.get(column)
    entries: list[IndexManifestEntry] = []
    if field_id is not None and latest.snapshot is not None:
        entries = scan_index_manifest(latest, latest.snapshot, lambda e: _is_index_of(e, field_id, types))
    if not entries:
        what = "global index" if index_type is None else f"{types[0]} global index"
        raise IndexNotFoundError(f"table {latest.location.identifier} has no {what} on column {column!r}")

    by_partition: dict[tuple[object, ...], list[IndexManifestEntry]] = {}
    for e in entries:
        by_partition.setdefault(tuple(e.partition.values), []).append(IndexManifestEntry(
            kind=_DELETE, partition=e.partition, bucket=e.bucket, index_file=e.index_file))
    messages = [CommitMessage(partition=values, bucket=0, new_files=[], index_deletes=deletes)
                for values, deletes in by_partition.items()]

    # Commit through a fresh, unpinned table (the pinned one is a time-travel copy).
    writable = writable_table(latest.location, latest.catalog_options, latest.roots)
    sid = commit_messages(writable, messages, after=latest.snapshot_id or 0, properties=properties)
    # The index files stay where they are: earlier snapshots still reference them; Paimon's snapshot expiry
    # (and orphan-file cleanup) deletes them once no snapshot does. Deleting them here would break those.
    return sid, len(entries)


def _is_index_of(entry: IndexManifestEntry, field_id: int, types: tuple[str, ...]) -> bool:
    meta = entry.index_file
    gim = meta.global_index_meta
    return (entry.kind == _ADD and str(meta.index_type).lower().strip() in types
            and gim is not None and int(gim.index_field_id) == field_id)
