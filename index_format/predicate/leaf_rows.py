"""The per-file evaluator: one bound leaf × one index file → LOCAL row ids of that file (spec §2.10, §6).

`matching_rows` answers the leaf's positive form (`ne` → its `eq` rows), array operators by their elements
(spec §8: `array_contains` a look-up, `arrays_overlap` IN, `array_contains_all` an intersection); answer.py
calls it for every candidate file and applies the operator table's complement and null rules per row range
(spec §5.4, §5.5) and the budgets (they need file sizes). UNSUPPORTED is a value, never an exception.
Imports the reader only for typing; never the writer.
"""
from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING, Final, cast

from pyroaring import BitMap64

from index_format import keys
from index_format.predicate.intervals import Interval, IntervalSet
from index_format.predicate.operators import OPERATORS
from index_format.predicate.tree import BoundLeaf

if TYPE_CHECKING:
    from index_format.index_reader import IndexReader
    from index_format.range_bitmap import RangeBitmapReader

# Positive operators a range sidecar answers with comparisons on its codes (predicate/answer.py asks it).
SIDECAR_OPS = frozenset(("lt", "le", "gt", "ge", "between", "not_between", "range_set"))
# Positive operators a sidecar can count (not list rows of) once its key counts are built.
KEY_COUNT_OPS = frozenset(("eq", "in"))


class Unsupported:
    """The index declines to answer (type, NULL bound or budget); the caller must scan instead."""

    _instance: Unsupported | None = None

    def __new__(cls) -> Unsupported:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNSUPPORTED"

    def __reduce__(self) -> tuple[type, tuple[()]]:
        return (Unsupported, ())


UNSUPPORTED: Final = Unsupported()


@functools.lru_cache(maxsize=256)
def _compiled(regex: str) -> re.Pattern[str]:
    return re.compile(regex)


def matching_rows(leaf: BoundLeaf, reader: IndexReader, values: tuple[object, ...] | None = None) -> BitMap64:
    """Local rows of one file where the POSITIVE form of `leaf` is TRUE (for `ne` the rows equal to the value, …).

    `values` optionally narrows an IN list to the literals inside this file's key bounds.
    Must not be called for unsupported or constant leaves.

    Raises:
        ValueError: a leaf with no per-file evaluation (a bind-time constant).
        IndexFormatError: the file is corrupt (names the file and block).
    """
    op = OPERATORS[leaf.op].positive if leaf.op in OPERATORS else leaf.op
    if op in ("eq", "array_contains"):
        return reader.eq(leaf.value)
    if op in ("in", "arrays_overlap"):
        return reader.isin(leaf.values if values is None else values)
    if op == "array_contains_all":
        return _contains_all(leaf, reader, values)
    if op == "is_null":
        return reader.null_rows()
    if op in ("lt", "le"):
        return reader.range(None, leaf.value, high_inclusive=op == "le")
    if op in ("gt", "ge"):
        return reader.range(leaf.value, None, low_inclusive=op == "ge")
    if op == "between":
        low, high = keys.sort_key(leaf.kt, leaf.low), keys.sort_key(leaf.kt, leaf.high)
        if low > high:  # type: ignore[operator]  # one key type: both bytes or both int
            return BitMap64()  # spec §5.5: low > high → empty
        return reader.range(leaf.low, leaf.high)
    if op == "not_between":
        below = reader.range(None, leaf.low, high_inclusive=False)
        return below | reader.range(leaf.high, None, low_inclusive=False)
    if op == "range_set":
        # merged comparisons (predicate/merge.py): single keys in one lookup, then each interval
        points = [iv.low for iv in leaf.intervals if iv.is_point]
        out = reader.isin(points) if points else BitMap64()
        for iv in leaf.intervals:
            if not iv.is_point:
                out |= reader.range(iv.low, iv.high, low_inclusive=iv.low_inclusive,
                                    high_inclusive=iv.high_inclusive)
        return out
    if op in ("starts_with", "ends_with", "contains") and leaf.value == "":
        return reader.non_null_rows()  # spec §5.5: empty literal → every non-null row
    if op == "starts_with":
        return reader.starts_with(str(leaf.value))
    # a reader with its own substring search (the fm family) answers these without reading every key
    if op in ("ends_with", "contains", "like"):
        own = getattr(reader, op, None)
        if callable(own):
            return cast(BitMap64, own(str(leaf.pattern if op == "like" else leaf.value)))
    if op == "ends_with":
        suffix = str(leaf.value).encode("utf-8")
        return reader.scan_bytes(lambda b: bytes(b).endswith(suffix))
    if op == "contains":
        needle = str(leaf.value).encode("utf-8")
        return reader.scan_bytes(lambda b: needle in bytes(b))
    if op == "like":
        matcher = _compiled(str(leaf.regex)).match
        return reader.scan(lambda v: isinstance(v, str) and matcher(v) is not None)
    raise ValueError(f"no per-file evaluation for {leaf!r}")


