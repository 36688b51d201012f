"""Exact by scan: rows no index covers, and the columns of leaves the indexes decline, read from the table's data
(TableSource.read_rows) and indexed in memory with bgix's own writers, so the one evaluator (predicate.execute)
answers them exactly as it answers index files: same operators, same three-valued logic, same deletions.

What a query would read is decided from its plan (`scan_needs`: per column the row ranges and why); whether it
may read them from the per-query row budget (`BGIX_QUERY_SCAN_MAX_ROWS`) and the request's `"scan"` mode. What
was read is kept per column and row range in a byte-budgeted cache, keyed by the data files that hold the range
(a table version that leaves them alone reuses it): a repeated query reads nothing again. Rows deleted since
(deletion vectors, retired files) are removed by the evaluator's `deleted` as for index files.

Imports index_format (writers, readers, planner types), service.tables (the seam) and service.catalog's model;
never fastapi or service.api.
"""
from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np
import pyarrow as pa
from pyroaring import AbstractBitMap64, BitMap64

from index_format import ranges
from index_format.global_index.filemeta import FileMeta, parse_meta
from index_format.global_index.multivalue_writer import write_multivalue_bytes
from index_format.global_index.writer import write_index_bytes
from index_format.index_reader import IndexReader
from index_format.lru import ByteLRU
from index_format.predicate.column_index import ColumnIndex, IndexFileRef, all_indexes
from index_format.predicate.operators import INTERNAL_OPERATORS, OPERATORS
from index_format.predicate.query_plan import NOT_EXACT_ARRAY_OPS, LeafPlan, QueryPlan, TableRows
from index_format.storage.sources import BytesSource
from index_format.types import KeyType
from service.catalog.model import DataFile
from service.tables.build_tasks import ROW_ID

__all__ = ["SCAN_FAMILY", "ScanCache", "ScanNeed", "ScanReport", "planned_scan", "scan_needs",
           "unindexed_index", "with_scanned"]

Range = tuple[int, int]
SCAN_FAMILY = "scan"           # the family name in plans and explain of what a scan indexed in memory
# An in-memory index answers every operator by looking at its keys: nothing is held to the fallback budget.
_EVERY_OP = frozenset(OPERATORS) | frozenset(INTERNAL_OPERATORS)
_ARRAY_OPS = frozenset(name for name, op in OPERATORS.items() if op.element_op is not None)
_NAMES = itertools.count()
_MAX_SPANS = 64   # sparse ids: runs of uncovered ids read one file each up to this many, else as one span


@dataclass(frozen=True, slots=True)
class ScanNeed:
    """One column's rows a query must read to be exact: `ranges` (inclusive, one in-memory file each; with sparse
    ids a span may hold ids that hold no row), the live rows in each (`range_rows`) and why. `full`: the whole
    column (a leaf its indexes decline), answered by a scan index of its own; otherwise the ranges fill the gaps
    of the column's indexes."""

    column: str
    kt: KeyType
    array: bool
    ranges: tuple[Range, ...]
    reason: str
    full: bool
    range_rows: tuple[int, ...]

    @property
    def rows(self) -> int:
        return sum(self.range_rows)


@dataclass(frozen=True, slots=True)
class ScannedColumn:
    """What a query read (or found read) of one column: live rows, row ranges and why."""

    column: str
    reason: str
    ranges: tuple[Range, ...]
    rows_read: int
    cached_ranges: int

    def to_json(self) -> dict[str, object]:
        return {"column": self.column, "reason": self.reason, "ranges": [[s, e] for s, e in self.ranges],
                "rows_read": self.rows_read, "ranges_from_cache": self.cached_ranges}


@dataclass(frozen=True, slots=True)
class ScanReport:
    """The scan step of one query: `decision` is "not_needed", "scanned" (rows read now or earlier), "off" (the
    request's `"scan": "never"` or a budget of 0), "over_budget" or "failed" (`reason` says why); the answer is
    then what the indexes give, with `exact`/`coverage` saying what is missing."""

    mode: str
    max_rows: int
    decision: str
    rows_scanned: int = 0
    rows_needed: int = 0
    columns: tuple[ScannedColumn, ...] = ()
    reason: str | None = None

    def to_json(self) -> dict[str, object]:
        return {"mode": self.mode, "max_rows": self.max_rows, "decision": self.decision,
                "rows_scanned": self.rows_scanned, "rows_needed": self.rows_needed, "reason": self.reason,
                "columns": [c.to_json() for c in self.columns]}


