"""A Paimon table at its latest snapshot in the shapes the query side already serves: per indexed column and
index family (bitmap, btree, multivalue) a catalog Snapshot of the table's global index files (whoever wrote
them; who did is in each IndexSummary's origins; its `created_at` the commit that added the newest of them, not
the latest snapshot's), the data files as a row-id map, the live row ranges and the deleted `_ROW_ID`s.

An index file a later data-evolution update made stale (stale_index) is left out of its Snapshot's files and
covered ranges, so its rows are answered as uncovered; the Snapshot is marked `stale` with `stale_files`, as a
plain table's index is when its source files change.

Built from this package's description, index entries and deletion vectors; imports no pypaimon itself.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from pyroaring import BitMap64

from index_format import ranges
from index_format.errors import PathNotAllowedError, StorageUnavailableError
from index_format.storage import Storage
from service.catalog.model import PAIMON, DataFile, IndexFileEntry, Snapshot, now
from service.tables.table_summary import FieldSummary, IndexSummary, OriginSummary, StaleFileSummary, TableSummary
from service.tables.paimon.deletions import deleted_row_ids
from service.tables.paimon.description import PaimonTableDescription, describe_table
from index_format.families import FAMILIES, unserved_reason
from service.tables.paimon.index_entries import GlobalIndexEntry, list_every_index_entries
from service.tables.paimon.origins import IndexOrigin, OriginsCache, file_origins, index_built_at
from service.tables.paimon.location import parse_location, to_storage_path
from service.tables.paimon.stale_index import StaleIndexFile, field_ids_loader, stale_index_files
from service.tables.paimon.table import PaimonTable, open_paimon_table

__all__ = ["PaimonView", "latest_snapshot_id", "load_paimon_view"]


@dataclass(frozen=True)
class PaimonView:
    """What the query side needs of a Paimon table at `snapshot_id` (None: no snapshot yet)."""

    description: PaimonTableDescription
    snapshot_id: int | None
    created_at: float | None                  # the snapshot's commit time, epoch seconds
    columns: dict[str, Snapshot]              # per column its readable index covering most rows (then by family
                                              # rank); Snapshot.id is the Paimon snapshot id
    indexes: tuple[IndexSummary, ...]         # every global index the snapshot lists, served or not
    data_files: list[DataFile]                # ascending first_row_id
    row_ranges: tuple[tuple[int, int], ...]   # inclusive `_ROW_ID` ranges the data files hold
    total_rows: int                           # one past the highest `_ROW_ID`
    deleted: BitMap64                         # `_ROW_ID`s the deletion vectors remove
    more: dict[str, list[Snapshot]] = field(default_factory=dict)   # the column's other readable indexes

    def summary(self) -> TableSummary:
        """What the API shows of this snapshot (service.tables.table_summary: no Paimon types)."""
        d = self.description
        return TableSummary(
            kind=PAIMON, version=self.snapshot_id,
            fields=tuple(FieldSummary(field_id=f.field_id, name=f.name, type=f.paimon_type,
                                      key_type=None if f.key_type is None else f.key_type.spelling)
                         for f in d.fields),
            partition_keys=tuple(d.partition_keys), row_count=d.row_count, deleted_rows=len(self.deleted),
            options=dict(d.options), indexes=self.indexes)


# The index options a Paimon table's own options may set for bgix's queries (query-time only: the scan budget).
_QUERY_OPTIONS = ("bitmap-index.fallback-scan-max-size",)


def latest_snapshot_id(location: str, storage_options: Mapping[str, object] | None = None,
                       roots: Sequence[str] | None = None) -> int | None:
    """The table's latest snapshot id (None before the first commit): cheap, for freshness checks.

    Reads Paimon's `snapshot/LATEST` hint and probes past it (a writer may have committed after writing the
    hint, as Paimon's own readers allow), so a freshness check costs a read and a stat instead of opening
    the table through a catalog. Without a hint the table is opened the full way. Both read nothing outside
    `roots` (default: the table directory).

    Raises:
        NotAPaimonTableError, RowTrackingDisabledError: see open_paimon_table.
        PathNotAllowedError: the table or its snapshot directory lies outside `roots`.
    """
    table_path = to_storage_path(parse_location(location).table_path)
    confined = list(roots) if roots else [table_path]
    store = Storage(confined[0], confined[1:], dict(storage_options or {}))
    try:
        sid = int(store.read_bytes(f"{table_path}/snapshot/LATEST").strip())
    except (FileNotFoundError, ValueError):
        return open_paimon_table(location, storage_options=storage_options, roots=roots).snapshot_id
    while store.exists(f"{table_path}/snapshot/snapshot-{sid + 1}"):
        sid += 1
    return sid


def load_paimon_view(name: str, location: str, storage: Storage,
                     origins_cache: OriginsCache | None = None) -> PaimonView:
    """Describe the table at its latest snapshot; index and deletion-vector files are read through
    `storage`, so they must lie under its roots. `origins_cache` keeps who wrote which file across views.

    Raises:
        NotAPaimonTableError, RowTrackingDisabledError: see open_paimon_table.
        IndexFormatError: a corrupt deletion vector. PathNotAllowedError: a file outside the roots.
    """
    table = open_paimon_table(location, storage_options=storage.storage_options, roots=storage.roots.all)
    desc = describe_table(table)
    sid = table.snapshot_id
    created = None if table.snapshot is None else float(table.snapshot.time_millis) / 1000.0
    every = list_every_index_entries(table) if table.snapshot is not None else {}
    entries = {key: items for key, items in every.items() if key[1] in FAMILIES}
    unserved = {key: items for key, items in every.items() if key[1] not in FAMILIES}
    origins = file_origins(table, entries, origins_cache)
    stale = stale_index_files(desc, entries, field_ids_loader(table)) if entries else {}
    per_column: dict[str, list[Snapshot]] = {}
    # query-time index options set on the table itself (Paimon keeps options there): the scan budget
    query_options = {k: str(v) for k, v in desc.options.items() if k in _QUERY_OPTIONS}
    for (column, index_type), items in entries.items():
        readable = [e for e in items if e.key_type is not None and e.index_meta is not None]
        if readable:
            # a fully stale index stays listed (no files, every row uncovered): the column is still indexed
            built = _built_at(table, readable, storage, origins_cache)
            snap = _snapshot(name, column, index_type, sid or 0, created if built is None else built,
                             [e for e in readable if e.file_name not in stale],
                             [stale[e.file_name] for e in readable if e.file_name in stale], readable[0],
                             query_options)
            per_column.setdefault(column, []).append(snap)
    columns, more = {}, {}
    for column, snaps in per_column.items():
        # the index covering most rows serves the column; the others answer what it cannot (answer.py)
        snaps.sort(key=lambda s: (-s.row_count, FAMILIES[s.index_type].rank))
        columns[column] = snaps[0]
        if len(snaps) > 1:
            more[column] = snaps[1:]
    files = [DataFile(path=f.path, size=f.file_size, mtime=0.0, row_count=f.row_count,
                      first_row_id=f.first_row_id, partition={k: str(v) for k, v in f.partition.items()},
                      write_cols=f.write_cols, max_sequence_number=f.max_sequence_number)
             for f in desc.data_files]
    live = tuple(ranges.merge((g.row_range_start, g.row_range_end) for g in desc.row_ranges))
    return PaimonView(
        description=desc, snapshot_id=sid, created_at=created, columns=columns,
        indexes=(*(_summary(c, t, items, origins, stale) for (c, t), items in entries.items()),
                 *(_unserved_summary(c, t, items) for (c, t), items in unserved.items())), more=more,
        data_files=sorted(files, key=lambda f: (f.first_row_id, f.max_sequence_number or 0)), row_ranges=live,
        total_rows=max((e + 1 for _, e in live), default=0),
        deleted=deleted_row_ids(table, storage) if desc.deletion_vectors else BitMap64())


def _built_at(table: PaimonTable, items: Sequence[GlobalIndexEntry], storage: Storage,
              cache: OriginsCache | None) -> float | None:
    """When the index was built: the commit that added its newest file (origins.index_built_at); when that
    snapshot has expired, the newest file's own modification time (None: neither tells)."""
    def newest_file() -> float | None:
        try:
            return max(storage.stat(e.path)[1] for e in items) or None
        except (OSError, PathNotAllowedError, StorageUnavailableError):
            return None

    built = index_built_at(table, frozenset(e.file_name for e in items), cache, expired=newest_file)
    return built if built is not None else newest_file()   # snapshots that do not read: the files tell


