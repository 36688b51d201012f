"""POST /v1/tables/{t}/aggregate against pyarrow's `Table.group_by(...).aggregate(...)` over the source rows.

The judge: the rows a plain pandas evaluation of the filter selects (SQL three-valued logic through pandas' nullable
booleans), grouped by pyarrow (NULL a group; an ARRAY column's distinct non-null elements its groups); on a Paimon
table the rows are pypaimon's own read (deleted rows gone). Never bgix's output. Plain Parquet tables (bitmap,
btree and multivalue indexes, an appended file no index covers) and a Paimon table with deletion vectors.
"""
from __future__ import annotations

import math
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from service.api.app import create_app
from tests.api.helpers import TestClient, make_settings, wait_job

STATUSES = ["ok", "error", "warn", "", "Ünï"]
COUNTRIES = ["us", "de", "fr", "jp"]
TAGS = ["vip", "eu", "new", "old"]
FILES, PER_FILE, APPENDED = 3, 400, 150
FAMILIES = {"status": "bitmap", "country": "btree", "score": "bitmap", "price": "btree", "tags": "multivalue"}


def _frame(rng: np.random.Generator, n: int, first: int) -> pd.DataFrame:
    def pick(values: list[Any], null_rate: float) -> list[Any]:
        return [None if rng.random() < null_rate else values[int(rng.integers(len(values)))] for _ in range(n)]

    def tags() -> list[list[str | None] | None]:
        out: list[list[str | None] | None] = []
        for _ in range(n):
            r = rng.random()
            if r < 0.06:
                out.append(None)
            elif r < 0.12:
                out.append([])
            else:   # duplicates and null elements: a row counts once per distinct element, NULL elements not at all
                out.append([None if rng.random() < 0.05 else TAGS[int(rng.integers(4))]
                            for _ in range(int(rng.integers(1, 4)))])
        return out

    return pd.DataFrame({
        "uid": np.arange(first, first + n, dtype=np.int64),
        "status": pd.array(pick(STATUSES, 0.1), dtype="string"),
        "country": pd.array(pick(COUNTRIES, 0.08), dtype="string"),
        "score": pd.array(pick(list(range(-20, 40)), 0.07), dtype="Int64"),
        "price": pd.array(pick([0.5, 1.25, 2.0, -3.5, 100.0, 7.75], 0.05), dtype="Float64"),
        "tags": tags(),
    })


def _arrow(df: pd.DataFrame) -> pa.Table:
    return pa.Table.from_pandas(df, preserve_index=False).cast(pa.schema([
        ("uid", pa.int64()), ("status", pa.string()), ("country", pa.string()), ("score", pa.int64()),
        ("price", pa.float64()), ("tags", pa.list_(pa.string()))]))


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TestClient, pd.DataFrame]]:
    """Table `t`: three indexed files, then one appended file no index covers (row ids = positions)."""
    root = tmp_path_factory.mktemp("aggregate")
    data = root / "data" / "t"
    data.mkdir(parents=True)
    rng = np.random.default_rng(20261129)
    frames = [_frame(rng, PER_FILE, i * PER_FILE) for i in range(FILES)]
    for i, f in enumerate(frames):
        pq.write_table(_arrow(f), data / f"part-{i:03d}.parquet")
    with TestClient(create_app(make_settings(root))) as client:
        assert client.put("/v1/tables/t", json={"location": str(data)}).status_code == 200
        for column, index_type in FAMILIES.items():
            r = client.post("/v1/create_global_index", json={"table": "t", "index_column": column,
                                                              "index_type": index_type})
            assert r.status_code == 202, r.text
            assert wait_job(client, r.json()["job_id"])["state"] == "succeeded"
        appended = _frame(rng, APPENDED, FILES * PER_FILE)
        pq.write_table(_arrow(appended), data / "part-009.parquet")
        assert client.get("/v1/tables/t/files", params={"refresh": True}).json()["total_rows"] == \
            FILES * PER_FILE + APPENDED
        yield client, pd.concat([*frames, appended], ignore_index=True)