def planned_scan(needs: Sequence[ScanNeed], mode: str, max_rows: int) -> dict[str, object]:
    """What the scan step would read for a plan (nothing is read to say so; rows already cached are counted as
    rows to read): the decision it would take and, per column, the ranges and why."""
    needed = sum(n.rows for n in needs)
    if not needs:
        decision = "not_needed"
    elif mode == "never" or max_rows <= 0:
        decision = "off"
    else:
        decision = "scan" if needed <= max_rows else "over_budget"
    return {"mode": mode, "max_rows": max_rows, "decision": decision, "rows_needed": needed,
            "columns": [{"column": n.column, "reason": n.reason, "whole_column": n.full,
                         "ranges": [[s, e] for s, e in n.ranges], "rows": n.rows} for n in needs]}


def unindexed_index(column: str, kt: KeyType, *, array: bool, sparse: bool) -> ColumnIndex:
    """A column no index covers, as an index of no files: its leaves answer nothing and its rows are uncovered
    (coverage says so) until a scan fills it."""
    return ColumnIndex(column=column, kt=kt, files=[], sparse=sparse, answers=_ARRAY_OPS if array else None,
                       family=SCAN_FAMILY, seeks=_EVERY_OP, rank=9, element_nulls=array)


def _scan_fixes(lp: LeafPlan) -> str | None:
    """Why a leaf needs its column scanned whole: no index of the column answers its operator, the fallback
    budget declines it, or it is a NOT over an array look-up (a scan index answers all three); None when a scan
    cannot help (a bind-time refusal, a NOT over array_contains_all or over a list holding NULL) or the leaf is
    answered."""
    if lp.negated:   # NOT over an array leaf: a scan index knows which arrays make a miss UNKNOWN
        fixable = lp.leaf.op in NOT_EXACT_ARRAY_OPS and not lp.leaf.null_in_list and lp.leaf.unsupported is None
        return f"declined: {lp.declined}" if fixable else None
    if lp.leaf.unsupported is not None or lp.constant is not None:
        return None
    if lp.index is None and lp.declined is not None:
        return f"declined: {lp.declined}"
    late = lp.declines_at
    if late is not None and not late.sidecars and late.budget is not None:
        return f"declined: {late.budget.reason}"
    return None


def scan_needs(plan: QueryPlan, table_rows: TableRows, arrays: Iterable[str]) -> list[ScanNeed]:
    """The rows `plan` leaves unanswered, per column it uses: the table's live rows (`table_rows`: inclusive ranges,
    or with sparse ids the ids themselves) outside each of its indexes, or all of them for a column with a leaf its
    indexes decline (`_scan_fixes`). `arrays`: the ARRAY columns (read into array files)."""
    array_cols = set(arrays)
    full: dict[str, str] = {}
    for lp in plan.leaves:
        why = _scan_fixes(lp)
        if why is not None:
            full.setdefault(lp.leaf.column, why)
    out: list[ScanNeed] = []
    sparse = isinstance(table_rows, AbstractBitMap64)
    for c in plan.used:
        ci = plan.columns[c]
        if c in full:
            spans, why, whole = _spans(table_rows, None), full[c], True
        else:
            spans = _spans(table_rows, all_indexes(ci))
            why, whole = ("no index on the column" if not ci.files else "rows no index covers"), False
            if sparse and spans and ci.files:
                # a table's own ids: an index's files may list stale rows under ids it no longer holds (a file
                # rewritten in place), which only its `held` ids keep out; the column is read whole instead, into a
                # scan index of its own
                spans, why, whole = _spans(table_rows, None), why + " (a table's own ids: the column is read whole)", True
        if spans:
            out.append(ScanNeed(c, ci.kt, c in array_cols, tuple(spans), why, whole,
                                tuple(_live_in(table_rows, r) for r in spans)))
    return out


def _spans(table_rows: TableRows, indexes: Sequence[ColumnIndex] | None) -> list[Range]:
    """The live rows not every one of `indexes` covers (None: every live row) as ranges to read. Sparse ids (a
    bitmap) come as runs, one per gap between ids: past _MAX_SPANS runs they are read as one span (a data file's
    rows are read whole anyway), the rows of other ids in it being read again, never answered twice wrong."""
    if isinstance(table_rows, AbstractBitMap64):
        ids = BitMap64(table_rows)
        if indexes is not None:
            ids = BitMap64.union(*(idx.uncovered(table_rows) for idx in indexes)) if indexes else ids
        runs = ranges.of_bitmap(ids)
        return runs if len(runs) <= _MAX_SPANS else [(runs[0][0], runs[-1][1])]
    live = ranges.merge(table_rows)
    if indexes is None:
        return live
    return ranges.merge(r for idx in indexes for r in ranges.subtract(live, idx.merged_ranges()))