def _snapshot(table: str, column: str, index_type: str, sid: int, created: float | None,
              items: Sequence[GlobalIndexEntry], stale: Sequence[StaleIndexFile],
              first: GlobalIndexEntry, options: Mapping[str, str] | None = None) -> Snapshot:
    kt = first.key_type
    assert kt is not None
    files = [IndexFileEntry(path=e.path, range_start=e.row_range_start, range_end=e.row_range_end,
                            row_count=e.row_count, file_size=e.file_size,
                            meta_hex=(e.index_meta or b"").hex(),
                            partition={k: str(v) for k, v in e.partition.items()})
             for e in items]
    covered = ranges.merge((e.row_range_start, e.row_range_end) for e in items)
    return Snapshot(id=sid, table=table, column=column, key_type=kt.spelling, index_type=index_type, files=files,
                    covered_ranges=[list(r) for r in covered], row_count=sum(e - s + 1 for s, e in covered),
                    stale=bool(stale), stale_files=[x.to_dict() for x in stale], options=dict(options or {}),
                    created_at=now() if created is None else created)


def _summary(column: str, index_type: str, items: Sequence[GlobalIndexEntry],
             origins: dict[str, IndexOrigin], stale: Mapping[str, StaleIndexFile]) -> IndexSummary:
    kt = items[0].key_type
    return IndexSummary(
        column=column, index_type=index_type, field_id=items[0].index_field_id,
        key_type=None if kt is None else kt.spelling,
        files=len(items), rows=sum(e.row_count for e in items), bytes=sum(e.file_size for e in items),
        row_ranges=tuple(ranges.merge((e.row_range_start, e.row_range_end) for e in items)),
        origins=_by_origin(items, origins),
        stale_files=tuple(_stale_summary(stale[e.file_name]) for e in items if e.file_name in stale))


