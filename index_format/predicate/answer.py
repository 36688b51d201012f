"""Answer a bound predicate over every index file of the columns it names (spec §4, §5.3–§5.5, §6).

Per leaf and row range: prune files with FileMeta, check the fallback budget, OR the per-file answers of
leaf_rows.matching_rows shifted by the range start, then apply the operator table's complement and null
rules; OR the ranges; combine columns with three-valued logic; coverage comes from index_format.ranges.
Imports leaf_rows/operators/tree/visitors/keys/ranges; the reader only through IndexFileRef.open. Never the writer.
"""
from __future__ import annotations

import threading
import time
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from pyroaring import BitMap64, FrozenBitMap64

from index_format import keys, ranges
from index_format.errors import IndexFormatError, QueryTimeoutError, UnknownColumnError
from index_format.global_index.filemeta import FileMeta
from index_format.options import IndexOptions
from index_format.predicate.leaf_rows import (
    KEY_COUNT_OPS, SIDECAR_OPS, UNSUPPORTED, Unsupported, matching_rows, sidecar_count, sidecar_rows,
)
from index_format.predicate.intervals import Interval
from index_format.predicate.merge import merge_ranges
from index_format.predicate.operators import NONE, OPERATORS, VALUES, spec_of
from index_format.predicate.tree import FALSE, TRUE, UNKNOWN, And, BoundLeaf, Node, Not, Or
from index_format.predicate.visitors import referenced_columns, rewrite_not
from index_format.types import KeyType

if TYPE_CHECKING:
    from index_format.index_reader import IndexReader
    from index_format.range_bitmap import RangeBitmapReader

DEFAULT_FALLBACK_SCAN_MAX_SIZE = IndexOptions().fallback_scan_max_size
# A merged range leaf with more intervals than this is answered from the bitmap file (two code comparisons
# per interval would cost more than the look-ups).
_SIDECAR_MAX_INTERVALS = 64
_STAT_NAMES = ("reads", "bytes_read", "blocks_decoded", "bitmaps_read")


@dataclass
class IndexFileRef:
    """One index file: its manifest row range [range_start, range_end] (inclusive), metadata and size."""

    path: str
    range_start: int
    range_end: int
    meta: FileMeta
    file_size: int
    open: Callable[[], IndexReader]
    # The file's range sidecar (same rows, range-bitmap format) when one is ready now, else None.
    open_sidecar: Callable[[], RangeBitmapReader | None] | None = None
    # Told when the sidecar turned out broken (the bitmap file answered instead), so it is not used again.
    sidecar_failed: Callable[[Exception], None] | None = None
    # The sidecar only when it is already open; never opens, reads or derives one (key counts use it: a
    # point count must not start work a range would).
    peek_sidecar: Callable[[], RangeBitmapReader | None] | None = None
    # Whether the file's reader is open in the caller's reader cache now (explain's files_cached); never opens.
    is_open: Callable[[], bool] | None = None


@dataclass
class ColumnIndex:
    """Every index file of one column (all ranges) and the column's fallback-scan budget (spec §6)."""

    column: str
    kt: KeyType
    files: list[IndexFileRef]
    fallback_scan_max_size: int = DEFAULT_FALLBACK_SCAN_MAX_SIZE
    # True when ids inside a row range may have gaps (a table with its own row-id column): the rows a
    # range holds are then the union of its files' null and non-null rows, not all of [start, end].
    sparse: bool = False
    # The leaf operators its index family answers (index_format.families); None: every operator.
    answers: frozenset[str] | None = None
    # Its family (index_format.families), the operators it answers by seeking in key order (never held to
    # the fallback budget), and the family's preference rank among indexes that answer a leaf equally well.
    family: str = "bitmap"
    seeks: frozenset[str] = frozenset()
    rank: int = 0
    # The column's other indexes (other families): each leaf is answered by the cheapest that can (pick()).
    alternatives: tuple[ColumnIndex, ...] = ()
    # Derived once per index (a view serves many queries): its merged row ranges and, for dense ids, their rows.
    _merged_ranges: list[ranges.Range] | None = field(default=None, init=False, repr=False, compare=False)
    _rows: FrozenBitMap64 | None = field(default=None, init=False, repr=False, compare=False)

    def answers_op(self, op: str) -> bool:
        return self.answers is None or op in self.answers

    def covered_rows(self) -> int:
        return sum(e - s + 1 for s, e in self.merged_ranges())

    def merged_ranges(self) -> list[ranges.Range]:
        if self._merged_ranges is None:
            self._merged_ranges = ranges.merge([(r.range_start, r.range_end) for r in self.files])
        return self._merged_ranges

    def dense_rows(self) -> FrozenBitMap64:
        """Every id of the column's row ranges (dense ids only)."""
        if self._rows is None:
            self._rows = FrozenBitMap64(ranges.to_bitmap(self.merged_ranges()))
        return self._rows


