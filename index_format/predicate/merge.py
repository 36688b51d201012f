"""Merge the comparisons an AND or OR makes on one column into one leaf (run after rewrite_not).

`a >= x AND a < y` becomes one range `[x, y)`, `a = 1 OR a = 2` the list `IN (1, 2)`, `a <> 1 AND a <> 2`
`NOT IN (1, 2)`: one leaf costs one pass over the column's index instead of one per comparison, and a
range sidecar answers a two-sided range with two comparisons on its codes. Only leaves with the same
three-valued result on null rows take part (every comparison, IN and their complements: UNKNOWN on a null
row), so the merged leaf gives exactly the rows the AND / OR gave. Leaves that stand alone are kept as
they are. Imports tree and intervals only.
"""
from __future__ import annotations

from index_format.predicate.intervals import Interval, IntervalSet
from index_format.predicate.tree import And, BoundLeaf, Node, Not, Or, flatten

_MERGEABLE = frozenset(("eq", "ne", "in", "not_in", "lt", "le", "gt", "ge", "between", "not_between",
                        "range_set"))
# The mergeable operators answered by dictionary look-ups (no fallback scan, so no budget, spec §6).
_LOOKUPS = frozenset(("eq", "ne", "in", "not_in"))


def merge_ranges(node: Node) -> Node:
    """`node` with, under every AND/OR, the mergeable leaves of each column folded into one leaf."""
    return _merge(node)


def interval_set(leaf: BoundLeaf) -> IntervalSet | None:
    """The keys `leaf` selects on its column (nulls aside), or None for a leaf that cannot merge."""
    if not isinstance(leaf, BoundLeaf) or leaf.op not in _MERGEABLE or leaf.unsupported is not None \
            or leaf.null_in_list:
        return None
    kt, op = leaf.kt, leaf.op
    if op == "range_set":
        return IntervalSet.of(kt, leaf.intervals)
    if op in ("eq", "ne"):
        s = IntervalSet.points(kt, (leaf.value,))
    elif op in ("in", "not_in"):
        s = IntervalSet.points(kt, leaf.values)
    elif op in ("between", "not_between"):
        s = IntervalSet.of(kt, (Interval(leaf.low, leaf.high),))
    elif op in ("lt", "le"):
        s = IntervalSet.of(kt, (Interval(None, leaf.value, high_inclusive=op == "le"),))
    else:
        s = IntervalSet.of(kt, (Interval(leaf.value, None, low_inclusive=op == "ge"),))
    return s.complement() if op in ("ne", "not_in", "not_between") else s


def leaf_of(first: BoundLeaf, keys: IntervalSet) -> BoundLeaf:
    """The simplest leaf on `first`'s column selecting exactly `keys`: eq/in, ne/not_in, else range_set."""
    points = keys.point_values()
    if points is not None and points:
        if len(points) == 1:
            return BoundLeaf("eq", first.column, first.kt, value=points[0])
        return BoundLeaf("in", first.column, first.kt, values=points)
    holes = keys.complement().point_values()
    if holes:
        if len(holes) == 1:
            return BoundLeaf("ne", first.column, first.kt, value=holes[0])
        return BoundLeaf("not_in", first.column, first.kt, values=holes)
    return BoundLeaf("range_set", first.column, first.kt, intervals=keys.intervals)


def _merge(node: Node) -> Node:
    if isinstance(node, (And, Or)):
        kind = type(node)
        # one pass per maximal AND (OR) chain: flatten it, merge below it, then group its leaves by column
        return _fold(kind, [_merge(child) for child in flatten(node, kind)])
    if isinstance(node, Not):
        merged = _merge(node.child)
        return node if merged is node.child else Not(merged)
    return node


def _fold(kind: type[And] | type[Or], children: list[Node]) -> Node:
    flat: list[Node] = []
    for child in children:
        flat.extend(flatten(child, kind))   # a merged child may itself be a chain of this kind
    groups: dict[str, list[tuple[int, BoundLeaf]]] = {}
    for i, child in enumerate(flat):
        if isinstance(child, BoundLeaf) and child.op in _MERGEABLE:
            groups.setdefault(child.column, []).append((i, child))
    out: list[Node | None] = list(flat)
    for members in groups.values():
        sets = [(i, leaf, s) for i, leaf in members if (s := interval_set(leaf)) is not None]
        if len(sets) < 2:
            continue
        kt = sets[0][2].kt
        combine = IntervalSet.intersect_all if kind is And else IntervalSet.union_all
        keys = combine(kt, [s for _, _, s in sets])
        merged = leaf_of(sets[0][1], keys)
        lookups = all(leaf.op in _LOOKUPS for _, leaf, _ in sets)
        if merged.op == "range_set" and keys and lookups:
            # Look-ups that cover every key (`a = 1 OR a <> 1`) would become a budgeted scan; the look-ups
            # themselves answer without one, so they stay as they are.
            continue
        out[sets[0][0]] = merged
        for i, _, _ in sets[1:]:
            out[i] = None
    return kind(*(c for c in out if c is not None))
