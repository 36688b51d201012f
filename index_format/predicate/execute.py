"""Run a QueryPlan: read the planned files, OR the per-file answers of each row range, apply the operator
table's complement and null rules, combine leaves with three-valued logic, and record what happened (explain).

Per range (spec §5.3–§5.5, §6): the candidates' range sidecars when the plan says to try them and they are
ready, else the planned budget check and leaf_rows.matching_rows over the candidate files shifted by the range
start. An AND's second side skips the row ranges where its first side is FALSE throughout, and when the first side
meets a file that does not read the sides swap, so a corrupt file fails only the queries that need it. Readers are opened only here, through IndexFileRef.open. Imports query_plan, column_index,
file_pruning, leaf_rows, operators, tree and ranges; never the writer.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, cast

from pyroaring import AbstractBitMap64, BitMap64

from index_format import ranges
from index_format.errors import IndexFormatError, QueryTimeoutError
from index_format.predicate.column_index import ColumnIndex, IndexFileRef, range_groups
from index_format.predicate.file_pruning import literal_memo, values_in_bounds
from index_format.predicate.leaf_rows import (
    KEY_COUNT_OPS, UNSUPPORTED, Unsupported, matching_rows, sidecar_count, sidecar_rows,
)
from index_format.predicate.operators import NONE, VALUES, spec_of
from index_format.predicate.query_plan import BudgetCheck, CountPlan, LeafPlan, QueryPlan, RangePlan
from index_format.predicate.tree import FALSE, TRUE, UNKNOWN, And, BoundLeaf, Node, Not, Or

if TYPE_CHECKING:
    from index_format.index_reader import IndexReader
    from index_format.range_bitmap import RangeBitmapReader

__all__ = ["Answer", "execute"]

_STAT_NAMES = ("reads", "bytes_read", "blocks_decoded", "bitmaps_read")


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
    # The table's live rows no index used covers (the plan's coverage.uncovered: what a scan of the data must
    # read); None when the table's rows were not given.
    table_uncovered: list[tuple[int, int]] | None = None

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


def execute(plan: QueryPlan, *, explain: bool = False, deleted: BitMap64 | None = None,
            deadline: float | None = None) -> Answer:
    """Evaluate `plan` (query_plan.plan_query) by reading its files.

    `deleted` (global ids, e.g. deletion vectors) is removed from the result. `deadline` is a time.monotonic()
    value checked before each row range and each file is evaluated. With `explain`, Answer.explain also holds
    each leaf's ranges as read and the plan itself (`plan`).

    Raises:
        QueryTimeoutError: `deadline` passed before the answer was complete.
        IndexFormatError: an index file is corrupt (names the file and block).
    """
    run = _Run(plan, explain, deadline)
    count = None
    with literal_memo():
        if plan.count is not None and plan.count.tried:
            count = run.leaf_count(plan.count)
        value: _Value = _Result(BitMap64(), None)
        if count is None:
            value = run.eval(plan.tree, plan.with_unknown)
    coverage = plan.coverage
    covered, partly = list(coverage.covered), list(coverage.partly_covered)
    outside = None if coverage.uncovered is None else list(coverage.uncovered)
    info = run.summary()
    if isinstance(value, Unsupported):
        return Answer(BitMap64(), BitMap64(), False, False, covered, info, partly, table_uncovered=outside)
    rows, unknown = value.t, value.u if value.u is not None else BitMap64()
    if deleted is not None:
        rows, unknown = rows - deleted, unknown - deleted
    return Answer(rows, unknown, value.exact, True, covered, info, partly, count, outside)


class _Run:
    """State of one execution: opened readers, per-range null rows, explain counters."""

    def __init__(self, plan: QueryPlan, explain: bool, deadline: float | None = None) -> None:
        self.plan = plan
        self.columns = plan.columns
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
        self._coverage: dict[int, AbstractBitMap64] = {}
        # Rows where the ANDs around the node being evaluated may still be TRUE or UNKNOWN (None: every row): a
        # row range holding none of them is FALSE whatever the node says there, so its files are not read.
        self.possible: BitMap64 | None = None

    # built when first needed: a count from key counts never needs them (and sparse ids read every file)
    def coverage(self, ci: ColumnIndex) -> AbstractBitMap64:
        """Rows one index covers (computed once per evaluation, only for indexes it uses)."""
        got = self._coverage.get(id(ci))
        if got is None:
            got = self._coverage[id(ci)] = self.column_rows(ci)
        return got

    @cached_property
    def all(self) -> BitMap64:
        """The universe NOT and constants work in: every row some used column's main index covers."""
        rows = [self.coverage(self.columns[c]) for c in self.plan.used]
        # frozen when the first is (a dense index's rows): only read, or copied, below
        return cast(BitMap64, BitMap64.union(*rows)) if rows else BitMap64()

    # ------------------------------------------------------------------ three-valued logic
    def eval(self, node: Node, need_u: bool) -> _Value:
        if node is TRUE:
            return _Result(BitMap64(self.all), BitMap64())
        if node is FALSE:
            return _Result(BitMap64(), BitMap64())
        if node is UNKNOWN:
            return _Result(BitMap64(), BitMap64(self.all))
        if isinstance(node, Not):
            declined = self.plan.declined_not(node, need_u)
            if declined is not None:
                assert declined.declined is not None
                self.unsupported.append(declined.declined)
                return UNSUPPORTED
            return self.negate(self.eval(node.child, True))
        if isinstance(node, And):
            mark = self.mark()
            try:
                left = self.eval(node.left, need_u)
            except IndexFormatError:
                # the left side needs a file that does not read: it may lie where the right side is FALSE, so
                # the right side goes first and the left is read only where the AND is still open (the error
                # stands when the file is needed there too)
                self.reset(mark)
                right = self.eval(node.right, need_u)
                return self.conjoin(self.eval_within(node.left, need_u, right), right, node)
            return self.conjoin(left, self.eval_within(node.right, need_u, left), node)
        if isinstance(node, Or):
            return _disjoin(self.eval(node.left, need_u), self.eval(node.right, need_u))
        if isinstance(node, BoundLeaf):
            return self.leaf(self.plan.step(node, need_u), need_u)
        raise TypeError(f"not a bound predicate node: {node!r}")

    def mark(self) -> tuple[int, ...]:
        """How much explain has recorded so far (reset drops what an abandoned evaluation added)."""
        return len(self.unsupported), len(self.dropped), len(self.leaves), len(self.budget), len(self.sidecar_errors)

    def reset(self, mark: tuple[int, ...]) -> None:
        del self.unsupported[mark[0]:], self.dropped[mark[1]:], self.leaves[mark[2]:], self.budget[mark[3]:]
        del self.sidecar_errors[mark[4]:]

    def eval_within(self, node: Node, need_u: bool, left: _Value) -> _Value:
        """`node`, one side of an AND whose other side gave `left`: where that side is FALSE the AND is FALSE,
        so row ranges holding no row where it is TRUE or UNKNOWN are not read (their files are not
        needed: a corrupt or missing one there fails nothing). The answer is the same either way."""
        if isinstance(left, Unsupported):
            return self.eval(node, need_u)
        possible = left.t if left.u is None else left.t | left.u
        outer = self.possible
        self.possible = possible if outer is None else possible & outer
        try:
            return self.eval(node, need_u)
        finally:
            self.possible = outer

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
    def leaf(self, lp: LeafPlan, need_u: bool) -> _Value:
        if lp.declined is not None:
            self.unsupported.append(lp.declined)
            return UNSUPPORTED
        if lp.constant == "always_true":
            return _Result(BitMap64(self.all), BitMap64())
        if lp.constant == "always_false":
            return _Result(BitMap64(), BitMap64())
        if lp.constant == "always_unknown":
            return _Result(BitMap64(), BitMap64(self.all))
        ci = lp.index
        assert ci is not None
        t, u = BitMap64(), BitMap64()
        detail: list[dict[str, object]] = []
        for rp in lp.ranges:
            got = self.range_answer(lp.leaf, ci, rp, need_u, detail)
            if isinstance(got, Unsupported):
                self.record_leaf(lp.leaf, detail, ci)
                return UNSUPPORTED  # spec §5.3 step 4: one range unsupported → the leaf is
            t |= got.t
            if got.u is not None:
                u |= got.u
        self.record_leaf(lp.leaf, detail, ci)
        if ci.held is not None:
            # sparse ids: what its files list for ids they no longer hold (a data file removed or rewritten since
            # the build) is not the index's to answer; those ids are outside its coverage (UNKNOWN below)
            t &= ci.held
            u &= ci.held
        if not need_u:
            return _Result(t, None)
        # Rows another column (or index) covers but this index does not: this leaf is UNKNOWN there.
        return _Result(t, u | (self.all - self.coverage(ci)))

    def range_answer(self, leaf: BoundLeaf, ci: ColumnIndex, rp: RangePlan, need_u: bool,
                     detail: list[dict[str, object]]) -> _Value:
        """One leaf over one row range: the positive operator's matches from the candidate files, then the
        operator table's complement rule (range − nulls − matches, spec §5.4) and null rules (spec §5.5)."""
        self.check_deadline()
        op = spec_of(leaf.op)
        if rp.skip:
            return _Result(BitMap64(), None)  # spec §5.5: NOT IN (…, NULL) is never TRUE; no file is read
        if self.possible is not None and not self.possible.range_cardinality(rp.start, rp.end + 1):
            # FALSE by an enclosing AND's other side in every row of the range: what this leaf says there
            # changes nothing, so nothing is read (FALSE here, which the AND keeps)
            detail.append({"range": [rp.start, rp.end], "files": len(rp.files), "candidates": 0,
                           "skipped": "the AND is FALSE in this range by its other side"})
            return _Result(BitMap64(), BitMap64() if need_u else None)
        start, end, refs, candidates = rp.start, rp.end, list(rp.files), list(rp.candidates)
        self.counters["files_considered"] += len(refs)
        self.counters["files_pruned"] += len(refs) - len(candidates)
        entry: dict[str, object] = {"range": [start, end], "files": len(refs), "candidates": len(candidates)}
        detail.append(entry)
        sidecars = self.open_sidecars(candidates) if rp.sidecars else None
        matches = self.sidecar_matches(leaf, start, candidates, sidecars, entry) if sidecars else None
        if matches is None:
            if rp.budget is not None and not self.within_budget(rp.budget, entry):
                return UNSUPPORTED
            matches = self.positive_matches(leaf, ci, start, end, refs, candidates)
        if op.element_op is not None:
            # spec §8: the index holds which rows have an element; a row without it is FALSE or, for a null
            # array or one with null elements, UNKNOWN — a multivalue index cannot tell which, so it says
            # UNKNOWN; an index with element_nulls keeps those rows in its null bitmaps.
            if not need_u:
                return _Result(matches, None)
            if ci.element_nulls and not leaf.null_in_list:
                return _Result(matches, self.range_nulls(ci, start, end, refs) - matches)
            return _Result(matches, self.range_rows(ci, start, end, refs) - matches)
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

    def leaf_count(self, cp: CountPlan) -> int | None:
        """len(TRUE rows) of the plan's lone leaf from its index's entry counts or its range sidecars' counts;
        None when a sidecar is missing or broken or its key counts are not built (the full evaluation then
        answers)."""
        lp = cp.leaf
        assert lp is not None and lp.index is not None
        leaf, ci = lp.leaf, lp.index
        op = spec_of(leaf.op)
        total, used = 0, 0
        for rp in lp.ranges:
            self.check_deadline()
            matches = 0
            if rp.candidates:
                counters = self.count_sources(leaf, cp, ci, list(rp.candidates))
                if counters is None:
                    return None
                try:
                    got = sidecar_count(leaf, counters[0])   # both kinds count alike (sidecar_count's Counter)
                except IndexFormatError:
                    return None   # the full evaluation reads the bitmap files, and records the error
                if got is None:
                    return None   # key counts not built yet: the bitmap file answers
                matches = got
                used += 1
            if op.complement:
                nulls = self.range_nulls(ci, rp.start, rp.end, list(rp.files))
                matches = rp.end - rp.start + 1 - len(nulls) - matches
            total += matches
        self.counters["files_considered"] += len(ci.files)
        self.counters["files_pruned"] += len(ci.files) - used
        if cp.via == "sidecars":   # counted by range sidecars (a btree counts in its own files)
            self.counters["sidecars_used"] += used
        return total

    def count_sources(self, leaf: BoundLeaf, cp: CountPlan, ci: ColumnIndex, candidates: list[IndexFileRef]
                      ) -> list[IndexReader] | list[RangeBitmapReader] | None:
        """What counts a leaf's rows in each candidate file without listing them: the index's own files (a
        btree's entry counts) or each file's range sidecar (peeked for key counts: a point count must not start
        the work a range would); None when a sidecar is not there."""
        if cp.via == "index":
            return [self.reader(ci.column, ref) for ref in candidates]
        peek = spec_of(leaf.op).positive in KEY_COUNT_OPS
        out = []
        for ref in candidates:
            hook = ref.peek_sidecar if peek else ref.open_sidecar
            sc = hook() if hook is not None else None
            if sc is None:
                return None
            out.append(sc)
        return out

    def open_sidecars(self, candidates: list[IndexFileRef]) -> list[RangeBitmapReader] | None:
        """The range sidecar of every candidate file, or None when one is not ready now."""
        out = []
        for ref in candidates:
            sc = ref.open_sidecar() if ref.open_sidecar is not None else None
            if sc is None:
                return None
            out.append(sc)
        return out

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
            values = values_in_bounds(leaf, ref.meta) if narrow else None
            matches |= matching_rows(leaf, self.reader(ci.column, ref), values).shift(start)
        return matches

    def within_budget(self, check: BudgetCheck, entry: dict[str, object]) -> bool:
        """spec §6: the plan's budget check for one range, applied now its sidecars did not answer; recorded
        for explain."""
        decision = check.to_json()
        self.budget.append(decision)
        entry["budget"] = decision
        if check.ok:
            self.fallback_scan = True
        else:
            self.unsupported.append(check.reason)
        return check.ok

    def check_deadline(self) -> None:
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise QueryTimeoutError()

    def column_rows(self, ci: ColumnIndex) -> AbstractBitMap64:
        """Every row id the column's index covers (the universe NOT and complements work in)."""
        if not ci.sparse:
            return ci.dense_rows()   # frozen: read-only use
        if ci.held is not None:
            return ci.held           # read-only use, as dense_rows
        return BitMap64.union(*(self.range_rows(ci, s, e, refs) for (s, e), refs in range_groups(ci.files)))

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
            if ci.held is not None:
                out &= ci.held   # not the ids of a data file removed or rewritten since (ColumnIndex.held)
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
            out["plan"] = self.plan.to_json()
        return out


def _disjoin(a: _Value, b: _Value) -> _Value:
    if isinstance(a, Unsupported) or isinstance(b, Unsupported):
        return UNSUPPORTED  # spec §5.3 step 5
    t = a.t | b.t
    u = (a.u | b.u) - t if a.u is not None and b.u is not None else None
    return _Result(t, u, a.exact and b.exact)


def _stats(reader: IndexReader) -> tuple[int, ...]:
    stats = reader.stats
    return tuple(int(getattr(stats, name, 0) or 0) for name in _STAT_NAMES)
