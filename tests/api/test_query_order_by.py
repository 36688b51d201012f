"""ORDER BY one column [ASC|DESC] LIMIT k on POST /v1/tables/{t}/query, against pyarrow's sort of the matching source
rows (ties by row id; NULLS FIRST ascending, NULLS LAST descending): btree and bitmap indexes of a plain table with
an appended file no index covers, and a Paimon table with deletion vectors (pypaimon's live rows the judge).
"""
from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from tests.api.helpers import TestClient
from tests.api.test_aggregate import APPENDED, _arrow, _predicate, plain  # noqa: F401 - the module's fixture
from tests.api.test_aggregate_paimon import dv  # noqa: F401 - the Paimon fixture
from tests.unit.tables.paimon.paimon_tables import pypaimon_read


def _sorted_ids(table: pa.Table, column: str, desc: bool, rid: str) -> tuple[list[int], list[Any]]:
    """pyarrow's order: the column (NULLS FIRST ascending, LAST descending), then the row id ascending."""
    nulls = table.filter(pc.is_null(table.column(column)))
    rest = table.filter(pc.is_valid(table.column(column)))
    rest = rest.take(pc.sort_indices(rest, sort_keys=[(column, "descending" if desc else "ascending"),
                                                       (rid, "ascending")]))
    nulls = nulls.take(pc.sort_indices(nulls, sort_keys=[(rid, "ascending")]))
    parts = [rest, nulls] if desc else [nulls, rest]
    ordered = pa.concat_tables(parts)
    return ordered.column(rid).to_pylist(), ordered.column(column).to_pylist()


def _ask(client: TestClient, table: str, body: dict[str, Any]) -> dict[str, Any]:
    r = client.post(f"/v1/tables/{table}/query", json=body)
    assert r.status_code == 200, (body, r.text)
    got: dict[str, Any] = r.json()
    return got


@pytest.mark.parametrize("column", ["country", "score", "price", "status"])
def test_order_by_matches_pyarrows_sort(plain: tuple[TestClient, pd.DataFrame], column: str) -> None:  # noqa: F811
    client, df = plain
    table = _arrow(df).append_column("rid", pa.array(np.arange(len(df), dtype=np.int64)))
    rnd = random.Random(column)
    for i in range(6):
        desc = i % 2 == 1
        p, f = _predicate(rnd)
        truth = pd.array(f(df), dtype="boolean").fillna(False).to_numpy(dtype=bool)
        want_ids, want_values = _sorted_ids(table.filter(pa.array(truth)), column, desc, "rid")
        k = rnd.choice([1, 7, 50])
        got = _ask(client, "t", {"predicate": p, "order_by": {"column": column,
                                                              "direction": "desc" if desc else "asc"}, "limit": k})
        assert got["exact"] is True and got["coverage"]["complete"] is True
        assert got["count"] == int(truth.sum())
        assert got["row_ids"] == want_ids[:k], (p, desc)
        assert got["order_values"] == want_values[:k]
        assert (got["next_cursor"] is not None) == (len(want_ids) > k)


def test_pages_of_an_ordered_query_follow_each_other(plain: tuple[TestClient, pd.DataFrame]) -> None:  # noqa: F811
    client, df = plain
    table = _arrow(df).append_column("rid", pa.array(np.arange(len(df), dtype=np.int64)))
    want, _ = _sorted_ids(table.filter(pc.greater(table.column("price"), 1.0)), "country", True, "rid")
    body: dict[str, Any] = {"where": "price > 1.0", "order_by": {"column": "country", "direction": "desc"},
                            "limit": 97}
    got: list[int] = []
    cursor = None
    while True:
        page = _ask(client, "t", {**body, **({"cursor": cursor} if cursor else {})})
        got += page["row_ids"]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert got == want
    # the rows no index covers, left out with scan "never", are named
    never = _ask(client, "t", {**body, "scan": "never"})
    indexed = len(df) - APPENDED
    assert never["coverage"] == {"complete": False, "uncovered_ranges": [[indexed, len(df) - 1]]}
    want, _ = _sorted_ids(table.slice(0, indexed).filter(pc.greater(table.slice(0, indexed).column("price"), 1.0)),
                          "country", True, "rid")
    assert never["row_ids"] == want[:97]
    # a filter on other columns than the order column: its rows no order index covers are read, or named
    whole = _ask(client, "t", {"where": "status = 'ok'", "order_by": {"column": "price"}, "limit": 10_000})
    ok = table.filter(pc.equal(table.column("status"), "ok"))
    assert whole["row_ids"] == _sorted_ids(ok, "price", False, "rid")[0] and whole["exact"] is True


