"""The aggregate use case (POST /v1/tables/{name}/aggregate): a filter's rows (the query use case's answer, exact by
scan where it must be) grouped by up to three indexed columns, with counts, sums, min, max and averages from the
indexes' bitmaps (group_counts); rows no index of a group or metric column covers are read from the table's data
within the scan budget (group_scan) or named in the coverage; then ordered and paged.

Names no HTTP (service.api.routes.aggregate shapes the reply). Imports index_format, service.tables and this package.
"""
from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from pyroaring import AbstractBitMap64, BitMap64

from index_format import ranges
from index_format.errors import UnknownColumnError
from index_format.families import family
from index_format.literals import to_json
from index_format.predicate.column_index import ColumnIndex
from index_format.types import KeyType
from service.catalog.catalog_errors import CorruptTableMetadataError, DataFileError, IndexNotFoundError
from service.observability.metrics import Metrics
from service.query.group_counts import (
    NUMERIC_TYPES, Accumulator, GroupKey, Partition, best_index, coded_groups, combine, metric_of, partition,
)
from service.query.group_scan import scan_groups
from service.query.query_errors import (
    AggregateError, AggregateTooLargeError, InvalidCursorError, NotGroupableError, SnapshotChangedError,
    TooManyGroupsError,
)
from service.query.query_service import QueryService, TableView
from service.query.results import decode_cursor, encode_cursor
from service.query.row_scan import planned_scan

__all__ = ["MAX_INTERSECTIONS", "AggregateAsk", "MetricAsk", "OrderAsk", "indexed_column",
           "run_aggregate"]

MAX_INTERSECTIONS = 4_000_000    # bitmap intersections one aggregate may make (groups × keys of the next column)
OPS = ("count", "sum", "min", "max", "avg")


@dataclass(frozen=True, slots=True)
class MetricAsk:
    """One metric: `op` over `column` (count with no column: rows); `name` its key in the reply."""

    op: str = "count"
    column: str | None = None
    name: str | None = None


@dataclass(frozen=True, slots=True)
class OrderAsk:
    """Order groups by a metric's name or a group column, ascending (NULLS FIRST) or descending (NULLS LAST)."""

    by: str
    desc: bool = False


@dataclass(frozen=True, slots=True)
class AggregateAsk:
    where: str | None = None
    predicate: Mapping[str, Any] | None = None
    group_by: Sequence[str] = ()
    metrics: Sequence[MetricAsk] = (MetricAsk(),)
    order_by: Sequence[OrderAsk] = ()
    limit: int = 1000
    cursor: str | None = None
    explain: bool | str = False   # True: with the answer; "plan": the plan only (no index file opened)
    scan: str = "auto"


@dataclass(frozen=True, slots=True)
class _Metric:
    op: str
    column: str | None
    name: str


@dataclass
class _Group:
    count: int = 0
    acc: dict[str, Accumulator] = field(default_factory=dict)   # metric column → its accumulator


