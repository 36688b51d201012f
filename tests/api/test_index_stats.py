"""Stored index statistics (issue 10, items 7 and 8) against pandas truth on the source rows: distinct values,
null rows and value look-ups over several index files, retired rows, stored/corrupt stats documents, and
column names resolved case-insensitively (snapshots of a query, value look-ups)."""
from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from service.api.app import create_app
from tests.api.helpers import TestClient, make_settings, wait_job, write_table

ROWS = 3000


def _frame(rng: np.random.Generator, n: int) -> pd.DataFrame:
    s = pd.Series([f"k{int(v):03d}" for v in rng.zipf(1.4, n) % 400], dtype=object)
    s[rng.random(n) < 0.05] = None
    num = pd.Series(rng.integers(-50, 50, n), dtype="Int64")
    num[rng.random(n) < 0.03] = pd.NA
    return pd.DataFrame({"s": s, "n": num})


def _build(client: TestClient, table: str, column: str, options: str | None = None) -> None:
    body = {"table": table, "index_column": column}
    if options:
        body["options"] = options
    r = client.post("/v1/create_global_index", json=body)
    assert r.status_code == 202, r.text
    assert wait_job(client, r.json()["job_id"])["state"] == "succeeded"


def _append_and_rebuild(client: TestClient, data: Path, i: int) -> None:
    """New rows, then a build: the index gets a new snapshot."""
    before = client.get("/v1/tables/u/indexes").json()["indexes"][0]["snapshot_id"]
    extra = _frame(np.random.default_rng(100 + i), 30)
    pq.write_table(pa.Table.from_pandas(extra, preserve_index=False), data / f"part-{i:03d}.parquet")
    assert client.get("/v1/tables/u/files", params={"refresh": "true"}).status_code == 200
    _build(client, "u", "s")
    assert client.get("/v1/tables/u/indexes").json()["indexes"][0]["snapshot_id"] != before


def _all_values(client: TestClient, table: str, column: str, order: str, prefix: str | None = None,
                limit: int = 37) -> list[tuple[object, int]]:
    out: list[tuple[object, int]] = []
    cursor = None
    for _ in range(1000):
        params: dict[str, object] = {"order": order, "limit": limit}
        if prefix is not None:
            params["prefix"] = prefix
        if cursor:
            params["cursor"] = cursor
        r = client.get(f"/v1/tables/{table}/indexes/{column}/values", params=params)
        assert r.status_code == 200, r.text
        body = r.json()
        assert len(body["values"]) <= limit
        out.extend((v["value"], v["rows"]) for v in body["values"])
        cursor = body["next_cursor"]
        if cursor is None:
            return out
    raise AssertionError("paging did not end")


def _truth(series: pd.Series, order: str) -> list[tuple[object, int]]:
    vc = series.dropna().value_counts()
    items = [(k.item() if hasattr(k, "item") else k, int(n)) for k, n in vc.items()]
    items.sort(key=lambda kv: kv[0])   # value order (strings: these are ASCII, so byte order)
    if order == "count":
        items.sort(key=lambda kv: -kv[1])   # stable: ties in value order
    return items


@pytest.fixture(scope="module")
def multi(tmp_path_factory: pytest.TempPathFactory):
    """Table t indexed in several files per column (small ranges, so one key spans files)."""
    root = tmp_path_factory.mktemp("stats")
    df = _frame(np.random.default_rng(11), ROWS)
    write_table(root / "data" / "t", df, 3)
    with TestClient(create_app(make_settings(root))) as client:
        assert client.put("/v1/tables/t", json={"location": str(root / "data" / "t")}).status_code == 200
        opts = "sorted-index.records-per-range=700,bitmap-index.dictionary-block-size=128 b"
        for col in ("s", "n"):
            _build(client, "t", col, opts)
        yield client, df, root


def test_stats_and_values_over_several_files_match_pandas(multi) -> None:
    client, df, root = multi
    indexes = {i["column"]: i for i in client.get("/v1/tables/t/indexes").json()["indexes"]}
    for col in ("s", "n"):
        assert indexes[col]["files"] > 1
        assert indexes[col]["distinct_values"] == df[col].nunique()
        assert indexes[col]["null_rows"] == int(df[col].isna().sum())
        for order in ("count", "value"):
            assert _all_values(client, "t", col, order) == _truth(df[col], order), (col, order)
    # the statistics are stored beside the index: a JSON document and two Parquet sidecars
    stats_dir = root / "warehouse" / "tables" / "t" / "indexes" / "s" / "stats"
    names = sorted(p.name for p in stats_dir.iterdir())
    assert len(names) == 3 and names[0].endswith(".count.parquet") and names[1].endswith(".json")
    ranking = pq.read_table(next(stats_dir.glob("*.count.parquet")))
    assert [(k.decode(), n) for k, n in zip(ranking["key"].to_pylist(), ranking["rows"].to_pylist())] == \
        _truth(df.s, "count")