@dataclass
class Answer:
    """Rows (global ids) where the predicate is TRUE, rows where it is UNKNOWN, and how sure we are.

    `exact`: False when an unsupported AND-child was dropped (rows is then a superset) or when unsupported.
    `supported`: False when the index declined (rows empty; the engine must scan).
    `coverage_ranges`: row ranges indexed for every column used; `uncovered_ranges`: rows indexed for
    some but not all of them (their answer is UNKNOWN unless decided by the other columns).
    """

    rows: BitMap64
    unknown: BitMap64
    exact: bool
    supported: bool
    coverage_ranges: list[tuple[int, int]]
    explain: dict[str, object]
    uncovered_ranges: list[tuple[int, int]] = field(default_factory=list)
    # Set by answer_over_files(count_only=True) when range sidecars counted the rows without building them; `rows`
    # is then empty.
    count: int | None = None

    @property
    def coverage_complete(self) -> bool:
        return not self.uncovered_ranges

    def row_count(self) -> int:
        return self.count if self.count is not None else len(self.rows)


@dataclass
class _Result:
    t: BitMap64            # TRUE rows
    u: BitMap64 | None     # UNKNOWN rows (None when nobody asked for them)
    exact: bool = True


_Value = _Result | Unsupported


def answer_over_files(bound: Node, columns: Mapping[str, ColumnIndex], *, explain: bool = False,
                      with_unknown: bool = True, deleted: BitMap64 | None = None,
                      deadline: float | None = None, count_only: bool = False) -> Answer:
    """Evaluate a bound tree (bind.bind) over the indexed columns.

    NOT is pushed down first, so ANDs are never under a NOT and dropping an unsupported AND child
    gives a superset (spec §5.3 step 5). Rows outside a column's coverage count as UNKNOWN for it.
    `deleted` (global ids, e.g. deletion vectors) is removed from the result. `deadline` is a
    time.monotonic() value checked before each row range and each file is evaluated. `count_only`: the
    caller needs only len(rows); a lone range, `=` or `IN` leaf whose files all have range sidecars is then
    counted without building its rows (Answer.count; not with `explain`, which reports the full evaluation).

    Raises:
        UnknownColumnError: the tree names a column missing from `columns`.
        QueryTimeoutError: `deadline` passed before the answer was complete.
    """
    tree = merge_ranges(rewrite_not(bound))
    used = sorted(referenced_columns(tree)) or sorted(columns)
    for name in used:
        if name not in columns:
            raise UnknownColumnError(name, list(columns))
    run = _Run(columns, used, explain, deadline)
    count = None
    if count_only and not explain and not with_unknown and isinstance(tree, BoundLeaf):
        count = run.leaf_count(tree, deleted)
    value: _Value = _Result(BitMap64(), None)
    if count is None:
        _sorted_memo.lists = {}
        try:
            value = run.eval(tree, with_unknown)
        finally:
            _sorted_memo.lists = None   # a big IN list's sort keys live as long as its query, no longer
    indexes = run.indexes_used()
    if len(indexes) == 1:
        covered, uncovered = indexes[0].merged_ranges(), []
    else:
        covered = ranges.intersect(*(_ranges(ci) for ci in indexes))
        uncovered = ranges.subtract([r for ci in indexes for r in _ranges(ci)], covered)
    info = run.summary()
    if isinstance(value, Unsupported):
        return Answer(BitMap64(), BitMap64(), False, False, covered, info, uncovered)
    rows, unknown = value.t, value.u if value.u is not None else BitMap64()
    if deleted is not None:
        rows, unknown = rows - deleted, unknown - deleted
    return Answer(rows, unknown, value.exact, True, covered, info, uncovered, count)