# ---- the judge ------------------------------------------------------------------------------------------------
def _leaf(rnd: random.Random) -> tuple[dict[str, Any], Any]:
    """A JSON leaf and its pandas truth (nullable boolean: NA is UNKNOWN)."""
    kind = rnd.randrange(6)
    if kind == 0:
        v = rnd.choice(STATUSES)
        return {"op": "eq", "column": "status", "value": v}, lambda d: d.status == v
    if kind == 1:
        vs = rnd.sample(COUNTRIES, 2)
        return {"op": "in", "column": "country", "values": vs}, lambda d: d.country.isin(vs).mask(d.country.isna())
    if kind == 2:
        lo = rnd.randint(-20, 30)
        return ({"op": "between", "column": "score", "low": lo, "high": lo + 15},
                lambda d: (d.score >= lo) & (d.score <= lo + 15))
    if kind == 3:
        return {"op": "is_null", "column": "country"}, lambda d: pd.array(d.country.isna(), dtype="boolean")
    if kind == 4:
        v = rnd.choice([1.0, 2.0, 50.0])
        return {"op": "lt", "column": "price", "value": v}, lambda d: d.price < v
    t = rnd.choice(TAGS)

    def has(d: pd.DataFrame) -> Any:
        def one(a: Any) -> Any:
            if a is None:
                return pd.NA
            return True if t in list(a) else (pd.NA if None in list(a) else False)
        return pd.array([one(a) for a in d.tags], dtype="boolean")
    return {"op": "array_contains", "column": "tags", "value": t}, has


def _predicate(rnd: random.Random, depth: int = 2) -> tuple[dict[str, Any], Any]:
    if depth == 0 or rnd.random() < 0.3:
        p, f = _leaf(rnd)
        if p["op"] != "array_contains" and rnd.random() < 0.2:
            return {"op": "not", "arg": p}, lambda d, f=f: ~pd.array(f(d), dtype="boolean")
        return p, f
    (a, fa), (b, fb) = _predicate(rnd, depth - 1), _predicate(rnd, depth - 1)
    if rnd.random() < 0.5:
        return ({"op": "and", "args": [a, b]},
                lambda d: pd.array(fa(d), dtype="boolean") & pd.array(fb(d), dtype="boolean"))
    return {"op": "or", "args": [a, b]}, lambda d: pd.array(fa(d), dtype="boolean") | pd.array(fb(d), dtype="boolean")


def _explode(t: pa.Table, column: str, rid: str) -> pa.Table:
    lists = t.column(column).combine_chunks()
    pairs = pa.table({rid: t.column(rid).take(pc.list_parent_indices(lists)), column: pc.list_flatten(lists)})
    pairs = pairs.filter(pc.is_valid(pairs.column(column))).group_by([rid, column]).aggregate([])
    return pairs.join(t.drop_columns([column]), rid)


def _judge(rows: pa.Table, group_by: list[str], metric: str | None, rid: str,
           arrays: tuple[str, ...] = ("tags",)) -> dict[tuple[Any, ...], dict[str, Any]]:
    """pyarrow's answer: key tuple → count (and sum/min/max/avg/count of `metric`)."""
    for c in group_by:
        if c in arrays:
            rows = _explode(rows, c, rid)
    aggs: list[Any] = [([], "count_all")]
    if metric:
        aggs += [(metric, "sum"), (metric, "min"), (metric, "max"), (metric, "mean"), (metric, "count")]
    if group_by:
        out = rows.group_by(group_by).aggregate(aggs).to_pylist()
    else:
        out = [{"count_all": rows.num_rows, **({f"{metric}_{op}": getattr(pc, op)(rows.column(metric)).as_py()
                                                 for op in ("sum", "min", "max", "mean", "count")} if metric else {})}]
    want: dict[tuple[Any, ...], dict[str, Any]] = {}
    for r in out:
        key = tuple(r[c] for c in group_by)
        m = {"count": r["count_all"]}
        if metric:
            m.update({f"sum_{metric}": r[f"{metric}_sum"], f"min_{metric}": r[f"{metric}_min"],
                      f"max_{metric}": r[f"{metric}_max"], f"avg_{metric}": r[f"{metric}_mean"],
                      f"count_{metric}": r[f"{metric}_count"]})
        if group_by and r["count_all"] == 0:
            continue
        want[key] = m
    return want


def _ask(client: TestClient, table: str, body: dict[str, Any]) -> dict[str, Any]:
    r = client.post(f"/v1/tables/{table}/aggregate", json=body)
    assert r.status_code == 200, (body, r.text)
    got: dict[str, Any] = r.json()
    return got


