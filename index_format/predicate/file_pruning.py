"""File selection by manifest metadata (spec §4): may an index file hold rows where a leaf is TRUE, judged by
its first and last keys and null flags alone, and which IN literals lie inside its key bounds.

Reads no index file. Imports keys, filemeta and the predicate tree and operator table.
"""
from __future__ import annotations

import threading
from bisect import bisect_left, bisect_right
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from index_format import keys
from index_format.global_index.filemeta import FileMeta
from index_format.predicate.intervals import Interval
from index_format.predicate.operators import OPERATORS
from index_format.predicate.tree import BoundLeaf

__all__ = ["file_may_match", "literal_memo", "values_in_bounds"]


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
        inside = {keys.sort_key(leaf.kt, v) for v in values_in_bounds(leaf, meta)}
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

    def sk(v: object) -> Any:
        return keys.sort_key(kt, v)

    # A null first (last) key is below (above) everything.
    def ge_first(v: Any, strict: bool = False) -> bool:
        return first is None or bool(first < v if strict else first <= v)

    def le_last(v: Any, strict: bool = False) -> bool:
        return last is None or bool(last > v if strict else last >= v)

    if op == "eq":
        v = sk(leaf.value)
        return ge_first(v) and le_last(v)
    if op == "in":
        return bool(values_in_bounds(leaf, meta))
    if op in ("lt", "le"):
        return ge_first(sk(leaf.value), strict=op == "lt")
    if op in ("gt", "ge"):
        return le_last(sk(leaf.value), strict=op == "gt")
    if op == "between":
        lo, hi = sk(leaf.low), sk(leaf.high)
        return bool(lo <= hi) and ge_first(hi) and le_last(lo)
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
        hi: Any = keys.sort_key(kt, iv.high)
        first: Any = keys.sort_key(kt, meta.first_key)
        if hi < first or (hi == first and not iv.high_inclusive):
            return False
    if iv.low is not None and meta.last_key is not None:
        lo: Any = keys.sort_key(kt, iv.low)
        last: Any = keys.sort_key(kt, meta.last_key)
        if lo > last or (lo == last and not iv.low_inclusive):
            return False
    return True


def values_in_bounds(leaf: BoundLeaf, meta: FileMeta) -> tuple[object, ...]:
    """The IN literals inside [first, last] of the file: two binary searches over the sorted literals."""
    keys_sorted, values_sorted = _sorted_literals(leaf)
    kt = leaf.kt
    lo = 0 if meta.first_key is None else bisect_left(keys_sorted, keys.sort_key(kt, meta.first_key))
    hi = len(keys_sorted) if meta.last_key is None else bisect_right(keys_sorted, keys.sort_key(kt, meta.last_key))
    return values_sorted[lo:hi]


# Per query (and thread): a big IN list is sorted once per query, not once per file. A process-wide
# cache kept up to 64 lists of 70k literals alive after their queries (~10 MB each).
_sorted_memo = threading.local()


@contextmanager
def literal_memo() -> Iterator[None]:
    """Sort each IN list once while the block runs (planning and executing one query); nested blocks share
    the outer one's memo, which is dropped when the outer block ends."""
    if getattr(_sorted_memo, "lists", None) is not None:
        yield
        return
    _sorted_memo.lists = {}
    try:
        yield
    finally:
        _sorted_memo.lists = None   # a big IN list's sort keys live as long as its query, no longer


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
