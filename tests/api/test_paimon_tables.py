"""Paimon tables through the HTTP API: register, describe, and answer predicates in `_ROW_ID`s from the bitmap
global indexes pypaimon built, with deletion vectors and new snapshots seen without any call.

The judge is pypaimon (its table, its index build, its deletes, its read of [columns, _ROW_ID]) and a pandas
oracle with SQL three-valued logic (tests/api/predicates.py); never our own output.
"""
from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from pypaimon.globalindex.create_global_index import create_global_index

from service.api.app import create_app
from tests.api.helpers import TestClient, make_settings, python_runs, wait_until
from tests.api.predicates import expected_ids, to_sql
from tests.unit.tables.paimon.paimon_tables import (
    STATUSES, append, create_table, delete_rows, make_rows, pypaimon_read, pypaimon_table,
)

COLUMNS = ["status", "flag", "code"]
TTL = 0.3
PREDICATES = 250


def _frame(location: Path) -> pd.DataFrame:
    """pypaimon's read of the live rows, indexed by _ROW_ID."""
    df = pypaimon_read(location, COLUMNS).to_pandas().set_index("_ROW_ID").sort_index()
    df["status"] = df["status"].astype("string")
    df["code"] = df["code"].astype("Int64")
    return df


def _leaf(rnd: random.Random) -> dict[str, Any]:
    col = rnd.choice(COLUMNS)
    ops = ["eq", "ne", "in", "not_in", "is_null", "is_not_null"]
    if col != "flag":
        ops += ["lt", "le", "gt", "ge", "between", "not_between"]

    def lit() -> Any:
        if col == "status":
            return rnd.choice([s for s in STATUSES if s is not None] + ["nope", "a"])
        if col == "flag":
            return rnd.choice([True, False])
        return rnd.randint(-45, 45)

    op = rnd.choice(ops)
    leaf: dict[str, Any] = {"op": op, "column": col}
    if op in ("eq", "ne", "lt", "le", "gt", "ge"):
        leaf["value"] = lit()
    elif op in ("in", "not_in"):
        leaf["values"] = [lit() for _ in range(rnd.randint(1, 3))]
        if rnd.random() < 0.1:
            leaf["values"].append(None)
    elif op in ("between", "not_between"):
        a, b = lit(), lit()
        leaf["low"], leaf["high"] = min(a, b), max(a, b)
    return leaf


def _predicate(rnd: random.Random, depth: int = 3) -> dict[str, Any]:
    r = rnd.random()
    if depth == 0 or r < 0.35:
        return _leaf(rnd)
    if r < 0.5:
        return {"op": "not", "arg": _predicate(rnd, depth - 1)}
    return {"op": "and" if r < 0.75 else "or", "args": [_predicate(rnd, depth - 1) for _ in range(rnd.randint(2, 3))]}


PREDICATE_SET = [_predicate(random.Random(900 + i)) for i in range(PREDICATES)]


def _ids(client: TestClient, p: dict[str, Any], *, sql: bool = False, scan: str = "auto") -> dict[str, Any]:
    body: dict[str, Any] = {"where": to_sql(p)} if sql else {"predicate": p}
    r = client.post("/v1/tables/events/query", json={**body, "limit": 100_000, "scan": scan})
    assert r.status_code == 200, (p, r.text)
    return r.json()


def _wait_snapshot(client: TestClient, after: int) -> dict[str, Any]:
    """Poll GET until the service shows a snapshot newer than `after` (bounded; no call forces it)."""
    def newer() -> dict[str, Any] | None:
        shown: dict[str, Any] = client.get("/v1/tables/events").json()["paimon"]
        return shown if shown["snapshot_id"] > after else None

    return wait_until(newer, 30, "the new Paimon snapshot to become visible")


