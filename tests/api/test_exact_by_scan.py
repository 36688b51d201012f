"""Exact by default (issue 30): rows no index covers and leaves the indexes decline are read from the table's data
and evaluated, so the answer equals pandas' over every live row; `"scan": "never"` gives the indexes' answer, and
past BGIX_QUERY_SCAN_MAX_ROWS the answer says it is not exact. The truth is pandas over the source rows (SQL
three-valued logic: a comparison with NULL is never TRUE)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from service.api.app import create_app
from tests.api.helpers import TestClient, make_settings, wait_job, write_table

ROWS = 3000
APPENDED = 400


def _frame(rng: np.random.Generator, n: int, first_uid: int = 0) -> pd.DataFrame:
    status = rng.choice(np.array(["ok", "error", "warn", "vip-user", None], dtype=object), n)
    country = rng.choice(np.array(["us", "de", "fr", None], dtype=object), n)
    def arrays() -> list[list[str | None] | None]:
        out: list[list[str | None] | None] = []
        for _ in range(n):
            if rng.random() < 0.05:
                out.append(None)
                continue
            a: list[str | None] = list(rng.choice(["vip", "eu", "new", "old"], int(rng.integers(0, 3)), replace=False))
            out.append(a + [None] if rng.random() < 0.05 else a)   # a null element: a miss is UNKNOWN
        return out

    return pd.DataFrame({"uid": np.arange(first_uid, first_uid + n, dtype=np.int64), "status": status,
                         "country": country, "score": rng.integers(0, 100, n).astype(np.int64), "tags": arrays(),
                         "more": arrays()})


def _write(path: Path, df: pd.DataFrame) -> None:
    pq.write_table(pa.Table.from_pandas(df, preserve_index=False), path)


def _ids(mask: pd.Series) -> list[int]:
    return np.flatnonzero(mask.fillna(False).to_numpy(dtype=bool)).tolist()


def _has(tags: pd.Series, value: str) -> pd.Series:
    """array_contains(tags, value) is TRUE (SQL: a null array, or a miss in one holding NULL, is UNKNOWN)."""
    return tags.map(lambda t: t is not None and value in list(t))


def _has_not(tags: pd.Series, *values: str) -> pd.Series:
    """NOT array_contains (NOT arrays_overlap with `values`) is TRUE: a non-null array without NULL elements that
    holds none of `values`."""
    return tags.map(lambda t: t is not None and None not in list(t) and not set(values) & set(t))


# (where, pandas truth over a frame)
CASES = [
    ("status = 'error'", lambda d: d.status == "error"),
    ("status <> 'ok' AND score >= 50", lambda d: d.status.notna() & (d.status != "ok") & (d.score >= 50)),
    ("status IN ('warn', 'vip-user') OR score < 5", lambda d: d.status.isin(["warn", "vip-user"]) | (d.score < 5)),
    ("NOT status = 'ok'", lambda d: d.status.notna() & (d.status != "ok")),
    ("status IS NULL", lambda d: d.status.isna()),
    ("country = 'de'", lambda d: d.country == "de"),                      # no index at all
    ("country = 'de' AND status = 'error'", lambda d: (d.country == "de") & (d.status == "error")),
    ("NOT country IN ('us', 'fr')", lambda d: d.country.notna() & ~d.country.isin(["us", "fr"])),
    ("status LIKE '%user%'", lambda d: d.status.fillna("").str.contains("user")),   # btree declines LIKE '%x%'
    ("array_contains(more, 'vip')", lambda d: _has(d.more, "vip")),        # an ARRAY column, no index
    ("array_contains(tags, 'vip') AND NOT array_contains(tags, 'eu')", lambda d: _has(d.tags, "vip")
     & _has_not(d.tags, "eu")),                                            # NOT: the multivalue index declines
    ("NOT arrays_overlap(more, array('vip', 'new')) OR score = 1", lambda d: _has_not(d.more, "vip", "new")
     | (d.score == 1)),
    ("NOT (array_contains(tags, 'old') OR status = 'ok')", lambda d: _has_not(d.tags, "old")
     & d.status.notna() & (d.status != "ok")),
]


@pytest.fixture()
def table(tmp_path: Path) -> tuple[Path, pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(30)
    data = tmp_path / "data" / "t"
    first = _frame(rng, ROWS)
    write_table(data, first, 3)
    return data, first, _frame(rng, APPENDED, first_uid=ROWS)


def _client(tmp_path: Path, **settings: Any) -> TestClient:
    return TestClient(create_app(make_settings(tmp_path, **settings)))


def _build(client: TestClient, location: Path) -> None:
    assert client.put("/v1/tables/t", json={"location": str(location)}).status_code == 200
    for column, family in (("status", "btree"), ("score", "bitmap"), ("tags", "multivalue")):
        r = client.post("/v1/create_global_index", json={"table": "t", "index_column": column, "index_type": family})
        assert r.status_code == 202, r.text
        assert wait_job(client, r.json()["job_id"])["state"] == "succeeded"


def _build_then_append(client: TestClient, location: Path, appended: pd.DataFrame) -> None:
    """Indexes over the table's first files, then a data file no index covers, seen by a refresh."""
    _build(client, location)
    _write(location / "part-009.parquet", appended)
    assert client.get("/v1/tables/t/files", params={"refresh": True}).json()["total_rows"] == ROWS + APPENDED


