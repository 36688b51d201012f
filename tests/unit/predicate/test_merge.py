"""Comparisons on one column under AND/OR merge into one leaf (predicate/merge.py, issue 11 part 1).

The interval algebra is checked against plain Python sets of keys; the merged leaves against the
expected shapes; and whole trees against a three-valued evaluation of the rows themselves.
"""
from __future__ import annotations

import math
import random

import pytest

from index_format.predicate.bind import bind
from index_format.predicate.intervals import Interval, IntervalSet
from index_format.predicate.merge import interval_set, merge_ranges
from index_format.predicate.sql import parse_where
from index_format.predicate.tree import And, BoundLeaf, Or
from index_format.predicate.visitors import rewrite_not
from index_format.types import parse_type

INT = parse_type("int")
COLS = {"a": INT, "b": INT, "s": parse_type("string"), "d": parse_type("double")}
UNIVERSE = range(-3, 14)


def _members(s: IntervalSet) -> set[int]:
    out = set()
    for v in UNIVERSE:
        for iv in s.intervals:
            lo_ok = iv.low is None or (v >= iv.low if iv.low_inclusive else v > iv.low)
            hi_ok = iv.high is None or (v <= iv.high if iv.high_inclusive else v < iv.high)
            if lo_ok and hi_ok:
                out.add(v)
    return out


def _random_interval(rng: random.Random) -> tuple[Interval, set[int]]:
    lo = None if rng.random() < 0.2 else rng.randint(-2, 12)
    hi = None if rng.random() < 0.2 else rng.randint(-2, 12)
    li, hi_inc = rng.random() < 0.5, rng.random() < 0.5
    iv = Interval(lo, hi, li, hi_inc)
    keys = {v for v in UNIVERSE
            if (lo is None or (v >= lo if li else v > lo)) and (hi is None or (v <= hi if hi_inc else v < hi))}
    return iv, keys


def test_interval_algebra_matches_python_sets() -> None:
    rng = random.Random(11)
    for _ in range(400):
        parts_a = [_random_interval(rng) for _ in range(rng.randint(0, 3))]
        parts_b = [_random_interval(rng) for _ in range(rng.randint(0, 3))]
        a = IntervalSet.of(INT, [iv for iv, _ in parts_a])
        b = IntervalSet.of(INT, [iv for iv, _ in parts_b])
        ka = set().union(*(k for _, k in parts_a))
        kb = set().union(*(k for _, k in parts_b))
        assert _members(a) == ka
        assert _members(a.intersect(b)) == ka & kb
        assert _members(a.union(b)) == ka | kb
        assert _members(a.complement()) == set(UNIVERSE) - ka
        assert a.complement().complement() == a
        spans = a.intervals  # sorted, disjoint, non-empty
        for x, y in zip(spans, spans[1:]):
            assert x.high is not None and y.low is not None and x.high <= y.low


def _merged(where: str) -> object:
    return merge_ranges(rewrite_not(bind(parse_where(where), COLS)))


@pytest.mark.parametrize(("where", "expected"), [
    ("a >= 3 AND a < 10", "BoundLeaf('range_set', 'a', int, intervals=([3, 10),))"),
    ("a = 1 OR a = 2 OR a = 5", "BoundLeaf('in', 'a', int, values=(1, 2, 5))"),
    ("a <> 1 AND a <> 2", "BoundLeaf('not_in', 'a', int, values=(1, 2))"),
    ("a IN (1, 2, 3) AND a > 1", "BoundLeaf('in', 'a', int, values=(2, 3))"),
    ("a > 5 AND a < 3", "BoundLeaf('range_set', 'a', int, intervals=())"),
    ("NOT (a < 3 OR a > 10)", "BoundLeaf('range_set', 'a', int, intervals=([3, 10],))"),
    ("a BETWEEN 1 AND 5 OR a BETWEEN 4 AND 9 OR a = 20",
     "BoundLeaf('range_set', 'a', int, intervals=([1, 9], {20}))"),
    ("s >= 'globex' AND s < 'hooli'", "BoundLeaf('range_set', 's', string, intervals=(['globex', 'hooli'),))"),
])
def test_merged_leaf_shapes(where: str, expected: str) -> None:
    assert repr(_merged(where)) == expected


def test_only_same_column_comparisons_merge() -> None:
    node = _merged("a > 1 AND b < 3 AND a < 9 AND a IS NULL")
    assert isinstance(node, And)
    text = repr(node)
    assert "range_set', 'a'" in text and "'lt', 'b'" in text and "is_null" in text
    # NULL in an IN list changes which rows are UNKNOWN: such a leaf never merges
    node = _merged("a IN (1, NULL) OR a = 3")
    assert isinstance(node, Or)
    # alone, a leaf is kept as written
    assert repr(_merged("a < 3")) == "BoundLeaf('lt', 'a', int, value=3)"
    # look-ups that together cover every key stay look-ups: merged they would be a budgeted scan
    node = _merged("a = 1 OR a <> 1 OR a IN (2, 3)")
    assert isinstance(node, Or) and "range_set" not in repr(node)


