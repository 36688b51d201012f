"""The Python client and `spark_filter` on a Paimon table, through a real `bgix serve`.

pypaimon is the judge: it creates the partitioned row-tracking table (several commits, nulls), rewrites a
column of some rows (data evolution: newer files holding only `status`), deletes rows (deletion vectors),
and its own read of every column plus `_ROW_ID` is the oracle the DataFrame must equal.
"""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

from service.client import Client
from service.spark_filter import ROW_ID_COLUMN, spark_filter
from tests.api.server import bgix_server
from tests.unit.tables.paimon.paimon_tables import create_table, delete_rows, pypaimon_read, update_rows

pytestmark = [pytest.mark.spark, pytest.mark.slow]

COLUMNS = ["status", "flag", "code", "dt"]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    tmp = tmp_path_factory.mktemp("paimon_filter")
    location = create_table(tmp / "wh", "events", commits=3, rows=800)
    updated = list(range(0, 1200, 7))
    update_rows(location, "status", updated, ["updated"] * len(updated))
    delete_rows(location, list(range(3, 2400, 11)))
    env = {"BGIX_WAREHOUSE": str(tmp / "bgix"), "BGIX_ALLOWED_ROOTS": str(tmp), "BGIX_BUILD_ENGINE": "local",
           "BGIX_TOKEN": ""}
    with bgix_server(env, tmp / "serve.log") as url, Client(url) as client:
        client.register_table("events", str(location), format="paimon")
        assert client.wait(client.create_global_index("events", "status,flag"), timeout=120).state == "succeeded"
        yield url, location


def _oracle(location: Path) -> pd.DataFrame:
    return pypaimon_read(location, COLUMNS).to_pandas().set_index("_ROW_ID").sort_index()


@pytest.mark.parametrize("where, mask", [
    ("status = 'updated' OR flag", lambda d: d.status.eq("updated") | d.flag.eq(True)),
    ("status IN ('error', 'warn') AND NOT flag", lambda d: d.status.isin(["error", "warn"]) & d.flag.eq(False)),
    ("status IS NULL", lambda d: d.status.isna()),
])
def test_spark_filter_returns_pypaimons_rows(spark, served: tuple[str, Path], where: str, mask: object) -> None:
    url, location = served
    oracle = _oracle(location)
    expected = oracle[mask(oracle)]  # type: ignore[operator]
    assert len(expected) > 0
    with Client(url) as client:
        ids = client.query("events", where=where)
        assert sorted(ids) == list(expected.index)  # the client's roaring answer: pypaimon's _ROW_IDs
        assert client.count("events", where=where) == len(expected)
        got = spark_filter(client, spark, "events", where).toPandas()
    got = got.set_index(ROW_ID_COLUMN).sort_index()
    assert list(got.index) == list(expected.index)
    assert list(got.columns) == COLUMNS
    pd.testing.assert_frame_equal(got, expected[COLUMNS], check_dtype=False, check_names=False,
                                  check_index_type=False)


def test_file_map_names_paimon_files_with_sequence_numbers(served: tuple[str, Path]) -> None:
    url, location = served
    with Client(url) as client:
        files = client.files("events")
    # every row pypaimon reads lies in some listed file's [first_row_id, first_row_id + row_count)
    spans = [(f.first_row_id, f.first_row_id + f.row_count) for f in files]
    assert all(any(a <= rid < b for a, b in spans) for rid in _oracle(location).index)
    assert all(f.path.startswith(str(location)) and f.max_sequence_number is not None for f in files)
    partial = [f for f in files if f.write_cols is not None]
    assert partial and all(f.write_cols == ["status"] for f in partial)  # the data-evolution update files