def run_aggregate(qs: QueryService, metrics: Metrics, name: str, ask: AggregateAsk,
                  deadline: float) -> dict[str, Any]:
    """The whole aggregate, on a query thread; returns the JSON reply (groups, exact, coverage, snapshots, paging).

    Raises:
        UnknownColumnError: a group, metric or order column the table does not have.
        NotGroupableError: a table column with no index. AggregateError: a bad metric or order.
        TooManyGroupsError, AggregateTooLargeError: past `qs.max_groups` groups (BGIX_AGGREGATE_MAX_GROUPS) or
            MAX_INTERSECTIONS intersections.
        QueryTimeoutError: past `deadline`. What a query raises for a bad predicate.
    """
    if ask.explain == "plan":
        return _plan(qs, metrics, name, ask, deadline)
    started = time.monotonic()
    filter_explain: dict[str, Any] | None = None
    if ask.where is None and ask.predicate is None:
        view = qs.view(name)
        rows = _live_rows(view)
        exact, filter_uncovered, used = True, [], {}
    else:
        node = qs.parse(ask.where, ask.predicate, deadline)
        outcome = qs.query(name, node, explain=bool(ask.explain), deadline=deadline, text=ask.where, scan=ask.scan)
        view, rows = outcome.view, BitMap64(outcome.answer.rows)
        exact, filter_uncovered, used = bool(outcome.answer.exact), outcome.uncovered, dict(outcome.used)
        filter_explain = outcome.answer.explain if ask.explain else None
    groups = _group_columns(qs, view, ask.group_by)
    wanted = _metrics(qs, view, ask.metrics)
    order = _order(ask.order_by, groups, wanted)
    columns = list(dict.fromkeys([*groups, *(m.column for m in wanted if m.column is not None)]))
    cis = {c: best_index(view.columns[c].index) for c in columns}
    used.update({c: view.columns[c].snapshot.id for c in columns})
    arrays = {c for c in columns if family(cis[c].family).element_keys}

    uncovered = BitMap64()   # filter rows some group or metric column's index does not cover
    for ci in cis.values():
        uncovered |= ci.uncovered(rows)
    indexed = rows - uncovered if uncovered else rows
    # one group column and counts only: each key's count by intersection cardinality, no key's rows built
    counts_only = _grouping(groups, wanted, arrays) == "key_counts"
    parts = [partition(cis[c], indexed, element_keys=c in arrays, max_keys=qs.max_groups, deadline=deadline,
                       counts_only=counts_only) for c in groups]
    mparts = {c: _metric_partition(cis[c], indexed, deadline)
              for c in dict.fromkeys(m.column for m in wanted if m.column is not None)}
    by_key, intersections = _index_groups(parts, indexed, mparts, qs.max_groups, deadline)

    scan: dict[str, Any] = {"rows_needed": len(uncovered), "rows_scanned": 0,
                            "status": "not_needed" if not uncovered else "over_budget"}
    if uncovered:
        if ask.scan == "never":
            scan["status"] = "never"
        elif len(uncovered) <= qs.scan_max_rows:
            try:
                _merge_scanned(qs, view, uncovered, groups, cis, arrays, list(mparts), by_key)
                scan.update(status="scanned", rows_scanned=len(uncovered))
                uncovered = BitMap64()
            except (DataFileError, CorruptTableMetadataError) as exc:
                scan.update(status="failed", reason=str(exc)[:1000])
    missing = ranges.merge([*(tuple(r) for r in filter_uncovered), *ranges.of_bitmap(uncovered)])
    complete = not missing
    out_rows = _ordered(by_key, groups, cis, wanted, order)
    fingerprint = _fingerprint(name, ask)
    offset = _offset(ask.cursor, used, view.version, fingerprint)
    page = out_rows[offset:offset + ask.limit]
    more = offset + ask.limit < len(out_rows)
    payload: dict[str, Any] = {
        "group_by": groups, "metrics": [m.name for m in wanted],
        "groups": [_group_json(k, g, groups, cis, wanted) for k, g in page],
        "total_groups": len(out_rows), "rows": len(rows), "exact": exact and complete, "snapshots": used,
        "coverage": {"complete": complete, "uncovered_ranges": [list(r) for r in missing]},
        "next_cursor": encode_cursor({"o": offset + ask.limit, "q": fingerprint, "s": used, "v": view.version})
        if more else None,
    }
    if ask.explain:
        payload["explain"] = {
            "filter": filter_explain,
            "group_by": [_part_json(p, cis[p.column]) for p in parts],
            "metrics": [_part_json(p, cis[c]) for c, p in mparts.items()],
            "intersections": intersections, "scan": scan,
            "elapsed_ms": round((time.monotonic() - started) * 1000, 3)}
    metrics.queries.labels(result="aggregate").inc()
    return payload


