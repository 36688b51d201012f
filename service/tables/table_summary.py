"""What a table source shows of the version it serves, in shapes that name no table kind: its fields, partition
keys, row count and every index it holds (readable by bgix or not), with who wrote each index's files.

A kind fills one (the Paimon kind from its snapshot; plain tables show none); the API presents it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

IndexWriter = Literal["bgix", "paimon", "pypaimon", "unknown"]   # who wrote an index file (OriginSummary.writer)
StaleReason = Literal["updated"]                                 # why an index file is stale
BaselineFrom = Literal["deix", "anchor_files"]                   # where a stale file's baseline snapshot came from


@dataclass(frozen=True, slots=True)
class FieldSummary:
    """One field of the table's schema: its id, name and type as the table spells it, and the index key type bgix
    holds it as (None: no index of bgix holds this type)."""

    field_id: int
    name: str
    type: str
    key_type: str | None


@dataclass(frozen=True, slots=True)
class OriginSummary:
    """The files of one index one writer (one bgix job) committed."""

    writer: IndexWriter
    job_id: str | None
    snapshot_id: int | None   # the table version that committed them, when known
    files: int
    rows: int
    row_ranges: tuple[tuple[int, int], ...]


@dataclass(frozen=True, slots=True)
class StaleFileSummary:
    """An index file a later update of one of its data files made stale (its rows are answered as uncovered)."""

    index_file: str
    row_range: tuple[int, int]
    reason: StaleReason
    data_file: str
    sequence: int
    baseline: int
    baseline_from: BaselineFrom


@dataclass(frozen=True, slots=True)
class IndexSummary:
    """One column's index of one family: files, rows and the merged row ranges they cover."""

    column: str
    index_type: str           # the family (index_format.families)
    field_id: int
    key_type: str | None      # None: bgix cannot read keys of this column's type
    files: int
    rows: int
    bytes: int
    row_ranges: tuple[tuple[int, int], ...]
    origins: tuple[OriginSummary, ...] = ()
    stale_files: tuple[StaleFileSummary, ...] = ()
    served: bool = True       # False: a type bgix lists but does not read (full-text, vector, ...): `reason` says
    reason: str | None = None

    @property
    def stale(self) -> bool:
        return bool(self.stale_files)


@dataclass(frozen=True, slots=True)
class TableSummary:
    """A table at the version served. `kind`: the table format that filled it (the API shows a Paimon table's
    under `paimon`)."""

    kind: str
    version: int | None       # the table's own version id (a Paimon snapshot id; None before the first commit)
    fields: tuple[FieldSummary, ...]
    partition_keys: tuple[str, ...]
    row_count: int
    deleted_rows: int
    options: dict[str, str] = field(default_factory=dict)
    indexes: tuple[IndexSummary, ...] = ()
