"""Spark DataFrame helper for drivers: exactly the rows of a bgix answer, read from the table's data files.

Reads only the data files that contain matching (or, for an inexact answer, candidate) rows; an inexact answer's
candidates are filtered with the predicate in Spark (service.spark_predicate). pyspark is imported lazily (inside
functions), so importing this module never loads it. Imports no fastapi and nothing from service.api or
service.build_job.
"""
from __future__ import annotations

import operator
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import reduce
from typing import TYPE_CHECKING, Protocol, cast

import numpy as np
from pyroaring import BitMap64

from service.predicate_translation import parse_predicate
from service.query_answer import QueryAnswer, ids_of_ranges

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.broadcast import Broadcast
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import DataType, StructType

ROW_ID_COLUMN = "_row_id"
ROW_INDEX = "_metadata.row_index"
# The ids never ride in a task or a plan one by one. The driver splits them per file (ids in
# [first_row_id, first_row_id + row_count)); a file whose ids form at most MAX_RANGE_PREDICATES runs is filtered
# by range predicates on `_row_id` (plain JVM expressions; at most MAX_PREDICATES_TOTAL over all files, as larger
# OR trees cost Spark more to plan and compile than a join); the other files are kept by a left-semi join whose
# build side one executor task expands from a broadcast of per-file bit masks or sorted offsets (a few bytes per
# id at most), broadcast to the scans as a hash table up to BROADCAST_MAX_IDS ids.
MAX_RANGE_PREDICATES = 64
MAX_PREDICATES_TOTAL = 1024
BROADCAST_MAX_IDS = 5_000_000


class _FilesAndRows(Protocol):
    def files(self, table: str) -> object: ...
    def query(self, table: str, *args: object, **kwargs: object) -> object: ...


def _file_fields(f: Mapping[str, object] | object) -> tuple[str, int, int]:
    if isinstance(f, Mapping):
        return str(f["path"]), int(f["first_row_id"]), int(f["row_count"])  # type: ignore[arg-type]  # JSON: int() checks
    return str(f.path), int(f.first_row_id), int(f.row_count)  # type: ignore[attr-defined]  # duck-typed DataFile


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


def _file_ids(ids: np.ndarray, first: int, count: int) -> np.ndarray:
    """The sorted `ids` a file holds: those in [first, first + count)."""
    lo, hi = np.searchsorted(ids, [first, first + count])
    return ids[lo:hi]


