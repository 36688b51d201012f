"""Byte-bounded LRU cache of parsed SQL predicates (text → unbound tree), shared by request threads.

A parsed tree is immutable and independent of the catalog, so a repeated predicate skips sqlglot. The
cache is bounded by the memory its entries hold, not by their count: 4096 entries of 1 MB predicates
would otherwise pin gigabytes. Must not import fastapi.
"""
from __future__ import annotations

import sys
from collections.abc import Callable, Hashable
from typing import Any

from index_format.lru import ByteLRU
from index_format.predicate.limits import DEFAULT_LIMITS, PredicateLimits
from index_format.predicate.sql import parse_where
from index_format.predicate.tree import And, BoundLeaf, Leaf, Node, Not, Or

# Per-entry bookkeeping: the LRU's OrderedDict slot, its links, the key and the (node, cost) tuples.
_ENTRY_OVERHEAD = 200


def entry_cost(text: str, node: Node) -> int:
    """Bytes an entry keeps alive: the text plus every node, tuple and literal object of its tree.

    Measured by walking the tree (sys.getsizeof, shared objects counted once) rather than guessed from
    len(text): measured cost/len(text) is ~3.7x for an IN list of small ints, ~5x of big ints, ~7.4x of
    short strings, ~13x for an OR chain of string equalities and ~18x of `a=1` terms, so one fixed factor
    over- or under-counts badly; the walk agrees with tracemalloc's retained bytes within a few percent
    (tests/unit/test_parse_cache.py). It is iterative and far cheaper than the parse it saves.
    """
    total = sys.getsizeof(text) + _ENTRY_OVERHEAD
    seen: set[int] = set()
    stack: list[object] = [node]
    while stack:
        obj = stack.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        total += sys.getsizeof(obj)
        if isinstance(obj, (And, Or)):
            stack.append(obj.left)
            stack.append(obj.right)
        elif isinstance(obj, Not):
            stack.append(obj.child)
        elif isinstance(obj, (Leaf, BoundLeaf)):
            stack.extend((obj.column, obj.value, obj.low, obj.high, obj.pattern))
            if obj.values:
                stack.append(obj.values)
        elif isinstance(obj, tuple):
            stack.extend(obj)
    return total


# A short text's tree bound to one view of a table's snapshots, and the indexed columns it uses.
Bound = tuple[Node, list[str]]


def _keep(lru: ByteLRU[Any], key: tuple[Any, ...], value: Any, text: str, tree: Node, extra: int = 0) -> None:
    """Cache `value` at the cost of `text` and `tree` (+ `extra`) unless that is over an eighth of the budget, so
    one huge predicate cannot flush the cache."""
    if lru.budget <= 0 or sys.getsizeof(text) > lru.budget // 8:
        return
    cost = entry_cost(text, tree) + extra
    if cost <= lru.budget // 8:
        lru.put(key, value, cost)


class ParseCache:
    """Thread-safe LRU of `parse_where(text, limits=limits)` results, holding at most `budget_bytes`
    (entry_cost). An entry costing more than budget/8 is returned but never cached, so one huge
    predicate cannot flush the cache. Parse errors are not cached. A budget of 0 disables caching.
    Beside it, within `bound_budget_bytes` by the same rule, trees bound to a table's snapshots (`bound`,
    `keep_bound`), keyed by the caller (a view of the snapshots and the text)."""

    def __init__(self, budget_bytes: int, limits: PredicateLimits = DEFAULT_LIMITS, *,
                 parse: Callable[..., Node] = parse_where, bound_budget_bytes: int = 0) -> None:
        if budget_bytes < 0 or bound_budget_bytes < 0:
            raise ValueError(f"budgets must be >= 0, got {budget_bytes} and {bound_budget_bytes}")
        self.budget_bytes = budget_bytes
        self.limits = limits
        self._parse = parse
        self._lru: ByteLRU[Node] = ByteLRU(budget_bytes)
        self._bound: ByteLRU[Bound] = ByteLRU(bound_budget_bytes)

    def parse(self, where: str, deadline: float | None = None) -> Node:
        """The unbound tree of SQL text `where` (see parse_where; a parse stops at `deadline`, raising
        QueryTimeoutError). Raises ParseError / PredicateLimitError."""
        key = (where,)
        cached = self._lru.get(key)
        if cached is not None:
            return cached
        # Parse outside the lock: a slow predicate must not stall other requests (two threads parsing the
        # same text both succeed; the second insert replaces the first).
        node = self._parse(where, limits=self.limits, deadline=deadline)
        _keep(self._lru, key, node, where, node)
        return node

    def bound(self, view: Hashable, text: str) -> Bound | None:
        """The tree `text` was bound to for `view` (keep_bound), or None."""
        return self._bound.get((view, text))

    def keep_bound(self, view: Hashable, text: str, tree: Node, columns: list[str]) -> None:
        """Keep `text`'s tree bound for `view` and the indexed columns it uses."""
        _keep(self._bound, (view, text), (tree, columns), text, tree, 64 * len(columns))

    @property
    def hits(self) -> int:
        return self._lru.hits

    @property
    def misses(self) -> int:
        return self._lru.misses

    @property
    def bytes(self) -> int:
        """Sum of entry_cost over the cached entries."""
        return self._lru.bytes

    def __len__(self) -> int:
        return len(self._lru)

    def clear(self) -> None:
        self._lru.clear()

