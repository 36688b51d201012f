"""Byte-budgeted LRU of open index readers, keyed by (path, file_size), shared by all requests.

A new file (different size or path) is a new key, so a re-committed snapshot never sees a stale reader.
Must not import fastapi or pyspark.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

V = TypeVar("V")
Key = tuple[str, int]


class ByteLRU(Generic[V]):
    """Thread-safe LRU: `get_or_load` opens on a miss and evicts least recently used past `budget` bytes.

    `sizeof` is asked for an entry's byte cost after loading; an entry larger than the whole budget
    is returned but not kept.
    """

    def __init__(self, budget: int, sizeof: Callable[[V], int],
                 on_lookup: Callable[[bool], None] | None = None) -> None:
        self.budget = budget
        self._sizeof = sizeof
        self._on_lookup = on_lookup
        self._entries: OrderedDict[Key, tuple[V, int]] = OrderedDict()
        self._lock = threading.Lock()
        self.bytes = 0

    def get_or_load(self, key: Key, load: Callable[[], V]) -> V:
        with self._lock:
            hit = self._entries.get(key)
            if hit is not None:
                self._entries.move_to_end(key)
        if self._on_lookup is not None:
            self._on_lookup(hit is not None)
        if hit is not None:
            return hit[0]
        value = load()  # outside the lock: opening reads the footer and block index
        cost = max(1, int(self._sizeof(value)))
        if cost <= self.budget:
            with self._lock:
                if key not in self._entries:
                    self._entries[key] = (value, cost)
                    self.bytes += cost
                self._evict()
        return value

    def _evict(self) -> None:
        while self.bytes > self.budget and self._entries:
            _, (_, cost) = self._entries.popitem(last=False)
            self.bytes -= cost

    def discard_prefix(self, prefix: str) -> None:
        """Forget every entry whose path starts with `prefix` (dropped index or table)."""
        with self._lock:
            for key in [k for k in self._entries if k[0].startswith(prefix)]:
                self.bytes -= self._entries.pop(key)[1]

    def __len__(self) -> int:
        return len(self._entries)