def _live_in(table_rows: TableRows, r: Range) -> int:
    """Live rows of `table_rows` inside `r` (what reading it costs, held to the budget)."""
    if isinstance(table_rows, AbstractBitMap64):
        return int(table_rows.range_cardinality(r[0], r[1] + 1))
    return sum(e - s + 1 for s, e in ranges.intersect([r], table_rows))


@dataclass(frozen=True, slots=True)
class _ScanFile:
    """One row range of one column indexed in memory: its bytes' reader and manifest metadata."""

    name: str
    start: int
    end: int
    reader: IndexReader
    meta: FileMeta
    size: int


class ScanCache:
    """In-memory indexes of scanned rows per (table, column, type, row range, data files holding the range), under
    a byte budget (their bytes plus their readers' warm cost)."""

    def __init__(self, budget: int, open_cached: Callable[[BytesSource, KeyType], IndexReader]) -> None:
        self._files: ByteLRU[_ScanFile] = ByteLRU(budget)
        self._open = open_cached
        # One reader of a table's rows at a time: queries arriving together for the same rows wait for the
        # first one's read and find it cached, instead of each reading it (queries of other tables go on).
        self._reading: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()

    @property
    def bytes(self) -> int:
        return self._files.bytes

    def clear(self) -> None:
        self._files.clear()

    def discard_table(self, table: str) -> None:
        self._files.discard_where(lambda key: key[0] == table)

    def run(self, table: str, needs: Sequence[ScanNeed], *, mode: str, max_rows: int, sparse: bool,
            data_files: Sequence[DataFile],
            read: Callable[[list[str], list[Range]], pa.Table]) -> tuple[ScanReport, dict[str, list[IndexFileRef]]]:
        """The in-memory files of `needs` (cached, or read now with `read(columns, ranges)` when the rows to read
        fit in `max_rows`), per column; and the report. Nothing is read when the mode is "never", the budget is
        0 or the rows to read are over it.

        Raises: what `read` raises (DataFileError naming a file, a kind's errors) and the writers' errors.
        """
        needed = sum(n.rows for n in needs)
        if not needs:
            return ScanReport(mode, max_rows, "not_needed"), {}
        if mode == "never" or max_rows <= 0:
            why = 'the request asked "scan": "never"' if mode == "never" else "scanning is off (a budget of 0 rows)"
            return ScanReport(mode, max_rows, "off", rows_needed=needed, reason=why), {}
        with self._guard:
            lock = self._reading.setdefault(table, threading.Lock())
        with lock:
            return self._run(table, needs, needed, mode=mode, max_rows=max_rows, sparse=sparse,
                             data_files=data_files, read=read)

    def _run(self, table: str, needs: Sequence[ScanNeed], needed: int, *, mode: str, max_rows: int, sparse: bool,
             data_files: Sequence[DataFile],
             read: Callable[[list[str], list[Range]], pa.Table]) -> tuple[ScanReport, dict[str, list[IndexFileRef]]]:
        keys = {(n.column, r): self._key(table, n, r, sparse, data_files) for n in needs for r in n.ranges}
        found = {k: f for k, key in keys.items() if (f := self._files.get(key)) is not None}
        missing = [(n, r) for n in needs for r in n.ranges if (n.column, r) not in found]
        to_read = sum(n.range_rows[n.ranges.index(r)] for n, r in missing)
        if to_read > max_rows:
            return ScanReport(mode, max_rows, "over_budget", rows_needed=needed,
                              reason=f"{to_read} rows to read, over the scan budget of {max_rows} rows "
                                     "(BGIX_QUERY_SCAN_MAX_ROWS)"), {}
        read_rows: dict[str, int] = {}
        if missing:
            columns = sorted({n.column for n, _ in missing})
            rows = read(columns, ranges.merge(r for _, r in missing))
            ids = np.asarray(rows.column(ROW_ID).to_numpy(), dtype=np.int64)
            for n, r in missing:
                f = self._build(table, n, r, rows.column(n.column), ids)
                found[(n.column, r)] = f
                self._files.put(keys[(n.column, r)], f, f.size + int(f.reader.cache_cost()))
                read_rows[n.column] = read_rows.get(n.column, 0) + _count_in(ids, r)
        files: dict[str, list[IndexFileRef]] = {}
        report = []
        fresh = set(missing)
        for n in needs:
            files[n.column] = [self._ref(found[(n.column, r)]) for r in n.ranges]
            report.append(ScannedColumn(n.column, n.reason, n.ranges, read_rows.get(n.column, 0),
                                        sum(1 for r in n.ranges if (n, r) not in fresh)))
        return ScanReport(mode, max_rows, "scanned", rows_scanned=sum(read_rows.values()), rows_needed=needed,
                          columns=tuple(report)), files

    @staticmethod
    def _key(table: str, need: ScanNeed, r: Range, sparse: bool, data_files: Sequence[DataFile]
             ) -> tuple[object, ...]:
        """A range's content is that of the data files holding it: with dense ids the files overlapping it, with
        a table's own id column (ids are values) every file."""
        s, e = r
        holding = data_files if sparse else [f for f in data_files if f.first_row_id <= e and f.end_row_id > s]
        return (table, need.column, need.kt.spelling, need.array, s, e,
                tuple(sorted((f.fingerprint(), f.write_cols, f.max_sequence_number) for f in holding)))

    def _build(self, table: str, need: ScanNeed, r: Range, column: pa.ChunkedArray, ids: np.ndarray) -> _ScanFile:
        s, e = r
        inside = (ids >= s) & (ids <= e)
        values = column.filter(pa.array(inside)).combine_chunks()
        local = ids[inside] - s
        if need.array:
            data, written = write_multivalue_bytes(values, local, need.kt, record_nulls=True)
        else:
            data, written = write_index_bytes(values, local, need.kt)
        name = f"scan://{table}/{need.column}/{s}-{e}/{next(_NAMES)}"   # unique: shared block caches key by name
        reader = self._open(BytesSource(data, name), need.kt)
        return _ScanFile(name, s, e, reader, parse_meta(need.kt, written.meta), len(data))

    @staticmethod
    def _ref(f: _ScanFile) -> IndexFileRef:
        reader = f.reader
        return IndexFileRef(path=f.name, range_start=f.start, range_end=f.end, meta=f.meta,
                            file_size=f.size, open=lambda: reader, is_open=lambda: True, in_memory=True)