class _Run:
    """State of one answer_over_files() call: opened readers, per-range null rows, explain counters."""

    def __init__(self, columns: Mapping[str, ColumnIndex], used: list[str], explain: bool,
                 deadline: float | None = None) -> None:
        self.columns = columns
        self.explain = explain
        self.deadline = deadline
        self.readers: dict[tuple[str, int], IndexReader] = {}
        self.stats_before: dict[tuple[str, int], tuple[int, ...]] = {}
        self.nulls: dict[tuple[str, int, int], BitMap64] = {}
        self.present: dict[tuple[str, int, int], BitMap64] = {}
        self.counters = {"files_considered": 0, "files_pruned": 0, "files_read": 0, "files_cached": 0,
                         "sidecars_used": 0}
        self.fallback_scan = False
        self.budget: list[dict[str, object]] = []
        self.unsupported: list[str] = []
        self.dropped: list[str] = []
        self.sidecar_errors: list[str] = []
        self.leaves: list[dict[str, object]] = []
        self.used = used
        self.chosen: dict[int, ColumnIndex] = {}   # id → every index a leaf was answered from
        self._coverage: dict[int, BitMap64] = {}

    # built when first needed: a count from key counts never needs them (and sparse ids read every file)
    def coverage(self, ci: ColumnIndex) -> BitMap64:
        """Rows one index covers (computed once per evaluation, only for indexes it uses)."""
        got = self._coverage.get(id(ci))
        if got is None:
            got = self._coverage[id(ci)] = self.column_rows(ci)
        return got

    @cached_property
    def all(self) -> BitMap64:
        """The universe NOT and constants work in: every row some used column's main index covers."""
        rows = [self.coverage(self.columns[c]) for c in self.used]
        return BitMap64.union(*rows) if rows else BitMap64()

    def pick(self, leaf: BoundLeaf) -> ColumnIndex | None:
        """The index of the leaf's column that answers it best: the one covering most rows, then one that
        seeks rather than scans for it (a btree for a range: no fallback budget, no sidecar to wait for), then
        the family's rank. None when no index of the column answers the operator."""
        able = [ci for ci in _all_indexes(self.columns[leaf.column]) if ci.answers_op(leaf.op)]
        if len(able) <= 1:
            return able[0] if able else None
        budgeted = spec_of(leaf.op).budgeted
        return min(able, key=lambda ci: (-ci.covered_rows(), budgeted and leaf.op not in ci.seeks, ci.rank))

    def indexes_used(self) -> list[ColumnIndex]:
        """The indexes whose coverage the answer has: those leaves were answered from, else each column's main."""
        out = list(self.chosen.values())
        seen = {ci.column for ci in out}
        return out + [self.columns[c] for c in self.used if c not in seen]

    # ------------------------------------------------------------------ three-valued logic
    def eval(self, node: Node, need_u: bool) -> _Value:
        if node is TRUE:
            return _Result(BitMap64(self.all), BitMap64())
        if node is FALSE:
            return _Result(BitMap64(), BitMap64())
        if node is UNKNOWN:
            return _Result(BitMap64(), BitMap64(self.all))
        if isinstance(node, Not):
            if isinstance(node.child, BoundLeaf) and _is_array_leaf(node.child):
                # a multivalue index cannot tell a null array (UNKNOWN) from one without the value (FALSE)
                self.unsupported.append(f"NOT {node.child.op} on {node.child.column!r}: an array index cannot "
                                        "tell a null array from one without the value")
                return UNSUPPORTED
            return self.negate(self.eval(node.child, True))
        if isinstance(node, And):
            return self.conjoin(self.eval(node.left, need_u), self.eval(node.right, need_u), node)
        if isinstance(node, Or):
            return _disjoin(self.eval(node.left, need_u), self.eval(node.right, need_u))
        if isinstance(node, BoundLeaf):
            return self.leaf(node, need_u)
        raise TypeError(f"not a bound predicate node: {node!r}")

    def negate(self, a: _Value) -> _Value:
        # NOT of a superset is not a subset: an inexact child makes NOT unsupported.
        if isinstance(a, Unsupported) or not a.exact:
            return UNSUPPORTED
        assert a.u is not None
        return _Result(self.all - a.t - a.u, BitMap64(a.u))

    def conjoin(self, a: _Value, b: _Value, node: And) -> _Value:
        if isinstance(a, Unsupported) and isinstance(b, Unsupported):
            return UNSUPPORTED
        if isinstance(a, Unsupported) or isinstance(b, Unsupported):
            kept = b if isinstance(a, Unsupported) else a
            assert isinstance(kept, _Result)
            text = repr(node.left if isinstance(a, Unsupported) else node.right)
            self.dropped.append(text if len(text) <= 500 else text[:500] + "…")   # may be a huge subtree
            return _Result(kept.t, kept.u, False)  # spec §5.3 step 5: dropped child → superset
        t = a.t & b.t
        u = None
        if a.u is not None and b.u is not None:
            u = ((a.t | a.u) & (b.t | b.u)) - t
        return _Result(t, u, a.exact and b.exact)

    # ------------------------------------------------------------------ one leaf over one column
    def leaf(self, leaf: BoundLeaf, need_u: bool) -> _Value:
        if leaf.unsupported is not None:
            self.unsupported.append(leaf.unsupported)
            return UNSUPPORTED
        if leaf.op == "always_true":
            return _Result(BitMap64(self.all), BitMap64())
        if leaf.op == "always_false":
            return _Result(BitMap64(), BitMap64())
        if leaf.op == "always_unknown":
            return _Result(BitMap64(), BitMap64(self.all))
        picked = self.pick(leaf)
        if picked is None:
            families = " or ".join(ci.family for ci in _all_indexes(self.columns[leaf.column]))
            self.unsupported.append(f"the {families} index of {leaf.column!r} does not answer {leaf.op}")
            return UNSUPPORTED
        ci = picked
        self.chosen.setdefault(id(ci), ci)
        t, u = BitMap64(), BitMap64()
        detail: list[dict[str, object]] = []
        for (start, end), refs in _groups(ci.files):
            got = self.range_answer(leaf, ci, start, end, refs, need_u, detail)
            if isinstance(got, Unsupported):
                self.record_leaf(leaf, detail, ci)
                return UNSUPPORTED  # spec §5.3 step 4: one range unsupported → the leaf is
            t |= got.t
            if got.u is not None:
                u |= got.u
        self.record_leaf(leaf, detail, ci)
        if not need_u:
            return _Result(t, None)
        # Rows another column (or index) covers but this index does not: this leaf is UNKNOWN there.
        return _Result(t, u | (self.all - self.coverage(ci)))

    def range_answer(self, leaf: BoundLeaf, ci: ColumnIndex, start: int, end: int,
                     refs: list[IndexFileRef], need_u: bool, detail: list[dict[str, object]]) -> _Value:
        """One leaf over one row range: the positive operator's matches from the candidate files, then the
        operator table's complement rule (range − nulls − matches, spec §5.4) and null rules (spec §5.5)."""
        self.check_deadline()
        op = spec_of(leaf.op)
        if leaf.null_in_list and op.complement and not need_u:
            return _Result(BitMap64(), None)  # spec §5.5: NOT IN (…, NULL) is never TRUE; no file is read
        candidates = [r for r in refs if file_may_match(leaf, r.meta, positive=True)]
        self.counters["files_considered"] += len(refs)
        self.counters["files_pruned"] += len(refs) - len(candidates)
        entry: dict[str, object] = {"range": [start, end], "files": len(refs), "candidates": len(candidates)}
        detail.append(entry)
        sidecars = self.sidecars(leaf, candidates) if candidates else None
        matches = self.sidecar_matches(leaf, start, candidates, sidecars, entry) if sidecars else None
        if matches is None:
            scans = op.budgeted and leaf.op not in ci.seeks
            if candidates and scans and not self.within_budget(ci, start, end, candidates, entry):
                return UNSUPPORTED
            matches = self.positive_matches(leaf, ci, start, end, refs, candidates)
        if op.element_op is not None:
            # spec §8: the index holds which rows have an element; a row without it is FALSE or, for a null
            # array or one with null elements, UNKNOWN — the index cannot tell which, so it says UNKNOWN.
            return _Result(matches, self.range_rows(ci, start, end, refs) - matches if need_u else None)
        if leaf.null_in_list:  # spec §5.5: a NULL in the list makes every row that is not a match UNKNOWN
            unknown = self.range_rows(ci, start, end, refs) - matches if need_u else None
            return _Result(BitMap64() if op.complement else matches, unknown)
        need_nulls = op.complement or (need_u and op.nulls_unknown)
        nulls = self.range_nulls(ci, start, end, refs) if need_nulls else BitMap64()
        t = matches
        if op.complement:
            t = self.range_rows(ci, start, end, refs) - nulls
            if matches is not nulls:
                t -= matches
        return _Result(t, (nulls if op.nulls_unknown else BitMap64()) if need_u else None)

    def leaf_count(self, leaf: BoundLeaf, deleted: BitMap64 | None) -> int | None:
        """len(TRUE rows) of one range leaf from its range sidecars' counts (also `=`, `IN` and their
        negations, from the sidecars' key counts once built). None when that would not be exact or cheaper:
        ids with gaps, several files in one row range (counting their union needs their rows), deleted rows
        inside the column's ranges, a NULL in an IN list, a missing or broken sidecar, key counts not built."""
        if leaf.unsupported is not None or leaf.column not in self.columns or leaf.null_in_list:
            return None
        try:
            op = spec_of(leaf.op)
        except KeyError:      # always_true and friends: no file is read anyway
            return None
        ci = self.pick(leaf)
        if ci is None or ci.sparse or op.positive not in SIDECAR_OPS | KEY_COUNT_OPS:
            return None
        self.chosen.setdefault(id(ci), ci)
        groups = _groups(ci.files)
        if any(len(refs) > 1 for _, refs in groups):
            return None
        if deleted and any(deleted.range_cardinality(s, e + 1) for (s, e), _ in groups):
            return None
        total, used = 0, 0
        for (start, end), refs in groups:
            self.check_deadline()
            candidates = [r for r in refs if file_may_match(leaf, r.meta, positive=True)]
            matches = 0
            if candidates:
                counters = self.count_sources(leaf, ci, candidates)
                if counters is None:
                    return None
                try:
                    got = sidecar_count(leaf, counters[0])
                except IndexFormatError:
                    return None   # the full evaluation reads the bitmap files, and records the error
                if got is None:
                    return None   # key counts not built yet: the bitmap file answers
                matches = got
                used += 1
            if op.complement:
                nulls = self.range_nulls(ci, start, end, refs)
                matches = end - start + 1 - len(nulls) - matches
            total += matches
        self.counters["files_considered"] += len(ci.files)
        self.counters["files_pruned"] += len(ci.files) - used
        if leaf.op not in ci.seeks:   # counted by range sidecars (a btree counts in its own files)
            self.counters["sidecars_used"] += used
        return total

    def count_sources(self, leaf: BoundLeaf, ci: ColumnIndex, candidates: list[IndexFileRef]) -> list[Any] | None:
        """What counts a leaf's rows in each candidate file without listing them: a family that seeks for the
        leaf counts from its own files (a btree's entry counts), a bitmap file from its range sidecar; None when
        neither can."""
        if leaf.op in ci.seeks:
            return [self.reader(ci.column, ref) for ref in candidates]
        return self.sidecars(leaf, candidates, counting=True)

    def sidecar_matches(self, leaf: BoundLeaf, start: int, candidates: list[IndexFileRef],
                        sidecars: list[RangeBitmapReader], entry: dict[str, object]) -> BitMap64 | None:
        """Global rows of one range where a range leaf's positive form is TRUE, from the candidates' range
        sidecars (leaf_rows.sidecar_rows); None when one is broken: the bitmap files answer instead."""
        try:
            parts = [sidecar_rows(leaf, sc).shift(start) for sc in sidecars]
        except IndexFormatError as exc:
            self.sidecar_errors.append(str(exc)[:500])
            for ref in candidates:
                if ref.sidecar_failed is not None:
                    ref.sidecar_failed(exc)
            return None
        self.counters["sidecars_used"] += len(sidecars)
        entry["sidecars"] = len(sidecars)
        return BitMap64().union(*parts)

    def positive_matches(self, leaf: BoundLeaf, ci: ColumnIndex, start: int, end: int,
                         refs: list[IndexFileRef], candidates: list[IndexFileRef]) -> BitMap64:
        """Global rows of one range where the leaf's positive operator is TRUE: the OR of the per-file
        answers (leaf_rows.matching_rows) of the candidate files, shifted by the range start."""
        positive = spec_of(spec_of(leaf.op).positive)
        if positive.shape == NONE:  # IS NULL: the range's null rows, read once and cached per range
            return self.range_nulls(ci, start, end, refs)
        # an IN list: only the literals inside each file's key bounds (not for "contains all": a value outside
        # the bounds means no row of the file matches, not that the value can be left out)
        narrow = positive.shape == VALUES and positive.name != "array_contains_all"
        matches = BitMap64()
        for ref in candidates:
            values = _values_in_bounds(leaf, ref.meta) if narrow else None
            matches |= matching_rows(leaf, self.reader(ci.column, ref), values).shift(start)
        return matches

    def sidecars(self, leaf: BoundLeaf, candidates: list[IndexFileRef], *,
                 counting: bool = False) -> list[RangeBitmapReader] | None:
        """The range sidecars of every candidate file when the leaf is a range they answer (or, `counting`,
        keys they count), else None."""
        positive = spec_of(leaf.op).positive
        if positive not in (SIDECAR_OPS | KEY_COUNT_OPS if counting else SIDECAR_OPS):
            return None
        if positive == "range_set" and (len(leaf.intervals) > _SIDECAR_MAX_INTERVALS
                                        or all(iv.is_point for iv in leaf.intervals)):
            return None   # many single keys: dictionary look-ups in the bitmap file are cheaper
        out = []
        for ref in candidates:
            if counting and positive in KEY_COUNT_OPS:
                sc = ref.peek_sidecar() if ref.peek_sidecar is not None else None
            else:
                sc = ref.open_sidecar() if ref.open_sidecar is not None else None
            if sc is None:
                return None
            out.append(sc)
        return out

    def within_budget(self, ci: ColumnIndex, start: int, end: int, candidates: list[IndexFileRef],
                      entry: dict[str, object]) -> bool:
        """spec §6: may the candidate files of one range be scanned? Records the decision for explain."""
        size = sum(r.file_size for r in candidates)
        budget = ci.fallback_scan_max_size
        ok = budget > 0 and size <= budget  # spec §6: strictly greater, or ≤ 0, declines
        decision = {"column": ci.column, "range": [start, end], "selected_bytes": size,
                    "budget": budget, "decision": "scan" if ok else "unsupported"}
        self.budget.append(decision)
        entry["budget"] = decision
        if ok:
            self.fallback_scan = True
        else:
            self.unsupported.append(f"fallback scan of {size} bytes over budget {budget} (spec §6)")
        return ok

    def check_deadline(self) -> None:
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise QueryTimeoutError()

    def column_rows(self, ci: ColumnIndex) -> BitMap64:
        """Every row id the column's index covers (the universe NOT and complements work in)."""
        if not ci.sparse:
            return ci.dense_rows()  # type: ignore[return-value]  # frozen: read-only use below
        return BitMap64.union(*(self.range_rows(ci, s, e, refs) for (s, e), refs in _groups(ci.files)))

    def range_rows(self, ci: ColumnIndex, start: int, end: int, refs: list[IndexFileRef]) -> BitMap64:
        """Rows of one row range: all of [start, end], or for sparse ids what its files hold."""
        if not ci.sparse:
            return ranges.to_bitmap([(start, end)])
        key = (ci.column, start, end)
        if key not in self.present:
            out = BitMap64()
            for ref in refs:
                reader = self.reader(ci.column, ref)
                out |= (reader.null_rows() | reader.non_null_rows()).shift(start)
            self.present[key] = out
        return self.present[key]

    def range_nulls(self, ci: ColumnIndex, start: int, end: int, refs: list[IndexFileRef]) -> BitMap64:
        key = (ci.column, start, end)
        if key not in self.nulls:
            out = BitMap64()
            for ref in refs:
                if ref.meta.has_nulls:
                    out |= self.reader(ci.column, ref).null_rows().shift(start)
            self.nulls[key] = out
        return self.nulls[key]

    def reader(self, column: str, ref: IndexFileRef) -> IndexReader:
        self.check_deadline()
        key = (column, id(ref))
        if key not in self.readers:
            if ref.is_open is not None and ref.is_open():
                self.counters["files_cached"] += 1
            reader = ref.open()
            self.readers[key] = reader
            self.stats_before[key] = _stats(reader)
            self.counters["files_read"] += 1
        return self.readers[key]

    # ------------------------------------------------------------------ explain
    def record_leaf(self, leaf: BoundLeaf, detail: list[dict[str, object]], ci: ColumnIndex) -> None:
        if self.explain:
            self.leaves.append({"leaf": repr(leaf), "column": leaf.column, "op": leaf.op, "index": ci.family,
                                "ranges": detail})

    def summary(self) -> dict[str, object]:
        totals = dict.fromkeys(_STAT_NAMES, 0)
        for key, reader in self.readers.items():
            after = _stats(reader)
            for name, a, b in zip(_STAT_NAMES, after, self.stats_before[key], strict=True):
                totals[name] += a - b
        # Answered from the service's caches alone: every file read was already open and no byte was read
        # (a repeated query); files_read then counts cached readers, not storage reads.
        read, cached = self.counters["files_read"], self.counters["files_cached"]
        from_cache = read > 0 and cached == read and totals["bytes_read"] == 0
        out: dict[str, object] = {**self.counters, **totals, "from_cache": from_cache,
                                  "fallback_scan": self.fallback_scan, "budget_decisions": self.budget,
                                  "unsupported": self.unsupported, "dropped_and_children": self.dropped}
        if self.sidecar_errors:
            out["sidecar_errors"] = self.sidecar_errors
        if self.explain:
            out["leaves"] = self.leaves
        return out


