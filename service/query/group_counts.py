"""Group counts and metrics from index bitmaps: a filter's rows split by the keys of up to three indexed columns,
counts as intersection cardinalities, sums as key × intersection cardinality; no id list is built per row.

Imports index_format (readers through ColumnIndex, ranges) and this package's errors only.
"""
from __future__ import annotations

import time
from array import array
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TypeVar

import numpy as np
from pyroaring import AbstractBitMap, AbstractBitMap64, BitMap, BitMap64

from index_format import bitmaps, ranges
from index_format.errors import QueryTimeoutError
from index_format.index_reader import IndexReader, KeyCounts
from index_format.keys import deserialize_key
from index_format.predicate.column_index import ColumnIndex, IndexFileRef, all_indexes
from index_format.types import FLOAT_NAMES, INTEGER_NAMES, KeyType
from service.query.query_errors import AggregateTooLargeError, TooManyGroupsError

__all__ = ["NUMERIC_TYPES", "Accumulator", "Coded", "GroupKey", "Partition", "best_index", "coded_groups", "combine",
           "metric_of", "partition"]

NUMERIC_TYPES = frozenset((*INTEGER_NAMES, *FLOAT_NAMES, "decimal"))
_CHECK_EVERY = 256          # keys or intersections between two looks at the deadline

GroupKey = tuple[object, ...]   # one value per group column; None is SQL's NULL group
T = TypeVar("T")


def _check(deadline: float | None) -> None:
    if deadline is not None and time.monotonic() > deadline:
        raise QueryTimeoutError()   # the query pool turns it into its budget's 503


@dataclass(frozen=True, slots=True)
class Partition:
    """The filter's rows of one column split by its keys (global ids): `rows[i]` holds the rows whose key (or,
    for an ARRAY column, one of whose elements) is `keys[i]`; key None is the NULL group (scalar columns only).
    `uncovered`: rows of the filter no file of the index covers (they appear in no group). `counts`: each key's
    row count, set instead of `rows` (empty) by partition(counts_only=True)."""

    column: str
    kt: KeyType
    family: str
    keys: list[object]
    rows: list[BitMap64]
    uncovered: BitMap64
    files: int
    counts: list[int] | None = None


def best_index(ci: ColumnIndex) -> ColumnIndex:
    """The index of a column that groups best: the one covering most rows, then the family's preference rank."""
    return min(all_indexes(ci), key=lambda c: (-c.covered_rows(), c.rank))


def partition(ci: ColumnIndex, rows: AbstractBitMap64, *, element_keys: bool, max_keys: int,
              deadline: float | None = None, counts_only: bool = False) -> Partition:
    """Split `rows` (global ids, live rows only) by the keys of index `ci`, reading every file's keys once.

    Files of one row range are OR-ed (a key may sit in several files); a key with no row of `rows` is left out.
    `element_keys` (ARRAY columns): keys are elements and there is no NULL group (the index holds none).
    `counts_only`: each key's row count by intersection cardinality alone (no key's rows built), while the files
    hold disjoint rows (else as without it).
    Raises TooManyGroupsError past `max_keys` distinct keys with rows; the deadline's error past `deadline`.
    """
    held = rows if ci.held is None else BitMap64(rows) & ci.held
    insides = [BitMap64(held) & ranges.to_bitmap([(ref.range_start, ref.range_end)]) for ref in ci.files]
    if counts_only and sum(len(i) for i in insides) == len(BitMap64.union(BitMap64(), *insides)):
        return _partition_counts(ci, insides, rows, max_keys=max_keys, element_keys=element_keys,
                                 deadline=deadline)
    # at most one key per filter row (an ARRAY column: per element; its files' footers count their keys)
    bound = (sum(ref.open().value_count for ref, i in zip(ci.files, insides) if i) if element_keys
             else sum(len(i) for i in insides))
    if bound > max_keys:
        # the cap may be passed: find out by counts first, before any group's rows are built key by key
        _key_counts(ci, insides, max_keys=max_keys, element_keys=element_keys, deadline=deadline)
    acc: dict[object, BitMap64] = {}
    nulls = BitMap64()
    for ref, local, local32, reader in _files(ci, insides, deadline):
        if not element_keys:
            n = local & reader.null_rows()
            if n:
                nulls |= n.shift(ref.range_start)
        for key, bm in _checked(reader.key_bitmaps(), deadline):
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