def _count_in(ids: np.ndarray, r: Range) -> int:
    return int(np.count_nonzero((ids >= r[0]) & (ids <= r[1])))


def with_scanned(columns: Mapping[str, ColumnIndex], needs: Sequence[ScanNeed],
                 files: Mapping[str, list[IndexFileRef]], *, sparse: bool) -> dict[str, ColumnIndex]:
    """`columns` with the scanned files: a column's gaps filled in each of its indexes (each gets the files of the
    ranges it lacks), or a scan index over the whole column as its main index (the others its alternatives)."""
    out = dict(columns)
    for n in needs:
        ci = out[n.column]
        scanned = files.get(n.column, [])
        if n.full:
            # the scan index covers every live row: it is the column's main index (the universe NOT and constants
            # work in), the indexes it had stay as alternatives
            scan = replace(unindexed_index(n.column, n.kt, array=n.array, sparse=sparse), files=scanned)
            kept = tuple(a for a in (replace(ci, alternatives=()), *ci.alternatives) if a.files)
            out[n.column] = replace(scan, alternatives=kept)
            continue
        out[n.column] = _fill(ci, scanned)
    return out


def _fill(ci: ColumnIndex, scanned: list[IndexFileRef]) -> ColumnIndex:
    """`ci` and its alternatives, each with the scanned files of the ranges it does not cover (dense ids only:
    with a table's own ids the column is scanned whole, scan_needs)."""
    def gaps_of(idx: ColumnIndex) -> list[IndexFileRef]:
        # a file may also hold rows the index covers (it fills another index's wider gap): both answer those
        # rows alike, and the evaluator ORs each range's TRUE rows
        covered = idx.merged_ranges()
        return [f for f in scanned if ranges.subtract([(f.range_start, f.range_end)], covered)]

    alts = tuple(replace(a, files=[*a.files, *gaps_of(a)], alternatives=()) for a in ci.alternatives)
    return replace(ci, files=[*ci.files, *gaps_of(ci)], alternatives=alts)
