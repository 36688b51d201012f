"""Groups of rows read from a table's data (the aggregate's exact-by-scan step): the rows no index of a group or
metric column covers, grouped with pyarrow under the same rules as the index answer (NULL is a group; an ARRAY
column's distinct non-null elements are its groups), keys in the indexes' canonical form so both merge.

Imports pyarrow, index_format (keys) and service.tables (the row-id column's name) only.
"""
from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from index_format.errors import BgixError
from index_format.keys import deserialize_key, serialize_key
from index_format.types import KeyType
from service.tables.build_tasks import ROW_ID

__all__ = ["ScannedStats", "scan_groups"]

# per metric column: non-null count, sum (0 when not numeric), min, max
ScannedStats = tuple[int, object, object, object]


def canonical(kt: KeyType, value: object) -> object:
    """`value` as the index's readers give keys of `kt` (a serialize / deserialize round trip)."""
    if value is None:
        return None
    try:
        return deserialize_key(kt, serialize_key(kt, value))
    except (BgixError, TypeError, ValueError, OverflowError):
        return value


def _explode(table: pa.Table, column: str) -> pa.Table:
    """One row per distinct non-null element of an ARRAY column (null and empty arrays give none)."""
    lists = table.column(column).combine_chunks()
    parents = pc.list_parent_indices(lists)
    elements = pc.list_flatten(lists)
    pairs = pa.table({ROW_ID: table.column(ROW_ID).take(parents), column: elements})
    pairs = pairs.filter(pc.is_valid(pairs.column(column)))
    pairs = pairs.group_by([ROW_ID, column], use_threads=False).aggregate([])
    rest = table.drop_columns([column])
    return pairs.join(rest, ROW_ID, join_type="inner", use_threads=False)


def scan_groups(table: pa.Table, groups: Sequence[str], arrays: set[str], metric_columns: Sequence[str],
                kts: Mapping[str, KeyType]) -> Iterator[tuple[tuple[object, ...], int, dict[str, ScannedStats]]]:
    """(group key, rows, per metric column its non-null count, sum, min and max) of every group of `table`
    (`groups`, `metric_columns` and ROW_ID columns, live rows only)."""
    for column in groups:
        if column in arrays:
            table = _explode(table, column)
    if not table.num_rows:
        return
    aggs: list[tuple[str | list[str], str]] = [([], "count_all")]
    for c in metric_columns:
        numeric = pa.types.is_integer(table.schema.field(c).type) or pa.types.is_floating(
            table.schema.field(c).type) or pa.types.is_decimal(table.schema.field(c).type)
        aggs += [(c, "count"), (c, "min"), (c, "max")]
        if numeric:
            aggs.append((c, "sum"))
    if groups:
        out = table.group_by(list(groups), use_threads=False).aggregate(aggs)
    else:
        out = pa.table({"count_all": [table.num_rows], **{
            f"{c}_{op}": [_whole(table.column(c), op)] for c, op in (
                (c, op) for a in aggs[1:] for c, op in [a] if isinstance(c, str))}})
    data = out.to_pydict()
    for i in range(out.num_rows):
        key = tuple(canonical(kts[c], data[c][i]) for c in groups)
        stats: dict[str, ScannedStats] = {}
        for c in metric_columns:
            total = data.get(f"{c}_sum", [0] * out.num_rows)[i]
            stats[c] = (int(data[f"{c}_count"][i]), 0 if total is None else total,
                        canonical(kts[c], data[f"{c}_min"][i]), canonical(kts[c], data[f"{c}_max"][i]))
        yield key, int(data["count_all"][i]), stats


def _whole(values: pa.ChunkedArray, op: str) -> object:
    """One aggregate of a whole column (no group column)."""
    if op == "count":
        return pc.count(values).as_py()
    return getattr(pc, op)(values).as_py()
