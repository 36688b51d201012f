"""The one eviction rule of bgix's caches: a byte-budgeted, thread-safe LRU keyed by tuples.

File caches (open readers, decoded bitmaps and blocks, sidecars) key by (path, size, …), so a re-committed
file never serves stale entries; others (parsed predicates) by their own tuple. Imports nothing from the package.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

V = TypeVar("V")
Key = tuple[Hashable, ...]   # (path, size, …)


class ByteLRU(Generic[V]):
    """Thread-safe LRU: `get_or_load` opens on a miss and evicts least recently used past `budget` bytes.

    `sizeof` is asked for an entry's byte cost after loading (without it, entries come only through `put`
    with their cost); an entry larger than the whole budget is returned but not kept. A cache bounded by
    entry count is one whose entries each cost 1; `max_entries` bounds the count as well (entries that hold an
    open file: a budget in bytes alone lets many small ones keep a descriptor each).
    `hits` and `misses` count lookups (`get`, `get_or_load`); `on_lookup` is told of each one too.
    """

    def __init__(self, budget: int, sizeof: Callable[[V], int] | None = None,
                 on_lookup: Callable[[bool], None] | None = None, max_entries: int | None = None) -> None:
        self.budget = budget
        self.max_entries = max_entries
        self._sizeof = sizeof
        self._on_lookup = on_lookup
        self._entries: OrderedDict[Key, tuple[V, int]] = OrderedDict()
        self._lock = threading.Lock()
        self.bytes = 0
        self.hits = 0
        self.misses = 0

    def get_or_load(self, key: Key, load: Callable[[], V]) -> V:
        cached = self.get(key)   # values are never None
        if cached is not None:
            return cached
        if self._sizeof is None:
            raise TypeError("this cache is filled by put(key, value, cost)")
        value = load()  # outside the lock: opening reads the footer and block index
        cost = max(1, int(self._sizeof(value)))
        if cost <= self.budget:
            with self._lock:
                if key not in self._entries:
                    self._entries[key] = (value, cost)
                    self.bytes += cost
                self._evict()
        return value

    def get(self, key: Key) -> V | None:
        """The cached value (refreshed as most recently used), or None; counted as a lookup."""
        with self._lock:
            hit = self._entries.get(key)
            if hit is not None:
                self._entries.move_to_end(key)
                self.hits += 1
            else:
                self.misses += 1
        if self._on_lookup is not None:
            self._on_lookup(hit is not None)
        return None if hit is None else hit[0]

    def put(self, key: Key, value: V, cost: int) -> None:
        """Keep `value` at `cost` bytes unless it alone exceeds the budget."""
        cost = max(1, int(cost))
        if cost > self.budget:
            return
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self.bytes -= old[1]
            self._entries[key] = (value, cost)
            self.bytes += cost
            self._evict()

    def _evict(self) -> None:
        while self._entries and (self.bytes > self.budget or
                                 (self.max_entries is not None and len(self._entries) > self.max_entries)):
            _, (_, cost) = self._entries.popitem(last=False)
            self.bytes -= cost

    def discard_prefix(self, prefix: str) -> None:
        """Forget every entry whose path starts with `prefix` (dropped index or table)."""
        self.discard_where(lambda key: str(key[0]).startswith(prefix))

    def discard_where(self, stale: Callable[[Key], bool]) -> None:
        """Forget every entry whose key is `stale`."""
        with self._lock:
            for key in [k for k in self._entries if stale(k)]:
                self.bytes -= self._entries.pop(key)[1]

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self.bytes = 0

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        """Whether `key` is cached now; not a lookup (neither counted nor refreshed)."""
        with self._lock:
            return key in self._entries