def _is_array_leaf(leaf: BoundLeaf) -> bool:
    spec = OPERATORS.get(leaf.op)
    return spec is not None and spec.element_op is not None


def _all_indexes(ci: ColumnIndex) -> tuple[ColumnIndex, ...]:
    return (ci, *ci.alternatives)


def _disjoin(a: _Value, b: _Value) -> _Value:
    if isinstance(a, Unsupported) or isinstance(b, Unsupported):
        return UNSUPPORTED  # spec §5.3 step 5
    t = a.t | b.t
    u = (a.u | b.u) - t if a.u is not None and b.u is not None else None
    return _Result(t, u, a.exact and b.exact)


def _stats(reader: object) -> tuple[int, ...]:
    stats = getattr(reader, "stats", None)
    return tuple(int(getattr(stats, name, 0) or 0) for name in _STAT_NAMES)


# ---------------------------------------------------------------------- file selection (spec §4)

def file_may_match(leaf: BoundLeaf, meta: FileMeta, *, positive: bool = False) -> bool:
    """spec §4: may this file hold rows where `leaf` is TRUE?

    `positive=True` asks for the positive form of a complement (`ne` → `eq`, `not_in` → `in`), which is
    what the Java range rule (spec §5.4) subtracts.
    """
    if leaf.op == "range_set":
        return not meta.only_nulls and any(_interval_may_match(leaf, iv, meta) for iv in leaf.intervals)
    if leaf.op not in OPERATORS:
        return True  # a bind-time constant: decided without reading files
    op = OPERATORS[leaf.op].positive if positive else leaf.op
    if leaf.op == "array_contains_all":   # every value must lie inside the file's keys
        inside = {keys.sort_key(leaf.kt, v) for v in _values_in_bounds(leaf, meta)}
        return not meta.only_nulls and len(inside) == len({keys.sort_key(leaf.kt, v) for v in leaf.values})
    op = OPERATORS[op].element_op or op   # array_contains / arrays_overlap prune as = / IN on the elements
    if op == "is_null":
        return meta.has_nulls
    if meta.only_nulls:
        return False
    if OPERATORS[op].complement:
        return True  # any non-null row may differ from the literals
    kt = leaf.kt
    first = None if meta.first_key is None else keys.sort_key(kt, meta.first_key)
    last = None if meta.last_key is None else keys.sort_key(kt, meta.last_key)

    def sk(v: object) -> object:
        return keys.sort_key(kt, v)

    # A null first (last) key is below (above) everything.
    def ge_first(v: object, strict: bool = False) -> bool:
        return first is None or (first < v if strict else first <= v)  # type: ignore[operator]

    def le_last(v: object, strict: bool = False) -> bool:
        return last is None or (last > v if strict else last >= v)  # type: ignore[operator]

    if op == "eq":
        v = sk(leaf.value)
        return ge_first(v) and le_last(v)
    if op == "in":
        return bool(_values_in_bounds(leaf, meta))
    if op in ("lt", "le"):
        return ge_first(sk(leaf.value), strict=op == "lt")
    if op in ("gt", "ge"):
        return le_last(sk(leaf.value), strict=op == "gt")
    if op == "between":
        lo, hi = sk(leaf.low), sk(leaf.high)
        return lo <= hi and ge_first(hi) and le_last(lo)  # type: ignore[operator]
    if op == "not_between":
        return ge_first(sk(leaf.low), strict=True) or le_last(sk(leaf.high), strict=True)
    if op == "starts_with":
        prefix = str(leaf.value).encode("utf-8")
        if not prefix:
            return True
        bound = keys.prefix_upper_bound(prefix)
        return le_last(prefix) and (bound is None or ge_first(bound, strict=True))
    return True  # ends_with, contains, like: literal non-null and not only-nulls