def _unserved_summary(column: str, index_type: str, items: Sequence[GlobalIndexEntry]) -> IndexSummary:
    """An index of a type bgix lists but does not read: what it is and why it is not used."""
    return IndexSummary(
        column=column, index_type=index_type, field_id=items[0].index_field_id, key_type=None,
        files=len(items), rows=sum(e.row_count for e in items), bytes=sum(e.file_size for e in items),
        row_ranges=tuple(ranges.merge((e.row_range_start, e.row_range_end) for e in items)),
        served=False, reason=unserved_reason(index_type))


def _by_origin(items: Sequence[GlobalIndexEntry],
               origins: dict[str, IndexOrigin]) -> tuple[OriginSummary, ...]:
    """Files grouped by writer (and bgix job), in the order of their first row range."""
    groups: dict[IndexOrigin, list[GlobalIndexEntry]] = {}
    for e in items:  # sorted by row range
        groups.setdefault(origins.get(e.file_name, IndexOrigin("unknown")), []).append(e)
    return tuple(
        OriginSummary(writer=o.writer, job_id=o.job_id, snapshot_id=o.snapshot_id, files=len(es),
                      rows=sum(e.row_count for e in es),
                      row_ranges=tuple(ranges.merge((e.row_range_start, e.row_range_end) for e in es)))
        for o, es in groups.items())


def _stale_summary(f: StaleIndexFile) -> StaleFileSummary:
    return StaleFileSummary(index_file=f.file_name, row_range=(f.row_range_start, f.row_range_end), reason=f.reason,
                            data_file=f.data_file, sequence=f.data_sequence, baseline=f.baseline,
                            baseline_from="deix" if f.marked else "anchor_files")
