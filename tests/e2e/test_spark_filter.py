"""service.spark_filter in local Spark, checked against a plain `df.filter(...)` on the same Parquet files."""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyroaring import BitMap64

from service.demo.events import write_events
from service.query_answer import Coverage, QueryAnswer
from service.spark_filter import MAX_RANGE_PREDICATES, ROW_ID_COLUMN, filter_by_row_ids, select_files, spark_filter
from tests.api.server import bgix_server
from tests.factories import make_parquet_table

pytestmark = pytest.mark.spark

PREDICATE = "s = 'w001' OR n > 40 OR s LIKE 'émoji%'"


def _table(tmp_path: Path, rows_per_file: tuple[int, ...] = (700, 1200, 500),
           row_group_size: int = 300) -> tuple[list[dict], pd.DataFrame]:
    """The row-id map built independently: files in path order, ids counted up from 0 in read order."""
    gen = make_parquet_table(tmp_path, "t", rows_per_file=rows_per_file, row_group_size=row_group_size)
    files, frames, first = [], [], 0
    for path in gen.files:
        part = pq.read_table(path).to_pandas()
        part.index = range(first, first + len(part))
        files.append({"path": str(path), "first_row_id": first, "row_count": len(part)})
        frames.append(part)
        first += len(part)
    return files, pd.concat(frames)


def _rows(df) -> list[tuple]:
    return sorted((tuple(r) for r in df.collect()), key=repr)


def test_matches_plain_spark_filter_on_the_same_files(spark, tmp_path: Path) -> None:
    files, pdf = _table(tmp_path)
    mask = pdf.s.eq("w001") | pdf.n.gt(40) | pdf.s.str.startswith("émoji", na=False)
    ids = BitMap64(int(i) for i in pdf.index[mask])
    assert len(ids) > 3 * MAX_RANGE_PREDICATES  # scattered ids: exercises the semi-join path

    got = filter_by_row_ids(spark, files, ids)
    plain = spark.read.parquet(*[f["path"] for f in files]).filter(PREDICATE)
    assert _rows(got.drop(ROW_ID_COLUMN)) == _rows(plain)
    assert got.count() == int(mask.sum())
    # Each returned row is the source row with that id (pandas holds the ground truth per id).
    back = got.toPandas().set_index(ROW_ID_COLUMN).sort_index()
    assert list(back.index) == sorted(ids)
    expected = pdf.loc[list(back.index), back.columns]
    pd.testing.assert_frame_equal(back, expected, check_dtype=False, check_names=False, check_index_type=False)


def test_contiguous_ids_use_range_predicates_and_skip_files(spark, tmp_path: Path) -> None:
    files, pdf = _table(tmp_path)
    # ids 750..799 and 1000..1099 all live in the second file.
    ids = BitMap64(list(range(750, 800)) + list(range(1000, 1100)))
    assert [p for p, *_ in select_files(files, ids)] == [files[1]["path"]]
    got = filter_by_row_ids(spark, files, ids)
    assert [Path(p).name for p in got.inputFiles()] == [Path(files[1]["path"]).name]
    back = got.toPandas().set_index(ROW_ID_COLUMN).sort_index()
    assert list(back.index) == sorted(ids)
    pd.testing.assert_frame_equal(back, pdf.loc[list(back.index), back.columns],
                                  check_dtype=False, check_names=False, check_index_type=False)


def test_ids_beyond_the_table_and_empty_sets(spark, tmp_path: Path) -> None:
    files, pdf = _table(tmp_path)
    total = len(pdf)
    got = filter_by_row_ids(spark, files, BitMap64([0, total - 1, total, total + 10, 2**40]))
    assert sorted(r[ROW_ID_COLUMN] for r in got.select(ROW_ID_COLUMN).collect()) == [0, total - 1]
    empty = filter_by_row_ids(spark, files, BitMap64())
    assert empty.count() == 0
    assert empty.columns == list(pdf.columns) + [ROW_ID_COLUMN]
    with pytest.raises(ValueError):
        filter_by_row_ids(spark, [], BitMap64([1]))


def test_runs_are_exact() -> None:
    from service.spark_filter import _run_bounds

    def _runs(positions: np.ndarray) -> list[tuple[int, int]]:
        starts, ends = _run_bounds(positions)
        return list(zip(starts.tolist(), ends.tolist()))

    pos = np.array([0, 1, 2, 5, 7, 8, 20], dtype=np.int64)
    assert _runs(pos) == [(0, 2), (5, 5), (7, 8), (20, 20)]
    assert _runs(np.array([], dtype=np.int64)) == []


