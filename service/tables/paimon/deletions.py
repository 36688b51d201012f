"""The deleted `_ROW_ID`s of a Paimon snapshot, from its DELETION_VECTORS index files.

pypaimon's index manifest says where each data file's vector lies (offset, length, cardinality);
the bytes come through index_format.storage and are decoded by our own index_format.deletion_vectors
(spec §9), so the query path never needs pypaimon's reader. A vector holds positions local to its
data file; on a data-evolution table it is keyed by the anchor file of the row range, whose
first_row_id starts that range, so `_ROW_ID = first_row_id + position` either way.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pyroaring import BitMap64

from index_format.bitmaps import union
from index_format.deletion_vectors import read_deletion_vectors
from index_format.errors import MissingIndexFileError
from index_format.storage import Storage
from service.tables.paimon.index_entries import scan_index_manifest
from service.tables.paimon.location import to_storage_path
from service.tables.paimon.rows import plan_splits
from service.tables.paimon.table import PaimonTable, table_storage

__all__ = ["DELETION_VECTORS_INDEX_TYPE", "DeletionVectorRef", "deleted_row_ids", "list_deletion_vectors"]

DELETION_VECTORS_INDEX_TYPE = "DELETION_VECTORS"  # IndexFileMeta.index_type
_ADD = 0


@dataclass(frozen=True, slots=True)
class DeletionVectorRef:
    """Where one data file's deletion vector lies: `index_path` at `offset` (its length prefix), `length`
    as the manifest records it (spec §9: L for 32-bit vectors, L + 8 for 64-bit ones).

    `first_row_id` is None when the named data file is not in the snapshot's plan (its rows are not live).
    Not hashable (`partition` is a dict).
    """

    index_path: str
    index_file_size: int
    data_file_name: str
    first_row_id: int | None
    offset: int
    length: int
    cardinality: int | None
    partition: dict[str, object]
    bucket: int


def list_deletion_vectors(table: PaimonTable) -> tuple[DeletionVectorRef, ...]:
    """Every data file's deletion vector in the pinned snapshot, sorted by (index file, offset)."""
    if table.snapshot is None or not table.snapshot.index_manifest:
        return ()
    pt = table.table
    first_ids = {f.file_name: int(f.first_row_id) for s in plan_splits(table) for f in s.files
                 if f.first_row_id is not None}
    factory = pt.path_factory()
    refs = []
    for entry in scan_index_manifest(table, table.snapshot, _is_dv):
        meta = entry.index_file
        partition_values = tuple(getattr(entry.partition, "values", None) or ())
        path = to_storage_path(str(factory.bucket_index_path(partition_values, entry.bucket, meta, pt.file_io)))
        for name, dv in sorted((meta.dv_ranges or {}).items()):
            refs.append(DeletionVectorRef(
                index_path=path, index_file_size=int(meta.file_size), data_file_name=str(name),
                first_row_id=first_ids.get(name), offset=int(dv.offset), length=int(dv.length),
                cardinality=None if dv.cardinality is None else int(dv.cardinality),
                partition=table.partition_dict(entry.partition), bucket=int(entry.bucket)))
    return tuple(sorted(refs, key=lambda r: (r.index_path, r.offset)))


def deleted_row_ids(table: PaimonTable, storage: Storage | None = None,
                    refs: Sequence[DeletionVectorRef] | None = None) -> BitMap64:
    """The `_ROW_ID`s the pinned snapshot's deletion vectors remove (empty if it has none).

    Each index file is read once through `storage` (default: table_storage(table)). Vectors of data
    files missing from the snapshot are skipped: their rows are gone anyway.

    Raises:
        IndexFormatError: a corrupt vector (bad magic, CRC, or cardinality differing from the manifest);
            MissingIndexFileError when a deletion-vector file the manifest lists is missing.
        PathNotAllowedError: an index file outside the storage roots.
    """
    refs = list_deletion_vectors(table) if refs is None else refs
    if not refs:
        return BitMap64()
    storage = storage if storage is not None else table_storage(table)
    by_file: dict[str, list[DeletionVectorRef]] = {}
    for ref in refs:
        if ref.first_row_id is not None:
            by_file.setdefault(ref.index_path, []).append(ref)
    parts: list[BitMap64] = []
    for path, file_refs in by_file.items():
        try:
            data = storage.read_range(path, 0, file_refs[0].index_file_size)
        except FileNotFoundError as exc:   # the index manifest lists it: a lost file, not "no deletions"
            raise MissingIndexFileError(path, DELETION_VECTORS_INDEX_TYPE) from exc
        ranges = [(r.data_file_name, r.offset, r.length, r.cardinality) for r in file_refs]
        vectors = read_deletion_vectors(data, ranges, path=path)
        assert isinstance(vectors, dict)
        for r in file_refs:
            assert r.first_row_id is not None
            parts.append(vectors[r.data_file_name].shift(r.first_row_id))
    return union(parts) if parts else BitMap64()


def _is_dv(entry: object) -> bool:
    meta = getattr(entry, "index_file", None)
    return (getattr(entry, "kind", _ADD) == _ADD and meta is not None
            and meta.index_type == DELETION_VECTORS_INDEX_TYPE)