def _got(answer: dict[str, Any], group_by: list[str]) -> dict[tuple[Any, ...], dict[str, Any]]:
    return {tuple(g["key"][c] for c in group_by): g["metrics"] for g in answer["groups"]}


def _same(got: dict[tuple[Any, ...], dict[str, Any]], want: dict[tuple[Any, ...], dict[str, Any]]) -> None:
    assert set(got) == set(want)
    for key, w in want.items():
        for name, v in w.items():
            g = got[key][name]
            if isinstance(v, float) or isinstance(g, float):
                assert g is not None and v is not None and math.isclose(g, v, rel_tol=1e-9, abs_tol=1e-9), \
                    (key, name, g, v)
            else:
                assert g == v, (key, name, g, v)


def _metrics(metric: str | None) -> list[dict[str, Any]]:
    if metric is None:
        return [{"op": "count"}]
    return [{"op": "count"}, *({"op": op, "column": metric} for op in ("sum", "min", "max", "avg", "count"))]


# ---- plain tables -----------------------------------------------------------------------------------------------
GROUPINGS = [["status"], ["country"], ["tags"], ["score"], ["status", "country"], ["tags", "status"],
             ["country", "status", "tags"], []]


def test_random_filters_and_groupings_match_pyarrow(plain: tuple[TestClient, pd.DataFrame]) -> None:
    client, df = plain
    rnd = random.Random(32)
    table = _arrow(df).append_column("rid", pa.array(np.arange(len(df), dtype=np.int64)))
    for i in range(24):
        group_by = GROUPINGS[i % len(GROUPINGS)]
        metric = rnd.choice([None, "score", "price"])
        if i % 4 == 3:
            body: dict[str, Any] = {}
            truth = np.ones(len(df), dtype=bool)
        else:
            p, f = _predicate(rnd)
            body = {"predicate": p}
            truth = pd.array(f(df), dtype="boolean").fillna(False).to_numpy(dtype=bool)
        answer = _ask(client, "t", {**body, "group_by": group_by, "metrics": _metrics(metric), "limit": 100_000})
        assert answer["exact"] is True and answer["coverage"]["complete"] is True, body
        assert answer["rows"] == int(truth.sum()), body
        want = _judge(table.filter(pa.array(truth)), group_by, metric, "rid")
        _same(_got(answer, group_by), want)
        assert answer["total_groups"] == len(want)


def test_rows_no_index_covers_are_named_when_not_scanned(plain: tuple[TestClient, pd.DataFrame]) -> None:
    client, df = plain
    indexed = FILES * PER_FILE
    answer = _ask(client, "t", {"group_by": ["status"], "scan": "never"})
    assert answer["exact"] is False
    assert answer["coverage"] == {"complete": False, "uncovered_ranges": [[indexed, indexed + APPENDED - 1]]}
    table = _arrow(df.iloc[:indexed]).append_column("rid", pa.array(np.arange(indexed, dtype=np.int64)))
    _same(_got(answer, ["status"]), _judge(table, ["status"], None, "rid"))
    scanned = _ask(client, "t", {"group_by": ["status"], "explain": True})
    assert scanned["exact"] is True and scanned["explain"]["scan"]["status"] == "scanned"
    assert scanned["explain"]["scan"]["rows_scanned"] == APPENDED


