"""The plan of one query, made before any index file is read: per leaf the index (column, family) that answers
it, the files left after pruning by manifest metadata, how each row range is read (sidecars, seek, look-up,
budgeted scan), which leaves are declined and why, and which row ranges no index covers.

`plan_query` reads nothing from index files (FileMeta, sizes and row ranges only). Decisions that depend on
data (are the sidecars ready? did one break? do the key counts exist?) are recorded here as rules; execution
(predicate.execute) applies them and records the outcome. Imports column_index, file_pruning, operators,
tree, visitors, merge, leaf_rows (operator sets only) and ranges; never a reader.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from pyroaring import AbstractBitMap64, BitMap64

from index_format import ranges
from index_format.errors import UnknownColumnError
from index_format.ranges import Range, RangeLike
from index_format.predicate.column_index import ColumnIndex, IndexFileRef, all_indexes, range_groups
from index_format.predicate.file_pruning import file_may_match, literal_memo
from index_format.predicate.leaf_rows import KEY_COUNT_OPS, SIDECAR_OPS
from index_format.predicate.merge import merge_ranges
from index_format.predicate.operators import OPERATORS, spec_of
from index_format.predicate.tree import FALSE, TRUE, UNKNOWN, And, BoundLeaf, Node, Not, Or
from index_format.predicate.visitors import referenced_columns, rewrite_not

__all__ = ["BudgetCheck", "CountPlan", "Coverage", "LeafPlan", "QueryPlan", "RangePlan", "TableRows", "plan_query",
           "sidecars_answer", "uncovered_rows"]

# A table's live rows: inclusive row ranges, or for sparse ids (a table's own id column) the ids holding rows.
TableRows = Sequence[RangeLike] | AbstractBitMap64

# A merged range leaf with more intervals than this is answered from the bitmap file (two code comparisons
# per interval would cost more than the look-ups).
SIDECAR_MAX_INTERVALS = 64
CONSTANT_OPS = frozenset(("always_true", "always_false", "always_unknown"))
# Array operators whose NOT an index with ColumnIndex.element_nulls answers exactly (Planner.knows_misses).
NOT_EXACT_ARRAY_OPS = frozenset(("array_contains", "arrays_overlap"))


def _json_ranges(rs: Sequence[Range]) -> list[list[int]]:
    return [[int(s), int(e)] for s, e in rs]


def _text(node: Node) -> str:
    """A node's repr for the plan's JSON, cut at 500 characters (a big IN list or tree)."""
    text = repr(node)
    return text if len(text) <= 500 else text[:500] + "…"


def _index_json(ci: ColumnIndex) -> dict[str, object]:
    return {"column": ci.column, "family": ci.family}


@dataclass(frozen=True, slots=True)
class BudgetCheck:
    """spec §6: may the candidate files of one row range be scanned (their bytes within the column's budget)?"""

    column: str
    start: int
    end: int
    selected_bytes: int
    budget: int

    @property
    def ok(self) -> bool:
        return self.budget > 0 and self.selected_bytes <= self.budget  # strictly greater, or ≤ 0, declines

    @property
    def reason(self) -> str:
        """Why the leaf is declined when the check fails."""
        return f"fallback scan of {self.selected_bytes} bytes over budget {self.budget} (spec §6)"

    def to_json(self) -> dict[str, object]:
        return {"column": self.column, "range": [self.start, self.end], "selected_bytes": self.selected_bytes,
                "budget": self.budget, "decision": "scan" if self.ok else "unsupported"}


@dataclass(frozen=True, slots=True)
class RangePlan:
    """One leaf over one row range [start, end] of its index.

    `candidates`: the range's files that may hold TRUE rows of the leaf's positive form (spec §4).
    `skip`: nothing is read, the range is FALSE (`NOT IN (…, NULL)` when no UNKNOWN rows are asked, spec §5.5).
    `sidecars`: the candidates' range sidecars are tried first; execution records whether they answered.
    `budget`: the fallback-scan check the candidates' bitmaps are read under when the sidecars do not answer
    (None: the read is a look-up or a seek, never held to the budget).
    """

    start: int
    end: int
    files: tuple[IndexFileRef, ...]
    candidates: tuple[IndexFileRef, ...]
    skip: bool = False
    sidecars: bool = False
    budget: BudgetCheck | None = None

    @property
    def read(self) -> str:
        """How the leaf's positive matches are found: nothing, sidecars, seek, look-up, scan or declined."""
        if self.skip or not self.candidates:
            return "nothing"
        if self.budget is None:
            how = "index"
        else:
            how = "scan" if self.budget.ok else "declined"
        return f"sidecars, else {how}" if self.sidecars else how

    def to_json(self) -> dict[str, object]:
        return {"range": [self.start, self.end], "files": len(self.files),
                "candidates": [r.path for r in self.candidates], "pruned": len(self.files) - len(self.candidates),
                "read": self.read, "budget": None if self.budget is None else self.budget.to_json()}


@dataclass(frozen=True, slots=True)
class LeafPlan:
    """One leaf of the tree as evaluated (`need_unknown`: its UNKNOWN rows are asked for, e.g. under NOT).

    `index`: the index that answers it (None: declined or a bind-time constant); `considered`: every index of
    its column; `declined`: why the index cannot answer it (UNSUPPORTED: the engine must scan), decided here;
    `negated`: a NOT over it is what is declined; `ranges`: its index's row ranges in order; `unknown_outside`:
    row ranges other used indexes cover and this one does not (the leaf is UNKNOWN there).
    """

    leaf: BoundLeaf
    need_unknown: bool
    index: ColumnIndex | None = None
    considered: tuple[ColumnIndex, ...] = ()
    declined: str | None = None
    negated: bool = False
    ranges: tuple[RangePlan, ...] = ()
    unknown_outside: tuple[Range, ...] = ()

    @property
    def constant(self) -> str | None:
        """The bind-time constant the leaf is (always_true / always_false / always_unknown), if it is one."""
        return self.leaf.op if self.leaf.op in CONSTANT_OPS and self.declined is None else None

    @property
    def declines_at(self) -> RangePlan | None:
        """The first row range whose budget declines the leaf unless its sidecars answer (decided up front)."""
        return next((rp for rp in self.ranges if rp.budget is not None and not rp.budget.ok), None)

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "leaf": ("NOT " if self.negated else "") + _text(self.leaf), "column": self.leaf.column,
            "op": self.leaf.op, "need_unknown": self.need_unknown,
            "index": None if self.index is None else _index_json(self.index)}
        if self.constant is not None:
            out["constant"] = self.constant
        if len(self.considered) > 1:
            out["considered"] = [{**_index_json(ci), "answers": ci.answers_op(self.leaf.op),
                                  "covered_rows": ci.covered_rows(), "seeks": self.leaf.op in ci.seeks}
                                 for ci in self.considered]
        late = self.declines_at
        over = None if late is None or late.budget is None else late.budget.reason
        out["declined"] = self.declined or (over if late is not None and not late.sidecars else None)
        if late is not None and late.sidecars:
            out["declined_unless_sidecars"] = over
        out["ranges"] = [rp.to_json() for rp in self.ranges]
        out["unknown_outside"] = _json_ranges(self.unknown_outside)
        return out