def test_nan_and_signed_zero_keep_java_order() -> None:
    leaf = _merged("d > 0.0 AND d <= 'NaN'")
    assert isinstance(leaf, BoundLeaf) and leaf.op == "range_set"
    s = interval_set(leaf)
    assert s is not None
    assert repr(s) == "(0.0, nan]"
    # -0.0 < 0.0 in Java order: the range keeps -0.0 and leaves 0.0 out (not an empty range)
    span = _merged("d >= -0.0 AND d < 0.0")
    assert isinstance(span, BoundLeaf) and span.op == "range_set"
    (iv,) = span.intervals
    assert math.copysign(1, iv.low) < 0 and iv.low_inclusive and iv.high == 0.0 and not iv.high_inclusive
    assert repr(_merged("d > 0.0 AND d < -0.0")) == "BoundLeaf('range_set', 'd', double, intervals=())"


def _sql3(v: object, leaf_sql: str) -> bool | None:
    if v is None:
        return None
    return bool(eval(leaf_sql, {}, {"a": v}))  # noqa: S307 — test-only, fixed expressions


def test_merged_trees_give_the_same_rows_as_the_comparisons() -> None:
    """Random AND/OR trees over one int column: the merged leaf's keys equal the rows SQL selects."""
    rng = random.Random(5)
    ops = [("<", "<"), ("<=", "<="), (">", ">"), (">=", ">="), ("=", "=="), ("<>", "!=")]
    for _ in range(300):
        n = rng.randint(2, 5)
        kind = rng.choice(["AND", "OR"])
        parts_sql, parts_py = [], []
        for _ in range(n):
            sql_op, py_op = rng.choice(ops)
            k = rng.randint(-2, 12)
            parts_sql.append(f"a {sql_op} {k}")
            parts_py.append(f"a {py_op} {k}")
        leaf = _merged(f" {kind} ".join(parts_sql))
        if isinstance(leaf, Or):  # `=`/`<>` covering every key stay look-ups (merged: a budgeted scan)
            leaves = _or_leaves(leaf)
            assert all(x.op in ("eq", "ne") for x in leaves), leaf
            s = IntervalSet.union_all(INT, [interval_set(x) for x in leaves])
            assert s == IntervalSet.everything(INT)
        else:
            assert isinstance(leaf, BoundLeaf)
            s = interval_set(leaf)
        assert s is not None
        combine = all if kind == "AND" else any
        expected = {v for v in UNIVERSE if combine(_sql3(v, p) for p in parts_py)}
        assert _members(s) == expected, (parts_sql, leaf)


def _or_leaves(node: object) -> list[BoundLeaf]:
    if isinstance(node, Or):
        return _or_leaves(node.left) + _or_leaves(node.right)
    assert isinstance(node, BoundLeaf)
    return [node]


def test_intersect_all_and_union_all_match_pairwise() -> None:
    rng = random.Random(23)
    for _ in range(200):
        parts = [IntervalSet.of(INT, [iv for iv, _ in (_random_interval(rng) for _ in range(rng.randint(0, 3)))])
                 for _ in range(rng.randint(1, 5))]
        u, i = parts[0], parts[0]
        for p in parts[1:]:
            u, i = u.union(p), i.intersect(p)
        assert IntervalSet.union_all(INT, parts) == u
        assert IntervalSet.intersect_all(INT, parts) == i


def test_long_chains_on_one_column_merge_in_one_pass() -> None:
    # merged with one sort per chain (merging pairwise was quadratic: minutes for these)
    leaf = _merged(" OR ".join(f"a = {i}" for i in range(20000)))
    assert isinstance(leaf, BoundLeaf) and leaf.op == "in" and len(leaf.values) == 20000
    leaf = _merged(" AND ".join(f"a <> {i}" for i in range(20000)))
    assert isinstance(leaf, BoundLeaf) and leaf.op == "not_in" and len(leaf.values) == 20000


def test_signed_zeros_are_two_keys_in_a_merged_leaf() -> None:
    """[-0.0, 0.0] holds both zeros: it is not the single key -0.0 (found by the sidecar agreement test)."""
    leaf = _merged("d BETWEEN -0.0 AND 0.0 AND d BETWEEN -0.0 AND 0.0")
    assert isinstance(leaf, BoundLeaf) and leaf.op == "range_set"
    (iv,) = leaf.intervals
    assert not iv.is_point and iv.low_inclusive and iv.high_inclusive
    assert Interval(0.0, 0.0).is_point and Interval(float("nan"), float("nan")).is_point
