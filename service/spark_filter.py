"""Spark DataFrame helper for drivers: keep only the rows whose row id is in a bgix answer (BitMap64).

Reads only the data files that contain matching rows; pyspark is imported lazily (inside functions), so
importing this module never loads it. Imports no fastapi and nothing from service.api or service.build_job.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

import numpy as np
from pyroaring import BitMap64

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

ROW_ID_COLUMN = "_row_id"
# Up to this many runs of consecutive matching ids (over all selected files), the filter is a JVM range
# predicate on the row id; above it, a left-semi join with a DataFrame of the ids (broadcast when small).
MAX_RANGE_PREDICATES = 64
BROADCAST_MAX_IDS = 5_000_000


class _FilesAndRows(Protocol):
    def files(self, table: str) -> object: ...
    def query(self, table: str, *args: object, **kwargs: object) -> object: ...


def _file_fields(f: Mapping[str, object] | object) -> tuple[str, int, int]:
    if isinstance(f, Mapping):
        return str(f["path"]), int(f["first_row_id"]), int(f["row_count"])  # type: ignore[arg-type]
    return str(f.path), int(f.first_row_id), int(f.row_count)  # type: ignore[attr-defined]


def _spark_path(path: str) -> str:
    """Catalog paths → what Spark's Hadoop filesystems read (s3:// is served by the s3a connector)."""
    if path.startswith("s3://"):
        return "s3a://" + path[len("s3://"):]
    return path


def _runs(positions: np.ndarray) -> list[tuple[int, int]]:
    """Sorted positions → inclusive runs [(start, end)], vectorized."""
    if positions.size == 0:
        return []
    breaks = np.flatnonzero(np.diff(positions) != 1)
    starts = np.concatenate(([positions[0]], positions[breaks + 1]))
    ends = np.concatenate((positions[breaks], [positions[-1]]))
    return list(zip(starts.tolist(), ends.tolist()))


def select_files(table_files: Iterable[Mapping[str, object] | object], row_ids: BitMap64
                 ) -> list[tuple[str, int, int, int]]:
    """(path, first_row_id, row_count, matches) of the files holding at least one id of `row_ids`.

    A file holds the row ids [first_row_id, first_row_id + row_count); counted without building sets.
    """
    out = []
    for f in table_files:
        path, first, count = _file_fields(f)
        if count <= 0:
            continue
        matches = row_ids.range_cardinality(first, first + count)
        if matches:
            out.append((path, first, count, int(matches)))
    return out


def filter_by_row_ids(spark: SparkSession, table_files: Sequence[Mapping[str, object] | object],
                      row_ids: BitMap64, format: str = "parquet", *, row_id_column: str | None = None,
                      base_path: str | None = None) -> DataFrame:
    """A DataFrame of exactly the rows whose row id is in `row_ids`, plus a `_row_id` (bigint) column.

    `table_files` is the table's row-id map (`GET /v1/tables/{t}/files`, `Client.files()`): each entry has
    `path`, `first_row_id`, `row_count`; row id = first_row_id + the row's position in its file
    (`_metadata.row_index`). Files without a matching row are not read; each selected file is one
    read in a union, which suits up to a few hundred selected files. The filter runs in the JVM:
    a few runs of ids become range predicates, many scattered ids a left-semi join. An empty set gives
    an empty DataFrame with the table's schema.

    With `row_id_column` (a table registered with one) the row ids are that column's values, not
    positions: every file is read (Spark's Parquet statistics still skip row groups for the range
    predicates) and `_row_id` is a copy of the column. `base_path` (the table location) keeps hive
    partition columns (`dt=…/`) in the result, as a read of the whole table would have them.

    Raises:
        ValueError: `table_files` is empty (no file to take the schema from).
        service.catalog.catalog_errors.RowIdError: a non-Parquet table without `row_id_column`.
    """
    if row_id_column is not None:
        return _filter_by_id_column(spark, table_files, row_ids, format, row_id_column, base_path)
    if format != "parquet":
        # Positions come from Spark's `_metadata.row_index`, which only the Parquet reader provides.
        from service.catalog.catalog_errors import RowIdError

        raise RowIdError(f"row ids of a {format} table are positions Spark cannot see (no "
                         "_metadata.row_index outside Parquet); register the table with a row_id_column")
    selected = select_files(table_files, row_ids)
    if not selected:
        files = list(table_files)
        if not files:
            raise ValueError("filter_by_row_ids needs at least one table file to know the schema")
        empty = _with_row_id(spark, _file_fields(files[0])[0], 0, format, base_path).limit(0)
        return empty
    wanted = BitMap64()
    for _, first, count, _ in selected:
        wanted.add_range(first, first + count)
    wanted &= row_ids  # ids beyond the known files cannot match any row
    ids = np.frombuffer(wanted.to_array(), dtype=np.uint64).astype(np.int64)
    run_count = 1 + int(np.count_nonzero(np.diff(ids) != 1))
    parts = [_with_row_id(spark, path, first, format, base_path) for path, first, _, _ in selected]
    frame = parts[0]
    for part in parts[1:]:
        frame = frame.unionByName(part)
    return _keep_ids(spark, frame, ids, run_count)