@dataclass(frozen=True, slots=True)
class CountPlan:
    """Whether a count-only query counts its one leaf without building rows: `tried` (then `via` says from what:
    the index's own entry counts, or range sidecars), else `reason`. Execution falls back to the full
    evaluation when a sidecar is missing or broken or its key counts are not built yet."""

    tried: bool
    reason: str | None = None
    via: str | None = None
    leaf: LeafPlan | None = None

    def to_json(self) -> dict[str, object]:
        return {"tried": self.tried, "reason": self.reason, "via": self.via}


@dataclass(frozen=True, slots=True)
class Coverage:
    """Row ranges of the answer: `covered` by every index used, `partly_covered` by some but not all (UNKNOWN
    there unless the other columns decide), and `uncovered`: the table's rows outside `covered`, which no
    index answers (what a scan of the data files must read; None when the table's rows were not given)."""

    indexes: tuple[ColumnIndex, ...]
    covered: tuple[Range, ...]
    partly_covered: tuple[Range, ...]
    uncovered: tuple[Range, ...] | None = None

    def to_json(self) -> dict[str, object]:
        return {"indexes": [_index_json(ci) for ci in self.indexes], "covered": _json_ranges(self.covered),
                "partly_covered": _json_ranges(self.partly_covered),
                "uncovered": None if self.uncovered is None else _json_ranges(self.uncovered)}


