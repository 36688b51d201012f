"""Plan a global index build on a Paimon table: which row ranges of which splits still need an index.

Paimon's unindexed-ranges rule (as pypaimon's `create_global_index`): a column's ranges to build are the
snapshot's contiguous data row ranges (per partition, per split) minus the row ranges its index files of the
same family already cover. Index files a data-evolution update made stale (stale_index) cover nothing: their
ranges are built again and the commit replaces them (`PaimonBuildPlan.replaces`, as Paimon Java's incremental
build refreshes them); a rebuild builds every range and replaces every file of the column's family. Each piece
is cut at `sorted-index.records-per-range` ids (multivalue and fm indexes at the multiples of it: Java's and
pypaimon-rust's globally aligned shards `_ROW_ID DIV R`, one file each). One task reads one (contiguous
part of a) split once for every requested column; DataSplit and the table object pickle, so a Spark task
can read its own split. The value indexed for a row is what pypaimon's reader returns for `[column, _ROW_ID]`.

cut_tasks cuts a big contiguous split into several tasks at file-group boundaries (files whose row ranges
overlap, e.g. a data file and its data-evolution patches, stay together), so a table written in a few big
commits is not built by one core; a range never spans two tasks (each task writes its own index files).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from pypaimon.globalindex.build_plan import calc_row_range, copy_split_with_files, split_by_contiguous_row_range
from pypaimon.utils.range_helper import RangeHelper

from index_format import ranges
from index_format.errors import InvalidOptionError
from index_format.families import BITMAP, check_column_type, family
from service.tables.paimon.paimon_errors import PaimonColumnNotFoundError
from service.tables.paimon.index_entries import list_all_index_entries
from service.tables.paimon.key_types import key_type_of_spelling
from service.tables.paimon.description import describe_table
from service.tables.paimon.index_entries import GlobalIndexEntry
from service.tables.paimon.rows import ROW_ID, plan_splits, read_rows
from service.tables.paimon.stale_index import field_ids_loader, stale_index_files
from service.tables.paimon.table import PaimonTable

if TYPE_CHECKING:
    from pypaimon.read.split import Split

__all__ = ["PaimonBuildPlan", "PaimonBuildTask", "check_build_columns", "cut_tasks", "plan_build", "read_task",
           "row_ids", "rows_in"]

Range = tuple[int, int]


@dataclass(frozen=True)
class PaimonBuildTask:
    """One split (its contiguous files) of one partition, and per column the inclusive row ranges to build
    from it (each at most records-per-range ids; one index file group per range)."""

    split: Split
    partition: dict[str, object]
    partition_values: tuple[object, ...]
    ranges: dict[str, tuple[Range, ...]]

    @property
    def rows(self) -> int:
        return sum(e - s + 1 for rs in self.ranges.values() for s, e in rs)

    @property
    def row_id_count(self) -> int:
        """Distinct row ids the task indexes (for any column): what it reads."""
        return sum(e - s + 1 for s, e in ranges.merge(r for rs in self.ranges.values() for r in rs))


@dataclass(frozen=True)
class PaimonBuildPlan:
    """What one build job reads and writes, at the table's `snapshot_id` (the snapshot it scanned)."""

    table: PaimonTable
    columns: tuple[str, ...]
    field_ids: dict[str, int]
    key_types: dict[str, str]       # KeyType spelling per column (a multivalue index: the element type)
    tasks: list[PaimonBuildTask]
    families: dict[str, str] = field(default_factory=dict)   # index family per column (absent: bitmap)
    # index files the commit takes out while adding the new ones (stale ones; every one on a rebuild)
    replaces: tuple[GlobalIndexEntry, ...] = ()

    def family_of(self, column: str) -> str:
        return self.families.get(column, BITMAP.name)

    @property
    def snapshot_id(self) -> int | None:
        return self.table.snapshot_id


