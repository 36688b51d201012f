"""Value-interval algebra of one column: the sets of keys that comparisons on that column select.

Comparisons, IN lists and their complements on one column are all sets of intervals of its keys in
Java order (keys.sort_key). Intersect, union and complement them here, so `a >= x AND a < y` becomes one
range `[x, y)` and `a = 1 OR a = 2` one IN list (predicate/merge.py). Row-id ranges are a different
domain (integers, always closed) and live in index_format/ranges.py.

Bounds are compared as markers on the key line: a key k sits at (k, 0); a lower bound is (k, 0) when
inclusive and (k, +1) when exclusive; an upper bound (k, 0) when inclusive and (k, −1) when exclusive.
An interval is empty exactly when its lower marker lies above its upper marker.
Imports keys and types only.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from index_format import keys
from index_format.types import KeyType


@dataclass(frozen=True, slots=True)
class Interval:
    """Keys between `low` and `high` (canonical values of the column type; None = unbounded)."""

    low: object = None
    high: object = None
    low_inclusive: bool = True
    high_inclusive: bool = True

    @property
    def is_point(self) -> bool:
        return (self.low is not None and self.low_inclusive and self.high_inclusive
                and self.high is not None and _same(self.low, self.high))

    def __repr__(self) -> str:
        if self.is_point:
            return f"{{{self.low!r}}}"
        lo = "(-inf" if self.low is None else ("[" if self.low_inclusive else "(") + repr(self.low)
        hi = "+inf)" if self.high is None else repr(self.high) + ("]" if self.high_inclusive else ")")
        return f"{lo}, {hi}"


def _same(a: object, b: object) -> bool:
    """The same key: NaN equals NaN, and -0.0 is not 0.0 (Java order keeps them apart)."""
    if isinstance(a, float) and isinstance(b, float):
        return (a != a and b != b) or (a == b and math.copysign(1.0, a) == math.copysign(1.0, b))
    return a is b or a == b


# A marker: (rank, sort key, tag, value); rank 0 = -inf, 1 = a key, 2 = +inf. Compared on the first three.
_Marker = tuple[int, Any, int, object]
_NEG_INF: _Marker = (0, 0, 0, None)
_POS_INF: _Marker = (2, 0, 0, None)


def _key(m: _Marker) -> tuple[int, Any, int]:
    return m[0], m[1], m[2]


class IntervalSet:
    """A sorted list of disjoint, non-empty intervals over one key type; immutable."""

    __slots__ = ("kt", "_spans")

    def __init__(self, kt: KeyType, spans: Sequence[tuple[_Marker, _Marker]]) -> None:
        self.kt = kt
        self._spans = tuple(spans)

    # ---------------------------------------------------------------- building
    @classmethod
    def of(cls, kt: KeyType, intervals: Iterable[Interval]) -> IntervalSet:
        spans = [(_lower(kt, iv), _upper(kt, iv)) for iv in intervals]
        return cls(kt, _normalize([s for s in spans if not _empty(*s)]))

    @classmethod
    def points(cls, kt: KeyType, values: Iterable[object]) -> IntervalSet:
        return cls.of(kt, (Interval(v, v) for v in values))

    @classmethod
    def everything(cls, kt: KeyType) -> IntervalSet:
        return cls(kt, [(_NEG_INF, _POS_INF)])

    # ---------------------------------------------------------------- algebra
    def intersect(self, other: IntervalSet) -> IntervalSet:
        out: list[tuple[_Marker, _Marker]] = []
        a, b = self._spans, other._spans
        i = j = 0
        while i < len(a) and j < len(b):
            lo = max(a[i][0], b[j][0], key=_key)
            hi = min(a[i][1], b[j][1], key=_key)
            if not _empty(lo, hi):
                out.append((lo, hi))
            if _key(a[i][1]) <= _key(b[j][1]):
                i += 1
            else:
                j += 1
        return IntervalSet(self.kt, out)

    def union(self, other: IntervalSet) -> IntervalSet:
        return IntervalSet(self.kt, _normalize([*self._spans, *other._spans]))

    @classmethod
    def union_all(cls, kt: KeyType, sets: Sequence[IntervalSet]) -> IntervalSet:
        """One sort for any number of sets (an OR of 20,000 equalities is not 20,000 unions)."""
        return cls(kt, _normalize([span for s in sets for span in s._spans]))

    @classmethod
    def intersect_all(cls, kt: KeyType, sets: Sequence[IntervalSet]) -> IntervalSet:
        """The keys in every set: the complement of the union of the complements (one sort)."""
        return cls.union_all(kt, [s.complement() for s in sets]).complement()

    def complement(self) -> IntervalSet:
        out: list[tuple[_Marker, _Marker]] = []
        start: _Marker = _NEG_INF
        for lo, hi in self._spans:
            if lo[0] != 0:
                gap_hi: _Marker = (lo[0], lo[1], lo[2] - 1, lo[3])
                if not _empty(start, gap_hi):
                    out.append((start, gap_hi))
            if hi[0] == 2:
                return IntervalSet(self.kt, out)
            start = (hi[0], hi[1], hi[2] + 1, hi[3])
        out.append((start, _POS_INF))
        return IntervalSet(self.kt, out)

    # ---------------------------------------------------------------- reading
    @property
    def intervals(self) -> tuple[Interval, ...]:
        return tuple(_interval(lo, hi) for lo, hi in self._spans)

    def point_values(self) -> tuple[object, ...] | None:
        """The keys when every interval is a single key, else None."""
        if not all(_is_point(lo, hi) for lo, hi in self._spans):
            return None
        return tuple(lo[3] for lo, _ in self._spans)

    def __bool__(self) -> bool:
        return bool(self._spans)

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, IntervalSet) and self.kt == other.kt
                and [(_key(a), _key(b)) for a, b in self._spans] == [(_key(a), _key(b)) for a, b in other._spans])

    def __hash__(self) -> int:
        return hash(tuple((_key(a), _key(b)) for a, b in self._spans))

    def __repr__(self) -> str:
        return " ∪ ".join(map(repr, self.intervals)) or "∅"


def _lower(kt: KeyType, iv: Interval) -> _Marker:
    return _NEG_INF if iv.low is None else (1, keys.sort_key(kt, iv.low), 0 if iv.low_inclusive else 1, iv.low)


def _upper(kt: KeyType, iv: Interval) -> _Marker:
    return _POS_INF if iv.high is None else (1, keys.sort_key(kt, iv.high), 0 if iv.high_inclusive else -1, iv.high)


def _empty(lo: _Marker, hi: _Marker) -> bool:
    return _key(lo) > _key(hi)


def _is_point(lo: _Marker, hi: _Marker) -> bool:
    return lo[0] == 1 and _key(lo) == _key(hi)


def _touching(hi: _Marker, lo: _Marker) -> bool:
    """[.., hi] and [lo, ..] overlap or meet with no key between them (`[a, k)` and `[k, b]`)."""
    return _key(lo) <= _key(hi) or (lo[0] == 1 and hi[0] == 1 and lo[1] == hi[1] and lo[2] == hi[2] + 1)


def _normalize(spans: list[tuple[_Marker, _Marker]]) -> list[tuple[_Marker, _Marker]]:
    spans.sort(key=lambda s: _key(s[0]))
    out: list[tuple[_Marker, _Marker]] = []
    for lo, hi in spans:
        if out and _touching(out[-1][1], lo):
            if _key(hi) > _key(out[-1][1]):
                out[-1] = (out[-1][0], hi)
        else:
            out.append((lo, hi))
    return out


def _interval(lo: _Marker, hi: _Marker) -> Interval:
    return Interval(lo[3], hi[3], lo[2] == 0, hi[2] == 0)