def _interval_may_match(leaf: BoundLeaf, iv: Interval, meta: FileMeta) -> bool:
    """Does the key interval `iv` overlap the file's [first, last] keys (a null bound is open)?"""
    kt = leaf.kt
    if iv.high is not None and meta.first_key is not None:
        hi, first = keys.sort_key(kt, iv.high), keys.sort_key(kt, meta.first_key)
        if hi < first or (hi == first and not iv.high_inclusive):  # type: ignore[operator]
            return False
    if iv.low is not None and meta.last_key is not None:
        lo, last = keys.sort_key(kt, iv.low), keys.sort_key(kt, meta.last_key)
        if lo > last or (lo == last and not iv.low_inclusive):  # type: ignore[operator]
            return False
    return True


def _values_in_bounds(leaf: BoundLeaf, meta: FileMeta) -> tuple[object, ...]:
    """The IN literals inside [first, last] of the file: two binary searches over the sorted literals."""
    keys_sorted, values_sorted = _sorted_literals(leaf)
    kt = leaf.kt
    lo = 0 if meta.first_key is None else bisect_left(keys_sorted, keys.sort_key(kt, meta.first_key))
    hi = len(keys_sorted) if meta.last_key is None else bisect_right(keys_sorted, keys.sort_key(kt, meta.last_key))
    return values_sorted[lo:hi]