def _query(client: TestClient, where: str, **extra: Any) -> dict[str, Any]:
    r = client.post("/v1/tables/t/query", json={"where": where, "limit": 100_000, **extra})
    assert r.status_code == 200, (where, r.text)
    return r.json()


def test_appended_rows_and_unindexed_columns_are_answered_exactly(tmp_path: Path, table: Any) -> None:
    data, first, appended = table
    with _client(tmp_path) as client:
        _build_then_append(client, data, appended)
        whole = pd.concat([first, appended], ignore_index=True)
        for where, truth in CASES:
            got = _query(client, where, explain=True)
            assert got["row_ids"] == _ids(truth(whole)), where
            assert got["exact"] is True and got["coverage"] == {"complete": True, "uncovered_ranges": []}, where
            assert got["explain"]["scan"]["decision"] == "scanned", where
            count = _query(client, where, result="count")
            assert count["count"] == len(_ids(truth(whole))) and count["exact"] is True, where

        # the indexes' answer alone: what they cover, and coverage naming the appended rows
        got = _query(client, "status = 'error'", scan="never", explain=True)
        assert got["row_ids"] == _ids(first.status == "error")
        assert got["coverage"] == {"complete": False, "uncovered_ranges": [[ROWS, ROWS + APPENDED - 1]]}
        assert got["explain"]["scan"]["decision"] == "off"

        # a repeated query reads nothing again; a new question on a scanned column neither
        again = _query(client, "status = 'error'", explain=True)["explain"]["scan"]
        assert again["rows_scanned"] == 0 and again["decision"] == "scanned"
        other = _query(client, "status = 'warn' OR score = 7", explain=True)
        assert other["explain"]["scan"]["rows_scanned"] == 0
        assert other["row_ids"] == _ids((whole.status == "warn") | (whole.score == 7))

        # the plan says what the scan would read, reading nothing
        plan = client.post("/v1/tables/t/query", json={"where": "country = 'us'", "explain": "plan"}).json()
        assert plan["scan"]["decision"] == "scan" and plan["scan"]["rows_needed"] == ROWS + APPENDED
        assert plan["scan"]["columns"] == [{"column": "country", "reason": "no index on the column",
                                            "whole_column": False, "ranges": [[0, ROWS + APPENDED - 1]],
                                            "rows": ROWS + APPENDED}]