def _partition_counts(ci: ColumnIndex, insides: list[BitMap64], rows: AbstractBitMap64, *, max_keys: int,
                      element_keys: bool, deadline: float | None) -> Partition:
    """partition(counts_only=True) over files holding disjoint rows (`insides`: each file's filter rows)."""
    acc, nulls = _key_counts(ci, insides, max_keys=max_keys, element_keys=element_keys, deadline=deadline)
    merged: dict[object, int] = {}
    for k, c in acc.items():    # one value may have two spellings (bytes) across files
        key = deserialize_key(ci.kt, k)
        merged[key] = merged.get(key, 0) + c
    keys: list[object] = sorted(merged, key=_sort_key)
    counts = [merged[k] for k in keys]
    if nulls:
        keys.insert(0, None)
        counts.insert(0, nulls)
    return Partition(column=ci.column, kt=ci.kt, family=ci.family, keys=keys, rows=[], uncovered=ci.uncovered(rows),
                     files=len(ci.files), counts=counts)


def _key_counts(ci: ColumnIndex, insides: list[BitMap64], *, max_keys: int, element_keys: bool,
                deadline: float | None) -> tuple[dict[bytes, int], int]:
    """({serialized key: rows of the filter}, null rows of the filter) over every file of `ci`, by the readers'
    key_counts(among=…): a btree meets each data block's ids with the filter at once, so a column of millions of
    keys meets the groups cap after a few blocks, with no key decoded and no bitmap built per key (a refused
    GROUP BY costs little beside other requests). Raises TooManyGroupsError past `max_keys` keys with rows."""
    acc: dict[bytes, int] = {}
    nulls = 0
    for _, local, _, reader in _files(ci, insides, deadline):
        if not element_keys:
            nulls += local.intersection_cardinality(reader.null_rows())
        batches: list[tuple[KeyCounts, np.ndarray]] = []
        seen = 0
        for keys, counts in _checked(reader.key_counts(among=local), deadline):
            hit = np.flatnonzero(counts)
            seen += len(hit)
            if seen > max_keys:     # one file's keys are distinct: refused before any key becomes bytes
                raise TooManyGroupsError(ci.column, max_keys)
            if len(hit):
                batches.append(((keys, counts), hit))
        mine: dict[bytes, int] = {}
        for (keys, counts), hit in batches:
            names = _key_list(keys)
            mine.update(zip([names[i] for i in hit.tolist()], counts[hit].tolist()))
        if not acc:
            acc = mine
        else:
            for k, c in mine.items():
                acc[k] = acc.get(k, 0) + c
        if len(acc) > max_keys:
            raise TooManyGroupsError(ci.column, max_keys)
    return acc, nulls


def _key_list(keys: list[bytes] | tuple[np.ndarray, np.ndarray]) -> list[bytes]:
    """key_counts' keys as a list of bytes (a reader may give one buffer and its n + 1 start offsets)."""
    if isinstance(keys, list):
        return keys
    buf, offs = keys
    raw = buf.tobytes()
    bounds = offs.tolist()
    return [raw[a:b] for a, b in zip(bounds[:-1], bounds[1:])]


def _files(ci: ColumnIndex, insides: list[BitMap64], deadline: float | None
           ) -> Iterator[tuple[IndexFileRef, BitMap64, BitMap | None, IndexReader]]:
    """Per file of `ci` holding filter rows (`insides`: each file's, global ids): (the file, those rows as local
    ids, a 32-bit copy of them when they fit, its reader), the deadline looked at before each. The 32-bit copy
    meets the bitmap family's cached 32-bit maps without conversion."""
    for ref, inside in zip(ci.files, insides):
        if not inside:
            continue
        _check(deadline)
        local = inside.shift(-ref.range_start)
        local32 = bitmaps.to_32(local)
        yield ref, local, local32, ref.open()


def _checked(pairs: Iterable[T], deadline: float | None) -> Iterator[T]:
    """`pairs`, looking at the deadline every _CHECK_EVERY of them."""
    for i, pair in enumerate(pairs, 1):
        if i % _CHECK_EVERY == 0:
            _check(deadline)
        yield pair


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



@dataclass
class Coded:
    """Groups of scalar group columns with their row counts and each metric column's accumulator."""

    keys: list[GroupKey] = field(default_factory=list)
    counts: list[int] = field(default_factory=list)
    metrics: dict[str, list[Accumulator]] = field(default_factory=dict)


