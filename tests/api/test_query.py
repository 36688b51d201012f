"""Query endpoint against a pandas ground truth: seeded random predicates over four columns (NOT, NULLs,
IN with NULL, BETWEEN, LIKE, string functions), SQL text and JSON trees, every result kind and paging."""
from __future__ import annotations

import random

import numpy as np
import pandas as pd
from pyroaring import BitMap64

from tests.api.helpers import python_runs
from tests.api.predicates import expected_ids, random_predicate, to_sql

N_PREDICATES = 300


def _query(client, body):
    r = client.post("/v1/tables/events/query", json=body)
    assert r.status_code == 200, (body, r.text)
    return r


def test_random_predicates_match_pandas(built) -> None:
    client, df, _ = built
    rnd = random.Random(7)
    for i in range(N_PREDICATES):
        pred = random_predicate(rnd, df)
        want = expected_ids(pred, df)
        kind = i % 3
        if kind == 0:  # JSON tree, roaring bytes
            r = _query(client, {"predicate": pred, "result": "roaring"})
            got = BitMap64.deserialize(r.content)
            assert int(r.headers["X-Bgix-Count"]) == len(want)
            assert set(got) == want, (pred, sorted(set(got) ^ want)[:10])
        elif kind == 1:  # SQL text, row ids in one page
            body = {"where": to_sql(pred), "result": "row_ids", "limit": 100_000}
            data = _query(client, body).json()
            assert data["count"] == len(want), (body, data["count"], len(want))
            assert data["row_ids"] == sorted(want), body
            assert data["next_cursor"] is None
        else:  # SQL text, count only
            data = _query(client, {"where": to_sql(pred), "result": "count"}).json()
            assert data["count"] == len(want), (to_sql(pred), data["count"], len(want))
            assert data["exact"] is True and data["coverage"]["complete"] is True


def test_cross_column_where_and_snapshot_ids(built) -> None:
    client, df, _ = built
    data = _query(client, {"where": "status IN ('vip','trial') AND NOT country = 'US'",
                           "result": "row_ids", "limit": 100_000}).json()
    mask = df.status.isin(["vip", "trial"]).fillna(False) & (df.country.notna() & (df.country != "US"))
    assert data["row_ids"] == df.index[mask.to_numpy(dtype=bool)].tolist()
    assert set(data["snapshots"]) == {"status", "country"}
    assert all(isinstance(v, int) and v >= 1 for v in data["snapshots"].values())