def _keep_ids(spark: SparkSession, frame: DataFrame, ids: np.ndarray, run_count: int) -> DataFrame:
    """`frame` rows whose `_row_id` is in the sorted int64 `ids`: range predicates or a left-semi join."""
    from pyspark.sql import functions as F

    if run_count <= MAX_RANGE_PREDICATES:
        cond = None
        for start, end in _runs(ids):
            term = F.col(ROW_ID_COLUMN).between(start, end)
            cond = term if cond is None else (cond | term)
        return frame.where(cond)
    import pyarrow as pa

    id_frame = spark.createDataFrame(pa.table({ROW_ID_COLUMN: pa.array(ids, type=pa.int64())}))
    if len(ids) <= BROADCAST_MAX_IDS:
        id_frame = F.broadcast(id_frame)
    return frame.join(id_frame, on=ROW_ID_COLUMN, how="left_semi")


def _reader(spark: SparkSession, format: str, base_path: str | None):  # type: ignore[no-untyped-def]
    reader = spark.read.format(format)
    if base_path is not None:  # hive partition columns come from the path below the table location
        reader = reader.option("basePath", _spark_path(base_path))
    return reader


def _with_row_id(spark: SparkSession, path: str, first: int, format: str,
                 base_path: str | None = None) -> DataFrame:
    """One data file with `_row_id` = its first row id + the row's position in the file (spec §5.1 analogue)."""
    from pyspark.sql import functions as F

    df = _reader(spark, format, base_path).load(_spark_path(path))
    columns = [F.col(f"`{c}`") for c in df.columns]
    return df.select(*columns, (F.lit(first).cast("bigint") + F.col("_metadata.row_index")).alias(ROW_ID_COLUMN))


def _filter_by_id_column(spark: SparkSession, table_files: Sequence[Mapping[str, object] | object],
                         row_ids: BitMap64, format: str, row_id_column: str, base_path: str | None) -> DataFrame:
    """Tables whose row ids are the values of `row_id_column`: which file holds an id is unknown, so all
    files are read and the id column is filtered (exact, like a scan of the table)."""
    from pyspark.sql import functions as F

    paths = [_spark_path(_file_fields(f)[0]) for f in table_files]
    if not paths:
        raise ValueError("filter_by_row_ids needs at least one table file to know the schema")
    df = _reader(spark, format, base_path).load(paths)
    frame = df.select(*[F.col(f"`{c}`") for c in df.columns],
                      F.col(f"`{row_id_column}`").cast("bigint").alias(ROW_ID_COLUMN))
    if not row_ids:
        return frame.limit(0)
    ids = np.frombuffer(row_ids.to_array(), dtype=np.uint64).astype(np.int64)
    run_count = 1 + int(np.count_nonzero(np.diff(ids) != 1))
    return _keep_ids(spark, frame, ids, run_count)


def filter_paimon_rows(spark: SparkSession, table_files: Sequence[Mapping[str, object] | object],
                       row_ids: BitMap64) -> DataFrame:
    """The rows of a Paimon table whose `_ROW_ID` is in `row_ids` (as `_row_id`), read from its data files.

    `table_files` is the Paimon table's file map (`GET /v1/tables/{t}/files`): `_ROW_ID` = first_row_id +
    position, and each file's format is its extension (Paimon's `file.format`). Partition columns are
    inside Paimon's data files, so no base path is needed. Files that share `_ROW_ID`s with another file
    (data-evolution updates: a newer file holding only some columns of a row range) are merged per row as
    Paimon's reader merges them: each column from the newest file (highest `max_sequence_number`) that writes
    it. Deleted rows need no care here: bgix's answers already exclude them.
    """
    selected = select_files(table_files, row_ids)
    if not selected or not _overlapping(selected):
        by_format: dict[str, list[Mapping[str, object] | object]] = {}
        for f in table_files:
            by_format.setdefault(_format_of(_file_fields(f)[0]), []).append(f)
        if len(by_format) > 1:
            raise ValueError(f"a Paimon table with data files in several formats ({sorted(by_format)})")
        fmt, files = next(iter(by_format.items()), ("parquet", list(table_files)))
        return filter_by_row_ids(spark, files, row_ids, format=fmt)
    return _merge_paimon_files(spark, table_files, selected, row_ids)