@pytest.fixture(scope="module")
def paimon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TestClient, Path]]:
    """A partitioned row-tracking + data-evolution + deletion-vector table, bitmap indexes built by pypaimon."""
    root = tmp_path_factory.mktemp("paimon")
    location = create_table(root / "data" / "warehouse", "events", commits=3, rows=1000)
    for col in COLUMNS:
        assert create_global_index(pypaimon_table(location), col, index_type="bitmap") > 0
    app = create_app(make_settings(root, snapshot_ttl_seconds=TTL))
    with TestClient(app) as client:
        r = client.put("/v1/tables/events", json={"format": "paimon", "location": str(location)})
        assert r.status_code == 200, r.text
        yield client, location


def test_register_and_describe(paimon: tuple[TestClient, Path]) -> None:
    client, location = paimon
    judge = pypaimon_table(location)
    shown = client.get("/v1/tables/events").json()
    assert shown["format"] == "paimon"
    p = shown["paimon"]
    assert p["snapshot_id"] == judge.snapshot_manager().get_latest_snapshot().id
    assert {(f["id"], f["name"]) for f in p["fields"]} == {(f.id, f.name) for f in judge.fields}
    assert {f["name"]: f["type"] for f in p["fields"]}["code"].startswith("INT")
    assert p["partition_keys"] == ["dt"]
    # the table's own partition keys, as pypaimon's schema has them (registration named none)
    assert shown["partition_columns"] == list(judge.partition_keys) == ["dt"]
    assert [t["partition_columns"] for t in client.get("/v1/tables").json()["tables"] if t["name"] == "events"] \
        == [["dt"]]
    assert p["row_count"] == pypaimon_read(location, ["dt"]).num_rows == 3000
    by_col = {i["column"]: i for i in p["indexes"]}
    assert set(by_col) == set(COLUMNS)
    ids = {f.name: f.id for f in judge.fields}
    for col, idx in by_col.items():
        assert idx["field_id"] == ids[col]
        assert idx["row_ranges"] == [[0, 2999]]
    # other formats' responses keep their shape: no paimon key
    listed = client.get("/v1/tables").json()["tables"]
    assert all("paimon" not in t for t in listed)


def test_random_predicates_match_pypaimon(paimon: tuple[TestClient, Path]) -> None:
    client, location = paimon
    df = _frame(location)
    for i, p in enumerate(PREDICATE_SET):
        got = _ids(client, p, sql=i % 2 == 1)
        want = sorted(expected_ids(p, df))
        assert got["row_ids"] == want, (p, to_sql(p))
        assert got["count"] == len(want) and got["exact"] is True
        assert got["coverage"] == {"complete": True, "uncovered_ranges": []}


def test_ranges_use_sidecars_derived_outside_the_paimon_table(paimon: tuple[TestClient, Path]) -> None:
    """pypaimon's bitmap files get range sidecars derived lazily into bgix's warehouse, never into the table;
    answers stay pypaimon's."""
    client, location = paimon
    df = _frame(location)
    p = {"op": "and", "args": [{"op": "ge", "column": "code", "value": -12},
                               {"op": "lt", "column": "code", "value": 20}]}
    want = sorted(expected_ids(p, df))
    seen: dict[str, Any] = {}

    def from_sidecars() -> bool:
        seen.update(client.post("/v1/tables/events/query", json={"predicate": p, "limit": 100_000,
                                                                  "explain": True}).json())
        assert seen["row_ids"] == want
        return bool(seen["explain"]["sidecars_used"] > 0 and not seen["explain"]["budget_decisions"])

    wait_until(from_sidecars, 60, lambda: f"every range answered from a sidecar: {seen['explain']}", interval=0.1)
    got = seen
    assert [leaf["op"] for leaf in got["explain"]["leaves"]] == ["range_set"]
    assert not list(location.rglob("*.range-bitmap")), "a sidecar was written into the Paimon table"
    bgix_warehouse = location.parents[3] / "warehouse"   # make_settings: <root>/warehouse
    assert list((bgix_warehouse / "_sidecars").rglob("*.range-bitmap"))


