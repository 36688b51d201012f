"""A table with its own row-id column (ids with gaps): every answer, complements included, holds only ids
present in the table — checked against pandas on the source rows."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from service.api.app import create_app
from tests.api.helpers import TestClient, make_settings, wait_job


def test_complements_never_return_ids_missing_from_the_table(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    rid = np.sort(rng.choice(50_000, size=1_200, replace=False)).astype("int64")  # sparse, with gaps
    status = rng.choice(np.array(["a", "b", "c", None], dtype=object), size=len(rid))
    df = pd.DataFrame({"rid": rid, "status": status})
    data = tmp_path / "data" / "t"
    data.mkdir(parents=True)
    pq.write_table(pa.Table.from_pandas(df.iloc[:700], preserve_index=False), data / "part-0.parquet")
    pq.write_table(pa.Table.from_pandas(df.iloc[700:], preserve_index=False), data / "part-1.parquet")

    with TestClient(create_app(make_settings(tmp_path))) as client:
        r = client.put("/v1/tables/t", json={"location": str(data), "row_id_column": "rid"})
        assert r.status_code == 200, r.text
        r = client.post("/v1/create_global_index", json={
            "table": "t", "index_column": "status",
            "options": {"sorted-index.records-per-range": "20000"}})  # several ranges with gaps
        assert r.status_code == 202, r.text
        assert wait_job(client, r.json()["job_id"])["state"] == "succeeded"

        cases = {
            "status != 'a'": df.status.notna() & (df.status != "a"),
            "status NOT IN ('a', 'b')": df.status.notna() & ~df.status.isin(["a", "b"]),
            "status IS NOT NULL": df.status.notna(),
            "NOT status = 'b'": df.status.notna() & (df.status != "b"),
            "NOT (status IS NULL)": df.status.notna(),
            "status IS NULL OR status = 'c'": df.status.isna() | (df.status == "c"),
        }
        for where, mask in cases.items():
            r = client.post("/v1/tables/t/query", json={"where": where, "limit": 100_000})
            assert r.status_code == 200, r.text
            assert r.json()["row_ids"] == df.rid[mask].tolist(), where


# ---------------------------------------------------------------------------- coverage in ids (issue 30, D2)

def _write(data: Path, name: str, rid: list[int], v: list[object]) -> pd.DataFrame:
    df = pd.DataFrame({"rid": pd.array(rid, dtype="int64"), "v": pd.array(v, dtype="Int64")})
    pq.write_table(pa.Table.from_pandas(df, preserve_index=False), data / name)
    return df


def _truth(frames: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Every live row of the table, from the source files (pandas; NULL as <NA>)."""
    return pd.concat(frames.values(), ignore_index=True).sort_values("rid", ignore_index=True)


# Predicates and their SQL result on pandas' columns: comparisons are UNKNOWN (not TRUE) on NULL.
_CASES = {
    "v = 1": lambda v: v.eq(1).fillna(False),
    "v <> 1": lambda v: v.ne(1).fillna(False),
    "NOT v = 2": lambda v: v.ne(2).fillna(False),
    "v IS NOT NULL": lambda v: v.notna(),
    "v IS NULL OR v > 1": lambda v: v.isna() | v.gt(1).fillna(False),
    "v NOT IN (1, 3)": lambda v: (~v.isin([1, 3])).fillna(False) & v.notna(),
}


def _query(client: TestClient, where: str, scan: str = "auto") -> dict:
    r = client.post("/v1/tables/t/query", json={"where": where, "limit": 100_000, "scan": scan})
    assert r.status_code == 200, r.text
    return r.json()


def _check(client: TestClient, frames: dict[str, pd.DataFrame], uncovered: list[int]) -> None:
    """Every answer holds exactly the true rows among the covered ids; the ids no index covers (and only ids that
    hold a row) are named in coverage."""
    df = _truth(frames)
    runs = [[i, i] for i in uncovered]   # the test's ids are spaced: one run per id
    for where, test in _CASES.items():
        got = _query(client, where, scan="never")
        covered = ~df.rid.isin(uncovered)
        assert got["exact"] is True, where
        assert got["row_ids"] == df.rid[test(df.v) & covered].tolist(), where
        assert got["coverage"] == {"complete": not uncovered, "uncovered_ranges": runs}, where
        # by default the uncovered ids' rows are read from their files: every true row, coverage complete
        got = _query(client, where)
        assert got["row_ids"] == df.rid[test(df.v)].tolist(), where
        assert got["exact"] is True and got["coverage"] == {"complete": True, "uncovered_ranges": []}, where
    (index,) = client.get("/v1/tables/t/indexes").json()["indexes"]
    assert index["uncovered_ranges"] == runs