def check_build_columns(table: PaimonTable, columns: Sequence[str],
                        partitions: Sequence[Mapping[str, str]] = (),
                        families: Mapping[str, str] | None = None) -> dict[str, str]:
    """{column: key type spelling} for columns the requested family (`families`, default bitmap) can hold
    (a multivalue index: an ARRAY column, keyed by its element type); validates `partitions` keys.

    Raises:
        PaimonColumnNotFoundError: a column the table does not have.
        InvalidOptionError: a partition column, a type the family cannot hold, unknown partition keys.
    """
    fields = {f.name: f for f in table.table.fields}
    keys = list(table.table.partition_keys)
    out = {}
    for c in columns:
        if c not in fields:
            raise PaimonColumnNotFoundError(c, list(fields), table.location.identifier)
        if c in keys:
            raise InvalidOptionError(f"column {c!r} is a partition key of Paimon table {table.location.identifier}")
        out[c] = _key_type(c, fields[c].type, family((families or {}).get(c, BITMAP.name)).name)
    for spec in partitions:
        unknown = set(spec) - set(keys)
        if unknown:
            raise InvalidOptionError(f"partition keys {sorted(unknown)} are not partition keys {keys} of "
                                     f"Paimon table {table.location.identifier}")
    return out


def _key_type(column: str, ptype: object, index_type: str) -> str:
    """The key type spelling a `index_type` index on a column of Paimon type `ptype` holds (families.check_column_type
    decides, as for every table kind)."""
    element = getattr(ptype, "element", None)
    keys = key_type_of_spelling(str(ptype if element is None else element))
    return check_column_type(family(index_type), column, ptype, is_array=element is not None, keys=keys).spelling


def plan_build(table: PaimonTable, columns: Sequence[str], *, records_per_range: int,
               partitions: Sequence[Mapping[str, str]] = (), rebuild: bool = False,
               families: Mapping[str, str] | None = None) -> PaimonBuildPlan:
    """Tasks for the ranges no fresh index of the requested family (`families`, default bitmap) on each column
    covers yet (every range when `rebuild`), one task per contiguous split (as pypaimon's own build); cut_tasks
    cuts them smaller for parallel engines. The plan's `replaces` lists the index files of the selected
    partitions the commit takes out: the stale ones (their ranges are built again), on a rebuild all of them.

    Raises: as check_build_columns.
    """
    fams = {c: family((families or {}).get(c, BITMAP.name)).name for c in columns}
    key_types = check_build_columns(table, columns, partitions, fams)
    field_ids = {f.name: int(f.id) for f in table.table.fields if f.name in key_types}
    # one read of the index manifest for every column and family
    entries = {k: es for k, es in list_all_index_entries(table, tuple(set(fams.values()))).items()
               if k[0] in fams and k[1] == fams[k[0]]}
    if rebuild:
        gone = {e.file_name for es in entries.values() for e in es}
    else:
        gone = set(stale_index_files(describe_table(table), entries, field_ids_loader(table))) if entries else set()
    covered = {c: ranges.merge((e.row_range_start, e.row_range_end) for e in entries.get((c, fams[c]), ())
                               if not e.extra_field_ids and e.file_name not in gone) for c in columns}

    def chosen(part: Mapping[str, object]) -> bool:
        return not partitions or any(all(str(part.get(k)) == str(v) for k, v in s.items()) for s in partitions)

    def cut(c: str, todo: list[Range]) -> tuple[Range, ...]:
        if family(fams[c]).aligned_ranges:   # globally aligned shards (Java's multivalue, pypaimon-rust's fm)
            return tuple(ranges.aligned_chunks(todo, records_per_range))
        return tuple(ranges.chunks(todo, records_per_range))
    tasks = []
    for split in plan_splits(table):
        part = table.partition_dict(split.partition)
        if not chosen(part):
            continue
        for sub in split_by_contiguous_row_range([split]):
            rr = calc_row_range(sub)
            todo = {c: cut(c, ranges.subtract([(rr.from_, rr.to)], covered[c])) for c in columns}
            todo = {c: rs for c, rs in todo.items() if rs}
            if todo:
                tasks.append(PaimonBuildTask(split=_files_for(sub, todo), partition=part,
                                             partition_values=tuple(getattr(split.partition, "values", ()) or ()),
                                             ranges=todo))
    # a replaced file's rows of another partition would be left uncovered: only the selected partitions' go
    replaces = tuple(e for es in entries.values() for e in es if e.file_name in gone and chosen(e.partition))
    return PaimonBuildPlan(table=table, columns=tuple(columns), field_ids=field_ids, key_types=key_types,
                           tasks=tasks, families=fams, replaces=replaces)


