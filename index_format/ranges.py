"""Row-range algebra: sets of row ids held as sorted, inclusive [start, end] integer ranges (spec §5.1, §5.2).

The one place coverage, not-yet-indexed rows and retired ids are computed (predicate.answer, the query engine, the
catalog, the build job). Every function accepts ranges in any order, overlapping or touching, as tuples or
lists, and returns them merged: sorted `(start, end)` tuples, no two overlapping or adjacent.
Imports numpy and pyroaring only.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
from pyroaring import AbstractBitMap64, BitMap64

Range = tuple[int, int]
"""Inclusive row-id range: `(start, end)` holds `end - start + 1` ids; `start > end` holds none."""

RangeLike = Sequence[int]
"""A `Range`, or the `[start, end]` list the catalog's JSON uses."""


def merge(ranges: Iterable[RangeLike]) -> list[Range]:
    """The union of `ranges`: sorted, with overlapping and adjacent ranges joined, empty ones dropped."""
    out: list[Range] = []
    for start, end in sorted((int(r[0]), int(r[1])) for r in ranges):
        if start > end:
            continue
        if out and start <= out[-1][1] + 1:
            if end > out[-1][1]:
                out[-1] = (out[-1][0], end)
        else:
            out.append((start, end))
    return out


def intersect(*lists: Iterable[RangeLike]) -> list[Range]:
    """Ids present in every one of `lists` (a merged list); no lists gives an empty list."""
    if not lists:
        return []
    out = merge(lists[0])
    for other in lists[1:]:
        out = _intersect2(out, merge(other))
    return out


def _intersect2(a: list[Range], b: list[Range]) -> list[Range]:
    # Both merged: walk them together, advancing whichever range ends first.
    out: list[Range] = []
    i = j = 0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if lo <= hi:
            out.append((lo, hi))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return out


def subtract(ranges: Iterable[RangeLike], removed: Iterable[RangeLike]) -> list[Range]:
    """Ids of `ranges` that are in none of `removed`."""
    cut = merge(removed)
    out: list[Range] = []
    j = 0
    for start, end in merge(ranges):
        while j < len(cut) and cut[j][1] < start:  # removed ranges wholly before this one
            j += 1
        cur, k = start, j
        while k < len(cut) and cut[k][0] <= end:
            if cut[k][0] > cur:
                out.append((cur, cut[k][0] - 1))
            cur = max(cur, cut[k][1] + 1)
            k += 1
        if cur <= end:
            out.append((cur, end))
    return out


def complement(ranges: Iterable[RangeLike], total: int) -> list[Range]:
    """Ids of the universe [0, total) that are in none of `ranges` (ranges past `total` are ignored)."""
    return subtract([(0, total - 1)], ranges) if total > 0 else []


def chunks(ranges: Iterable[RangeLike], size: int) -> list[Range]:
    """Each merged range cut, from its start, into consecutive pieces of at most `size` ids (spec §5.2).

    Raises:
        ValueError: `size` is not positive.
    """
    if size <= 0:
        raise ValueError(f"chunk size must be positive, got {size}")
    return [(s, min(s + size - 1, end)) for start, end in merge(ranges) for s in range(start, end + 1, size)]


def aligned_chunks(ranges: Iterable[RangeLike], size: int) -> list[Range]:
    """Each merged range cut at the multiples of `size` (globally aligned shards `id DIV size`, spec §7.2's
    multivalue build): every piece lies inside one shard [k·size, (k+1)·size − 1].

    Raises:
        ValueError: `size` is not positive.
    """
    if size <= 0:
        raise ValueError(f"chunk size must be positive, got {size}")
    out: list[Range] = []
    for start, end in merge(ranges):
        s = start
        while s <= end:
            e = min(end, (s // size + 1) * size - 1)
            out.append((s, e))
            s = e + 1
    return out


def to_bitmap(ranges: Iterable[RangeLike]) -> BitMap64:
    """The ids of `ranges` as a 64-bit Roaring bitmap (ids must lie in [0, 2^64))."""
    out = BitMap64()
    for start, end in ranges:
        if start <= end:
            out.add_range(int(start), int(end) + 1)
    return out


def contains(ids: np.ndarray, ranges: Iterable[RangeLike]) -> np.ndarray:
    """A boolean mask: which of `ids` (integers, any order) lie inside `ranges`."""
    merged = merge(ranges)
    if not merged:
        return np.zeros(len(ids), dtype=bool)
    starts = np.fromiter((s for s, _ in merged), dtype=np.int64, count=len(merged))
    ends = np.fromiter((e for _, e in merged), dtype=np.int64, count=len(merged))
    at = np.searchsorted(starts, ids, side="right") - 1   # the last range starting at or before each id
    inside = at >= 0
    inside[inside] = ids[inside] <= ends[at[inside]]
    return inside


def of_bitmap(ids: AbstractBitMap64) -> list[Range]:
    """The runs of consecutive ids in `ids`, as merged ranges (sparse ids: one range per run, so as many as there
    are gaps)."""
    if not ids:
        return []
    arr = np.asarray(ids.to_array(), dtype=np.uint64)
    breaks = np.flatnonzero(np.diff(arr) != 1)
    starts = np.concatenate(([0], breaks + 1))
    ends = np.concatenate((breaks, [len(arr) - 1]))
    return [(int(arr[s]), int(arr[e])) for s, e in zip(starts.tolist(), ends.tolist(), strict=True)]
