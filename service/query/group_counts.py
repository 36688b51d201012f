"""Group counts and metrics from index bitmaps: a filter's rows split by the keys of up to three indexed columns,
counts as intersection cardinalities, sums as key × intersection cardinality; no id list is built per row.

Imports index_format (readers through ColumnIndex, ranges) and this package's errors only.
"""
from __future__ import annotations

import time
from array import array
from dataclasses import dataclass, field
from decimal import Decimal

import numpy as np
from pyroaring import AbstractBitMap, AbstractBitMap64, BitMap, BitMap64

from index_format import ranges
from index_format.errors import QueryTimeoutError
from index_format.predicate.column_index import ColumnIndex, all_indexes
from index_format.types import FLOAT_NAMES, INTEGER_NAMES, KeyType
from service.query.query_errors import AggregateTooLargeError, TooManyGroupsError

__all__ = ["NUMERIC_TYPES", "Accumulator", "GroupKey", "Partition", "best_index", "combine", "metric_of",
           "partition"]

NUMERIC_TYPES = frozenset((*INTEGER_NAMES, *FLOAT_NAMES, "decimal"))
_U32 = 1 << 32
_CHECK_EVERY = 256          # keys or intersections between two looks at the deadline

GroupKey = tuple[object, ...]   # one value per group column; None is SQL's NULL group


def _check(deadline: float | None) -> None:
    if deadline is not None and time.monotonic() > deadline:
        raise QueryTimeoutError()   # the query pool turns it into its budget's 503


@dataclass(frozen=True, slots=True)
class Partition:
    """The filter's rows of one column split by its keys (global ids): `rows[i]` holds the rows whose key (or,
    for an ARRAY column, one of whose elements) is `keys[i]`; key None is the NULL group (scalar columns only).
    `uncovered`: rows of the filter no file of the index covers (they appear in no group)."""

    column: str
    kt: KeyType
    family: str
    keys: list[object]
    rows: list[BitMap64]
    uncovered: BitMap64
    files: int


def best_index(ci: ColumnIndex) -> ColumnIndex:
    """The index of a column that groups best: the one covering most rows, then the family's preference rank."""
    return min(all_indexes(ci), key=lambda c: (-c.covered_rows(), c.rank))


def partition(ci: ColumnIndex, rows: AbstractBitMap64, *, element_keys: bool, max_keys: int,
              deadline: float | None = None) -> Partition:
    """Split `rows` (global ids, live rows only) by the keys of index `ci`, reading every file's keys once.

    Files of one row range are OR-ed (a key may sit in several files); a key with no row of `rows` is left out.
    `element_keys` (ARRAY columns): keys are elements and there is no NULL group (the index holds none).
    Raises TooManyGroupsError past `max_keys` distinct keys with rows; the deadline's error past `deadline`.
    """
    held = rows if ci.held is None else BitMap64(rows) & ci.held
    acc: dict[object, BitMap64] = {}
    nulls = BitMap64()
    seen = 0
    for ref in ci.files:
        inside = BitMap64(held) & ranges.to_bitmap([(ref.range_start, ref.range_end)])
        if not inside:
            continue
        local = inside.shift(-ref.range_start)
        # a 32-bit copy of the file's filter rows meets the bitmap family's cached 32-bit maps without conversion
        local32 = BitMap(array("I", _ids(local).astype(np.uint32).tobytes())) if local.max() < _U32 else None
        reader = ref.open()
        if not element_keys:
            n = local & reader.null_rows()
            if n:
                nulls |= n.shift(ref.range_start)
        for key, bm in reader.key_bitmaps():
            seen += 1
            if seen % _CHECK_EVERY == 0:
                _check(deadline)
            if local32 is not None and isinstance(bm, AbstractBitMap):
                small = local32 & bm
                if not small:
                    continue
                got = BitMap64(array("Q", (np.frombuffer(small.to_array(), dtype=np.uint32).astype(np.uint64)
                                          + np.uint64(ref.range_start)).tobytes()))
            else:
                if not local.intersect(bm):  # type: ignore[arg-type]  # a 64-bit map here
                    continue
                got = (local & bm).shift(ref.range_start)  # type: ignore[operator]  # likewise
            have = acc.get(key)
            if have is None:
                if len(acc) >= max_keys:
                    raise TooManyGroupsError(ci.column, max_keys)
                acc[key] = got
            else:
                have |= got
    keys: list[object] = sorted(acc, key=_sort_key)
    parts = [acc[k] for k in keys]
    if nulls:
        keys.insert(0, None)     # NULLS FIRST in key order
        parts.insert(0, nulls)
    return Partition(column=ci.column, kt=ci.kt, family=ci.family, keys=keys, rows=parts,
                     uncovered=ci.uncovered(rows), files=len(ci.files))