def test_a_plan_names_the_indexes_and_the_rows_they_miss_without_reading_an_index(
        plain: tuple[TestClient, pd.DataFrame], monkeypatch: pytest.MonkeyPatch) -> None:
    """`"explain": "plan"`: per group and metric column the index and files its groups would read, the rows no
    index covers (the appended file), the grouping path; no key or row read. Bad columns are refused as in an
    answer."""
    client, _ = plain
    indexed = FILES * PER_FILE
    from index_format.btree.btree_reader import BTreeIndexReader
    from index_format.global_index.reader import BitmapIndexReader

    def read(*_: object, **__: object) -> None:
        raise AssertionError("a plan read an index's keys or rows")

    for cls in (BTreeIndexReader, BitmapIndexReader):
        for method in ("key_counts", "key_bitmaps", "entries", "null_rows", "range", "isin", "eq"):
            monkeypatch.setattr(cls, method, read)
    cases = [({"group_by": ["status"]}, "key_counts"),
             ({"group_by": ["status", "country"], "where": "score > 3"}, "row_codes"),
             ({"group_by": ["tags"], "metrics": [{"op": "sum", "column": "price"}]}, "intersections"),
             ({"metrics": [{"op": "avg", "column": "score"}]}, "none")]
    for body, grouping in cases:
        plan = _ask(client, "t", {**body, "explain": "plan"})
        assert plan["result"] == "plan" and "groups" not in plan, plan
        assert plan["plan"]["grouping"] == grouping
        assert plan["coverage"] == {"complete": False, "uncovered_ranges": [[indexed, indexed + APPENDED - 1]]}
        assert [c["column"] for c in plan["plan"]["group_by"]] == body.get("group_by", [])
        for c in plan["plan"]["group_by"] + plan["plan"]["metrics"]:
            assert c["index_type"] == FAMILIES[c["column"]] and c["files"] >= 1 and c["covered_rows"] == indexed
        assert (plan["plan"]["filter"] is None) == ("where" not in body)
        assert set(plan["snapshots"]) >= set(body.get("group_by", []))
    from service.client import Client
    with Client("http://testserver", transport=client._transport) as bgix:
        answer = bgix.aggregate("t", ["status"], explain="plan")
        assert answer.plan is not None and answer.plan["grouping"] == "key_counts"
        assert not answer.groups and not answer.is_exact
    r = client.post("/v1/tables/t/aggregate", json={"group_by": ["nope"], "explain": "plan"})
    assert r.status_code == 400 and r.json()["error"]["code"] == "unknown_column", r.text
    r = client.post("/v1/tables/t/aggregate", json={"group_by": ["status"], "explain": "yes"})
    assert r.status_code == 422 and "explain" in r.text, r.text


def test_order_limit_and_cursor_page_through_every_group(plain: tuple[TestClient, pd.DataFrame]) -> None:
    client, df = plain
    table = _arrow(df).append_column("rid", pa.array(np.arange(len(df), dtype=np.int64)))
    want = _judge(table, ["status", "country"], "score", "rid")
    body = {"group_by": ["status", "country"], "metrics": _metrics("score"),
            "order_by": [{"by": "count", "direction": "desc"}, {"by": "sum_score", "direction": "asc"}], "limit": 4}
    pages, cursor = [], None
    while True:
        answer = _ask(client, "t", {**body, **({"cursor": cursor} if cursor else {})})
        pages += answer["groups"]
        cursor = answer["next_cursor"]
        if cursor is None:
            break
    assert len(pages) == len(want) == answer["total_groups"]
    keys = [(g["metrics"]["count"], g["metrics"]["sum_score"]) for g in pages]

    def sort_key(k: tuple[Any, ...]) -> tuple[Any, ...]:
        count, total = want[k]["count"], want[k]["sum_score"]
        return (-count, total is not None, total)   # sum ascending: NULLS FIRST
    expected = sorted(want, key=sort_key)
    assert keys == [(want[k]["count"], want[k]["sum_score"]) for k in expected]
    # by a group key descending: NULLS LAST
    answer = _ask(client, "t", {"group_by": ["country"], "order_by": [{"by": "country", "direction": "desc"}]})
    assert [g["key"]["country"] for g in answer["groups"]] == ["us", "jp", "fr", "de", None]
    answer = _ask(client, "t", {"group_by": ["country"]})
    assert [g["key"]["country"] for g in answer["groups"]] == [None, "de", "fr", "jp", "us"]
    # a cursor of another aggregate is refused
    other = _ask(client, "t", {**body, "limit": 1})["next_cursor"]
    r = client.post("/v1/tables/t/aggregate", json={"group_by": ["status"], "cursor": other})
    assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_cursor"