def _contains_all(leaf: BoundLeaf, reader: IndexReader, values: tuple[object, ...] | None) -> BitMap64:
    """spec §8: rows whose array holds every element: the intersection of one look-up per element, stopping at
    the first element with no row. `values` narrowed to the file's key bounds (fewer than the leaf's) means
    an element lies outside them: no row of this file holds it."""
    if not leaf.values or (values is not None and len(values) < len(leaf.values)):
        return BitMap64()
    out: BitMap64 | None = None
    for v in leaf.values:
        rows = reader.eq(v)
        out = rows if out is None else out & rows
        if not out:
            break
    assert out is not None
    return out


def _single_gap(leaf: BoundLeaf) -> Interval | None:
    """The one bounded interval a range_set leaves out, when it is everything else (`a < x OR a > y`)."""
    ivs = leaf.intervals
    if len(ivs) != 2 or ivs[0].low is not None or ivs[1].high is not None:
        return None
    (gap,) = IntervalSet.of(leaf.kt, ivs).complement().intervals or (None,)
    return gap if gap is not None and gap.low is not None and gap.high is not None else None


def sidecar_rows(leaf: BoundLeaf, sidecar: RangeBitmapReader) -> BitMap64:
    """Local rows where the POSITIVE form of a range leaf (SIDECAR_OPS) is TRUE, from the file's range
    sidecar: the same rows matching_rows finds in the bitmap file, with a few operations per range."""
    op = OPERATORS[leaf.op].positive if leaf.op in OPERATORS else leaf.op
    if op in ("lt", "le"):
        return sidecar.range(None, leaf.value, high_inclusive=op == "le")
    if op in ("gt", "ge"):
        return sidecar.range(leaf.value, None, low_inclusive=op == "ge")
    if op == "between":
        return sidecar.range(leaf.low, leaf.high)   # low > high: no code lies inside → empty
    if op == "not_between":
        below = sidecar.range(None, leaf.low, high_inclusive=False)
        return below | sidecar.range(leaf.high, None, low_inclusive=False)
    if op == "range_set":
        gap = _single_gap(leaf)
        if gap is not None:
            # `a < x OR a > y`: every non-null row minus one two-sided range (one pass over the slices, not two)
            return sidecar.non_null_rows() - sidecar.range(gap.low, gap.high, low_inclusive=gap.low_inclusive,
                                                           high_inclusive=gap.high_inclusive)
        parts = [sidecar.range(iv.low, iv.high, low_inclusive=iv.low_inclusive, high_inclusive=iv.high_inclusive)
                 for iv in leaf.intervals]
        return BitMap64().union(*parts) if parts else BitMap64()
    raise ValueError(f"no sidecar evaluation for {leaf!r}")


def sidecar_count(leaf: BoundLeaf, sidecar: RangeBitmapReader | IndexReader) -> int | None:
    """len(sidecar_rows(leaf, sidecar)), with counts of the bit-slice sweeps (no bitmap is built where the
    sidecar's dense planes answer); an index reader (a btree's entry counts) counts the same way. Merged intervals are disjoint, so their counts add up. For `eq` / `in`
    the key counts, None while the sidecar has none."""
    op = OPERATORS[leaf.op].positive if leaf.op in OPERATORS else leaf.op
    if op == "eq":
        return sidecar.count_keys((leaf.value,))
    if op == "in":
        return sidecar.count_keys(leaf.values)
    if op in ("lt", "le"):
        return sidecar.count_range(None, leaf.value, high_inclusive=op == "le")
    if op in ("gt", "ge"):
        return sidecar.count_range(leaf.value, None, low_inclusive=op == "ge")
    if op == "between":
        return sidecar.count_range(leaf.low, leaf.high)
    if op == "not_between":   # the two sides overlap when low > high: count what lies between instead
        return sidecar.non_null_count() - sidecar.count_range(leaf.low, leaf.high)
    if op == "range_set":
        gap = _single_gap(leaf)
        if gap is not None:
            return sidecar.non_null_count() - sidecar.count_range(
                gap.low, gap.high, low_inclusive=gap.low_inclusive, high_inclusive=gap.high_inclusive)
        return sum(sidecar.count_range(iv.low, iv.high, low_inclusive=iv.low_inclusive,
                                       high_inclusive=iv.high_inclusive) for iv in leaf.intervals)
    raise ValueError(f"no sidecar evaluation for {leaf!r}")