def _refresh(client: TestClient) -> None:
    assert client.get("/v1/tables/t/files", params={"refresh": "true"}).status_code == 200


def _build(client: TestClient) -> dict:
    r = client.post("/v1/create_global_index", json={"table": "t", "index_column": "v"})
    assert r.status_code == 202, r.text
    return wait_job(client, r.json()["job_id"])


def test_coverage_counts_ids_not_positions(tmp_path: Path) -> None:
    """Ids 0, 2, …, 18 indexed; a file with ids 20, 22, 24 added: those three are uncovered (not `complete`, as it
    said when comparing ids with positions); a file with id 5 (a gap of the indexed range, never used) is too, and
    the next build takes it (it failed: "new rows reuse id 5")."""
    data = tmp_path / "data" / "t"
    data.mkdir(parents=True)
    frames = {"a": _write(data, "part-0.parquet", list(range(0, 20, 2)), [1, 2, None, 1, 3, 1, 2, 1, None, 1])}
    with TestClient(create_app(make_settings(tmp_path))) as client:
        assert client.put("/v1/tables/t", json={"location": str(data), "row_id_column": "rid"}).status_code == 200
        assert _build(client)["state"] == "succeeded"
        _check(client, frames, [])
        frames["b"] = _write(data, "part-1.parquet", [20, 22, 24], [1, None, 3])
        _refresh(client)
        _check(client, frames, [20, 22, 24])
        frames["c"] = _write(data, "part-2.parquet", [5], [1])
        _refresh(client)
        _check(client, frames, [5, 20, 22, 24])
        job = _build(client)
        assert job["state"] == "succeeded", job.get("error")
        _check(client, frames, [])
        assert _query(client, "v = 1")["count"] == int(_truth(frames).v.eq(1).sum()) == 7


def test_ids_not_starting_at_zero_are_complete_once_indexed(tmp_path: Path) -> None:
    """Coverage named ids from 0 up to the first id (positions), which hold no row."""
    data = tmp_path / "data" / "t"
    data.mkdir(parents=True)
    frames = {"a": _write(data, "part-0.parquet", [1_000_001, 1_000_003, 1_000_010], [1, None, 2]),
              "b": _write(data, "part-1.parquet", [7_000_000, 7_000_002], [3, 1])}
    with TestClient(create_app(make_settings(tmp_path))) as client:
        assert client.put("/v1/tables/t", json={"location": str(data), "row_id_column": "rid"}).status_code == 200
        assert _build(client)["state"] == "succeeded"
        _check(client, frames, [])


def test_removed_and_rewritten_files_leave_the_answer(tmp_path: Path) -> None:
    """A removed data file's ids hold no row: the index still lists them, the answer must not. A file rewritten in
    place keeps its ids with new values: the index's old values are not answers, its ids are uncovered."""
    data = tmp_path / "data" / "t"
    data.mkdir(parents=True)
    frames = {"a": _write(data, "part-0.parquet", [0, 2, 4], [1, 2, 1]),
              "b": _write(data, "part-1.parquet", [6, 8, 10], [1, 1, None]),
              "c": _write(data, "part-2.parquet", [12, 14], [2, 1])}
    with TestClient(create_app(make_settings(tmp_path))) as client:
        assert client.put("/v1/tables/t", json={"location": str(data), "row_id_column": "rid"}).status_code == 200
        assert _build(client)["state"] == "succeeded"
        (data / "part-1.parquet").unlink()
        del frames["b"]
        frames["c"] = _write(data, "part-2.parquet", [12, 14], [1, 3])   # rewritten: same ids, new values
        os.utime(data / "part-2.parquet", (1, 1))                          # a different mtime, whatever the clock
        _refresh(client)
        _check(client, frames, [12, 14])
        # new ids inside the index's ranges, while files it was built from are gone: a rebuild, said so
        _write(data, "part-3.parquet", [9], [1])
        _refresh(client)
        job = _build(client)
        assert job["state"] == "failed" and "rebuild" in job["error"] and "part-1.parquet" in job["error"]