def cut_tasks(plan: PaimonBuildPlan, max_task_rows: int) -> PaimonBuildPlan:
    """`plan` with every task spanning more than `max_task_rows` row ids cut into consecutive tasks of at most
    that many, between groups of files whose row ranges overlap (a larger group stays one task); each piece
    keeps the parts of the task's ranges that fall in its files' row range. A range of a family with globally
    aligned shards (multivalue, fm) is never cut: Java and pypaimon-rust write one file per shard, and so must we
    for the same bytes (its task then holds the whole shard, however big)."""
    tasks: list[PaimonBuildTask] = []
    for task in plan.tasks:
        rr = calc_row_range(task.split)
        if rr.to - rr.from_ + 1 <= max_task_rows:
            tasks.append(task)
            continue
        whole = [r for c, rs in task.ranges.items() if family(plan.family_of(c)).aligned_ranges
                 for r in rs]
        for sub in _cut(task.split, max_task_rows, whole):
            sr = calc_row_range(sub)
            # each range clipped on its own (ranges.intersect would join neighbours past records-per-range)
            todo = {c: tuple((max(s, sr.from_), min(e, sr.to)) for s, e in rs if s <= sr.to and e >= sr.from_)
                    for c, rs in task.ranges.items()}
            todo = {c: rs for c, rs in todo.items() if rs}
            if todo:
                tasks.append(replace(task, split=sub, ranges=todo))
    return replace(plan, tasks=tasks)


def splits_meeting(table: PaimonTable, row_ranges: Sequence[Range]) -> list[Split]:
    """The snapshot's splits cut to their contiguous parts, each with only the groups of files (a data file and
    its data-evolution patches) whose row ids meet `row_ranges`: what a read of just those rows must open."""
    need = ranges.merge(row_ranges)
    out = []
    for split in plan_splits(table):
        for sub in split_by_contiguous_row_range([split]):
            rr = calc_row_range(sub)
            if ranges.intersect([(rr.from_, rr.to)], need):
                out.append(_files_for(sub, {"": need}))
    return out


def _files_for(split: Split, todo: Mapping[str, Sequence[Range]]) -> Split:
    """`split` with only the groups of row-range-overlapping files that meet a range to build (an incremental
    build reads only the new files; a data file and its data-evolution patches stay together)."""
    need = ranges.merge(r for rs in todo.values() for r in rs)
    groups = _file_groups(split)
    kept = [g for g in groups if ranges.intersect([_group_range(g)], need)]
    if len(kept) == len(groups):
        return split
    return copy_split_with_files(split, [f for g in kept for f in g])


def _file_groups(split: Split) -> list[list[Any]]:
    """The split's files in groups whose row ranges overlap, in row id order (pypaimon reads a group together)."""
    return list(RangeHelper(lambda f: f.row_id_range()).merge_overlapping_ranges(split.files))


def _group_range(group: Sequence[Any]) -> Range:
    return min(f.row_id_range().from_ for f in group), max(f.row_id_range().to for f in group)


def _cut(split: Split, max_rows: int, whole: Sequence[Range] = ()) -> list[Split]:
    """`split` as consecutive sub-splits of at most `max_rows` row ids, cut only between groups of files whose
    row ranges overlap (a data file and its data-evolution patches are read together) and never inside a range
    of `whole`."""
    out: list[Split] = []
    current: list[Any] = []
    start = 0
    for group in _file_groups(split):
        g_start, g_end = _group_range(group)
        if current and g_end - start + 1 > max_rows and not any(s < g_start <= e for s, e in whole):
            out.append(copy_split_with_files(split, current))
            current = []
        if not current:
            start = g_start
        current.extend(group)
    if current:
        out.append(copy_split_with_files(split, current))
    return out


def read_task(table: PaimonTable, task: PaimonBuildTask) -> pa.Table:
    """pypaimon's read of the task's split: its columns plus `_ROW_ID` (live rows, current values)."""
    return read_rows(table, list(task.ranges), [task.split])


def row_ids(data: pa.Table) -> Any:
    """The `_ROW_ID` column of a task's read as an int64 numpy array (computed once per task)."""
    import numpy as np
    return data.column(ROW_ID).to_numpy(zero_copy_only=False).astype(np.int64, copy=False)


def rows_in(data: pa.Table, column: str, start: int, end: int, rid: Any = None) -> tuple[Any, Any]:
    """(keys, row ids) of the rows of `data` whose `_ROW_ID` lies in start…end (`rid`: row_ids(data))."""
    import numpy as np
    rid = row_ids(data) if rid is None else rid
    keys = data.column(column)
    if len(rid) and start <= rid.min() and rid.max() <= end:  # the usual case: the task is one range
        return keys.combine_chunks(), rid
    keep = np.flatnonzero((rid >= start) & (rid <= end))
    return keys.take(pa.array(keep)).combine_chunks(), rid[keep]