def coded_groups(parts: list[Partition], rows: AbstractBitMap64, mparts: dict[str, Partition], *, max_groups: int,
                 deadline: float | None = None) -> Coded:
    """Every group of SCALAR group columns (one key per row) with rows among `rows`, in time linear in `rows`:
    each row gets its key's index per column (a code), one code per key combination, the rows sorted by it once;
    counts are the runs' lengths, and each metric is reduced over the same runs (its key indexes, ascending with
    the keys: min and max are the runs' smallest and largest index; integer sums exact in int64 where they
    cannot overflow, else in Python integers). Rows without a key in some group column are in no group.

    Raises TooManyGroupsError past `max_groups` groups; the deadline's error past `deadline`.
    """
    if len(parts) == 1 and not mparts:   # one column, counts only: its keys' rows are the groups already
        p = parts[0]
        kept = list(zip(p.keys, p.counts)) if p.counts is not None else \
            [(k, len(bm)) for k, bm in zip(p.keys, p.rows) if bm]
        if len(kept) > max_groups:
            raise TooManyGroupsError(p.column, max_groups)
        return Coded(keys=[(k,) for k, _ in kept], counts=[c for _, c in kept])
    ids = _ids(rows)
    if not parts:   # SQL's aggregate without GROUP BY: one group of every row, even of none (no codes, no sort)
        whole = np.zeros(1, dtype=np.int64)
        return Coded(keys=[()], counts=[len(ids)], metrics={
            c: _reduce_metric(mp, _codes(mp, ids, deadline), whole) if len(ids) else [Accumulator()]
            for c, mp in mparts.items()})
    code = np.zeros(len(ids), dtype=np.int64)
    valid = np.ones(len(ids), dtype=bool)
    for p in parts:
        c = _codes(p, ids, deadline)
        valid &= c >= 0
        code = code * max(1, len(p.keys)) + np.maximum(c, 0)
    sel = np.flatnonzero(valid)
    order = sel[np.argsort(code[sel], kind="stable")]
    run = code[order]
    starts = np.concatenate(([0], np.flatnonzero(np.diff(run)) + 1)) if len(run) else np.zeros(0, dtype=np.int64)
    if len(starts) > max_groups:
        raise TooManyGroupsError(", ".join(p.column for p in parts), max_groups)
    out = Coded()
    out.counts = np.diff(np.concatenate((starts, [len(run)]))).tolist()
    digits = []
    rest = run[starts]
    for p in reversed(parts):
        size = max(1, len(p.keys))
        digits.append((rest % size).tolist())
        rest = rest // size
    digits.reverse()
    out.keys = [tuple(p.keys[d[g]] for p, d in zip(parts, digits)) for g in range(len(starts))]
    for column, mp in mparts.items():
        out.metrics[column] = _reduce_metric(mp, _codes(mp, ids, deadline)[order], starts)
    return out


def _codes(p: Partition, ids: np.ndarray, deadline: float | None) -> np.ndarray:
    """Per row of `ids` (ascending), the index of its key in `p` (-1: none)."""
    codes = np.full(len(ids), -1, dtype=np.int64)
    for i, bm in enumerate(p.rows):
        if i % _CHECK_EVERY == _CHECK_EVERY - 1:
            _check(deadline)
        codes[np.searchsorted(ids, _ids(bm))] = i
    return codes


def _reduce_metric(mp: Partition, m: np.ndarray, starts: np.ndarray) -> list[Accumulator]:
    """Each run's accumulator of metric column `mp` (m: each sorted row's key index, -1 for none)."""
    if not len(starts):
        return []
    nulls = np.array([k is None for k in mp.keys] + [True], dtype=bool)   # index -1: the appended True
    has = ~nulls[m]
    n = np.add.reduceat(has.astype(np.int64), starts)
    low = np.minimum.reduceat(np.where(has, m, np.iinfo(np.int64).max), starts)
    high = np.maximum.reduceat(np.where(has, m, -1), starts)
    numeric = [k for k in mp.keys if isinstance(k, (int, float, Decimal)) and not isinstance(k, bool)]
    if len(numeric) == len(mp.keys) - int(nulls[:-1].sum()) and numeric:
        totals = _sums(mp.keys, m, has, starts)
    else:   # strings, dates…: min and max only
        totals = [0] * len(starts)
    out = []
    for g in range(len(starts)):
        c = int(n[g])
        out.append(Accumulator(count=c, total=totals[g] if c else 0,
                               low=mp.keys[int(low[g])] if c else None, high=mp.keys[int(high[g])] if c else None))
    return out


def _sums(keys: list[object], m: np.ndarray, has: np.ndarray, starts: np.ndarray) -> list[object]:
    """Per run, the sum of its rows' key values (exact for integers and decimals)."""
    present = [k for k in keys if k is not None]
    at = np.where(has, m, 0)
    if all(isinstance(k, int) for k in present):
        big = max((abs(k) for k in present), default=0)   # type: ignore[arg-type]  # ints, checked above
        if big * max(1, len(m)) < (1 << 62):
            vals = np.array([0 if k is None else k for k in keys], dtype=np.int64)
            return [int(v) for v in np.add.reduceat(np.where(has, vals[at], 0), starts)]
    if all(isinstance(k, float) for k in present):
        vals_f = np.array([0.0 if k is None else k for k in keys], dtype=np.float64)
        return [float(v) for v in np.add.reduceat(np.where(has, vals_f[at], 0.0), starts)]
    vals_o = np.array([0 if k is None else k for k in keys], dtype=object)   # Python ints, Decimals: exact
    picked = np.where(has, vals_o[at], 0)
    return [_add(0, v) for v in np.add.reduceat(picked, starts)]