# Per evaluation (and thread): a big IN list is sorted once per query, not once per file. A process-wide
# cache kept up to 64 lists of 70k literals alive after their queries (~10 MB each).
_sorted_memo = threading.local()


def _sorted_literals(leaf: BoundLeaf) -> tuple[list[Any], tuple[object, ...]]:
    memo: dict[int, tuple[BoundLeaf, tuple[list[Any], tuple[object, ...]]]] | None = getattr(
        _sorted_memo, "lists", None)
    hit = memo.get(id(leaf)) if memo is not None else None
    if hit is not None and hit[0] is leaf:
        return hit[1]
    result = _sort_literals(leaf)
    if memo is not None:
        memo[id(leaf)] = (leaf, result)
    return result


def _sort_literals(leaf: BoundLeaf) -> tuple[list[Any], tuple[object, ...]]:
    pairs: list[tuple[Any, int]] = [(keys.sort_key(leaf.kt, v), i) for i, v in enumerate(leaf.values)]
    pairs.sort(key=lambda p: p[0])
    return [k for k, _ in pairs], tuple(leaf.values[i] for _, i in pairs)


# ---------------------------------------------------------------------- row ranges

def _groups(files: Iterable[IndexFileRef]) -> list[tuple[tuple[int, int], list[IndexFileRef]]]:
    groups: dict[tuple[int, int], list[IndexFileRef]] = {}
    for ref in files:
        groups.setdefault((ref.range_start, ref.range_end), []).append(ref)
    return sorted(groups.items())


def _ranges(ci: ColumnIndex) -> list[ranges.Range]:
    return [(r.range_start, r.range_end) for r in ci.files]