def test_create_checks_columns_and_drop_of_an_unindexed_column_is_404(paimon: tuple[TestClient, Path]) -> None:
    # Building and dropping Paimon indexes work (tests/e2e/test_paimon_build.py, tests/api/test_paimon_drop.py);
    # nothing is started or dropped on this shared table.
    client, location = paimon
    r = client.post("/v1/create_global_index", json={"table": "events", "index_column": "status,nope"})
    assert r.status_code in (400, 404) and "nope" in r.json()["error"]["message"], r.text
    sid = pypaimon_table(location).snapshot_manager().get_latest_snapshot().id
    for column in ("dt", "nope"):
        r = client.post("/v1/drop_global_index", json={"table": "events", "index_column": column})
        assert r.status_code == 404 and r.json()["error"]["code"] == "not_found", r.text
    assert pypaimon_table(location).snapshot_manager().get_latest_snapshot().id == sid


def test_result_files_and_files_listing_name_paimon_data_files(paimon: tuple[TestClient, Path]) -> None:
    client, location = paimon
    judge = pypaimon_table(location)
    plan = {(f.file_name, f.first_row_id, f.row_count)
            for s in judge.new_read_builder().new_scan().plan().splits() for f in s.files}
    listed = client.get("/v1/tables/events/files").json()
    assert {(Path(f["path"]).name, f["first_row_id"], f["row_count"]) for f in listed["files"]} == plan
    assert listed["total_rows"] == 3000
    assert all(Path(f["path"].removeprefix("file:")).is_file() and "dt" in f["partition"]
               for f in listed["files"])

    p = {"op": "eq", "column": "status", "value": "error"}
    want = sorted(expected_ids(p, _frame(location)))
    got = client.post("/v1/tables/events/query", json={"predicate": p, "result": "files", "limit": 100_000}).json()
    assert sum(f["matches"] for f in got["files"]) == len(want)
    seen = sorted(f["first_row_id"] + pos for f in got["files"] for pos in f["positions"])
    assert seen == want
    assert {(Path(f["path"]).name, f["first_row_id"], f["row_count"]) for f in got["files"]} <= plan
    # each file entry names its partition: pypaimon's dt of every matching row in it
    dt_of = pypaimon_read(location, ["dt"]).to_pandas().set_index("_ROW_ID")["dt"]
    for f in got["files"]:
        assert f["partition"] == {"dt": str(dt_of[f["first_row_id"] + f["positions"][0]])}
        assert {str(dt_of[f["first_row_id"] + pos]) for pos in f["positions"]} == {f["partition"]["dt"]}


