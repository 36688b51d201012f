"""Which global index files of a Paimon snapshot no longer match their rows: a data-evolution update of an indexed
column (`global-index.column-update-action=IGNORE` lets writers leave the index as it was) after the index was built.

The rule, per index file (Paimon Java's refresh planner, DataEvolutionGlobalIndexRefreshPlanner, decides the same):
a live data file makes it stale when the file

- holds the indexed field physically (its `write_cols`, or every field of its schema when it names none),
- has a sequence number for that field (`write_cols_sequences` at the field's position when recorded for every
  written column, else the file's `max_sequence_number`) greater than the index file's baseline, and
- holds row ids in the index file's row range.

Paimon gives a data file the sequence number of the snapshot that commits it, so the baseline is a snapshot id:

- an index file with the DEIX marker (Paimon Java, bgix): the snapshot its build scanned;
- one without (pypaimon's and pypaimon-rust's builds write none): the highest sequence number of the oldest
  ("anchor") files of the row groups its range meets. The build read those rows, so it scanned at least that
  snapshot: a lower bound. An update committed before such a build still counts (the index may well hold the new
  value, but nothing recorded says so); an incremental bgix build refreshes the file and its DEIX marker then
  tells exactly. Never too late, sometimes too early: an answer is never taken from a file that may be stale.

Nothing here depends on the table's `global-index.column-update-action`: whatever the writers were told, a file
that may hold old values must not count as covering its rows.
"""
from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from index_format.global_index.filemeta import deix_scan_snapshot
from service.tables.paimon.description import PaimonDataFile, PaimonTableDescription, RowRangeGroup
from service.tables.paimon.index_entries import GlobalIndexEntry
from service.tables.paimon.table import PaimonTable
from service.tables.table_summary import StaleReason

__all__ = ["UPDATED", "StaleIndexFile", "field_ids_loader", "stale_index_files"]

UPDATED: StaleReason = "updated"   # the reason: a data file updated an indexed column of the file's rows after its build


@dataclass(frozen=True, slots=True)
class StaleIndexFile:
    """One index file whose rows a later data file updated: what it covers, its baseline, and the (first) data
    file that made it stale."""

    column: str
    index_type: str
    file_name: str
    row_range_start: int
    row_range_end: int
    baseline: int            # the snapshot its build scanned (DEIX) or the lower bound for one without marker
    marked: bool             # True: the baseline is the DEIX marker's; False: the anchor-file bound
    data_file: str           # path of the data file that updated its rows
    data_sequence: int       # that file's sequence number for the indexed field
    reason: StaleReason = UPDATED

    def to_dict(self) -> dict[str, object]:
        """The Snapshot.stale_files record: `path` names the data file, as plain tables' records do."""
        return {"path": self.data_file, "reason": self.reason, "index_file": self.file_name,
                "row_range": [self.row_range_start, self.row_range_end], "baseline": self.baseline,
                "baseline_from": "deix" if self.marked else "anchor_files", "sequence": self.data_sequence}


FieldIds = Callable[[PaimonDataFile], tuple[int, ...]]


def field_ids_loader(table: PaimonTable) -> FieldIds:
    """data file → the field ids it holds physically, in write order (its `write_cols` resolved in the schema it
    was written with; every field of that schema when it names none). Schemas are read once each."""
    pt = table.table
    schemas: dict[int, dict[str, int]] = {int(pt.table_schema.id): {str(f.name): int(f.id) for f in pt.fields}}
    cache: dict[tuple[int, tuple[str, ...] | None], tuple[int, ...]] = {}

    def by_name(schema_id: int) -> dict[str, int]:
        if schema_id not in schemas:
            schema = pt.schema_manager.get_schema(schema_id)
            # an unreadable schema: the current one (field ids are stable across renames only by id, so the
            # names may miss; a miss only makes the file look like it holds fewer fields)
            fields = pt.fields if schema is None else schema.fields
            schemas[schema_id] = {str(f.name): int(f.id) for f in fields}
        return schemas[schema_id]

    def ids(f: PaimonDataFile) -> tuple[int, ...]:
        key = (f.schema_id, f.write_cols)
        if key not in cache:
            names = by_name(f.schema_id)
            # write_cols may name row-tracking system fields (_ROW_ID, …) no schema has: skipped
            cache[key] = (tuple(names.values()) if f.write_cols is None
                          else tuple(names[c] for c in f.write_cols if c in names))
        return cache[key]
    return ids


def stale_index_files(desc: PaimonTableDescription, entries: Mapping[tuple[str, str], Sequence[GlobalIndexEntry]],
                      field_ids: FieldIds) -> dict[str, StaleIndexFile]:
    """index file name → why it is stale, for the files of `entries` (list_all_index_entries of the snapshot
    `desc` describes) that a live data file updated after their build (module docstring)."""
    groups = desc.row_ranges
    ends = [g.row_range_end for g in groups]
    anchors = [_anchor_sequence(g) for g in groups]
    out: dict[str, StaleIndexFile] = {}
    for (column, index_type), items in entries.items():
        for e in items:
            indexed = {e.index_field_id, *(e.extra_field_ids or ())}
            met = _groups_meeting(groups, ends, e.row_range_start, e.row_range_end)
            scanned = deix_scan_snapshot(e.source_meta)
            baseline = scanned if scanned is not None else max((anchors[i] for i in met), default=0)
            hit = _first_update(groups, met, e, indexed, baseline, field_ids)
            if hit is not None:
                out[e.file_name] = StaleIndexFile(
                    column=column, index_type=index_type, file_name=e.file_name,
                    row_range_start=e.row_range_start, row_range_end=e.row_range_end, baseline=baseline,
                    marked=scanned is not None, data_file=hit[0].path, data_sequence=hit[1])
    return out


def _groups_meeting(groups: Sequence[RowRangeGroup], ends: list[int], start: int, end: int) -> range:
    """Indexes of the row groups (sorted, disjoint) whose range meets start…end."""
    first = bisect_left(ends, start)
    last = first
    while last < len(groups) and groups[last].row_range_start <= end:
        last += 1
    return range(first, last)


def _anchor_sequence(group: RowRangeGroup) -> int:
    """The sequence number of the group's oldest file (by sequence, then name: Paimon's anchor file), whose
    commit brought the rows: every build over them scanned at least that snapshot."""
    return min((f.max_sequence_number, f.file_name) for f in group.files)[0]


def _first_update(groups: Sequence[RowRangeGroup], met: range, e: GlobalIndexEntry, indexed: set[int],
                  baseline: int, field_ids: FieldIds) -> tuple[PaimonDataFile, int] | None:
    """The first data file meeting e's rows whose sequence number for an indexed field exceeds `baseline`."""
    for i in met:
        for f in groups[i].files:
            if f.max_sequence_number <= baseline:  # no column of it can be newer than the file
                continue
            if f.last_row_id < e.row_range_start or f.first_row_id > e.row_range_end:
                continue
            seq = _field_sequence(f, field_ids(f), indexed)
            if seq is not None and seq > baseline:
                return f, seq
    return None


def _field_sequence(f: PaimonDataFile, physical: tuple[int, ...], indexed: set[int]) -> int | None:
    """The highest sequence number among the indexed fields `f` holds (None: it holds none of them)."""
    per_column = f.write_cols_sequences if (
        f.write_cols_sequences is not None and len(f.write_cols_sequences) == len(physical)) else None
    seqs = [per_column[i] if per_column is not None else f.max_sequence_number
            for i, fid in enumerate(physical) if fid in indexed]
    return max(seqs, default=None)
