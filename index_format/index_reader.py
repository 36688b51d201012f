"""The one surface every global index family's reader offers: what the query engine and the service ask of one
index file, whatever its format (a `typing.Protocol`; readers implement it without inheriting from it).

Imports only numpy, pyroaring and index_format.types: never a family's package, nor the predicate package.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Protocol, TypeAlias, runtime_checkable

import numpy as np
from pyroaring import AbstractBitMap, AbstractBitMap64, BitMap64

from index_format.types import KeyType

__all__ = ["Entry", "IndexReader", "KeyBitmap", "KeyCounts", "ReadCounters"]

# One key of a file and its LOCAL row ids: what `IndexReader.entries()` yields for every family.
Entry: TypeAlias = tuple[object, BitMap64]
# One key of a file and its LOCAL row ids as a 32-bit map when they fit (a cached bitmap as it is), else 64-bit.
KeyBitmap: TypeAlias = tuple[object, "AbstractBitMap | AbstractBitMap64"]
# A batch of keys (a list of serialized keys, or one buffer and its n + 1 start offsets) and their row counts.
KeyCounts: TypeAlias = tuple["list[bytes] | tuple[np.ndarray, np.ndarray]", np.ndarray]


class ReadCounters(Protocol):
    """What a reader has read so far (the engine's explain sums them over a query)."""

    @property
    def reads(self) -> int: ...
    @property
    def bytes_read(self) -> int: ...
    @property
    def blocks_decoded(self) -> int: ...
    @property
    def bitmaps_read(self) -> int: ...


@runtime_checkable
class IndexReader(Protocol):
    """A read-only view of one global index file of any family (index_format.families opens it).

    Row ids are LOCAL to the file's row range (the engine shifts them by the range start). Keys are canonical
    values of `kt` (index_format.keys); orders are Java's logical key order. A reader opens by reading its
    footer only; every other read happens when a method needs it and is counted in `stats`. Methods raise
    IndexFormatError subclasses (naming the file and the part) on corrupt bytes.
    """

    @property
    def path(self) -> str:
        """The file's name in error messages."""
    @property
    def size(self) -> int:
        """The file's length in bytes."""
    @property
    def kt(self) -> KeyType:
        """The type of the indexed column (of an ARRAY column's elements)."""
    @property
    def stats(self) -> ReadCounters:
        """Reads, bytes, blocks and bitmaps this reader has fetched or decoded so far."""
    @property
    def value_count(self) -> int:
        """Distinct non-null keys (a family whose footer does not record it may read every block)."""
    @property
    def key_order(self) -> str:
        """'logical', 'bytes' or 'unknown': the order the file's keys were written in (spec §2.7)."""

    def cache_cost(self) -> int:
        """Bytes this reader may keep resident once warm (caches charge it)."""

    # ---- rows
    def null_rows(self) -> BitMap64:
        """Rows whose value is null."""
    def non_null_rows(self) -> BitMap64:
        """Rows with a key."""
    def eq(self, value: object) -> BitMap64:
        """Rows whose key equals `value` (None: no row)."""
    def isin(self, values: Iterable[object]) -> BitMap64:
        """Rows whose key is one of `values` (None values ignored)."""
    def range(self, low: object = None, high: object = None, *, low_inclusive: bool = True,
              high_inclusive: bool = True) -> BitMap64:
        """Rows whose key lies between `low` and `high` in logical order (None: unbounded)."""
    def starts_with(self, prefix: str | bytes) -> BitMap64:
        """Rows whose string key starts with `prefix` (raw UTF-8 bytes). Raises UnsupportedTypeError off strings."""
    def scan(self, match: Callable[[object], bool]) -> BitMap64:
        """Rows whose key satisfies `match` (every key is decoded and tested)."""
    def scan_bytes(self, match: Callable[[bytes], bool]) -> BitMap64:
        """Rows whose serialized key satisfies `match`."""

    # ---- counts (no row ids built where the format can avoid it)
    def count_keys(self, values: Iterable[object]) -> int:
        """len(isin(values))."""
    def count_range(self, low: object = None, high: object = None, *, low_inclusive: bool = True,
                    high_inclusive: bool = True) -> int:
        """len(range(...))."""
    def non_null_count(self) -> int:
        """len(non_null_rows())."""

    # ---- every key
    def entries(self) -> Iterator[Entry]:
        """(value, its rows) for every key in logical order, rows read a bounded number of keys at a time."""
    def entries_desc(self) -> Iterator[Entry]:
        """entries() in descending logical order (ORDER BY … DESC LIMIT k stops early: a btree walks its blocks from
        the last, a bitmap file its dictionary backwards)."""
    def key_bitmaps(self) -> Iterator[KeyBitmap]:
        """entries() with each key's rows as the family keeps them best (a bitmap file: its decoded-bitmap cache,
        32-bit maps when the ids fit), for callers that only intersect or count them (aggregates)."""
    def entries_among(self, rows: AbstractBitMap64, *, desc: bool = False) -> Iterator[Entry]:
        """entries() (or entries_desc()) with each key's rows cut to `rows` (local ids), keys left with none
        skipped: ORDER BY … LIMIT k under a filter (a btree tests a whole data block's row ids at once)."""
    def key_rows(self) -> Iterator[tuple[bytes, np.ndarray]]:
        """(serialized key, its rows ascending as uint64) for every key in logical order (sidecar derivation)."""
    def value_counts(self, prefix: str | None = None) -> Iterator[tuple[object, int]]:
        """(value, row count) per key in logical order; with `prefix`, only string keys starting with it."""
    def key_counts(self, dead: BitMap64 | None = None, among: AbstractBitMap64 | None = None
                   ) -> Iterator[KeyCounts]:
        """(keys, row counts) of every key, a batch at a time, in file order; `dead` (local ids) not counted; with
        `among` (local ids), only its rows counted, and keys with none may be left out (an aggregate's counts: no
        key deserialized, no bitmap built per key where the format can avoid it). Keys of one file are distinct."""


def entries_among(entries: Iterable[Entry], rows: AbstractBitMap64) -> Iterator[Entry]:
    """The entries_among of a family without a faster way: each key's rows met with `rows`, empty ones skipped."""
    for key, bm in entries:
        if rows.intersect(bm):
            got = rows & bm
            yield key, got if isinstance(got, BitMap64) else BitMap64(got)