def test_the_first_scan_reports_the_rows_it_read(tmp_path: Path, table: Any) -> None:
    data, first, appended = table
    with _client(tmp_path) as client:
        _build_then_append(client, data, appended)
        scan = _query(client, "status = 'ok' AND score > 10", explain=True)["explain"]["scan"]
        assert scan["rows_scanned"] == 2 * APPENDED   # the appended rows of both columns, once each
        assert {c["column"]: c["reason"] for c in scan["columns"]} == {"status": "rows no index covers",
                                                                      "score": "rows no index covers"}
        assert all(c["ranges"] == [[ROWS, ROWS + APPENDED - 1]] for c in scan["columns"])


def test_over_the_budget_the_answer_says_it_is_not_exact(tmp_path: Path, table: Any) -> None:
    data, first, appended = table
    with _client(tmp_path, query_scan_max_rows=APPENDED - 1) as client:
        _build_then_append(client, data, appended)
        got = _query(client, "status = 'error'", explain=True)
        assert got["row_ids"] == _ids(first.status == "error")
        assert got["coverage"]["complete"] is False
        assert got["explain"]["scan"]["decision"] == "over_budget"
        assert "BGIX_QUERY_SCAN_MAX_ROWS" in got["explain"]["scan"]["reason"]
        # a column with no index, over the budget: nothing answered, and it says so
        got = _query(client, "country = 'de'")
        assert got["row_ids"] == [] and got["coverage"]["complete"] is False
        # a leaf the btree declines, its column over the budget: the AND drops it and says the rows are a superset
        got = _query(client, "status LIKE '%user%' AND score < 50")
        assert got["exact"] is False
        assert set(got["row_ids"]) >= set(_ids(first.status.fillna("").str.contains("user") & (first.score < 50)))
    with _client(tmp_path, query_scan_max_rows=0) as client:
        got = _query(client, "status = 'error'", explain=True)
        assert got["explain"]["scan"]["decision"] == "off" and got["coverage"]["complete"] is False


def test_a_corrupt_data_file_met_while_scanning_is_named(tmp_path: Path, table: Any) -> None:
    data, first, appended = table
    with _client(tmp_path) as client:
        _build_then_append(client, data, appended)
        raw = (data / "part-009.parquet").read_bytes()
        # same size, garbled column chunks: the row-id map still lists the file, its rows no longer read
        (data / "part-009.parquet").write_bytes(raw[:4] + bytes(len(raw) - 8) + raw[-4:])
        # the answer is the indexes' (never a wrong row), saying which rows are missing and which file failed
        got = _query(client, "status = 'error'", explain=True)
        assert got["row_ids"] == _ids(first.status == "error")
        assert got["coverage"] == {"complete": False, "uncovered_ranges": [[ROWS, ROWS + APPENDED - 1]]}
        scan = got["explain"]["scan"]
        assert scan["decision"] == "failed" and "part-009.parquet" in scan["reason"], scan


def test_scan_mode_is_validated(tmp_path: Path, table: Any) -> None:
    data, _, _ = table
    with _client(tmp_path) as client:
        _build(client, data)
        r = client.post("/v1/tables/t/query", json={"where": "status = 'ok'", "scan": "sometimes"})
        assert r.status_code in (400, 422) and "scan" in r.text


def test_a_column_of_a_type_nothing_evaluates_is_named(tmp_path: Path) -> None:
    data = tmp_path / "data" / "t"
    data.mkdir(parents=True)
    pq.write_table(pa.table({"s": ["a", "b", None], "blob": [b"x", b"y", b"z"],
                             "st": [{"k": 1}, {"k": 2}, None]}), data / "part-000.parquet")
    with _client(tmp_path) as client:
        assert client.put("/v1/tables/t", json={"location": str(data)}).status_code == 200
        assert _query(client, "s = 'b'")["row_ids"] == [1]    # no index, read from the data
        for where, kind in (("blob = 'x'", "binary"), ("st IS NULL", "struct")):
            r = client.post("/v1/tables/t/query", json={"where": where})
            assert r.status_code == 400 and kind in r.json()["error"]["message"], r.text
        r = client.post("/v1/tables/t/query", json={"where": "nope = 1"})
        assert r.status_code == 400 and r.json()["error"]["code"] == "unknown_column"
        assert "columns of the table: blob, s, st" in r.json()["error"]["message"]