def test_deletes_and_appends_are_seen_without_a_call(paimon: tuple[TestClient, Path]) -> None:
    client, location = paimon
    before = client.get("/v1/tables/events").json()["paimon"]["snapshot_id"]
    deleted = sorted(random.Random(5).sample(range(3000), 150)) + [0, 999, 1000, 2999]
    delete_rows(location, deleted)
    append(location.parent.parent, "events", make_rows(random.Random(77), 400))
    shown = _wait_snapshot(client, before)
    if shown["snapshot_id"] < before + 2:  # the append may land a moment after the delete was seen
        shown = _wait_snapshot(client, before + 1)
    assert shown["deleted_rows"] == len(set(deleted))

    df = _frame(location)
    assert not set(deleted) & set(df.index)            # pypaimon agrees they are gone
    new_ids = sorted(i for i in df.index if i >= 3000)
    assert len(new_ids) == 400
    old = df[df.index < 3000]                           # the indexed ranges; the append has no index yet
    for p in PREDICATE_SET[:120]:
        got = _ids(client, p, scan="never")
        assert got["row_ids"] == sorted(expected_ids(p, old)), (p, to_sql(p))
        assert got["coverage"] == {"complete": False, "uncovered_ranges": python_runs(new_ids)}
    # by default the appended rows are read from the data files: every answer exact over pypaimon's live rows
    for p in PREDICATE_SET[:120]:
        got = _ids(client, p)
        assert got["row_ids"] == sorted(expected_ids(p, df)), (p, to_sql(p))
        assert got["exact"] is True and got["coverage"] == {"complete": True, "uncovered_ranges": []}

    for p in ({"op": "not", "arg": {"op": "eq", "column": "status", "value": "ok"}},
              {"op": "ne", "column": "code", "value": 3},
              {"op": "not_in", "column": "flag", "values": [True]},
              {"op": "is_not_null", "column": "status"}):
        got = set(_ids(client, p, scan="never")["row_ids"])
        assert got == expected_ids(p, old) and not got & set(deleted)
        got = set(_ids(client, p)["row_ids"])
        assert got == expected_ids(p, df) and not got & set(deleted)

    values = client.get("/v1/tables/events/indexes/status/values", params={"order": "value", "limit": 100}).json()
    want = old["status"].dropna().value_counts()
    assert {v["value"]: v["rows"] for v in values["values"]} == {k: int(n) for k, n in want.items()}
    top = client.get("/v1/tables/events/indexes/code/values", params={"limit": 3}).json()["values"]
    counts = old["code"].dropna().value_counts()
    assert [v["rows"] for v in top] == sorted(counts.tolist(), reverse=True)[:3]
    indexes = {i["column"]: i for i in client.get("/v1/tables/events/indexes").json()["indexes"]}
    for col in COLUMNS:
        assert indexes[col]["null_rows"] == int(old[col].isna().sum())
        assert indexes[col]["distinct_values"] == old[col].dropna().nunique()
        assert indexes[col]["uncovered_ranges"] == python_runs(new_ids)
    assert client.post("/v1/tables/events/query", json={"where": "status IS NULL", "result": "count", "scan": "never"}
                       ).json()["count"] == int(old["status"].isna().sum())
    assert client.post("/v1/tables/events/query", json={"where": "status IS NULL", "result": "count"}
                       ).json()["count"] == int(df["status"].isna().sum())

    # pypaimon indexes the appended rows: the next queries use the new file as well, coverage complete
    for col in COLUMNS:
        create_global_index(pypaimon_table(location), col, index_type="bitmap")
    _wait_snapshot(client, shown["snapshot_id"])
    df = _frame(location)
    for p in PREDICATE_SET[:60]:
        got = _ids(client, p)
        assert got["row_ids"] == sorted(expected_ids(p, df)), (p, to_sql(p))
        assert got["coverage"]["complete"] is True


def test_bad_locations(paimon: tuple[TestClient, Path], tmp_path: Path) -> None:
    client, location = paimon
    warehouse = location.parent.parent
    plain = create_table(warehouse, "plain", options={"bucket": "-1"}, commits=1, rows=10)
    r = client.put("/v1/tables/plain", json={"format": "paimon", "location": str(plain)})
    assert r.status_code == 400, r.text
    assert r.json()["error"]["code"] == "invalid_table" and "row-tracking.enabled" in r.json()["error"]["message"]

    not_paimon = warehouse / "db.db" / "nothing"
    not_paimon.mkdir()
    r = client.put("/v1/tables/nothing", json={"format": "paimon", "location": str(not_paimon)})
    assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_table", r.text
    r = client.put("/v1/tables/nothing", json={"format": "paimon", "location": str(warehouse)})
    assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_table", r.text

    outside = create_table(tmp_path / "elsewhere", "events", commits=1, rows=10)
    as_paimon = client.put("/v1/tables/out", json={"format": "paimon", "location": str(outside)})
    as_parquet = client.put("/v1/tables/out", json={"format": "parquet", "location": str(outside)})
    assert as_paimon.status_code == as_parquet.status_code == 403
    assert as_paimon.json()["error"]["code"] == as_parquet.json()["error"]["code"] == "path_not_allowed"
    for name in ("plain", "nothing", "out"):
        assert client.get(f"/v1/tables/{name}").status_code == 404
