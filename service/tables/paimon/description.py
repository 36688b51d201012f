"""A frozen description of a Paimon table at one snapshot: fields and key types, options, row ids, data files.

Read from pypaimon's schema and scan plan (the same plan its reads use), so the build job and the
query service see exactly the files and row ranges pypaimon does. Data-evolution tables may hold
several files for one row range (a partial-column update adds a file over an existing range); every
file is kept, and `row_ranges` groups the files that cover each range.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from pypaimon.schema.data_types import AtomicType

from index_format.types import KeyType
from service.catalog.catalog_errors import RowIdError
from service.tables.paimon.key_types import key_type_of_spelling
from service.tables.paimon.location import PaimonLocation
from service.tables.paimon.rows import plan_splits
from service.tables.paimon.table import PaimonTable

if TYPE_CHECKING:
    from pypaimon.schema.data_types import DataField

__all__ = ["PaimonDataFile", "PaimonField", "PaimonTableDescription", "RowRangeGroup", "describe_table"]

# Options whose values decide how bgix can use the table.
OPTIONS_THAT_MATTER = ("row-tracking.enabled", "data-evolution.enabled", "deletion-vectors.enabled",
                       "global-index.external-path", "bucket",
                       "bitmap-index.fallback-scan-max-size")   # a query-time index option (view._QUERY_OPTIONS)


@dataclass(frozen=True, slots=True)
class PaimonField:
    """One column: Paimon's field id (what index manifests name), name, Paimon type spelling, key type."""

    field_id: int
    name: str
    paimon_type: str
    nullable: bool
    key_type: KeyType | None  # None: a bitmap index cannot hold this type


@dataclass(frozen=True, slots=True)
class PaimonDataFile:
    """One data file of the snapshot with the `_ROW_ID`s it holds: first_row_id … first_row_id + row_count − 1.

    `write_cols` None means the file holds every column of schema `schema_id`; a data-evolution update file names
    its columns. Paimon assigns sequence numbers at commit (the committing snapshot's id for an append or an
    update): `max_sequence_number` for the whole file, `write_cols_sequences` per written column when recorded.
    Not hashable (`partition` is a dict).
    """

    path: str
    file_name: str
    partition: dict[str, object]
    bucket: int
    first_row_id: int
    row_count: int
    write_cols: tuple[str, ...] | None
    max_sequence_number: int
    file_size: int = 0
    schema_id: int = 0
    write_cols_sequences: tuple[int, ...] | None = None

    @property
    def last_row_id(self) -> int:
        return self.first_row_id + self.row_count - 1


@dataclass(frozen=True, slots=True)
class RowRangeGroup:
    """Data files whose row ranges overlap, merged into one inclusive range (one partition's files)."""

    row_range_start: int
    row_range_end: int
    partition: dict[str, object]
    files: tuple[PaimonDataFile, ...]

    @property
    def row_count(self) -> int:
        return self.row_range_end - self.row_range_start + 1


@dataclass(frozen=True, slots=True)
class PaimonTableDescription:
    """What bgix needs to know about a Paimon table at `snapshot_id` (None: no snapshot yet)."""

    location: PaimonLocation
    snapshot_id: int | None
    schema_id: int
    fields: tuple[PaimonField, ...]
    partition_keys: tuple[str, ...]
    options: dict[str, str]
    row_tracking: bool
    data_evolution: bool
    deletion_vectors: bool
    global_index_external_path: str | None
    next_row_id: int | None
    row_count: int  # distinct _ROW_IDs the data files hold, deleted rows included
    data_files: tuple[PaimonDataFile, ...]
    row_ranges: tuple[RowRangeGroup, ...]

    def field(self, name: str) -> PaimonField:
        """The field called `name`. Raises KeyError."""
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(name)

    def key_types(self) -> dict[str, KeyType]:
        """Indexable columns (partition columns included) and the key type each is indexed as."""
        return {f.name: f.key_type for f in self.fields if f.key_type is not None}


def describe_table(table: PaimonTable) -> PaimonTableDescription:
    """Describe `table` at its pinned snapshot from pypaimon's schema and scan plan.

    Raises:
        RowIdError: a data file has no first_row_id (written before row tracking was on).
    """
    pt = table.table
    core = pt.options
    files = tuple(sorted(_data_files(table), key=lambda f: (f.first_row_id, f.max_sequence_number, f.file_name)))
    groups = _group_ranges(files)
    raw = pt.options.options.to_map()
    snapshot = table.snapshot
    return PaimonTableDescription(
        location=table.location,
        snapshot_id=table.snapshot_id,
        schema_id=int(pt.table_schema.id),
        fields=tuple(_field(f) for f in pt.fields),
        partition_keys=tuple(pt.partition_keys),
        options={k: str(raw[k]) for k in OPTIONS_THAT_MATTER if k in raw},
        row_tracking=bool(core.row_tracking_enabled()),
        data_evolution=bool(core.data_evolution_enabled()),
        deletion_vectors=bool(core.deletion_vectors_enabled()),
        global_index_external_path=core.global_index_external_path(),
        next_row_id=None if snapshot is None or snapshot.next_row_id is None else int(snapshot.next_row_id),
        row_count=sum(g.row_count for g in groups),
        data_files=files,
        row_ranges=groups,
    )


def _field(f: DataField) -> PaimonField:
    spelling = str(f.type)
    # Only atomic types have a key serializer; ARRAY<INT> etc. must not match an atomic spelling.
    atomic = isinstance(f.type, AtomicType)
    return PaimonField(int(f.id), str(f.name), spelling, bool(f.type.nullable),
                       key_type_of_spelling(spelling) if atomic else None)


def _data_files(table: PaimonTable) -> list[PaimonDataFile]:
    out = []
    for split in plan_splits(table):
        partition = table.partition_dict(split.partition)
        for f in split.files:
            if f.first_row_id is None:
                raise RowIdError(f"data file {f.file_name} of {table.location.identifier} has no first_row_id; "
                                 f"it was written before row tracking was enabled")
            out.append(PaimonDataFile(
                path=str(f.external_path or f.file_path), file_name=str(f.file_name), partition=partition,
                bucket=int(split.bucket), first_row_id=int(f.first_row_id), row_count=int(f.row_count),
                write_cols=None if f.write_cols is None else tuple(f.write_cols),
                max_sequence_number=int(f.max_sequence_number), file_size=int(f.file_size or 0),
                schema_id=int(f.schema_id),
                write_cols_sequences=None if not getattr(f, "write_cols_sequences", None)
                else tuple(int(s) for s in f.write_cols_sequences)))
    return out


def _group_ranges(files: tuple[PaimonDataFile, ...]) -> tuple[RowRangeGroup, ...]:
    """Merge overlapping file ranges (files sorted by first_row_id); ranges never span partitions."""
    groups: list[RowRangeGroup] = []
    start = end = -1
    members: list[PaimonDataFile] = []
    for f in files:
        if members and f.first_row_id <= end:
            members.append(f)
            end = max(end, f.last_row_id)
            continue
        if members:
            groups.append(RowRangeGroup(start, end, members[0].partition, tuple(members)))
        start, end, members = f.first_row_id, f.last_row_id, [f]
    if members:
        groups.append(RowRangeGroup(start, end, members[0].partition, tuple(members)))
    return tuple(groups)
