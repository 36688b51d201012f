"""The bitmap global index files of a Paimon snapshot, as its index manifest lists them (whoever wrote them).

pypaimon's IndexFileHandler reads the index manifest; this module only filters and reshapes the
entries. A file's row ids are relative to `row_range_start` (spec §5); `index_meta` is the spec §4
metadata and `source_meta` Paimon Java's DEIX marker (absent in files pypaimon builds).
"""
from __future__ import annotations

from dataclasses import dataclass

from pypaimon.index.index_file_handler import IndexFileHandler

from index_format.families import BITMAP
from index_format.types import KeyType
from service.tables.paimon.key_types import key_type_of_spelling
from service.tables.paimon.location import to_storage_path
from service.tables.paimon.table import PaimonTable

__all__ = ["BITMAP_INDEX_TYPE", "BitmapIndexEntry", "bitmap_file_names", "list_bitmap_index_entries"]

BITMAP_INDEX_TYPE = BITMAP.name  # IndexFileMeta.index_type of bitmap global index files
_ADD = 0                      # IndexManifestEntry.kind


@dataclass(frozen=True, slots=True)
class BitmapIndexEntry:
    """One committed bitmap global index file over `column` for rows row_range_start…row_range_end (inclusive).

    `path` is absolute: the recorded external path, else the table's `index/` directory + file name
    (as pypaimon's and Java's readers resolve it). Not hashable (`partition` is a dict).
    """

    column: str
    index_field_id: int
    key_type: KeyType | None
    path: str
    file_name: str
    external_path: str | None
    file_size: int
    row_count: int
    partition: dict[str, object]
    bucket: int
    row_range_start: int
    row_range_end: int
    index_meta: bytes | None
    source_meta: bytes | None
    extra_field_ids: tuple[int, ...] | None


def list_bitmap_index_entries(table: PaimonTable) -> dict[str, tuple[BitmapIndexEntry, ...]]:
    """The snapshot's bitmap global index files grouped by column, each group sorted by row range.

    Files on a field id the pinned schema no longer has (a dropped column) are left out: nothing
    can query them. Returns {} when the table has no snapshot or no index.
    """
    if table.snapshot is None:
        return {}
    pt = table.table
    fields = {int(f.id): f for f in pt.fields}
    index_dir = pt.path_factory().global_index_path_factory().index_path()
    grouped: dict[str, list[BitmapIndexEntry]] = {}
    for entry in IndexFileHandler(table=pt).scan(table.snapshot, _is_bitmap):
        meta = entry.index_file
        gim = meta.global_index_meta
        field = fields.get(int(gim.index_field_id))
        if field is None:
            continue
        external = None if meta.external_path is None else to_storage_path(str(meta.external_path))
        grouped.setdefault(field.name, []).append(BitmapIndexEntry(
            column=str(field.name), index_field_id=int(gim.index_field_id),
            key_type=key_type_of_spelling(str(field.type)),
            path=external if external is not None else to_storage_path(f"{index_dir}/{meta.file_name}"),
            file_name=str(meta.file_name), external_path=external, file_size=int(meta.file_size),
            row_count=int(meta.row_count), partition=table.partition_dict(entry.partition),
            bucket=int(entry.bucket), row_range_start=int(gim.row_range_start),
            row_range_end=int(gim.row_range_end),
            index_meta=None if gim.index_meta is None else bytes(gim.index_meta),
            source_meta=None if gim.source_meta is None else bytes(gim.source_meta),
            extra_field_ids=None if not gim.extra_field_ids else tuple(int(i) for i in gim.extra_field_ids)))
    return {column: tuple(sorted(entries, key=lambda e: (e.row_range_start, e.row_range_end, e.file_name)))
            for column, entries in sorted(grouped.items())}


def bitmap_file_names(table: PaimonTable, snapshot: object | None) -> frozenset[str]:
    """File names of the bitmap global index files `snapshot` (any snapshot of `table`) lists; empty for None.

    A snapshot's index manifest lists every live index file (not a delta), so two snapshots' sets differ
    by what the later one added or removed.
    """
    if snapshot is None:
        return frozenset()
    entries = IndexFileHandler(table=table.table).scan(snapshot, _is_bitmap)
    return frozenset(str(e.index_file.file_name) for e in entries)


def _is_bitmap(entry: object) -> bool:
    meta = getattr(entry, "index_file", None)
    return (getattr(entry, "kind", _ADD) == _ADD and meta is not None
            and meta.index_type == BITMAP_INDEX_TYPE and meta.global_index_meta is not None)
