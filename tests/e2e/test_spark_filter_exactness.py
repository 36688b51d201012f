"""spark_filter always returns exactly the matching rows, whatever the service could answer: rows appended after
the build (no index covers them), declined leaves (a NOT over an array predicate; budgeted string operators with
no budget), deleted rows among the uncovered ones. Its filter, service.spark_predicate, agrees row by row with the
pandas oracle on random predicates and with Spark SQL's own answers.

Judges: pypaimon's read of the live rows evaluated in plain Python (tests/inexact_tables.py), Spark's own filter
of the SQL text over the Parquet files, the pandas oracle of tests/api/predicates.py; never bgix's output.
"""
from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from index_format.predicate.json import from_json
from index_format.predicate.sql import parse_where
from service.api.app import create_app
from service.demo.events import events_batch, write_events
from service.spark_filter import ROW_ID_COLUMN, spark_filter
from service.spark_predicate import spark_condition
from tests.api.helpers import TestClient, make_settings, wait_job
from tests.api.predicates import make_frame, oracle, random_predicate, to_sql
from tests.inexact_tables import BUILT_ROWS, COLUMNS, NAME, PREDICATES, build_inexact_table, live_rows, served_client, truth
from tests.translation_cases import CASES

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def test_spark_condition_agrees_with_the_oracle_and_with_spark_sql(spark) -> None:
    """60 random predicates over rows with nulls, as Columns of one select: TRUE and UNKNOWN per row as the
    pandas oracle says; then the hand-written Spark SQL answers of tests/translation_cases.py. (The pyarrow
    translation takes 150 in tests/unit: Spark compiles every column of the select, ~0.2 s of CPU each.)"""
    frame = make_frame(np.random.default_rng(43), 400)
    df = spark.createDataFrame(pa.Table.from_pandas(frame, preserve_index=False).to_pylist(),
                               "status string, country string, age bigint, score double")
    preds = [random_predicate(random.Random(9100 + i), frame) for i in range(60)]
    cols = [spark_condition(from_json(p) if i % 2 else parse_where(to_sql(p)), df.schema).alias(f"p{i}")
            for i, p in enumerate(preds)]
    got = df.select(*cols).collect()
    for i, p in enumerate(preds):
        want_t, want_u = oracle(p, frame)
        values = [row[i] for row in got]
        assert [v is True for v in values] == want_t.tolist(), to_sql(p)
        assert [v is None for v in values] == want_u.tolist(), to_sql(p)
    for table, where, want in CASES:
        case = spark.createDataFrame(table.to_pylist(), _spark_schema(table))
        assert [r[0] for r in case.select(spark_condition(parse_where(where), case.schema)).collect()] == want, where


def _spark_schema(table: pa.Table) -> str:
    names = {pa.string(): "string", pa.float64(): "double", pa.int32(): "int", pa.int64(): "bigint",
             pa.list_(pa.int64()): "array<bigint>", pa.decimal128(10, 2): "decimal(10,2)",
             pa.timestamp("us", tz="UTC"): "timestamp", pa.timestamp("us"): "timestamp_ntz", pa.date32(): "date"}
    return ", ".join(f"`{f.name}` {names[f.type]}" for f in table.schema)


@pytest.fixture(scope="module")
def inexact_paimon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TestClient, list[dict[str, Any]]]]:
    root = tmp_path_factory.mktemp("spark_inexact")
    with TestClient(create_app(make_settings(root))) as http:
        location = build_inexact_table(http, root / "data" / "wh")
        yield http, live_rows(location)


@pytest.mark.parametrize("where", sorted(PREDICATES))
def test_spark_filter_is_exact_on_a_paimon_table_with_uncovered_deleted_and_declined_rows(
        spark, inexact_paimon, where: str) -> None:
    """The reported bug: `status = 'error'` missed the appended rows' matches, and the declined array predicate
    returned non-matching rows and missed matching ones. Now every row is the judge's, with its values."""
    http, rows = inexact_paimon
    want = truth(rows, where)
    with served_client(http) as client:
        answer = client.query(NAME, where=where)
        assert not answer.is_exact   # every predicate here spans the appended rows (some are declined too)
        got = spark_filter(client, spark, NAME, where).toPandas()
    assert sorted(got[ROW_ID_COLUMN].tolist()) == want
    by_id = {r["_ROW_ID"]: r for r in rows}
    for record in got.to_dict("records"):
        source = by_id[record[ROW_ID_COLUMN]]
        for column in COLUMNS:
            value = record[column]
            value = None if value is None or (isinstance(value, float) and value != value) else value
            value = list(value) if value is not None and column == "tags" else value
            assert value == source[column], (where, column, record)


def test_the_appended_rows_hold_matches(inexact_paimon) -> None:
    _, rows = inexact_paimon
    assert any(i >= BUILT_ROWS for i in truth(rows, "status = 'error'"))
    assert any(i >= BUILT_ROWS for i in truth(rows, "NOT array_contains(tags, 'eu')"))


@pytest.fixture(scope="module")
def inexact_parquet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TestClient, Path]]:
    """A plain Parquet table: indexes on status, country and ts with no fallback-scan budget (so `contains` and LIKE
    are declined), then a fifth file added and the table refreshed (its rows uncovered)."""
    root = tmp_path_factory.mktemp("spark_inexact_parquet")
    source = root / "data" / "events"
    write_events(source, rows=8000, files=4, seed=11)
    with TestClient(create_app(make_settings(root))) as http:
        assert http.put("/v1/tables/events", json={"location": str(source)}).status_code == 200
        for column in ("status", "country", "ts"):   # a plain table's build takes one column
            r = http.post("/v1/create_global_index", json={
                "table": "events", "index_column": column,
                "options": {"bitmap-index.fallback-scan-max-size": "0", "bgix.range-sidecar": "false"}})
            assert r.status_code == 202, r.text
            assert wait_job(http, r.json()["job_id"])["state"] == "succeeded"
        pq.write_table(events_batch(8000, 2000, np.random.default_rng(12)), source / "part-00004.parquet")
        assert http.get("/v1/tables/events/files", params={"refresh": True}).json()["total_rows"] == 10_000
        yield http, source


@pytest.mark.parametrize("where, spark_sql", [
    ("status = 'error'", None),
    ("status = 'error' AND contains(country, 'E')", "status = 'error' AND contains(country, 'E')"),
    ("NOT country LIKE '%E%'", None),
    ("ts < TIMESTAMP '2026-10-03 12:00:00' AND NOT status IN ('ok', 'error')",
     "ts < TIMESTAMP_NTZ '2026-10-03 12:00:00' AND NOT status IN ('ok', 'error')"),
])
def test_spark_filter_is_exact_on_a_plain_table_with_uncovered_and_declined_rows(
        spark, inexact_parquet, where: str, spark_sql: str | None) -> None:
    http, source = inexact_parquet
    with served_client(http) as client:
        answer = client.query("events", where=where)
        assert not answer.is_exact
        got = spark_filter(client, spark, "events", where)
    plain = spark.read.parquet(str(source)).filter(spark_sql or where)
    assert got.count() == plain.count() > 0
    assert sorted(map(tuple, got.drop(ROW_ID_COLUMN).collect())) == sorted(map(tuple, plain.collect()))