def test_row_id_paging_returns_every_row_once(built) -> None:
    client, df, _ = built
    want = df.index[(df.age.notna() & (df.age > 20)).to_numpy(dtype=bool)].tolist()
    got: list[int] = []
    cursor = None
    pages = 0
    while True:
        body = {"where": "age > 20", "limit": 97}
        if cursor:
            body["cursor"] = cursor
        data = _query(client, body).json()
        assert data["count"] == len(want)
        assert len(data["row_ids"]) <= 97
        got.extend(data["row_ids"])
        cursor = data["next_cursor"]
        pages += 1
        assert pages < 100
        if cursor is None:
            break
    assert got == want
    assert pages == -(-len(want) // 97)


def test_ranges_result_and_paging(built) -> None:
    client, df, _ = built
    want = python_runs(df.index[df.status.isna().to_numpy() | (df.status == "vip").fillna(False).to_numpy()].tolist())
    got: list[list[int]] = []
    cursor = None
    for _ in range(1000):
        body = {"where": "status IS NULL OR status = 'vip'", "result": "ranges", "limit": 10}
        if cursor:
            body["cursor"] = cursor
        data = _query(client, body).json()
        got.extend(data["ranges"])
        cursor = data["next_cursor"]
        if cursor is None:
            break
    assert got == want
    # one big run: every non-null row of age or null, as a whole
    data = _query(client, {"where": "age IS NULL OR age IS NOT NULL", "result": "ranges"}).json()
    assert data["ranges"] == [[0, len(df) - 1]]


def test_files_result_counts_per_data_file(built) -> None:
    client, df, _ = built
    files = client.get("/v1/tables/events/files").json()["files"]
    assert [f["row_count"] for f in files] == [600, 600, 600]
    assert [f["first_row_id"] for f in files] == [0, 600, 1200]
    mask = (df.country == "DE").fillna(False).to_numpy()
    data = _query(client, {"where": "country = 'DE'", "result": "files", "limit": 100_000}).json()
    by_path = {f["path"]: f for f in data["files"]}
    for f in files:
        lo, hi = f["first_row_id"], f["first_row_id"] + f["row_count"]
        positions = np.flatnonzero(mask[lo:hi]).tolist()
        assert by_path[f["path"]]["matches"] == len(positions)
        assert by_path[f["path"]]["positions"] == positions


def test_files_result_pages_carry_only_their_own_rows(built) -> None:
    """Paged with the cursor, each page names only the files of its own rows: summed over the pages, each file's
    matches and positions are pandas' rows of it, and the pages' matches add up to the count."""
    client, df, _ = built
    files = client.get("/v1/tables/events/files").json()["files"]
    mask = (df.country == "DE").fillna(False).to_numpy()
    total = int(mask.sum())
    limit = 37
    got: dict[str, list[int]] = {}
    summed: dict[str, int] = {}
    pages, cursor = 0, None
    while True:
        body = {"where": "country = 'DE'", "result": "files", "limit": limit, **({"cursor": cursor} if cursor else {})}
        data = _query(client, body).json()
        assert data["count"] == total
        pages += 1
        assert sum(f["matches"] for f in data["files"]) == min(limit, total - limit * (pages - 1))
        for f in data["files"]:
            assert f["matches"] == len(f["positions"]) > 0
            summed[f["path"]] = summed.get(f["path"], 0) + f["matches"]
            got.setdefault(f["path"], []).extend(f["positions"])
        cursor = data["next_cursor"]
        if cursor is None:
            break
    assert pages == -(-total // limit) > 3
    assert sum(summed.values()) == total
    for f in files:
        lo, hi = f["first_row_id"], f["first_row_id"] + f["row_count"]
        want = np.flatnonzero(mask[lo:hi]).tolist()
        assert got.get(f["path"], []) == want and summed.get(f["path"], 0) == len(want), f["path"]


def test_accept_header_selects_roaring(built) -> None:
    client, df, _ = built
    r = client.post("/v1/tables/events/query", json={"where": "age BETWEEN 10 AND 20"},
                    headers={"Accept": "application/vnd.bgix.roaring64"})
    assert r.headers["content-type"] == "application/vnd.bgix.roaring64"
    want = set(df.index[(df.age.notna() & df.age.between(10, 20)).to_numpy(dtype=bool)].tolist())
    assert set(BitMap64.deserialize(r.content)) == want


def test_explain_reports_reads(built) -> None:
    client, _, _ = built
    data = _query(client, {"where": "status = 'vip' OR status LIKE '%r%'", "result": "count",
                           "explain": True}).json()
    explain = data["explain"]
    keys = " ".join(explain)
    assert "pruned" in keys and "fallback" in keys and "bitmaps" in keys and "blocks" in keys, explain


def test_explain_says_when_the_answer_came_from_cache(built) -> None:
    client, df, _ = built
    body = {"where": "country = 'DE' AND status = 'trial'", "result": "count", "explain": True}
    first = _query(client, body).json()
    again = _query(client, body).json()
    want = int((df.country.eq("DE") & df.status.eq("trial")).sum())
    assert first["count"] == again["count"] == want
    ex = again["explain"]
    # the repeat reads the same files through readers already open, and no byte from storage: it says so
    assert ex["files_read"] == first["explain"]["files_read"] > 0
    assert ex["files_cached"] == ex["files_read"] and ex["bytes_read"] == 0 and ex["from_cache"] is True
    assert 0 <= first["explain"]["files_cached"] <= first["explain"]["files_read"]
    assert first["explain"]["from_cache"] is (first["explain"]["files_cached"] == first["explain"]["files_read"]
                                              and first["explain"]["bytes_read"] == 0)


def test_values_give_the_null_count_on_the_first_page(built) -> None:
    client, df, _ = built
    for column in ("status", "country", "age", "score"):
        first = client.get(f"/v1/tables/events/indexes/{column}/values", params={"limit": 2}).json()
        assert first["null_rows"] == int(df[column].isna().sum()) > 0, column
        assert all(v["value"] is not None for v in first["values"])
        if first["next_cursor"]:
            later = client.get(f"/v1/tables/events/indexes/{column}/values",
                               params={"limit": 2, "cursor": first["next_cursor"]}).json()
            assert later["null_rows"] is None


def test_values_equal_pandas_value_counts(built) -> None:
    client, df, _ = built
    for column in ("status", "country", "age", "score"):
        want = df[column].value_counts(dropna=True)
        r = client.get(f"/v1/tables/events/indexes/{column}/values", params={"limit": 1000})
        assert r.status_code == 200, r.text
        got = r.json()["values"]
        assert {_py(v["value"]): v["rows"] for v in got} == {_py(k): int(n) for k, n in want.items()}
        counts = [v["rows"] for v in got]
        assert counts == sorted(counts, reverse=True)


def _py(v: object) -> object:
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (np.floating, float)):
        return float(v)
    return v


def test_values_by_value_prefix_and_paging(built) -> None:
    client, df, _ = built
    want = df.status.dropna()
    want = want[want.str.startswith("v")].value_counts()
    got: list[dict] = []
    cursor = None
    for _ in range(20):
        params = {"prefix": "v", "order": "value", "limit": 1}
        if cursor:
            params["cursor"] = cursor
        data = client.get("/v1/tables/events/indexes/status/values", params=params).json()
        got.extend(data["values"])
        cursor = data["next_cursor"]
        if cursor is None:
            break
    assert [v["value"] for v in got] == sorted(want.index.tolist())
    assert {v["value"]: v["rows"] for v in got} == {k: int(n) for k, n in want.items()}


def test_index_listing(built) -> None:
    client, df, _ = built
    data = client.get("/v1/tables/events/indexes").json()
    by_col = {i["column"]: i for i in data["indexes"]}
    assert set(by_col) == {"status", "country", "age", "score"}
    for col, info in by_col.items():
        assert info["null_rows"] == int(df[col].isna().sum())
        assert info["distinct_values"] == int(df[col].nunique(dropna=True))
        assert info["covered_ranges"] == [[0, len(df) - 1]]
        assert info["uncovered_ranges"] == []
        assert info["files"] >= 1 and info["bytes"] > 0 and info["stale"] is False