@pytest.mark.parametrize("prefix", ["k0", "k1", "k00", "k3", "zz", ""])
def test_prefix_look_ups_page_like_pandas(multi, prefix: str) -> None:
    client, df, _ = multi
    sub = df.s[df.s.notna() & df.s.fillna("").str.startswith(prefix)]
    for order in ("count", "value"):
        assert _all_values(client, "t", "s", order, prefix=prefix, limit=7) == _truth(sub, order), order


def test_prefix_on_a_number_column_is_a_bad_request(multi) -> None:
    client, _, _ = multi
    r = client.get("/v1/tables/t/indexes/n/values", params={"prefix": "1"})
    assert r.status_code == 400, r.text


def test_column_name_in_another_case_is_the_indexed_column(multi) -> None:
    client, df, _ = multi
    want = _truth(df.s, "count")
    r = client.get("/v1/tables/t/indexes/S/values", params={"limit": 5})
    assert r.status_code == 200, r.text
    assert r.json()["column"] == "s"
    assert [(v["value"], v["rows"]) for v in r.json()["values"]] == want[:5]
    assert client.get("/v1/tables/t/indexes/nope/values").status_code == 404


def test_query_with_column_in_another_case_reports_its_snapshot_and_cursor_goes_stale(tmp_path: Path) -> None:
    df = _frame(np.random.default_rng(5), 400)
    write_table(tmp_path / "data" / "u", df, 2)
    with TestClient(create_app(make_settings(tmp_path))) as client:
        assert client.put("/v1/tables/u", json={"location": str(tmp_path / "data" / "u")}).status_code == 200
        _build(client, "u", "s")
        snap = client.get("/v1/tables/u/indexes").json()["indexes"][0]["snapshot_id"]
        value = df.s.dropna().value_counts().index[0]
        want = df.index[(df.s == value).fillna(False).to_numpy(dtype=bool)].tolist()
        body = client.post("/v1/tables/u/query", json={"where": f"S = '{value}'", "limit": 3}).json()
        assert body["snapshots"] == {"s": snap}
        assert body["count"] == len(want) and body["row_ids"] == want[:3]
        cursor = body["next_cursor"]
        assert cursor
        _append_and_rebuild(client, tmp_path / "data" / "u", 2)
        r = client.post("/v1/tables/u/query", json={"where": f"S = '{value}'", "limit": 3, "cursor": cursor})
        assert r.status_code == 409, r.text
        # value cursors too
        page = client.get("/v1/tables/u/indexes/S/values", params={"limit": 2}).json()
        _append_and_rebuild(client, tmp_path / "data" / "u", 3)
        r = client.get("/v1/tables/u/indexes/S/values", params={"limit": 2, "cursor": page["next_cursor"]})
        assert r.status_code == 409, r.text


def test_retired_rows_leave_the_stats_and_a_corrupt_document_is_recomputed(tmp_path: Path) -> None:
    rng = np.random.default_rng(23)
    df = _frame(rng, 900)
    data = tmp_path / "data" / "r"
    write_table(data, df, 3)   # rows 0..299, 300..599, 600..899
    settings = make_settings(tmp_path)
    with TestClient(create_app(settings)) as client:
        assert client.put("/v1/tables/r", json={"location": str(data)}).status_code == 200
        _build(client, "r", "s", "sorted-index.records-per-range=400")
        _build(client, "r", "n")   # one file: footer-only stats until rows retire
        time.sleep(0.01)
        pq.write_table(pa.Table.from_pandas(_frame(rng, 50), preserve_index=False), data / "part-001.parquet")
        assert client.get("/v1/tables/r/files", params={"refresh": "true"}).status_code == 200
        live = pd.concat([df.iloc[:300], df.iloc[600:]])
        indexes = {i["column"]: i for i in client.get("/v1/tables/r/indexes").json()["indexes"]}
        for col in ("s", "n"):
            assert indexes[col]["distinct_values"] == live[col].nunique(), col
            assert indexes[col]["null_rows"] == int(live[col].isna().sum()), col
            for order in ("count", "value"):
                assert _all_values(client, "r", col, order) == _truth(live[col], order), (col, order)
    docs = list((tmp_path / "warehouse" / "tables" / "r" / "indexes" / "s" / "stats").glob("*.json"))
    assert len(docs) == 1
    for p in docs[0].parent.iterdir():   # garbage in every stored file
        p.write_bytes(b"not json, not parquet")
    with TestClient(create_app(settings)) as client:
        (index,) = [i for i in client.get("/v1/tables/r/indexes").json()["indexes"] if i["column"] == "s"]
        assert index["distinct_values"] == live.s.nunique()
        assert _all_values(client, "r", "s", "count") == _truth(live.s, "count")
    assert docs[0].read_bytes().startswith(b"{")   # rewritten