@pytest.mark.parametrize(("body", "status", "code", "names"), [
    ({"group_by": ["nope"]}, 400, "unknown_column", "nope"),
    ({"group_by": ["uid"]}, 400, "no_index", "uid"),
    ({"group_by": ["status"], "metrics": [{"op": "sum", "column": "status"}]}, 400, "invalid_aggregate", "numeric"),
    ({"metrics": [{"op": "avg", "column": "tags"}]}, 400, "invalid_aggregate", "ARRAY"),
    ({"metrics": [{"op": "sum"}]}, 400, "invalid_aggregate", "needs a column"),
    ({"group_by": ["status"], "order_by": [{"by": "price"}]}, 400, "invalid_aggregate", "price"),
    ({"group_by": ["status", "status"]}, 400, "invalid_aggregate", "twice"),
    ({"group_by": ["status"], "cursor": "garbage"}, 400, "invalid_cursor", "cursor"),
    ({"where": "status = "}, 400, "invalid_predicate", ""),
    ({"group_by": ["a", "b", "c", "d"]}, 422, "invalid_request", ""),
    ({"group_by": ["status"], "limit": 0}, 422, "invalid_request", ""),
    ({"metrics": [{"op": "median", "column": "score"}]}, 422, "invalid_request", ""),
])
def test_bad_requests_are_named_4xx(plain: tuple[TestClient, pd.DataFrame], body: dict[str, Any], status: int,
                                    code: str, names: str) -> None:
    client, _ = plain
    r = client.post("/v1/tables/t/aggregate", json=body)
    assert r.status_code == status, r.text
    err = r.json()["error"]
    assert err["code"] == code and names in err["message"], err