def _plan(qs: QueryService, metrics: Metrics, name: str, ask: AggregateAsk, deadline: float) -> dict[str, Any]:
    """How the aggregate would be answered (`"explain": "plan"`), from manifest metadata alone: the filter's query
    plan and scan step, and per group and metric column the index its groups would read, its files and the table's
    rows it does not cover, and the grouping path. No index or data file is opened; a refusal a request would meet
    by its columns (unknown, no index, a bad metric or order) is met here too."""
    filter_plan: dict[str, Any] | None = None
    scan: dict[str, object] | None = None
    used: dict[str, int] = {}
    uncovered: list[tuple[int, int]] = []
    if ask.where is not None or ask.predicate is not None:
        plan, needs, used = qs.plan(name, qs.parse(ask.where, ask.predicate, deadline), text=ask.where,
                                    count_only=True)
        filter_plan, scan = plan.to_json(), planned_scan(needs, ask.scan, qs.scan_max_rows)
        uncovered = [(int(a), int(b)) for a, b in plan.coverage.uncovered or ()]
    view = qs.view(name)
    groups = _group_columns(qs, view, ask.group_by)
    wanted = _metrics(qs, view, ask.metrics)
    _order(ask.order_by, groups, wanted)
    columns = list(dict.fromkeys([*groups, *(m.column for m in wanted if m.column is not None)]))
    cis = {c: best_index(view.columns[c].index) for c in columns}
    used = {**used, **{c: view.columns[c].snapshot.id for c in columns}}
    arrays = {c for c in columns if family(cis[c].family).element_keys}
    live = _live_rows(view)

    def column(c: str) -> dict[str, Any]:
        ci = cis[c]
        missing = ranges.of_bitmap(ci.uncovered(live))
        uncovered.extend(missing)
        return {"column": c, "index_type": ci.family, "files": len(ci.files), "covered_rows": ci.covered_rows(),
                "uncovered_ranges": [list(r) for r in missing]}

    group_json = [column(c) for c in groups]
    metric_json = [column(c) for c in dict.fromkeys(m.column for m in wanted if m.column is not None)]
    missing = ranges.merge(uncovered)
    metrics.queries.labels(result="plan").inc()
    return {"result": "plan", "group_by": groups, "metrics": [m.name for m in wanted], "snapshots": used,
            "coverage": {"complete": not missing, "uncovered_ranges": [list(r) for r in missing]},
            "plan": {"filter": filter_plan, "group_by": group_json, "metrics": metric_json,
                     "grouping": _grouping(groups, wanted, arrays)},
            "scan": scan}


def _grouping(groups: list[str], wanted: list[_Metric], arrays: set[str]) -> str:
    """How the groups are made: "none" (no group column: one group), "key_counts" (one column, counts only: each
    key's count among the filter, no key's rows built), "row_codes" (scalar columns: each row's key codes, linear
    in the rows), "intersections" (an ARRAY column: key bitmaps met level by level, capped by MAX_INTERSECTIONS)."""
    if not groups:
        return "none"
    if len(groups) == 1 and not any(m.column for m in wanted):
        return "key_counts"
    return "intersections" if arrays & set(groups) else "row_codes"


def _live_rows(view: TableView) -> BitMap64:
    live = view.table_rows()
    rows = BitMap64(live) if isinstance(live, AbstractBitMap64) else ranges.to_bitmap(live)
    return rows - view.retired if view.retired else rows


def indexed_column(qs: QueryService, view: TableView, column: str) -> str:
    """The indexed column `column` names (exact, else case-insensitive); a table column without an index is
    NotGroupableError, any other name UnknownColumnError."""
    try:
        return QueryService.resolve_column(view, column)
    except IndexNotFoundError:
        pass
    table_columns = qs.table_columns(view)
    if column in table_columns or column.lower() in {c.lower() for c in table_columns}:
        raise NotGroupableError(column, list(view.columns))
    raise UnknownColumnError(column, sorted(table_columns | set(view.columns)), "columns of the table")


def _group_columns(qs: QueryService, view: TableView, names: Sequence[str]) -> list[str]:
    out = [indexed_column(qs, view, c) for c in names]
    if len(set(out)) != len(out):
        raise AggregateError(f"group_by names a column twice: {', '.join(names)}")
    return out