def _ids(bm: AbstractBitMap64) -> np.ndarray:
    return np.frombuffer(bm.to_array(), dtype=np.uint64)


def _sort_key(v: object) -> tuple[int, object]:
    return (0, 0) if v is None else (1, v)


@dataclass(slots=True)
class Accumulator:
    """One metric of one group, merged from the index and from scanned rows: non-null count, sum, min, max."""

    count: int = 0
    total: object = 0
    low: object = None
    high: object = None

    def add(self, count: int, total: object, low: object, high: object) -> None:
        if not count:
            return
        self.count += count
        self.total = _add(self.total, total)
        # keys of one column compare with each other
        if self.low is None or (low is not None and low < self.low):  # type: ignore[operator]  # see above
            self.low = low
        if self.high is None or (high is not None and high > self.high):  # type: ignore[operator]  # see above
            self.high = high

    def value(self, op: str) -> object:
        """The metric `op` (count, sum, min, max, avg) as SQL gives it: NULL over no non-null value (count: 0)."""
        if op == "count":
            return self.count
        if not self.count:
            return None
        if op == "sum":
            return self.total
        if op == "min":
            return self.low
        if op == "max":
            return self.high
        total = self.total
        if isinstance(total, Decimal):
            return total / self.count
        return float(total) / self.count  # type: ignore[arg-type]  # an int or float sum


def _add(a: object, b: object) -> object:
    if isinstance(a, Decimal) or isinstance(b, Decimal):
        return Decimal(str(a)) + Decimal(str(b)) if not isinstance(a, Decimal) or not isinstance(b, Decimal) \
            else a + b
    return a + b  # type: ignore[operator]  # numeric sums


def metric_of(group: AbstractBitMap64, metric: Partition, deadline: float | None = None) -> Accumulator:
    """Count, sum, min and max of a numeric column over the rows `group`: key × |group ∩ key's rows| per key
    (keys ascending, so the first and last keys met are the min and max); the NULL key adds nothing."""
    acc = Accumulator()
    for i, (key, rows) in enumerate(zip(metric.keys, metric.rows)):
        if key is None:
            continue
        if i % _CHECK_EVERY == _CHECK_EVERY - 1:
            _check(deadline)
        c = group.intersection_cardinality(rows)
        if c:
            total = key * c if isinstance(key, (int, float, Decimal)) else 0   # min/max of strings: no sum
            acc.add(c, total, key, key)
    return acc


@dataclass
class Combined:
    """Groups of every key combination with rows: their rows (when a metric needs them) or their row counts."""

    keys: list[GroupKey] = field(default_factory=list)
    rows: list[AbstractBitMap64 | None] = field(default_factory=list)
    counts: list[int] = field(default_factory=list)
    intersections: int = 0


def combine(parts: list[Partition], base: AbstractBitMap64, *, keep_rows: bool, max_groups: int,
            max_intersections: int, deadline: float | None = None) -> Combined:
    """Every combination of the partitions' keys whose rows intersect: level by level, a group's rows built only
    where a later level or a metric needs them, the last level counted by intersection cardinality alone.

    Raises TooManyGroupsError past `max_groups` groups, AggregateTooLargeError past `max_intersections` bitmap
    intersections (the product of the levels' key counts), the deadline's error past `deadline`.
    """
    out = Combined()
    level: list[tuple[GroupKey, AbstractBitMap64]] = [((), base)]
    for depth, p in enumerate(parts):
        last = depth == len(parts) - 1
        build = not last or keep_rows
        if depth and len(level) * len(p.keys) > max_intersections:
            raise AggregateTooLargeError(len(level) * len(p.keys), max_intersections)
        nxt: list[tuple[GroupKey, AbstractBitMap64]] = []
        for keys, rows in level:
            for key, key_rows in zip(p.keys, p.rows):
                out.intersections += 1
                if out.intersections % _CHECK_EVERY == 0:
                    _check(deadline)
                if depth == 0:
                    got: AbstractBitMap64 | int = key_rows if build else len(key_rows)
                elif build:
                    got = rows & key_rows
                else:
                    got = rows.intersection_cardinality(key_rows)
                if not got:
                    continue
                if len(nxt) + len(out.keys) >= max_groups:
                    raise TooManyGroupsError(", ".join(q.column for q in parts), max_groups)
                if last:
                    out.keys.append((*keys, key))
                    out.rows.append(None if isinstance(got, int) else got)
                    out.counts.append(got if isinstance(got, int) else len(got))
                else:
                    assert not isinstance(got, int)
                    nxt.append(((*keys, key), got))
        level = nxt
    return out