def test_too_many_groups_is_a_named_400(plain: tuple[TestClient, pd.DataFrame],
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    client, _ = plain
    from service.query import run_aggregate
    qs = client.app.state.services.query_service
    assert qs.max_groups == 100_000                 # BGIX_AGGREGATE_MAX_GROUPS's default
    monkeypatch.setattr(qs, "max_groups", 10)
    r = client.post("/v1/tables/t/aggregate", json={"group_by": ["score"]})
    assert r.status_code == 400 and r.json()["error"]["code"] == "too_many_groups", r.text
    r = client.post("/v1/tables/t/aggregate", json={"group_by": ["status", "country"]})
    assert r.status_code == 400 and r.json()["error"]["code"] == "too_many_groups", r.text
    assert client.post("/v1/tables/t/aggregate", json={"group_by": ["country"]}).status_code == 200
    # scalar columns group by row codes (linear in the rows); an ARRAY column's groups by bitmap intersections,
    # which are capped
    monkeypatch.setattr(qs, "max_groups", 100)
    monkeypatch.setattr(run_aggregate, "MAX_INTERSECTIONS", 15)   # 5 countries × 4 tags
    assert client.post("/v1/tables/t/aggregate", json={"group_by": ["status", "country"]}).status_code == 200
    r = client.post("/v1/tables/t/aggregate", json={"group_by": ["country", "tags"]})
    assert r.status_code == 400 and r.json()["error"]["code"] == "aggregate_too_large", r.text


def test_a_column_past_the_groups_cap_is_refused_by_counts_before_any_groups_rows(
        plain: tuple[TestClient, pd.DataFrame], monkeypatch: pytest.MonkeyPatch) -> None:
    """The refusal reads key counts among the filter (a btree: a data block's ids at once), never a key's rows:
    GROUP BY a column of millions of keys is refused at the cost of a few blocks, not a walk to the cap."""
    client, df = plain
    from index_format.btree.btree_reader import BTreeIndexReader
    from index_format.global_index.reader import BitmapIndexReader
    qs = client.app.state.services.query_service

    def walked(*_: object, **__: object) -> None:
        raise AssertionError("a key's rows were built before the groups cap was checked")

    for cls in (BTreeIndexReader, BitmapIndexReader):
        monkeypatch.setattr(cls, "key_bitmaps", walked)
        monkeypatch.setattr(cls, "entries", walked)
    covered = df.iloc[:FILES * PER_FILE]     # the cap counts the keys of the indexed rows
    for column, where in (("price", "TRUE"), ("score", "TRUE"), ("score", "price > 0")):
        rows = covered if where == "TRUE" else covered[(covered.price > 0).fillna(False)]
        cap = int(rows[column].nunique()) - 1
        assert cap >= 4
        monkeypatch.setattr(qs, "max_groups", cap)
        metric = {"op": "sum", "column": "score" if column == "price" else "price"}
        for body in ({"group_by": [column]},     # counts only; below, the groups' rows are needed
                     {"group_by": [column], "metrics": [metric]},
                     {"group_by": [column, "status"]}):
            r = client.post("/v1/tables/t/aggregate", json={**body, "where": where})
            assert r.status_code == 400 and r.json()["error"]["code"] == "too_many_groups", (body, r.text)
            assert column in r.json()["error"]["message"], r.text


# ---- the Python client ---------------------------------------------------------------------------------------------
def test_client_aggregate_returns_typed_groups_and_a_dataframe(plain: tuple[TestClient, pd.DataFrame]) -> None:
    from service.aggregate_answer import AggregateAnswer, InexactAggregateError
    from service.client import Client
    from service.query.query_errors import TooManyGroupsError

    http, df = plain
    table = _arrow(df).append_column("rid", pa.array(np.arange(len(df), dtype=np.int64)))
    truth = pd.array(df.score > 10, dtype="boolean").fillna(False).to_numpy(dtype=bool)
    want = _judge(table.filter(pa.array(truth)), ["status"], "price", "rid")
    with Client("http://testserver", transport=http._transport) as client:
        answer = client.aggregate("t", ["status"], ["count", "sum:price", "min:price", "max:price", "avg:price",
                                                    "count:price"], where="score > 10", order_by=["-count"])
        assert isinstance(answer, AggregateAnswer) and answer.is_exact and answer.group_by == ["status"]
        _same({(g.key["status"],): g.metrics for g in answer}, want)
        counts = [g["count"] for g in answer]
        assert counts == sorted(counts, reverse=True) and len(answer) == len(want)
        frame = answer.to_pandas()
        assert list(frame.columns) == ["status", *answer.metric_names]
        assert frame["count"].sum() == int(truth.sum())
        assert dict(zip(frame["status"], frame["count"])) == {k[0]: v["count"] for k, v in want.items()}

        partial = client.aggregate("t", ["status"], scan="never")
        assert not partial.is_exact and partial.coverage.uncovered_rows == APPENDED
        with pytest.raises(InexactAggregateError, match="150 rows"):
            client.aggregate("t", ["status"], scan="never", allow_inexact=False)
        page = client.aggregate("t", ["country"], limit=2)
        rest = client.aggregate("t", ["country"], limit=2, cursor=page.next_cursor)
        assert [g.key["country"] for g in [*page, *rest]] == [None, "de", "fr", "jp"]
        qs = http.app.state.services.query_service
        saved, qs.max_groups = qs.max_groups, 3
        try:
            with pytest.raises(TooManyGroupsError):
                client.aggregate("t", ["status"])
        finally:
            qs.max_groups = saved


def test_no_row_matches_one_row_without_group_by_none_with_it(plain: tuple[TestClient, pd.DataFrame]) -> None:
    """As SQL: an aggregate without GROUP BY over no rows is one row (count 0, sum NULL); with GROUP BY, none."""
    client, _ = plain
    body = {"where": "score > 1000", "metrics": [{"op": "count"}, {"op": "sum", "column": "score"}]}
    r = client.post("/v1/tables/t/aggregate", json=body)
    assert r.status_code == 200, r.text
    assert [g["metrics"] for g in r.json()["groups"]] == [{"count": 0, "sum_score": None}]
    r = client.post("/v1/tables/t/aggregate", json={**body, "group_by": ["status"]})
    assert r.status_code == 200 and r.json()["groups"] == [] and r.json()["total_groups"] == 0, r.text


def test_multivalue_null_rows_count_the_covered_rows_whose_array_is_null(
        plain: tuple[TestClient, pd.DataFrame]) -> None:
    """A multivalue file records no null rows (spec §8): the statistics count the NULL arrays of the rows the index
    covers (not the appended file) from the table, judged by pyarrow over the source rows."""
    client, df = plain
    covered = _arrow(df).slice(0, FILES * PER_FILE).column("tags")
    indexes = client.get("/v1/tables/t/indexes").json()["indexes"]
    tags = next(i for i in indexes if i["column"] == "tags")
    assert tags["covered_ranges"] == [[0, FILES * PER_FILE - 1]]
    assert tags["null_rows"] == covered.null_count > 0
    assert tags["distinct_values"] == len(pc.unique(pc.list_flatten(covered).drop_null()))
    page = client.get("/v1/tables/t/indexes/tags/values").json()
    assert page["null_rows"] == covered.null_count