@dataclass(frozen=True, slots=True)
class QueryPlan:
    """An immutable plan of one query: the tree as evaluated (NOT pushed down, comparisons merged), the columns
    it uses, a LeafPlan per leaf in evaluation order, the count-only decision and the coverage."""

    tree: Node
    columns: Mapping[str, ColumnIndex]
    used: tuple[str, ...]
    with_unknown: bool
    leaves: tuple[LeafPlan, ...]
    count: CountPlan | None
    coverage: Coverage
    _steps: Mapping[tuple[int, bool], LeafPlan] = field(repr=False, compare=False)

    def step(self, node: Node, need_unknown: bool) -> LeafPlan:
        """The plan of a leaf (or of a NOT over an array leaf) of `tree`, as evaluated with `need_unknown`."""
        return self._steps[(id(node), need_unknown)]

    def declined_not(self, node: Not, need_unknown: bool) -> LeafPlan | None:
        """The plan declining a NOT over an array leaf, or None when the NOT is evaluated."""
        return self._steps.get((id(node), need_unknown))

    def to_json(self) -> dict[str, object]:
        """The plan as JSON-able data (explain's "plan")."""
        return {"tree": _text(self.tree), "columns": list(self.used), "with_unknown": self.with_unknown,
                "leaves": [lp.to_json() for lp in self.leaves],
                "count": None if self.count is None else self.count.to_json(),
                "coverage": self.coverage.to_json()}


def plan_query(bound: Node, columns: Mapping[str, ColumnIndex], *, with_unknown: bool = True,
               count_only: bool = False, explain: bool = False, deleted: BitMap64 | None = None,
               table_ranges: TableRows | None = None) -> QueryPlan:
    """Plan a bound tree (bind.bind) over the indexed columns without reading any index file.

    `with_unknown`, `count_only`, `explain` and `deleted` are answer_over_files' (they change what is read);
    `table_ranges` (the table's live rows: inclusive ranges, or a bitmap of sparse ids) gives
    `coverage.uncovered` (uncovered_rows).

    Raises:
        UnknownColumnError: the tree names a column missing from `columns`.
    """
    tree = merge_ranges(rewrite_not(bound))
    used = sorted(referenced_columns(tree)) or sorted(columns)
    for name in used:
        if name not in columns:
            raise UnknownColumnError(name, list(columns))
    with literal_memo():
        planner = _Planner(columns, used)
        planner.walk(tree, with_unknown)
        count = _count_plan(tree, planner, with_unknown, count_only, explain, deleted)
    coverage = _coverage(planner.indexes_used(), table_ranges)
    return QueryPlan(tree, columns, tuple(used), with_unknown, tuple(planner.steps.values()),
                     count, coverage, planner.steps)