def _metrics(qs: QueryService, view: TableView, asked: Sequence[MetricAsk]) -> list[_Metric]:
    out: list[_Metric] = []
    for m in asked or (MetricAsk(),):
        if m.op not in OPS:
            raise AggregateError(f"unknown metric {m.op!r}; metrics: {', '.join(OPS)}")
        column = None if m.column is None else indexed_column(qs, view, m.column)
        if column is None and m.op != "count":
            raise AggregateError(f"metric {m.op!r} needs a column")
        if column is not None:
            cv = view.columns[column]
            if family(cv.snapshot.index_type).element_keys:
                raise AggregateError(f"metric {m.op}({column}) over an ARRAY column: aggregate a scalar column")
            if m.op in ("sum", "avg") and cv.kt.name not in NUMERIC_TYPES:
                raise AggregateError(f"metric {m.op}({column}) needs a numeric column; {column!r} is "
                                     f"{cv.kt.spelling}")
        out.append(_Metric(m.op, column, m.name or (m.op if column is None else f"{m.op}_{column}")))
    names = [m.name for m in out]
    if len(set(names)) != len(names):
        raise AggregateError(f"two metrics named alike: {', '.join(names)} (give each a distinct `name`)")
    return out


def _order(asked: Sequence[OrderAsk], groups: list[str], wanted: list[_Metric]) -> list[tuple[str, int, bool]]:
    """Each order term as (kind 'metric' or 'key', its index, descending)."""
    out: list[tuple[str, int, bool]] = []
    names = [m.name for m in wanted]
    for o in asked:
        if o.by in names:
            out.append(("metric", names.index(o.by), o.desc))
            continue
        folded = [i for i, g in enumerate(groups) if g == o.by] or \
            [i for i, g in enumerate(groups) if g.lower() == o.by.lower()]
        if not folded:
            raise AggregateError(f"order_by {o.by!r} names neither a group column ({', '.join(groups) or 'none'}) "
                                 f"nor a metric ({', '.join(names)})")
        out.append(("key", folded[0], o.desc))
    return out


def _metric_partition(ci: ColumnIndex, rows: BitMap64, deadline: float) -> Partition:
    try:
        return partition(ci, rows, element_keys=False, max_keys=MAX_INTERSECTIONS, deadline=deadline)
    except TooManyGroupsError as exc:
        raise AggregateTooLargeError(MAX_INTERSECTIONS + 1, MAX_INTERSECTIONS) from exc


def _index_groups(parts: list[Partition], rows: BitMap64, mparts: Mapping[str, Partition], max_groups: int,
                  deadline: float) -> tuple[dict[GroupKey, _Group], int]:
    """Every group with rows among `rows`, from the indexes: its row count and each metric column's accumulator;
    and the bitmap intersections it took. Scalar group columns (one key per row): by each row's key codes, in
    time linear in the rows (group_counts.coded_groups); an ARRAY column (a row in several groups): by
    intersecting key bitmaps level by level (group_counts.combine)."""
    if not any(family(p.family).element_keys for p in parts) or any(p.counts is not None for p in parts):
        coded = coded_groups(parts, rows, dict(mparts), max_groups=max_groups, deadline=deadline)
        return {key: _Group(count=count, acc={c: accs[g] for c, accs in coded.metrics.items()})
                for g, (key, count) in enumerate(zip(coded.keys, coded.counts))}, 0
    combined = combine(parts, rows, keep_rows=bool(mparts), max_groups=max_groups,
                       max_intersections=MAX_INTERSECTIONS, deadline=deadline)
    keys, counts, group_rows = combined.keys, combined.counts, combined.rows
    intersections = combined.intersections
    work = len(keys) * sum(len(p.keys) for p in mparts.values())
    if work > MAX_INTERSECTIONS:
        raise AggregateTooLargeError(work, MAX_INTERSECTIONS)
    out: dict[GroupKey, _Group] = {}
    for key, count, grows in zip(keys, counts, group_rows):
        g = _Group(count=count)
        for column, mp in mparts.items():
            assert grows is not None
            g.acc[column] = metric_of(grows, mp, deadline)
        out[key] = g
    return out, intersections + work


