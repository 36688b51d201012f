"""The indexes a query runs over: each index file as the manifest describes it (IndexFileRef) and each column's
index (ColumnIndex: its files, family capabilities and fallback budget), with the row ranges they cover.

Planning (query_plan) reads only what these hold; the readers behind `IndexFileRef.open` are opened by execution.
Imports keys-free pieces only: ranges, filemeta, options, types and, for typing, the reader protocol.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pyroaring import AbstractBitMap64, BitMap64, FrozenBitMap64

from index_format import ranges
from index_format.global_index.filemeta import FileMeta
from index_format.options import IndexOptions
from index_format.types import KeyType

if TYPE_CHECKING:
    from index_format.index_reader import IndexReader
    from index_format.range_bitmap import RangeBitmapReader

__all__ = ["DEFAULT_FALLBACK_SCAN_MAX_SIZE", "ColumnIndex", "IndexFileRef", "all_indexes", "range_groups"]

DEFAULT_FALLBACK_SCAN_MAX_SIZE = IndexOptions().fallback_scan_max_size


@dataclass
class IndexFileRef:
    """One index file: its manifest row range [range_start, range_end] (inclusive), metadata and size."""

    path: str
    range_start: int
    range_end: int
    meta: FileMeta
    file_size: int
    open: Callable[[], IndexReader]
    # The file's range sidecar (same rows, range-bitmap format) when one is ready now, else None.
    open_sidecar: Callable[[], RangeBitmapReader | None] | None = None
    # Told when the sidecar turned out broken (the bitmap file answered instead), so it is not used again.
    sidecar_failed: Callable[[Exception], None] | None = None
    # The sidecar only when it is already open; never opens, reads or derives one (key counts use it: a
    # point count must not start work a range would).
    peek_sidecar: Callable[[], RangeBitmapReader | None] | None = None
    # Whether the file's reader is open in the caller's reader cache now (explain's files_cached); never opens.
    is_open: Callable[[], bool] | None = None
    # Rows read from the table's data and indexed in memory for this query (an exact-by-scan file): never held
    # to the fallback-scan budget, which bounds reads of index files.
    in_memory: bool = False


@dataclass
class ColumnIndex:
    """Every index file of one column (all ranges) and the column's fallback-scan budget (spec §6)."""

    column: str
    kt: KeyType
    files: list[IndexFileRef]
    fallback_scan_max_size: int = DEFAULT_FALLBACK_SCAN_MAX_SIZE
    # True when ids inside a row range may have gaps (a table with its own row-id column): the rows a
    # range holds are then the union of its files' null and non-null rows, not all of [start, end].
    sparse: bool = False
    # The leaf operators its index family answers (index_format.families); None: every operator.
    answers: frozenset[str] | None = None
    # Its family (index_format.families), the operators it answers by seeking in key order (never held to
    # the fallback budget), and the family's preference rank among indexes that answer a leaf equally well.
    family: str = "bitmap"
    seeks: frozenset[str] = frozenset()
    rank: int = 0
    # The column's other indexes (other families): each leaf is answered by the cheapest that can (the plan picks).
    alternatives: tuple[ColumnIndex, ...] = ()
    # An array index whose null-rows bitmaps hold the rows where a look-up that misses is UNKNOWN (a null array
    # or one with a null element), so NOT over its array leaves is exact (the in-memory files of scanned rows;
    # a multivalue index cannot tell a null array from one without the value, spec §8).
    element_nulls: bool = False
    # Sparse ids, when the caller knows them: the ids its files hold that still name the rows they were built from
    # (a table's own id column: the ids of the data files it indexed, unchanged since). Coverage is then these
    # ids, not the spans of its row ranges (which take in ids that never held a row), and rows its files list
    # outside them (a data file removed or rewritten since) are not its to answer. None: its row ranges.
    held: AbstractBitMap64 | None = None
    # Derived once per index (a view serves many queries): its merged row ranges and, for dense ids, their rows.
    _merged_ranges: list[ranges.Range] | None = field(default=None, init=False, repr=False, compare=False)
    _rows: FrozenBitMap64 | None = field(default=None, init=False, repr=False, compare=False)

    def answers_op(self, op: str) -> bool:
        return self.answers is None or op in self.answers

    def covered_rows(self) -> int:
        if self.held is not None:   # sparse ids: the ids it holds, not the spans of its ranges
            return len(self.held)
        return sum(e - s + 1 for s, e in self.merged_ranges())

    def merged_ranges(self) -> list[ranges.Range]:
        if self._merged_ranges is None:
            self._merged_ranges = ranges.merge([(r.range_start, r.range_end) for r in self.files])
        return self._merged_ranges

    def file_ranges(self) -> list[ranges.Range]:
        """Each file's row range, as the manifest lists them (not merged)."""
        return [(r.range_start, r.range_end) for r in self.files]

    def uncovered(self, table_ids: AbstractBitMap64) -> BitMap64:
        """The ids of `table_ids` (a table's ids holding rows) this index does not cover: not `held`, or without
        it outside its row ranges."""
        if self.held is not None:
            return BitMap64(table_ids) - self.held
        out = BitMap64(table_ids)
        for start, end in self.merged_ranges():
            out.remove_range(start, end + 1)
        return out

    def dense_rows(self) -> FrozenBitMap64:
        """Every id of the column's row ranges (dense ids only)."""
        if self._rows is None:
            self._rows = FrozenBitMap64(ranges.to_bitmap(self.merged_ranges()))
        return self._rows


def all_indexes(ci: ColumnIndex) -> tuple[ColumnIndex, ...]:
    """A column's main index and its alternatives."""
    return (ci, *ci.alternatives)


def range_groups(files: Iterable[IndexFileRef]) -> list[tuple[ranges.Range, list[IndexFileRef]]]:
    """The files grouped by row range, ranges ascending (files of one range in manifest order)."""
    groups: dict[ranges.Range, list[IndexFileRef]] = {}
    for ref in files:
        groups.setdefault((ref.range_start, ref.range_end), []).append(ref)
    return sorted(groups.items())
