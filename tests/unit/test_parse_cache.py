"""service.query.parse_cache: byte-bounded, thread-safe LRU of parsed SQL predicates (issue 10 item 2)."""
from __future__ import annotations

import gc
import random
import sys
import threading
import tracemalloc

import pytest

from index_format.errors import ParseError, PredicateLimitError
from index_format.predicate.limits import PredicateLimits
from index_format.predicate.sql import parse_where
from index_format.predicate.tree import Leaf
from service.query.parse_cache import ParseCache, entry_cost


class Counting:
    """parse_where that counts real parses per text."""

    def __init__(self) -> None:
        self.calls: dict[str, int] = {}

    def __call__(self, text: str, *, limits: PredicateLimits, deadline: float | None = None) -> object:
        self.calls[text] = self.calls.get(text, 0) + 1
        return parse_where(text, limits=limits, deadline=deadline)


def test_hit_returns_the_cached_tree() -> None:
    parse = Counting()
    cache = ParseCache(1 << 20, parse=parse)
    first = cache.parse("s = 'a'")
    assert first == Leaf("eq", "s", "a")
    assert cache.parse("s = 'a'") is first
    assert parse.calls == {"s = 'a'": 1}
    assert (cache.hits, cache.misses, len(cache)) == (1, 1, 1)


def test_lru_eviction_by_bytes_matches_a_model() -> None:
    texts = [f"s IN ({', '.join(repr(f'{k}-{i}') for i in range(k % 7 + 1))})" for k in range(40)]
    costs = {t: entry_cost(t, parse_where(t)) for t in texts}
    budget = 10 * max(costs.values())  # every entry is under budget/8; ~10-20 fit
    parse = Counting()
    cache = ParseCache(budget, parse=parse)
    model: list[str] = []  # least recently used first
    expected_parses: dict[str, int] = {}
    rng = random.Random(3)
    for _ in range(600):
        t = rng.choice(texts)
        if t in model:
            model.remove(t)
        else:
            expected_parses[t] = expected_parses.get(t, 0) + 1
        model.append(t)
        while sum(costs[m] for m in model) > budget:
            model.pop(0)
        cache.parse(t)
        assert cache.bytes == sum(costs[m] for m in model) <= budget
    assert parse.calls == expected_parses
    assert len(cache) == len(model)


def test_oversized_entry_is_returned_but_not_cached() -> None:
    parse = Counting()
    text = "s IN (" + ", ".join(f"'{i}'" for i in range(2000)) + ")"
    cache = ParseCache(8 * entry_cost(text, parse_where(text)) - 8, parse=parse)
    assert cache.parse(text).values[0] == "0"  # type: ignore[attr-defined]
    assert cache.parse(text).values[-1] == "1999"  # type: ignore[attr-defined]
    assert parse.calls[text] == 2
    assert len(cache) == 0 and cache.bytes == 0
    off = ParseCache(0, parse=parse)
    off.parse("a = 1")
    off.parse("a = 1")
    assert parse.calls["a = 1"] == 2


def test_errors_propagate_and_are_not_cached() -> None:
    parse = Counting()
    cache = ParseCache(1 << 20, PredicateLimits(max_depth=4), parse=parse)
    with pytest.raises(PredicateLimitError):
        cache.parse("(((((a = 1)))))")
    with pytest.raises(ParseError):
        cache.parse("a = ")
    with pytest.raises(ParseError):
        cache.parse("a = ")
    assert parse.calls["a = "] == 2
    assert len(cache) == 0


def test_limits_reach_the_parser() -> None:
    cache = ParseCache(1 << 20, PredicateLimits(max_in_values=2))
    assert cache.parse("n IN (1, 2)").values == (1, 2)  # type: ignore[attr-defined]
    with pytest.raises(PredicateLimitError, match="BGIX_MAX_IN_VALUES"):
        cache.parse("n IN (1, 2, 3)")


@pytest.mark.parametrize("kind", ["in_strings", "in_ints", "or_chain"])
def test_entry_cost_tracks_retained_memory(kind: str) -> None:
    text = {
        "in_strings": "s IN (" + ",".join(f"'v{i:06d}'" for i in range(3000)) + ")",
        "in_ints": "n IN (" + ",".join(str(i * 7919) for i in range(3000)) + ")",
        "or_chain": " OR ".join(f"s = 'v{i:05d}'" for i in range(1500)),
    }[kind]
    gc.collect()
    tracemalloc.start()
    try:
        node = parse_where(text)
        gc.collect()
        retained, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    truth = retained + sys.getsizeof(text)
    assert node is not None
    assert 0.8 * truth <= entry_cost(text, node) <= 1.25 * truth


def test_concurrent_use_keeps_the_accounting_exact() -> None:
    texts = [f"s = 'v{i}' OR n IN ({', '.join(str(j) for j in range(i % 40))})" for i in range(200)]
    cache = ParseCache(64 * 1024)
    errors: list[BaseException] = []

    def worker(seed: int) -> None:
        rng = random.Random(seed)
        try:
            for _ in range(300):
                t = rng.choice(texts)
                assert cache.parse(t) == parse_where(t)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(s,)) for s in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert errors == []
    assert cache.bytes <= cache.budget_bytes
    with cache._lru._lock:  # the running total equals the sum of the entries' costs
        assert cache.bytes == sum(cost for _, cost in cache._lru._entries.values())
    assert cache.hits > 0
