"""Spark DataFrame helper for drivers: keep only the rows whose row id is in a bgix answer (BitMap64).

Reads only the data files that contain matching rows; pyspark is imported lazily (inside functions), so
importing this module never loads it. Imports no fastapi and nothing from service.api or service.build_job.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

import numpy as np
from pyroaring import BitMap64

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession
    from pyspark.sql.types import StructType

ROW_ID_COLUMN = "_row_id"
ROW_INDEX = "_metadata.row_index"
# The ids reach the executors in compact per-file form, never one by one in a task or plan: a file whose matching
# rows form at most MAX_RANGE_PREDICATES runs is filtered by range predicates on its row index (plain JVM
# expressions; at most MAX_PREDICATES_TOTAL of them over all files, as larger OR trees cost Spark more to plan
# and compile than a broadcast); every other file by a vectorized membership test against one broadcast of
# per-file bit masks or sorted offsets (a pandas UDF that needs only numpy and pandas on the executors).
MAX_RANGE_PREDICATES = 64
MAX_PREDICATES_TOTAL = 1024
_KEEP = "__bgix_keep"


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


def _sorted_ids(row_ids: BitMap64) -> np.ndarray:
    """The set as a sorted int64 array (ids are < 2**63 in practice; larger ones wrap as Spark's bigint does)."""
    return np.frombuffer(row_ids.to_array(), dtype=np.uint64).astype(np.int64)


def _run_bounds(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sorted distinct values → (starts, ends) of their inclusive runs of consecutive values, vectorized."""
    if values.size == 0:
        return values[:0], values[:0]
    breaks = np.flatnonzero(np.diff(values) != 1)
    return (np.concatenate((values[:1], values[breaks + 1])), np.concatenate((values[breaks], values[-1:])))


def _runs(positions: np.ndarray) -> list[tuple[int, int]]:
    """Sorted positions → inclusive runs [(start, end)]."""
    starts, ends = _run_bounds(positions)
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


def _local_positions(ids: np.ndarray, first: int, count: int) -> np.ndarray:
    """The positions in a file of the sorted `ids` it holds ([first, first + count) → [0, count))."""
    lo, hi = np.searchsorted(ids, [first, first + count])
    return ids[lo:hi] - first


def _compact_set(values: np.ndarray) -> tuple[str, int, np.ndarray]:
    """Sorted distinct int64 `values` as the smaller of a bit mask over [lo, hi] and their offsets from lo."""
    lo = int(values[0])
    offsets = values - lo
    span = int(offsets[-1]) + 1
    if span // 8 + 1 <= offsets.nbytes:
        bits = np.zeros(span, dtype=bool)
        bits[offsets] = True
        return "bits", lo, np.packbits(bits, bitorder="little")
    return "sorted", lo, offsets


def _membership_udf(spark: SparkSession, sets: dict[int, tuple[str, int, np.ndarray]]
                    ) -> Callable[[int, Column], Column]:
    """`test(key, column)`: is each value of `column` in `sets[key]`? One broadcast holds every set and one
    pandas UDF tests them all (the key is a literal argument), so tasks carry only the broadcast's id and the
    plan pickles one small function. The tested column must be a non-null bigint (pandas makes floats of nulls).

    The UDF body is a closure defined here, so cloudpickle ships it by value: executors need numpy and
    pandas (as any pandas UDF does), not bgix."""
    import pandas as pd
    from pyspark.sql import functions as F

    broadcast = spark.sparkContext.broadcast(sets)

    def keep(keys: pd.Series, values: pd.Series) -> pd.Series:
        import numpy
        import pandas

        found = numpy.zeros(len(values), dtype=bool)
        key_of = keys.to_numpy()
        for key in numpy.unique(key_of):  # one key per batch in practice (a batch comes from one file)
            rows = key_of == key
            kind, lo, data = broadcast.value[int(key)]
            offsets = values.to_numpy(dtype=numpy.int64)[rows] - lo
            if kind == "bits":
                inside = (offsets >= 0) & (offsets < data.size * 8)
                at = numpy.where(inside, offsets, 0)
                found[rows] = inside & ((data[at >> 3] >> (at & 7)) & 1).astype(bool)
            else:
                at = numpy.minimum(numpy.searchsorted(data, offsets), data.size - 1)
                found[rows] = data[at] == offsets
        return pandas.Series(found, index=values.index)

    keep.__annotations__ = {"keys": pd.Series, "values": pd.Series, "return": pd.Series}
    udf = F.pandas_udf(keep, "boolean")  # type: ignore[call-overload]

    def test(key: int, column: Column) -> Column:
        return udf(F.lit(key), column)  # type: ignore[no-any-return]

    return test


class _Conditions:
    """Row conditions for several sorted value sets (a file's local positions, or an id column's values):
    range predicates for sets of few runs, a broadcast membership test for the rest (see MAX_RANGE_PREDICATES)."""

    def __init__(self, spark: SparkSession, value_sets: Sequence[np.ndarray]) -> None:
        runs = [_run_bounds(v) for v in value_sets]
        self._ranges: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        sets: dict[int, tuple[str, int, np.ndarray]] = {}
        total = 0
        for i in sorted(range(len(value_sets)), key=lambda k: runs[k][0].size):
            n = runs[i][0].size
            if n <= MAX_RANGE_PREDICATES and total + n <= MAX_PREDICATES_TOTAL:
                self._ranges[i] = runs[i]
                total += n
            else:
                sets[i] = _compact_set(value_sets[i])
        self._test = _membership_udf(spark, sets) if sets else None

    def condition(self, key: int, column: Column) -> Column:
        """Is `column` (bigint) in set `key`? (Nulls are not.)"""
        from pyspark.sql import functions as F

        if key in self._ranges:
            cond = None
            for start, end in zip(*(a.tolist() for a in self._ranges[key])):
                term = column.between(start, end)
                cond = term if cond is None else (cond | term)
            assert cond is not None
            return cond
        assert self._test is not None
        return column.isNotNull() & self._test(key, F.coalesce(column, F.lit(0).cast("bigint")))


def filter_by_row_ids(spark: SparkSession, table_files: Sequence[Mapping[str, object] | object],
                      row_ids: BitMap64, format: str = "parquet", *, row_id_column: str | None = None,
                      base_path: str | None = None) -> DataFrame:
    """A DataFrame of exactly the rows whose row id is in `row_ids`, plus a `_row_id` (bigint) column.

    `table_files` is the table's row-id map (`GET /v1/tables/{t}/files`, `Client.files()`): each entry has
    `path`, `first_row_id`, `row_count`; row id = first_row_id + the row's position in its file
    (`_metadata.row_index`). Files without a matching row are not read; each selected file is one
    read in a union (with the first file's schema: no per-file inference), which suits up to a few hundred
    selected files. The ids become each file's local positions on the driver and are filtered in compact
    form: runs as range predicates, scattered positions by a broadcast bit mask (see MAX_RANGE_PREDICATES).
    An empty set gives an empty DataFrame with the table's schema.

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
        return _with_row_id(spark, _read(spark, _file_fields(files[0])[0], format, base_path), 0).limit(0)
    ids = _sorted_ids(row_ids)
    positions = [_local_positions(ids, first, count) for _, first, count, _ in selected]
    conditions = _Conditions(spark, positions)
    first_read = _read(spark, selected[0][0], format, base_path)
    frame = None
    for i, (path, first, _, _) in enumerate(selected):
        df = first_read if i == 0 else _read(spark, path, format, base_path, first_read.schema)
        part = _with_row_id(spark, df, first, conditions.condition(i, _row_index()))
        frame = part if frame is None else frame.unionByName(part)
    assert frame is not None
    return _kept(frame)


def _kept(frame: DataFrame) -> DataFrame:
    """The rows whose `__keep` is true, without it (one filter over the union: Spark pushes it into each file)."""
    from pyspark.sql import functions as F

    return frame.where(F.col(_KEEP)).drop(_KEEP)


def _row_index() -> Column:
    from pyspark.sql import functions as F

    return F.col(ROW_INDEX)


def _read(spark: SparkSession, path: str, format: str, base_path: str | None,
          schema: StructType | None = None) -> DataFrame:
    """One data file; with `schema` (the first file's) Spark skips inferring it, the bulk of a read's plan time."""
    reader = spark.read.format(format)
    if base_path is not None:  # hive partition columns come from the path below the table location
        reader = reader.option("basePath", _spark_path(base_path))
    if schema is not None:
        reader = reader.schema(schema)
    return reader.load(_spark_path(path))


def _with_row_id(spark: SparkSession, df: DataFrame, first: int, keep: Column | None = None) -> DataFrame:
    """A one-file read with `_row_id` = its first row id + the row's position in the file (spec §5.1 analogue),
    and with `keep` a `__keep` column of it (one select per file: each DataFrame step costs an analysis)."""
    from pyspark.sql import functions as F

    columns = [F.col("*"), (F.lit(first).cast("bigint") + _row_index()).alias(ROW_ID_COLUMN)]
    if keep is not None:
        columns.append(keep.alias(_KEEP))
    return df.select(*columns)


def _filter_by_id_column(spark: SparkSession, table_files: Sequence[Mapping[str, object] | object],
                         row_ids: BitMap64, format: str, row_id_column: str, base_path: str | None) -> DataFrame:
    """Tables whose row ids are the values of `row_id_column`: which file holds an id is unknown, so all
    files are read and the id column is filtered (exact, like a scan of the table)."""
    from pyspark.sql import functions as F

    paths = [_spark_path(_file_fields(f)[0]) for f in table_files]
    if not paths:
        raise ValueError("filter_by_row_ids needs at least one table file to know the schema")
    reader = spark.read.format(format)
    if base_path is not None:
        reader = reader.option("basePath", _spark_path(base_path))
    df = reader.load(paths)
    frame = df.select(*[F.col(f"`{c}`") for c in df.columns],
                      F.col(f"`{row_id_column}`").cast("bigint").alias(ROW_ID_COLUMN))
    if not row_ids:
        return frame.limit(0)
    return frame.where(_Conditions(spark, [_sorted_ids(row_ids)]).condition(0, F.col(ROW_ID_COLUMN)))


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
    """Keep each selected file's wanted rows, union them (each column null where a file lacks it, plus its
    sequence number), then per `_row_id` take each column from the newest file that has it (`max_by` skips rows
    whose ordering is null, i.e. files without that column). Files differ in columns: each is read with its own."""
    from pyspark.sql import functions as F

    seq = {_file_fields(f)[0]: _sequence_of(f) for f in table_files}
    ids = _sorted_ids(row_ids)
    conditions = _Conditions(spark, [_local_positions(ids, first, count) for _, first, count, _ in selected])
    parts = []
    for i, (path, first, _, _) in enumerate(selected):
        df = _read(spark, path, _format_of(path), None)
        parts.append((df.columns, _with_row_id(spark, df, first, conditions.condition(i, _row_index())), seq[path]))
    columns: dict[str, object] = {}
    for _, df, _ in sorted(parts, key=lambda p: -len(p[0])):  # a full file first: the table's column order
        for fld in df.schema.fields:
            if fld.name not in (ROW_ID_COLUMN, _KEEP):
                columns.setdefault(fld.name, fld.dataType)
    unified = None
    for names, df, s in parts:
        present = set(names)
        cols = [F.col(ROW_ID_COLUMN), F.col(_KEEP), F.lit(s).cast("bigint").alias("__seq")]
        for name, dtype in columns.items():
            cols.append(F.col(f"`{name}`") if name in present else F.lit(None).cast(dtype).alias(name))  # type: ignore[arg-type]
            cols.append(F.lit(name in present).alias(f"__has_{name}"))
        frame = df.select(*cols)
        unified = frame if unified is None else unified.unionByName(frame)
    assert unified is not None
    merged = _kept(unified).groupBy(ROW_ID_COLUMN).agg(*[
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