class _Planner:
    """Walks the tree in evaluation order (left before right; a NOT asks its child's UNKNOWN rows)."""

    def __init__(self, columns: Mapping[str, ColumnIndex], used: list[str]) -> None:
        self.columns = columns
        self.used = used
        self.steps: dict[tuple[int, bool], LeafPlan] = {}
        self.chosen: dict[int, ColumnIndex] = {}
        self._universe: list[Range] | None = None

    def universe(self) -> list[Range]:
        """Row ranges some used column's main index covers (what NOT and constants work in)."""
        if self._universe is None:
            self._universe = ranges.merge(r for c in self.used for r in self.columns[c].merged_ranges())
        return self._universe

    def walk(self, node: Node, need_u: bool) -> None:
        if node is TRUE or node is FALSE or node is UNKNOWN:
            return
        if isinstance(node, Not):
            child = node.child
            spec = OPERATORS.get(child.op) if isinstance(child, BoundLeaf) else None
            if isinstance(child, BoundLeaf) and spec is not None and spec.element_op is not None \
                    and not self.knows_misses(child):
                # a multivalue index cannot tell a null array (UNKNOWN) from one without the value (FALSE)
                self.steps[(id(node), need_u)] = LeafPlan(
                    child, True, negated=True,
                    declined=f"NOT {child.op} on {child.column!r}: an array index cannot tell a null array from "
                             "one without the value")
                return
            self.walk(child, True)
        elif isinstance(node, (And, Or)):
            self.walk(node.left, need_u)
            self.walk(node.right, need_u)
        elif isinstance(node, BoundLeaf):
            key = (id(node), need_u)
            if key not in self.steps:
                self.steps[key] = self.leaf(node, need_u)
        else:
            raise TypeError(f"not a bound predicate node: {node!r}")

    def knows_misses(self, leaf: BoundLeaf) -> bool:
        """Whether an index of the leaf's column tells which rows an array look-up that misses leaves UNKNOWN
        (ColumnIndex.element_nulls), for an operator whose UNKNOWN rows are just those: array_contains, and
        arrays_overlap with a list without NULL (SQL: no common element, and a null array or element)."""
        if leaf.op not in NOT_EXACT_ARRAY_OPS or leaf.null_in_list or leaf.unsupported is not None:
            return False
        return any(ci.element_nulls and ci.answers_op(leaf.op) for ci in all_indexes(self.columns[leaf.column]))

    def pick(self, leaf: BoundLeaf, need_u: bool = False) -> ColumnIndex | None:
        """The index of the leaf's column that answers it best: the one covering most rows, then one that
        seeks rather than scans for it (a btree for a range: no fallback budget, no sidecar to wait for), then
        the family's rank. None when no index of the column answers the operator. An array leaf whose UNKNOWN
        rows are asked for (under NOT) is answered only by an index that knows them (knows_misses)."""
        able = [ci for ci in all_indexes(self.columns[leaf.column]) if ci.answers_op(leaf.op)]
        if need_u and spec_of(leaf.op).element_op is not None:
            able = [ci for ci in able if ci.element_nulls]
        if len(able) <= 1:
            return able[0] if able else None
        budgeted = spec_of(leaf.op).budgeted
        return min(able, key=lambda ci: (-ci.covered_rows(), budgeted and leaf.op not in ci.seeks, ci.rank))

    def leaf(self, leaf: BoundLeaf, need_u: bool) -> LeafPlan:
        if leaf.unsupported is not None:
            return LeafPlan(leaf, need_u, declined=leaf.unsupported)
        if leaf.op in CONSTANT_OPS:
            return LeafPlan(leaf, need_u)
        considered = all_indexes(self.columns[leaf.column])
        ci = self.pick(leaf, need_u)
        if ci is None:
            families = " or ".join(c.family for c in considered)
            return LeafPlan(leaf, need_u, considered=considered,
                            declined=f"the {families} index of {leaf.column!r} does not answer {leaf.op}")
        self.chosen.setdefault(id(ci), ci)
        plans = tuple(self.range_plan(leaf, ci, start, end, refs, need_u)
                      for (start, end), refs in range_groups(ci.files))
        outside = tuple(ranges.subtract(self.universe(), ci.merged_ranges()))
        return LeafPlan(leaf, need_u, ci, considered, ranges=plans, unknown_outside=outside)

    def range_plan(self, leaf: BoundLeaf, ci: ColumnIndex, start: int, end: int, refs: list[IndexFileRef],
                   need_u: bool) -> RangePlan:
        op = spec_of(leaf.op)
        if leaf.null_in_list and op.complement and not need_u:
            return RangePlan(start, end, tuple(refs), (), skip=True)  # spec §5.5: never TRUE; nothing read
        candidates = tuple(r for r in refs if file_may_match(leaf, r.meta, positive=True))
        sidecars = bool(candidates) and sidecars_answer(leaf) and all(r.open_sidecar is not None
                                                                      for r in candidates)
        budget = None
        if candidates and op.budgeted and leaf.op not in ci.seeks and not all(r.in_memory for r in candidates):
            budget = BudgetCheck(ci.column, start, end, sum(r.file_size for r in candidates),
                                 ci.fallback_scan_max_size)
        return RangePlan(start, end, tuple(refs), candidates, sidecars=sidecars, budget=budget)

    def indexes_used(self) -> list[ColumnIndex]:
        """The indexes whose coverage the answer has: those leaves are answered from, else each column's main."""
        out = list(self.chosen.values())
        seen = {ci.column for ci in out}
        return out + [self.columns[c] for c in self.used if c not in seen]


