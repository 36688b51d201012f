"""ORDER BY one column [ASC|DESC] LIMIT k over a query's rows, in the key order of the column's index: every file's
keys walked ascending (or descending, from the last) and merged, each key's rows ∩ the answer taken by row id, so the
walk stops after k rows; NULLS FIRST ascending, NULLS LAST descending (as Paimon); rows the index does not cover
read from the table's data within the scan budget, else left out and named.

Imports index_format, service.tables and this package only (never fastapi).
"""
from __future__ import annotations

import heapq
import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyroaring import AbstractBitMap64, BitMap64

from index_format import ranges
from index_format.errors import QueryTimeoutError
from index_format.families import family
from index_format.index_reader import IndexReader
from index_format.literals import to_json
from index_format.predicate.column_index import ColumnIndex
from index_format.types import KeyType
from service.catalog.catalog_errors import CorruptTableMetadataError, DataFileError
from service.query.group_counts import best_index
from service.query.group_scan import canonical
from service.query.query_errors import OrderByError
from service.query.query_service import QueryService, TableView
from service.query.run_aggregate import indexed_column
from service.tables.build_tasks import ROW_ID

__all__ = ["OrderedPage", "ordered_page"]

_Stream = Iterator[tuple[object, AbstractBitMap64]]


@dataclass(frozen=True, slots=True)
class OrderedPage:
    """Row ids [offset, offset + limit) of the rows in the column's order, with each row's value (JSON form);
    `more`: rows remain past the page; `uncovered`: answer rows left out (no index covers them, not scanned)."""

    column: str
    row_ids: list[int]
    values: list[object]
    more: bool
    uncovered: BitMap64
    scan: dict[str, object]


def _order_key(kt: KeyType) -> Callable[[object], Any]:
    """A key's place in Java's logical order (floats: NaN last)."""
    if kt.name in ("float", "double"):
        return lambda v: (math.isnan(v), v)  # type: ignore[arg-type]  # a float key
    return lambda v: v


def _file_stream(ci: ColumnIndex, rows: AbstractBitMap64, desc: bool) -> tuple[list[_Stream], BitMap64]:
    """Per file, its keys in order with their rows among `rows` (global ids); and the rows whose value is null."""
    streams: list[_Stream] = []
    nulls = BitMap64()
    for ref in ci.files:
        inside = BitMap64(rows) & ranges.to_bitmap([(ref.range_start, ref.range_end)])
        if not inside:
            continue
        local = inside.shift(-ref.range_start)
        reader = ref.open()
        n = local & reader.null_rows()
        if n:
            nulls |= n.shift(ref.range_start)

        def stream(reader: IndexReader = reader, local: BitMap64 = local, start: int = ref.range_start) -> _Stream:
            for key, bm in reader.entries_among(local, desc=desc):
                yield key, bm.shift(start)
        streams.append(stream())
    return streams, nulls


def _scanned_stream(table: pa.Table, column: str, kt: KeyType, desc: bool) -> tuple[list[_Stream], BitMap64]:
    """Rows read from the data as one stream of (value, its rows) in order, and their null rows."""
    values, ids = table.column(column), table.column(ROW_ID)
    nulls = BitMap64(np.asarray(ids.filter(pc.is_null(values)).to_numpy(), dtype=np.uint64))
    valid = pa.table({"v": values, "r": ids}).filter(pc.is_valid(values))
    if not valid.num_rows:
        return [], nulls
    order = pc.sort_indices(valid, sort_keys=[("v", "descending" if desc else "ascending"), ("r", "ascending")])
    valid = valid.take(order)
    vs, rs = valid.column("v").to_pylist(), valid.column("r").to_numpy()
    groups: list[tuple[object, AbstractBitMap64]] = []
    start = 0
    for i in range(1, len(vs) + 1):
        if i == len(vs) or vs[i] != vs[start]:
            groups.append((canonical(kt, vs[start]), BitMap64(rs[start:i].astype(np.uint64))))
            start = i
    return [iter(groups)], nulls


def _walk(streams: list[_Stream], nulls: BitMap64, key_of: Callable[[object], Any], *, desc: bool,
          offset: int, limit: int, deadline: float | None) -> tuple[list[int], list[object], bool]:
    """Ids [offset, offset + limit) in order (one key's rows by id; a key met in several streams once) and
    whether more follow. Stops as soon as the page is full and one more row is known."""
    def groups() -> Iterator[tuple[object, AbstractBitMap64]]:
        if nulls and not desc:
            yield None, nulls
        merged = heapq.merge(*streams, key=lambda e: key_of(e[0]), reverse=desc)
        key: object = None
        acc: BitMap64 | None = None
        for k, bm in merged:
            if acc is not None and key_of(k) == key_of(key):
                acc |= bm
                continue
            if acc is not None:
                yield key, acc
            key, acc = k, BitMap64(bm)
        if acc is not None:
            yield key, acc
        if nulls and desc:
            yield None, nulls

    ids: list[int] = []
    values: list[object] = []
    skip = offset
    for n, (key, bm) in enumerate(groups()):
        if n % 64 == 63 and deadline is not None and time.monotonic() > deadline:
            raise QueryTimeoutError()
        size = len(bm)
        if skip >= size:
            skip -= size
            continue
        need = limit + 1 - len(ids)   # one more than the page: does another row follow?
        take = list(bm[skip:skip + need])
        skip = 0
        ids += take
        values += [key] * len(take)
        if len(ids) > limit:
            return ids[:limit], values[:limit], True
    return ids, values, False


def ordered_page(qs: QueryService, view: TableView, rows: AbstractBitMap64, column: str, *, desc: bool,
                 offset: int, limit: int, scan: str, deadline: float | None) -> OrderedPage:
    """The page of `rows` (a query's answer, deleted rows already gone) ordered by `column`.

    Raises:
        UnknownColumnError / NotGroupableError: a column the table lacks / no index covers.
        OrderByError: an ARRAY column (no order among a row's elements).
        QueryTimeoutError: past `deadline`.
    """
    name = indexed_column(qs, view, column)
    ci = best_index(view.columns[name].index)
    if family(ci.family).element_keys:
        raise OrderByError(f"order_by {name!r}: an ARRAY column has no order (order by a scalar column)")
    uncovered = ci.uncovered(rows)
    covered = BitMap64(rows) - uncovered if uncovered else rows
    streams, nulls = _file_stream(ci, covered, desc)
    report: dict[str, object] = {"rows_needed": len(uncovered), "rows_scanned": 0,
                                 "status": "not_needed" if not uncovered else "over_budget"}
    if uncovered and scan == "never":
        report["status"] = "never"
    elif uncovered and len(uncovered) <= qs.scan_max_rows:
        try:
            table = qs.sources.open(view.table).read_rows(
                [name], ranges.of_bitmap(uncovered), version=view.version, data_files=view.data_files)
            more, more_nulls = _scanned_stream(table, name, ci.kt, desc)
            streams += more
            nulls |= more_nulls
            report.update(status="scanned", rows_scanned=len(uncovered))
            uncovered = BitMap64()
        except (DataFileError, CorruptTableMetadataError) as exc:
            report.update(status="failed", reason=str(exc)[:1000])
    ids, values, more_rows = _walk(streams, nulls, _order_key(ci.kt), desc=desc, offset=offset, limit=limit,
                                   deadline=deadline)
    return OrderedPage(column=name, row_ids=ids, values=[to_json(ci.kt, v) for v in values], more=more_rows,
                       uncovered=BitMap64(uncovered), scan=report)