@pytest.fixture()
def served_table(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A real `bgix serve` (local build engine) over the sample events table with an index on status and country."""
    from service.client import Client

    warehouse = tmp_path / "wh"
    source = warehouse / "source" / "events"
    write_events(source, rows=20_000, files=4, seed=5)
    env = {"BGIX_WAREHOUSE": str(warehouse), "BGIX_BUILD_ENGINE": "local", "BGIX_TOKEN": ""}
    with bgix_server(env, tmp_path / "serve.log") as url:
        with Client(url) as client:
            client.register_table("events", str(source))
            for column in ("status", "country"):
                job = client.create_global_index("events", column)
                assert client.wait(job, timeout=120).state == "succeeded"
        yield url, source


def test_spark_filter_through_the_service(spark, served_table: tuple[str, Path]) -> None:
    from service.client import Client

    url, source = served_table
    where = "status IN ('error', 'timeout') AND NOT country = 'US'"
    with Client(url) as client:
        got = spark_filter(client, spark, "events", where)
    plain = spark.read.parquet(str(source)).filter(where)
    assert got.count() == plain.count() > 0
    assert _rows(got.drop(ROW_ID_COLUMN)) == _rows(plain)


class _FakeClient:
    """Stands in for service.client.Client: a pandas-computed answer and the row-id map, no server."""

    def __init__(self, files: list[dict], ids: BitMap64, table: dict) -> None:
        self._files, self._ids, self._table = files, ids, table

    def files(self, table: str) -> list[dict]:
        return self._files

    def query(self, table: str, where: str, result: str) -> QueryAnswer:
        assert result == "roaring"
        return QueryAnswer(table, "roaring", exact=True, coverage=Coverage(True), count=len(self._ids),
                           rows=self._ids)

    def tables(self) -> list[dict]:
        return [self._table]


def test_row_id_column_tables_filter_on_the_column_not_positions(spark, tmp_path: Path) -> None:
    """With a row_id_column the ids are column values (spread over files out of order), not positions."""
    files, pdf = _table(tmp_path)
    rng = np.random.default_rng(3)
    rids = rng.permutation(len(pdf)) * 7 + 11  # unique, scattered, unrelated to file order
    start = 0
    for f in files:
        t = pq.read_table(f["path"])
        pq.write_table(t.append_column("rid", pa.array(rids[start:start + t.num_rows], pa.int64())), f["path"])
        start += t.num_rows
    pdf = pdf.assign(rid=rids)
    mask = pdf.s.eq("w001") | pdf.n.gt(40)
    ids = BitMap64(int(r) for r in pdf.rid[mask])
    client = _FakeClient(files, ids, {"name": "t", "location": str(tmp_path / "t"), "partition_columns": [],
                                      "row_id_column": "rid"})
    got = spark_filter(client, spark, "t", "s = 'w001' OR n > 40")
    plain = spark.read.parquet(*[f["path"] for f in files]).filter("s = 'w001' OR n > 40")
    assert got.count() == int(mask.sum())
    assert _rows(got.drop(ROW_ID_COLUMN)) == _rows(plain)
    assert sorted(r[0] for r in got.select(ROW_ID_COLUMN).collect()) == sorted(ids)
    few = filter_by_row_ids(spark, files, BitMap64([int(rids[0]), int(rids[5])]), row_id_column="rid")
    assert sorted(r["rid"] for r in few.collect()) == sorted([int(rids[0]), int(rids[5])])
    assert filter_by_row_ids(spark, files, BitMap64(), row_id_column="rid").count() == 0


def test_partitioned_tables_keep_partition_columns(spark, tmp_path: Path) -> None:
    gen = make_parquet_table(tmp_path, "p", rows_per_file=(300, 400, 200),
                             partitions=[{"dt": "2026-01-01"}, {"dt": "2026-01-02"}])
    files, first, frames = [], 0, []
    for path in gen.files:  # ids in path order, as the catalog numbers them; dt from the directory name
        part = pq.read_table(path).to_pandas().assign(dt=path.parent.name.split("=")[1])
        part.index = range(first, first + len(part))
        files.append({"path": str(path), "first_row_id": first, "row_count": len(part)})
        frames.append(part)
        first += len(part)
    pdf = pd.concat(frames)
    where = "dt = '2026-01-02' AND s IN ('w001', 'w002', 'zz')"
    mask = pdf.dt.eq("2026-01-02") & pdf.s.isin(["w001", "w002", "zz"])
    client = _FakeClient(files, BitMap64(int(i) for i in pdf.index[mask]),
                         {"name": "p", "location": str(gen.location), "partition_columns": ["dt"],
                          "row_id_column": None})
    got = spark_filter(client, spark, "p", where)
    plain = spark.read.parquet(str(gen.location)).filter(where)
    assert "dt" in got.columns
    assert got.count() == int(mask.sum()) > 0
    assert _rows(got.drop(ROW_ID_COLUMN)) == _rows(plain.select(*[c for c in got.columns if c != ROW_ID_COLUMN]))


def test_non_parquet_tables_use_their_format_and_need_a_row_id_column(spark, tmp_path: Path) -> None:
    """Spark has `_metadata.row_index` only for Parquet: an ORC table works through its row_id_column,
    and without one the helper says why instead of failing inside Spark."""
    import pyarrow.orc as orc

    from service.catalog.catalog_errors import RowIdError

    pdf = pd.DataFrame({"s": ["a", "b", None, "a", "c", "a"], "rid": [40, 10, 50, 20, 30, 60]})
    files = []
    for i, part in enumerate((pdf.iloc[:3], pdf.iloc[3:])):
        path = tmp_path / f"part-{i}.orc"
        orc.write_table(pa.Table.from_pandas(part, preserve_index=False), path)
        files.append({"path": str(path), "first_row_id": 3 * i, "row_count": 3})
    ids = BitMap64(int(r) for r in pdf.rid[pdf.s.eq("a")])
    client = _FakeClient(files, ids, {"name": "o", "location": str(tmp_path), "format": "orc",
                                      "partition_columns": [], "row_id_column": "rid"})
    got = spark_filter(client, spark, "o", "s = 'a'")
    assert sorted(r["rid"] for r in got.collect()) == [20, 40, 60]
    with pytest.raises(RowIdError, match="row_id_column"):
        filter_by_row_ids(spark, files, ids, format="orc")


def _physical_plan(df) -> str:
    """The physical plan as Spark would run it without adaptive execution (whose wrapper hides the rest)."""
    conf = df.sparkSession.conf
    adaptive = conf.get("spark.sql.adaptive.enabled")
    conf.set("spark.sql.adaptive.enabled", "false")
    try:
        return str(df._jdf.queryExecution().executedPlan().toString())
    finally:
        conf.set("spark.sql.adaptive.enabled", adaptive)


def test_scattered_ids_reach_tasks_as_a_broadcast_not_in_the_plan(spark, tmp_path: Path) -> None:
    """20k scattered ids: no local table of ids and no id literals in the plan (the ids travel as a broadcast
    bit mask, expanded by one task into the join's build side); the rows are exactly pandas' rows."""
    files, pdf = _table(tmp_path, rows_per_file=(30_000, 30_000), row_group_size=10_000)
    rng = np.random.default_rng(11)
    wanted = np.sort(rng.choice(len(pdf), size=20_000, replace=False))
    got = filter_by_row_ids(spark, files, BitMap64(wanted.astype(np.uint64)))

    # The old build side, a DataFrame of the ids, is a local table Spark parallelizes into its tasks (2.2 MB
    # tasks for 139k ids); now one task expands the broadcast sets (bench/bench_spark_filter.py measures tasks).
    assert "LocalTableScan" in _physical_plan(spark.createDataFrame(pa.table({ROW_ID_COLUMN: pa.array(wanted)})))
    plan = _physical_plan(got)
    assert "LocalTableScan" not in plan and "MapInArrow" in plan and "BroadcastHashJoin" in plan
    assert len(plan) < 20_000  # no id literals either
    back = got.toPandas().set_index(ROW_ID_COLUMN).sort_index()
    assert list(back.index) == wanted.tolist()
    pd.testing.assert_frame_equal(back, pdf.loc[wanted, back.columns], check_dtype=False, check_names=False,
                                  check_index_type=False)


def test_runs_and_scattered_files_mix_in_one_answer(spark, tmp_path: Path) -> None:
    """One file's matches are two runs (range predicates), another's are scattered (broadcast join), a third
    has none (not read): each file is filtered its own way and the rows are exactly the wanted ones."""
    from service.spark_filter import _file_ids, _Selection, _sorted_ids

    files, pdf = _table(tmp_path)  # files of 700, 1200, 500 rows
    scattered = list(range(700, 1900, 3))
    ids = BitMap64(list(range(10, 40)) + list(range(100, 120)) + scattered)
    chosen = select_files(files, ids)
    assert [p for p, *_ in chosen] == [files[0]["path"], files[1]["path"]]
    selection = _Selection(spark, [_file_ids(_sorted_ids(ids), f, n) for _, f, n, _ in chosen])
    assert list(selection.ranges) == [0] and list(selection.sets) == [1]
    got = filter_by_row_ids(spark, files, ids)
    assert sorted(Path(p).name for p in got.inputFiles()) == sorted(Path(p).name for p, *_ in chosen)
    back = got.toPandas().set_index(ROW_ID_COLUMN).sort_index()
    assert list(back.index) == sorted(ids)
    pd.testing.assert_frame_equal(back, pdf.loc[list(back.index), back.columns],
                                  check_dtype=False, check_names=False, check_index_type=False)


def test_sparse_id_column_values_and_nulls(spark, tmp_path: Path) -> None:
    """Row-id column values spread far apart (sorted offsets, not a bit mask) with some nulls: nulls never match,
    every wanted value does, values between them do not."""
    from service.spark_filter import _compact_set, _sorted_ids

    files, pdf = _table(tmp_path)
    rng = np.random.default_rng(4)
    rids = pd.array(rng.permutation(len(pdf)) * 1_000_003 + 2**40, dtype="Int64")
    rids[rng.random(len(pdf)) < 0.05] = pd.NA
    start = 0
    for f in files:
        t = pq.read_table(f["path"])
        chunk = rids[start:start + t.num_rows]
        pq.write_table(t.append_column("rid", pa.array(chunk, pa.int64(), from_pandas=True)), f["path"])
        start += t.num_rows
    pdf = pdf.assign(rid=rids)
    wanted = pdf.rid[pdf.s.eq("w001") | pdf.n.gt(30)].dropna()
    ids = BitMap64(int(r) for r in wanted)
    assert len(ids) > 3 * MAX_RANGE_PREDICATES and _compact_set(_sorted_ids(ids))[0] == "sorted"
    got = filter_by_row_ids(spark, files, ids, row_id_column="rid")
    assert sorted(r["rid"] for r in got.collect()) == sorted(int(r) for r in wanted)
    near = BitMap64(int(r) + 1 for r in wanted)  # neighbours of real values: none exists
    assert filter_by_row_ids(spark, files, near, row_id_column="rid").count() == 0


def test_id_expander_needs_no_bgix_on_executors(spark, tmp_path: Path) -> None:
    """The function that expands the broadcast sets into ids is pickled by value: a Python where `service`
    cannot be imported unpickles and runs it (Spark's executors need numpy and pyarrow, not bgix)."""
    import subprocess
    import sys

    from pyspark import cloudpickle

    from service.spark_filter import _compact_set, _expander

    sets = [_compact_set(np.array([3, 4, 9], dtype=np.int64)),
            _compact_set(np.array([5, 10**9, 2 * 10**9], dtype=np.int64))]
    assert [sets[0][0], sets[1][0]] == ["bits", "sorted"]
    expand = _expander(spark.sparkContext.broadcast(sets))
    (tmp_path / "expand.pkl").write_bytes(cloudpickle.dumps(expand))
    (tmp_path / "sets.pkl").write_bytes(cloudpickle.dumps(sets))
    script = f"""
import pickle, sys, types
sys.modules["service"] = None  # importing bgix fails from here on
import pyarrow as pa
import pyspark.core.broadcast as b
sets = pickle.loads(open({str(tmp_path / "sets.pkl")!r}, "rb").read())
b._from_id = lambda bid: types.SimpleNamespace(value=sets)  # stands in for the executor's broadcast registry
expand = pickle.loads(open({str(tmp_path / "expand.pkl")!r}, "rb").read())
out = list(expand(iter([pa.record_batch([pa.array([1, 0], pa.int64())], names=["id"])])))
print([v for batch in out for v in batch.column(0).to_pylist()])
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str([5, 10**9, 2 * 10**9, 3, 4, 9])


def test_compact_sets_are_exact() -> None:
    """Bit masks hold exactly the values (little-endian bits from lo); sparse sets keep sorted offsets."""
    from service.spark_filter import _compact_set

    rng = np.random.default_rng(2)
    for n in (1, 9, 700, 40_000):
        values = np.sort(rng.choice(100_000, n, replace=False)).astype(np.int64) + 2**33
        kind, lo, data = _compact_set(values)
        assert lo == values[0]
        if kind == "bits":
            assert data.nbytes <= values.nbytes
            assert np.array_equal(np.flatnonzero(np.unpackbits(data, bitorder="little")) + lo, values)
        else:
            assert np.array_equal(data + lo, values)
    assert _compact_set(np.arange(5, 70_000, dtype=np.int64))[0] == "bits"
    assert _compact_set(np.array([0, 10**12], dtype=np.int64))[0] == "sorted"