def test_an_ordered_query_stays_json_when_the_client_accepts_roaring(
        plain: tuple[TestClient, pd.DataFrame]) -> None:  # noqa: F811
    """A bitmap holds no order: `Accept: application/x-roaring` must not turn an ordered answer into one."""
    client, df = plain
    from service.api.schemas import ROARING_MEDIA_TYPE
    table = _arrow(df).append_column("rid", pa.array(np.arange(len(df), dtype=np.int64)))
    r = client.post("/v1/tables/t/query", headers={"Accept": f"{ROARING_MEDIA_TYPE}, application/json"},
                    json={"where": "TRUE", "order_by": {"column": "price", "direction": "desc"}, "limit": 20})
    assert r.status_code == 200 and r.headers["content-type"].startswith("application/json"), r.headers
    assert r.json()["row_ids"] == _sorted_ids(table, "price", True, "rid")[0][:20]


@pytest.mark.parametrize(("body", "code"), [
    ({"where": "price > 1.0", "order_by": {"column": "tags"}}, "invalid_order_by"),
    ({"where": "price > 1.0", "order_by": {"column": "country"}, "result": "count"}, "invalid_order_by"),
    ({"where": "price > 1.0", "order_by": {"column": "country"}, "result": "roaring"}, "invalid_order_by"),
    ({"where": "price > 1.0", "order_by": {"column": "country"}, "result": "global_index_result"},
     "invalid_order_by"),
    ({"where": "price > 1.0", "order_by": {"column": "uid"}}, "no_index"),
    ({"where": "price > 1.0", "order_by": {"column": "nope"}}, "unknown_column"),
    ({"where": "price > 1.0", "order_by": {"column": "country"}, "cursor": "e30"}, "invalid_cursor"),
])
def test_bad_order_by_is_a_named_400(plain: tuple[TestClient, pd.DataFrame],  # noqa: F811
                                     body: dict[str, Any], code: str) -> None:
    client, _ = plain
    r = client.post("/v1/tables/t/query", json=body)
    assert r.status_code == 400 and r.json()["error"]["code"] == code, r.text


@pytest.mark.parametrize(("column", "desc"), [("code", True), ("code", False), ("status", False), ("flag", True)])
def test_order_by_on_paimon_leaves_deleted_rows_out(dv: tuple[TestClient, Path, list[int]],  # noqa: F811
                                                     column: str, desc: bool) -> None:
    client, location, deleted = dv
    live = pypaimon_read(location, ["status", "flag", "code"])
    for where, keep in ((None, None), ("code > -5", pc.greater(live.column("code"), -5))):
        rows = live if keep is None else live.filter(pc.fill_null(keep, False))
        want, values = _sorted_ids(rows, column, desc, "_ROW_ID")
        body = {"where": where or "code IS NULL OR code IS NOT NULL", "limit": 120,
                "order_by": {"column": column, "direction": "desc" if desc else "asc"}}
        got = _ask(client, "events", body)
        assert got["row_ids"] == want[:120] and got["order_values"] == values[:120], where
        assert got["exact"] is True and not set(deleted) & set(got["row_ids"])


def test_the_client_asks_for_an_order(plain: tuple[TestClient, pd.DataFrame]) -> None:  # noqa: F811
    from service.client import Client

    http, df = plain
    table = _arrow(df).append_column("rid", pa.array(np.arange(len(df), dtype=np.int64)))
    want, values = _sorted_ids(table.filter(pc.less(table.column("score"), 0)), "price", True, "rid")
    with Client("http://testserver", transport=http._transport) as client:
        answer = client.query("t", where="score < 0", order_by="price DESC", limit=25)
        assert answer.row_ids == want[:25] and answer.order_values == values[:25] and answer.is_exact
        assert answer.count == len(want) and answer.next_cursor is not None
