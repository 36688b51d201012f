"""The global index files of a Paimon snapshot, as its index manifest lists them (whoever wrote them), for every
family bgix knows (index_format.families), and apart those of the types it lists but does not serve.

pypaimon's IndexFileHandler reads the index manifest (scan_index_manifest, which names a corrupt or missing one:
pypaimon alone reads a missing one as empty); this module only filters and reshapes the entries. A file's row ids
are relative to `row_range_start` (spec §5); `index_meta` is the spec §4 metadata and `source_meta` Paimon Java's
DEIX marker (absent in files pypaimon builds).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pypaimon.index.index_file_handler import IndexFileHandler

from index_format.families import BITMAP, FAMILIES, family
from index_format.types import KeyType
from service.tables.paimon.broken_files import check_index_manifest, reading_metadata
from service.tables.paimon.key_types import key_type_of_spelling
from service.tables.paimon.location import to_storage_path
from service.tables.paimon.table import PaimonTable

if TYPE_CHECKING:
    from pypaimon.manifest.index_manifest_entry import IndexManifestEntry
    from pypaimon.snapshot.snapshot import Snapshot

__all__ = ["GlobalIndexEntry", "index_file_names", "list_all_index_entries", "list_index_entries",
           "list_every_index_entries", "scan_index_manifest"]

_ADD = 0                      # IndexManifestEntry.kind


@dataclass(frozen=True, slots=True)
class GlobalIndexEntry:
    """One committed global index file of family `index_type` over `column` for rows row_range_start…
    row_range_end (inclusive).

    `key_type`: the keys' type (for a multivalue index the ELEMENT type of the ARRAY column); None when bgix
    cannot read keys of that type. `path` is absolute: the recorded external path, else the table's `index/`
    directory + file name (as pypaimon's and Java's readers resolve it). Not hashable (`partition` is a dict).
    """

    column: str
    index_type: str
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


def list_index_entries(table: PaimonTable, index_type: str = BITMAP.name) -> dict[str, tuple[GlobalIndexEntry, ...]]:
    """The snapshot's global index files of one family grouped by column, each group sorted by row range.

    Files on a field id the pinned schema no longer has (a dropped column) are left out: nothing
    can query them. Returns {} when the table has no snapshot or no such index.
    """
    return {c: es for (c, _), es in list_all_index_entries(table, (family(index_type).name,)).items()}


def list_all_index_entries(table: PaimonTable, index_types: tuple[str, ...] | None = None
                           ) -> dict[tuple[str, str], tuple[GlobalIndexEntry, ...]]:
    """The snapshot's global index files of every family bgix knows (or of `index_types`), grouped by
    (column, index type), each group sorted by row range; ordered by column, then family."""
    wanted = frozenset(index_types if index_types is not None else FAMILIES)
    return _grouped(table, lambda name: name in wanted)


def list_every_index_entries(table: PaimonTable) -> dict[tuple[str, str], tuple[GlobalIndexEntry, ...]]:
    """As list_all_index_entries, for every global index type the manifest lists: also those bgix does not serve
    (full-text, vector, es-index, pk-*, any other; their `key_type` is None), after the families it serves."""
    return _grouped(table, lambda name: True)


def _grouped(table: PaimonTable, wanted: Callable[[str], bool]) -> dict[tuple[str, str], tuple[GlobalIndexEntry, ...]]:
    if table.snapshot is None:
        return {}
    pt = table.table
    fields = {int(f.id): f for f in pt.fields}
    index_dir = pt.path_factory().global_index_path_factory().index_path()
    grouped: dict[tuple[str, str], list[GlobalIndexEntry]] = {}
    for entry in scan_index_manifest(table, table.snapshot, lambda e: _is_global(e, wanted)):
        meta = entry.index_file
        gim = meta.global_index_meta
        field = fields.get(int(gim.index_field_id))
        if field is None:
            continue
        index_type = _family_name(meta.index_type)
        external = None if meta.external_path is None else to_storage_path(str(meta.external_path))
        grouped.setdefault((str(field.name), index_type), []).append(GlobalIndexEntry(
            column=str(field.name), index_type=index_type, index_field_id=int(gim.index_field_id),
            key_type=_key_type(field, index_type),
            path=external if external is not None else to_storage_path(f"{index_dir}/{meta.file_name}"),
            file_name=str(meta.file_name), external_path=external, file_size=int(meta.file_size),
            row_count=int(meta.row_count), partition=table.partition_dict(entry.partition),
            bucket=int(entry.bucket), row_range_start=int(gim.row_range_start),
            row_range_end=int(gim.row_range_end),
            index_meta=None if gim.index_meta is None else bytes(gim.index_meta),
            source_meta=None if gim.source_meta is None else bytes(gim.source_meta),
            extra_field_ids=None if not gim.extra_field_ids else tuple(int(i) for i in gim.extra_field_ids)))
    order = {name: i for i, name in enumerate(FAMILIES)}
    return {key: tuple(sorted(entries, key=lambda e: (e.row_range_start, e.row_range_end, e.file_name)))
            for key, entries in sorted(grouped.items(),
                                       key=lambda kv: (kv[0][0], order.get(kv[0][1], len(order)), kv[0][1]))}


def index_file_names(table: PaimonTable, snapshot: object | None) -> frozenset[str]:
    """File names of the global index files (families bgix knows) `snapshot` (any snapshot of `table`)
    lists; empty for None.

    A snapshot's index manifest lists every live index file (not a delta), so two snapshots' sets differ
    by what the later one added or removed.
    """
    if snapshot is None:
        return frozenset()
    entries = scan_index_manifest(table, snapshot, lambda e: _is_global(e, FAMILIES.__contains__))
    return frozenset(str(e.index_file.file_name) for e in entries)


def scan_index_manifest(table: PaimonTable, snapshot: Snapshot, entry_filter: Callable[[Any], bool]
                        ) -> list[IndexManifestEntry]:
    """The entries of `snapshot`'s index manifest (`snapshot`: any snapshot of `table`) that `entry_filter`
    keeps, read by pypaimon's IndexFileHandler: the one place this package reads index manifests.

    Raises:
        CorruptTableMetadataError: the index manifest does not read, or the snapshot names one that is missing
            (names it).
    """
    check_index_manifest(table, snapshot)
    with reading_metadata(table, int(snapshot.id)):
        return list(IndexFileHandler(table=table.table).scan(snapshot, entry_filter))


def _family_name(index_type: object) -> str:
    return str(index_type).strip().lower()


def _key_type(field: object, index_type: str) -> KeyType | None:
    """Keys of a multivalue index are the elements of an ARRAY column; other families key the column itself."""
    ftype = getattr(field, "type", None)
    if index_type not in FAMILIES:
        return None   # bgix reads no keys of a family it does not serve
    if family(index_type).element_keys:
        element = getattr(ftype, "element", None)
        return None if element is None else key_type_of_spelling(str(element))
    return key_type_of_spelling(str(ftype))


def _is_global(entry: object, wanted: Callable[[str], bool]) -> bool:
    meta = getattr(entry, "index_file", None)
    return (getattr(entry, "kind", _ADD) == _ADD and meta is not None and meta.global_index_meta is not None
            and wanted(_family_name(meta.index_type)))