def _compact_set(values: np.ndarray) -> tuple[str, int, np.ndarray]:
    """Sorted distinct int64 `values` as the smaller of a bit mask over [lo, hi] and their offsets from lo."""
    lo = int(values[0])
    offsets = values - lo
    span = int(offsets[-1]) + 1
    if span // 8 + 1 <= offsets.nbytes:
        mask = np.zeros(span // 8 + 1, dtype=np.uint8)
        byte = offsets >> 3
        starts = np.flatnonzero(np.diff(byte, prepend=-1))
        # distinct bits of one byte: their sum is their OR (O(n), no span-sized temporary)
        mask[byte[starts]] = np.add.reduceat(np.left_shift(1, offsets & 7), starts).astype(np.uint8)
        return "bits", lo, mask
    return "sorted", lo, offsets


def _expander(broadcast: Broadcast[list[tuple[str, int, np.ndarray]]]
              ) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The `mapInArrow` function that turns keys into the ids of `broadcast.value[key]` (a `_compact_set`).

    A closure defined here, so cloudpickle ships it by value: executors need numpy and pyarrow, not bgix."""

    def expand(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        import numpy
        import pyarrow

        sets = broadcast.value
        for batch in batches:
            for key in batch.column(0).to_numpy().tolist():
                kind, lo, data = sets[key]
                if kind == "bits":
                    values = numpy.flatnonzero(numpy.unpackbits(data, bitorder="little")) + lo
                else:
                    values = data + lo
                yield pyarrow.record_batch([pyarrow.array(values, pyarrow.int64())], names=["_row_id"])

    return expand


class _Selection:
    """Keeps the rows of several frames (each with `_row_id`) whose id is in that frame's sorted id set:
    range predicates for sets of few runs, one broadcast left-semi join for the rest (see MAX_RANGE_PREDICATES)."""

    def __init__(self, spark: SparkSession, id_sets: Sequence[np.ndarray]) -> None:
        runs = [_run_bounds(v) for v in id_sets]
        self.ranges: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self.sets: dict[int, tuple[str, int, np.ndarray]] = {}
        total = 0
        for i in sorted(range(len(id_sets)), key=lambda k: runs[k][0].size):
            n = runs[i][0].size
            if n <= MAX_RANGE_PREDICATES and total + n <= MAX_PREDICATES_TOTAL:
                self.ranges[i] = runs[i]
                total += n
            else:
                self.sets[i] = _compact_set(id_sets[i])
        self._spark = spark
        self._join_ids = sum(int(id_sets[i].size) for i in self.sets)

    def apply(self, frames: Sequence[DataFrame]) -> DataFrame:
        """The union of `frames[i]` (same columns), each cut to its own id set."""
        from pyspark.sql import functions as F

        pieces = []
        for i, (starts, ends) in sorted(self.ranges.items()):
            terms = [F.col(ROW_ID_COLUMN).between(start, end) for start, end in zip(starts.tolist(), ends.tolist())]
            pieces.append(frames[i].where(reduce(operator.or_, terms)))
        if self.sets:
            scanned = _union([frames[i] for i in sorted(self.sets)])
            pieces.append(scanned.join(self._id_frame(), on=ROW_ID_COLUMN, how="left_semi"))
        return _union(pieces)

    def _id_frame(self) -> DataFrame:
        """The ids of every set as one `_row_id` column, expanded by one task from a broadcast of the sets."""
        from pyspark.sql import functions as F

        broadcast = self._spark.sparkContext.broadcast([self.sets[i] for i in sorted(self.sets)])
        keys = self._spark.range(len(self.sets), numPartitions=1)  # key k expands the k-th set
        ids = keys.mapInArrow(_expander(broadcast), f"{ROW_ID_COLUMN} bigint")
        return F.broadcast(ids) if self._join_ids <= BROADCAST_MAX_IDS else ids


def _union(frames: Sequence[DataFrame]) -> DataFrame:
    out = frames[0]
    for frame in frames[1:]:
        out = out.unionByName(frame)
    return out


def filter_by_row_ids(spark: SparkSession, table_files: Sequence[Mapping[str, object] | object],
                      row_ids: BitMap64 | None, format: str = "parquet", *, row_id_column: str | None = None,
                      base_path: str | None = None) -> DataFrame:
    """A DataFrame of exactly the rows whose row id is in `row_ids` (None: every row), plus a `_row_id` (bigint)
    column.

    `table_files` is the table's row-id map (`GET /v1/tables/{t}/files`, `Client.files()`): each entry has
    `path`, `first_row_id`, `row_count`; row id = first_row_id + the row's position in its file
    (`_metadata.row_index`). Files without a matching row are not read; each selected file is one
    read in a union (with the first file's schema: no per-file inference), which suits up to a few hundred
    selected files. The ids are split per file on the driver and reach the executors in compact form: a
    file's few runs as range predicates, scattered ids as a broadcast bit mask that one task expands into the
    build side of a broadcast left-semi join (see MAX_RANGE_PREDICATES); no task carries the ids one by one.
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
    if row_ids is None:
        row_ids = _all_ids(table_files)
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
        return _with_row_id(_read(spark, _file_fields(files[0])[0], format, base_path), 0).limit(0)
    ids = _sorted_ids(row_ids)
    selection = _Selection(spark, [_file_ids(ids, first, count) for _, first, count, _ in selected])
    first_read = _read(spark, selected[0][0], format, base_path)
    frames = [_with_row_id(first_read if i == 0 else _read(spark, path, format, base_path, first_read.schema),
                           first) for i, (path, first, _, _) in enumerate(selected)]
    return selection.apply(frames)


def _read(spark: SparkSession, path: str | list[str], format: str, base_path: str | None,
          schema: StructType | None = None) -> DataFrame:
    """Data files; with `schema` (the first file's) Spark skips inferring it, the bulk of a read's plan time."""
    reader = spark.read.format(format)
    if base_path is not None:  # hive partition columns come from the path below the table location
        reader = reader.option("basePath", _spark_path(base_path))
    if schema is not None:
        reader = reader.schema(schema)
    return reader.load(_spark_path(path) if isinstance(path, str) else [_spark_path(p) for p in path])


def _with_row_id(df: DataFrame, first: int) -> DataFrame:
    """A one-file read with `_row_id` = its first row id + the row's position in the file (spec §5.1 analogue).
    One SQL expression: a single call into the JVM instead of one per column function."""
    return df.selectExpr("*", f"CAST({int(first)} AS BIGINT) + {ROW_INDEX} AS `{ROW_ID_COLUMN}`")


def _filter_by_id_column(spark: SparkSession, table_files: Sequence[Mapping[str, object] | object],
                         row_ids: BitMap64 | None, format: str, row_id_column: str, base_path: str | None
                         ) -> DataFrame:
    """Tables whose row ids are the values of `row_id_column`: which file holds an id is unknown, so all
    files are read and the id column is filtered (exact, like a scan of the table; None: not filtered)."""
    from pyspark.sql import functions as F

    paths = [_file_fields(f)[0] for f in table_files]
    if not paths:
        raise ValueError("filter_by_row_ids needs at least one table file to know the schema")
    df = _read(spark, paths, format, base_path)
    frame = df.select(*[F.col(f"`{c}`") for c in df.columns],
                      F.col(f"`{row_id_column}`").cast("bigint").alias(ROW_ID_COLUMN))
    if row_ids is None:
        return frame
    if not row_ids:
        return frame.limit(0)
    return _Selection(spark, [_sorted_ids(row_ids)]).apply([frame])


def filter_paimon_rows(spark: SparkSession, table_files: Sequence[Mapping[str, object] | object],
                       row_ids: BitMap64 | None) -> DataFrame:
    """The rows of a Paimon table whose `_ROW_ID` is in `row_ids` (None: every id its files hold; deleted rows
    included, as the files hold them), as `_row_id`, read from its data files.

    `table_files` is the Paimon table's file map (`GET /v1/tables/{t}/files`): `_ROW_ID` = first_row_id +
    position, and each file's format is its extension (Paimon's `file.format`). Partition columns are
    inside Paimon's data files, so no base path is needed. Files that share `_ROW_ID`s with another file
    (data-evolution updates: a newer file holding only some columns of a row range) are merged per row as
    Paimon's reader merges them: each column from the newest file (highest `max_sequence_number`) that writes
    it. Deleted rows need no care here: bgix's answers already exclude them.
    """
    if row_ids is None:
        row_ids = _all_ids(table_files)
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
    return int(seq)  # type: ignore[arg-type]  # a JSON value or a DataFile-like attribute: int() checks it


def _merge_paimon_files(spark: SparkSession, table_files: Sequence[Mapping[str, object] | object],
                        selected: Sequence[tuple[str, int, int, int]], row_ids: BitMap64) -> DataFrame:
    """Keep each selected file's wanted rows, union them (each column null where a file lacks it, plus its
    sequence number), then per `_row_id` take each column from the newest file that has it (`max_by` skips rows
    whose ordering is null, i.e. files without that column). Files differ in columns: each is read with its own."""
    from pyspark.sql import functions as F

    seq = {_file_fields(f)[0]: _sequence_of(f) for f in table_files}
    ids = _sorted_ids(row_ids)
    parts = []
    for path, first, _, _ in selected:
        df = _read(spark, path, _format_of(path), None)
        parts.append((df.columns, _with_row_id(df, first), seq[path]))
    columns: dict[str, DataType] = {}
    for _, df, _ in sorted(parts, key=lambda p: -len(p[0])):  # a full file first: the table's column order
        for fld in df.schema.fields:
            if fld.name != ROW_ID_COLUMN:
                columns.setdefault(fld.name, fld.dataType)
    unified = []
    for names, df, s in parts:
        present = set(names)
        cols = [F.col(ROW_ID_COLUMN), F.lit(s).cast("bigint").alias("__seq")]
        for name, dtype in columns.items():
            cols.append(F.col(f"`{name}`") if name in present else F.lit(None).cast(dtype).alias(name))
            cols.append(F.lit(name in present).alias(f"__has_{name}"))
        unified.append(df.select(*cols))
    kept = _Selection(spark, [_file_ids(ids, first, count) for _, first, count, _ in selected]).apply(unified)
    merged = kept.groupBy(ROW_ID_COLUMN).agg(*[
        F.max_by(F.col(f"`{name}`"), F.when(F.col(f"`__has_{name}`"), F.col("__seq"))).alias(name)
        for name in columns])
    return merged.select(*[F.col(f"`{name}`") for name in columns], F.col(ROW_ID_COLUMN))


def spark_filter(client: _FilesAndRows, spark: SparkSession, table: str, where: str,
                 format: str | None = None, *, catalog_options: Mapping[str, str] | None = None) -> DataFrame:
    """Exactly the rows of `table` where `where` is TRUE, as a DataFrame (plus `_row_id`), reading only the files
    that hold candidate rows.

    An exact answer's rows (`client.query(..., result="roaring")`, a QueryAnswer) are read as they are. An inexact
    one (`exact: false`, or rows no index covers) is never returned as it is: its candidate rows are read (the
    answer's rows, a superset when a declined part was dropped; every row of the uncovered ranges; every row when
    the indexes declined the whole predicate) and filtered with the predicate in Spark, with the same SQL
    three-valued logic (service.spark_predicate). On a Paimon table with deleted rows, the uncovered rows' live
    `_ROW_ID`s come from pypaimon on the driver (Spark's reads of the data files do not apply deletion vectors;
    `catalog_options` reach pypaimon's catalog, e.g. S3 credentials).

    The table's registration (`client.table(name)`) supplies its format (unless `format` is given), its
    `row_id_column` and, for partitioned tables, the location used to keep partition columns.

    Raises:
        UntranslatablePredicateError: the answer is inexact and part of the predicate has no Spark evaluation with
            bgix's meaning (named); nothing is returned rather than a superset.
        TypeError: `client.query` returned something other than a QueryAnswer (its exactness unknown).
    """
    answer = client.query(table, where=where, result="roaring")
    if not isinstance(answer, QueryAnswer) or answer.rows is None:
        raise TypeError(f"expected a roaring QueryAnswer from Client.query(result='roaring'), got "
                        f"{type(answer).__name__}: without its exactness the rows cannot be trusted")
    files = client.files(table)
    if isinstance(files, Mapping):
        files = files["files"]
    elif hasattr(files, "files"):
        files = files.files
    entries = list(cast("Iterable[Mapping[str, object] | object]", files))   # the client's file map: a list
    layout = _table_layout(client, table)
    paimon = layout.format == "paimon" and format is None
    node = None if answer.is_exact else parse_predicate(where, None)   # before any read: a refusal costs nothing
    row_ids = answer.rows if node is None else _candidates(answer, layout, paimon, catalog_options)
    if paimon:
        frame = filter_paimon_rows(spark, entries, row_ids)
    else:
        frame = filter_by_row_ids(spark, entries, row_ids, format=format or layout.format or "parquet",
                                  row_id_column=layout.row_id_column, base_path=layout.base_path)
    if node is None:
        return frame
    from service.spark_predicate import spark_condition

    return frame.where(spark_condition(node, frame.schema))


def _candidates(answer: QueryAnswer, layout: _Layout, paimon: bool,
                catalog_options: Mapping[str, str] | None) -> BitMap64 | None:
    """Every row id where the predicate may be TRUE (None: every row of the table): the answer's rows and the rows
    it left open, without a Paimon table's deleted rows."""
    assert answer.rows is not None
    extra: list[tuple[int, int]] | None = None if answer.declined else answer.candidate_ranges(())
    if paimon and layout.deleted_rows:
        from service.paimon_answers import live_row_ids

        assert layout.location is not None
        return answer.rows | live_row_ids(layout.location, answer, extra, catalog_options)
    if extra is None:
        return None
    return answer.candidates(())


def _all_ids(files: Sequence[Mapping[str, object] | object]) -> BitMap64:
    """Every row id of the files of a table whose ids are positions: their [first_row_id, +row_count) spans."""
    spans = [(first, first + count - 1) for _, first, count in map(_file_fields, files) if count > 0]
    return ids_of_ranges(spans)


@dataclass(frozen=True)
class _Layout:
    """What spark_filter needs of the table's registration."""

    row_id_column: str | None = None
    base_path: str | None = None        # for partition discovery of a partitioned plain table
    format: str | None = None
    deleted_rows: int = 0               # a Paimon table's rows deletion vectors remove
    location: str | None = None


def _table_layout(client: object, table: str) -> _Layout:
    """The registration of `table`: `client.table(name)` (a Paimon table's with its snapshot's deleted rows), else
    from `client.tables()`; an empty _Layout when the client has neither."""
    one = getattr(client, "table", None)
    listed = [one(table)] if callable(one) else getattr(client, "tables", lambda: [])()
    for t in listed:
        def field(key: str, t: object = t) -> object:
            return t.get(key) if isinstance(t, Mapping) else getattr(t, key, None)
        if field("name") == table:
            rid = field("row_id_column")
            base = str(field("location")) if field("partition_columns") else None
            fmt = field("format")
            paimon = field("paimon")
            deleted = paimon.get("deleted_rows", 0) if isinstance(paimon, Mapping) else \
                getattr(paimon, "deleted_rows", 0)
            location = field("location")
            return _Layout(str(rid) if rid else None, base, str(fmt) if fmt else None, int(deleted or 0),
                           str(location) if location else None)
    return _Layout()