def sidecars_answer(leaf: BoundLeaf, *, counting: bool = False) -> bool:
    """Whether range sidecars answer the leaf (a range they compare codes for) or, `counting`, count it (also
    `=` / `IN` from their key counts): not a merged leaf of many intervals or of single keys only, which
    dictionary look-ups in the bitmap file answer more cheaply."""
    positive = spec_of(leaf.op).positive
    if positive not in (SIDECAR_OPS | KEY_COUNT_OPS if counting else SIDECAR_OPS):
        return False
    return not (positive == "range_set" and (len(leaf.intervals) > SIDECAR_MAX_INTERVALS
                                             or all(iv.is_point for iv in leaf.intervals)))


def _count_plan(tree: Node, planner: _Planner, with_unknown: bool, count_only: bool, explain: bool,
                deleted: BitMap64 | None) -> CountPlan | None:
    """Whether a lone leaf's rows are counted without building them (range sidecars' or the index's own counts):
    not when it would not be exact or cheaper — ids with gaps, several files in one row range (counting their
    union needs their rows), deleted rows inside the column's ranges, a NULL in an IN list, an operator
    neither counts."""
    if not count_only:
        return None
    reason = None
    lp = planner.steps.get((id(tree), with_unknown)) if isinstance(tree, BoundLeaf) else None
    if explain:
        reason = "explain evaluates in full"
    elif with_unknown:
        reason = "UNKNOWN rows are asked for"
    elif lp is None:
        reason = "not a single leaf"
    elif lp.declined is not None or lp.index is None:
        reason = "the leaf is declined" if lp.declined is not None else "a constant"
    elif lp.leaf.null_in_list:
        reason = "a NULL in the list"
    elif lp.index.sparse:
        reason = "row ids with gaps"
    elif spec_of(lp.leaf.op).positive not in SIDECAR_OPS | KEY_COUNT_OPS:
        reason = f"{lp.leaf.op} is not counted"
    elif any(len(rp.files) > 1 for rp in lp.ranges):
        reason = "several files in one row range"
    elif deleted and any(deleted.range_cardinality(rp.start, rp.end + 1) for rp in lp.ranges):
        reason = "deleted rows inside the column's ranges"
    if reason is not None:
        return CountPlan(False, reason)
    assert lp is not None and lp.index is not None
    if lp.leaf.op in lp.index.seeks:
        return CountPlan(True, via="index", leaf=lp)
    if not sidecars_answer(lp.leaf, counting=True) and any(rp.candidates for rp in lp.ranges):
        return CountPlan(False, f"range sidecars do not count {lp.leaf.op} leaves like this one")
    return CountPlan(True, via="sidecars", leaf=lp)


def _covered(indexes: Sequence[ColumnIndex]) -> list[Range]:
    """The row ranges every one of `indexes` covers."""
    if len(indexes) == 1:
        return indexes[0].merged_ranges()
    return ranges.intersect(*(ci.file_ranges() for ci in indexes))


def _coverage(indexes: list[ColumnIndex], table_ranges: TableRows | None) -> Coverage:
    covered = _covered(indexes)
    partly = [] if len(indexes) == 1 else ranges.subtract([r for ci in indexes for r in ci.file_ranges()], covered)
    uncovered = None if table_ranges is None else tuple(uncovered_rows(indexes, table_ranges))
    return Coverage(tuple(indexes), tuple(covered), tuple(partly), uncovered)


def uncovered_rows(indexes: Sequence[ColumnIndex], table_rows: TableRows) -> list[Range]:
    """The table's live rows that not every one of `indexes` covers: what a scan of the data must read.

    `table_rows`: inclusive ranges (dense ids: rows outside the indexes' row ranges), or a bitmap of sparse ids
    (compared id by id with what each index holds, ColumnIndex.uncovered: an id no row ever had is never
    named, and an id inside an index's range that its files do not hold is)."""
    if isinstance(table_rows, AbstractBitMap64):
        if not indexes:
            return ranges.of_bitmap(table_rows)
        return ranges.of_bitmap(BitMap64.union(*(ci.uncovered(table_rows) for ci in indexes)))
    return ranges.subtract(table_rows, _covered(indexes))