def _merge_scanned(qs: QueryService, view: TableView, rows: BitMap64, groups: list[str],
                   cis: Mapping[str, ColumnIndex], arrays: set[str], metric_columns: list[str],
                   by_key: dict[GroupKey, _Group]) -> None:
    """Rows no index of a group or metric column covers, read from the table's data and grouped there."""
    source = qs.sources.open(view.table)
    columns = list(dict.fromkeys([*groups, *metric_columns]))
    table = source.read_rows(columns, ranges.of_bitmap(rows), version=view.version, data_files=view.data_files)
    kts = {c: cis[c].kt for c in columns}
    for key, count, stats in scan_groups(table, groups, arrays, metric_columns, kts):
        g = by_key.get(key)
        if g is None:
            if len(by_key) >= qs.max_groups:
                raise TooManyGroupsError(", ".join(groups), qs.max_groups)
            g = by_key[key] = _Group()
        g.count += count
        for column, (n, total, low, high) in stats.items():
            g.acc.setdefault(column, Accumulator()).add(n, total, low, high)


def _sort_value(v: object) -> tuple[bool, object]:
    return (v is not None, v)


def _ordered(by_key: dict[GroupKey, _Group], groups: list[str], cis: Mapping[str, ColumnIndex],
             wanted: list[_Metric], order: list[tuple[str, int, bool]]) -> list[tuple[GroupKey, _Group]]:
    """Groups in the asked order, ties by the group keys ascending; NULLS FIRST ascending, LAST descending."""
    items = sorted(by_key.items(), key=lambda kv: tuple(_sort_value(v) for v in kv[0]))
    for kind, i, desc in reversed(order):   # stable sorts, the last term first
        items.sort(key=_term_key(kind, i, wanted), reverse=desc)
    return items


def _term_key(kind: str, i: int, wanted: list[_Metric]) -> Callable[[tuple[GroupKey, _Group]], tuple[bool, object]]:
    if kind == "key":
        return lambda kv: _sort_value(kv[0][i])
    m = wanted[i]
    return lambda kv: _sort_value(_metric_value(kv[1], m))


def _metric_value(g: _Group, m: _Metric) -> object:
    if m.column is None:
        return g.count
    return g.acc.get(m.column, Accumulator()).value(m.op)


def _json_number(kt: KeyType, op: str, v: object) -> object:
    if v is None:
        return None
    if op in ("min", "max"):
        return to_json(kt, v)
    if isinstance(v, Decimal):
        return str(v)
    if isinstance(v, int) and not -(1 << 63) <= v < (1 << 63):
        return str(v)    # past JSON's safe integers: the exact digits
    if isinstance(v, float):
        return to_json(KeyType("double"), v)
    return v


def _group_json(key: GroupKey, g: _Group, groups: list[str], cis: Mapping[str, ColumnIndex],
                wanted: list[_Metric]) -> dict[str, Any]:
    return {"key": {c: to_json(cis[c].kt, v) for c, v in zip(groups, key)},
            "metrics": {m.name: g.count if m.column is None else
                        _json_number(cis[m.column].kt, m.op, _metric_value(g, m)) for m in wanted}}


def _part_json(p: Partition, ci: ColumnIndex) -> dict[str, Any]:
    return {"column": p.column, "index_type": ci.family, "files": p.files, "keys": len(p.keys)}


def _fingerprint(name: str, ask: AggregateAsk) -> str:
    text = json.dumps([name, ask.where, ask.predicate, list(ask.group_by),
                       [(m.op, m.column, m.name) for m in ask.metrics],
                       [(o.by, o.desc) for o in ask.order_by]], sort_keys=True, default=str)
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


def _offset(cursor: str | None, used: dict[str, int], version: int | None, fingerprint: str) -> int:
    """Where the page starts: 0, or a cursor's offset once it is checked to continue this aggregate, unchanged."""
    if cursor is None:
        return 0
    offset, query, snaps, v = decode_cursor(cursor, ("o", "q", "s", "v"))
    if not isinstance(offset, int) or isinstance(offset, bool) or not 0 <= offset < (1 << 62) \
            or not isinstance(query, str):
        raise InvalidCursorError("invalid cursor")
    if query != fingerprint:
        raise InvalidCursorError("cursor belongs to a different aggregate")
    if snaps != used or v != version:
        raise SnapshotChangedError("the table changed since the first page of groups; restart without a cursor")
    return offset