def _overlapping(selected: Sequence[tuple[str, int, int, int]]) -> bool:
    spans = sorted((first, first + count) for _, first, count, _ in selected)
    return any(b_start < a_end for (_, a_end), (b_start, _) in zip(spans, spans[1:]))


def _format_of(path: str) -> str:
    ext = path.rsplit(".", 1)[-1].lower()
    return {"parquet": "parquet", "orc": "orc", "avro": "avro"}.get(ext, "parquet")


def _sequence_of(f: Mapping[str, object] | object) -> int:
    seq = f.get("max_sequence_number") if isinstance(f, Mapping) else getattr(f, "max_sequence_number", None)
    if seq is None:
        raise ValueError("overlapping Paimon data files need max_sequence_number in the file map to be merged")
    return int(seq)  # type: ignore[call-overload]


def _merge_paimon_files(spark: SparkSession, table_files: Sequence[Mapping[str, object] | object],
                        selected: Sequence[tuple[str, int, int, int]], row_ids: BitMap64) -> DataFrame:
    """Union the selected files (each column null where a file lacks it, plus its sequence number), keep the
    wanted ids, then per `_row_id` take each column from the newest file that has it (`max_by` skips rows
    whose ordering is null, i.e. files without that column)."""
    from pyspark.sql import functions as F

    seq = {_file_fields(f)[0]: _sequence_of(f) for f in table_files}
    parts = [(_with_row_id(spark, path, first, _format_of(path)), seq[path]) for path, first, _, _ in selected]
    columns: dict[str, object] = {}
    for df, _ in sorted(parts, key=lambda p: -len(p[0].columns)):  # a full file first: the table's column order
        for fld in df.schema.fields:
            if fld.name != ROW_ID_COLUMN:
                columns.setdefault(fld.name, fld.dataType)
    unified = None
    for df, s in parts:
        present = set(df.columns)
        cols = [F.col(ROW_ID_COLUMN), F.lit(s).cast("bigint").alias("__seq")]
        for name, dtype in columns.items():
            cols.append(F.col(f"`{name}`") if name in present else F.lit(None).cast(dtype).alias(name))  # type: ignore[arg-type]
            cols.append(F.lit(name in present).alias(f"__has_{name}"))
        frame = df.select(*cols)
        unified = frame if unified is None else unified.unionByName(frame)
    assert unified is not None
    ids = np.frombuffer(row_ids.to_array(), dtype=np.uint64).astype(np.int64)
    kept = _keep_ids(spark, unified, ids, 1 + int(np.count_nonzero(np.diff(ids) != 1)))
    merged = kept.groupBy(ROW_ID_COLUMN).agg(*[
        F.max_by(F.col(f"`{name}`"), F.when(F.col(f"`__has_{name}`"), F.col("__seq"))).alias(name)
        for name in columns])
    return merged.select(*[F.col(f"`{name}`") for name in columns], F.col(ROW_ID_COLUMN))


def spark_filter(client: _FilesAndRows, spark: SparkSession, table: str, where: str,
                 format: str | None = None) -> DataFrame:
    """Ask the service which rows match `where` (a roaring answer) and return just those rows as a DataFrame.

    The table's registration (`client.tables()`) supplies its format (unless `format` is given), its
    `row_id_column` and, for partitioned tables, the location used to keep partition columns.
    """
    row_ids = client.query(table, where=where, result="roaring")
    if not isinstance(row_ids, BitMap64):
        raise TypeError(f"expected a BitMap64 from Client.query(result='roaring'), got {type(row_ids).__name__}")
    files = client.files(table)
    if isinstance(files, Mapping):
        files = files["files"]
    elif hasattr(files, "files"):
        files = files.files  # type: ignore[attr-defined]
    row_id_column, base_path, table_format = _table_layout(client, table)
    if table_format == "paimon" and format is None:
        return filter_paimon_rows(spark, list(files), row_ids)  # type: ignore[arg-type]
    return filter_by_row_ids(spark, list(files), row_ids,  # type: ignore[arg-type]
                             format=format or table_format or "parquet",
                             row_id_column=row_id_column, base_path=base_path)


def _table_layout(client: object, table: str) -> tuple[str | None, str | None, str | None]:
    """(row_id_column, base path for partition discovery, format) of `table` from `client.tables()`."""
    tables = getattr(client, "tables", None)
    if tables is None:
        return None, None, None
    for t in tables():
        def field(key: str, t: object = t) -> object:
            return t.get(key) if isinstance(t, Mapping) else getattr(t, key, None)
        if field("name") == table:
            rid = field("row_id_column")
            base = str(field("location")) if field("partition_columns") else None
            fmt = field("format")
            return (str(rid) if rid else None), base, (str(fmt) if fmt else None)
    return None, None, None
