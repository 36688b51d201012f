"""Every Paimon global index family through the HTTP API, on indexes pypaimon-rust built: btree (`uid`, and `name`
beside a bitmap), multivalue (`tags`, ARRAY<STRING>; `nums`, ARRAY<BIGINT>), bitmap (`name`).

Judges: a plain-Python evaluation of pypaimon-rust's read of the rows with SQL three-valued logic, and
pypaimon-rust's own SQL answers (its scans use the same index files). Never bgix's own output.
"""
from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from service.api.app import create_app
from tests.api.helpers import TestClient, make_settings
from tests.factories import random_array
from tests.unit.tables.paimon import rust_tables as rt

NAME = "fam"
DDL = "id BIGINT, uid BIGINT, name STRING, tags ARRAY<STRING>, nums ARRAY<BIGINT>"
RECORDS = 700          # sorted-index.records-per-range: several ranges, shards and files
# Not both -2^63 and 2^63 - 1 in one column: DataFusion 0.4's selectivity estimate overflows on that span
# (an internal error in the judge, not in the index).
UIDS = [0, 1, -1, 70, 2**62, -(2**62), 2**63 - 2, -(2**63), 12345678901]
NAMES = ["", "a", "ab", "b", "Ünïcode", "é", "zz", "a%b"]
TAGS = ["vip", "trial", "", "ü", "churned"]


def _rows(rng: random.Random, start: int, n: int) -> pa.Table:
    def uid() -> int | None:
        return None if rng.random() < 0.08 else (rng.choice(UIDS) if rng.random() < 0.3 else rng.randint(-500, 500))

    def nums() -> list[int | None] | None:
        if rng.random() < 0.1:
            return None
        return [rng.choice([-(2**63), -3, 0, 7, 2**62, None]) for _ in range(rng.randint(0, 3))]

    return pa.table({
        "id": pa.array(range(start, start + n), pa.int64()),
        "uid": pa.array([uid() for _ in range(n)], pa.int64()),
        "name": pa.array([None if rng.random() < 0.07 else rng.choice(NAMES) for _ in range(n)], pa.string()),
        "tags": pa.array([random_array(rng, TAGS) for _ in range(n)], pa.list_(pa.string())),
        "nums": pa.array([nums() for _ in range(n)], pa.list_(pa.int64())),
    })


@pytest.fixture(scope="module")
def fam(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TestClient, Path, list[dict[str, Any]]]]:
    root = tmp_path_factory.mktemp("families")
    wh = root / "data" / "warehouse"
    location = rt.create_table(wh, NAME, DDL, {"sorted-index.records-per-range": str(RECORDS)})
    rng = random.Random(21)
    rt.append(wh, NAME, _rows(rng, 0, 1500))
    rt.append(wh, NAME, _rows(rng, 1500, 900))
    for column, index_type in (("uid", "btree"), ("name", "bitmap"), ("tags", "multivalue"), ("nums", "multivalue")):
        rt.create_index(wh, NAME, column, index_type)
    rt.append(wh, NAME, _rows(rng, 2400, 800))       # a second build indexes only these rows
    for column, index_type in (("uid", "btree"), ("name", "bitmap"), ("tags", "multivalue"), ("nums", "multivalue"),
                               ("name", "btree")):
        rt.create_index(wh, NAME, column, index_type)
    rows = rt.read_rows(wh, NAME, ["uid", "name", "tags", "nums"])
    app = create_app(make_settings(root))
    with TestClient(app) as client:
        r = client.put(f"/v1/tables/{NAME}", json={"format": "paimon", "location": str(location)})
        assert r.status_code == 200, r.text
        yield client, wh, rows


# ---- a plain-Python judge with SQL three-valued logic (None = UNKNOWN) ------------------------------------
def _cmp(op: str, v: Any, lit: Any) -> bool | None:
    if v is None or lit is None:
        return None
    return {"eq": v == lit, "ne": v != lit, "lt": v < lit, "le": v <= lit, "gt": v > lit, "ge": v >= lit}[op]


def _truth(p: dict[str, Any], row: dict[str, Any]) -> bool | None:
    op = p["op"]
    if op in ("and", "or"):
        parts = [_truth(a, row) for a in p["args"]]
        if op == "and":
            return False if False in parts else (None if None in parts else True)
        return True if True in parts else (None if None in parts else False)
    if op == "not":
        t = _truth(p["arg"], row)
        return None if t is None else not t
    v = row[p["column"]]
    if op in ("eq", "ne", "lt", "le", "gt", "ge"):
        return _cmp(op, v, p["value"])
    if op == "is_null":
        return v is None
    if op == "is_not_null":
        return v is not None
    if op in ("in", "not_in"):
        if v is None:
            return None
        hit = v in [x for x in p["values"] if x is not None]
        t = True if hit else (None if None in p["values"] else False)
        return t if op == "in" or t is None else not t
    if op == "between":
        return None if v is None else p["low"] <= v <= p["high"]
    if op == "starts_with":
        return None if v is None else v.startswith(p["value"])
    if op == "array_contains":
        if v is None or p["value"] is None:
            return None
        return True if p["value"] in v else (None if None in v else False)
    if op == "arrays_overlap":
        if v is None:
            return None
        return True if any(x is not None and x in v for x in p["values"]) else None
    if op == "array_contains_all":
        return None if v is None else all(x is not None and x in v for x in p["values"])
    raise AssertionError(op)


def _want(p: dict[str, Any], rows: list[dict[str, Any]]) -> list[int]:
    return sorted(r["_ROW_ID"] for r in rows if _truth(p, r) is True)


def _ask(client: TestClient, body: dict[str, Any]) -> dict[str, Any]:
    r = client.post(f"/v1/tables/{NAME}/query", json={**body, "limit": 100_000, "explain": True})
    assert r.status_code == 200, (body, r.text)
    return r.json()


# ---- tests ------------------------------------------------------------------------------------------
def test_every_family_is_listed_with_its_files_and_ranges(fam: tuple[TestClient, Path, list[dict[str, Any]]]) -> None:
    client, _, rows = fam
    shown = client.get(f"/v1/tables/{NAME}").json()["paimon"]
    listed = {(i["column"], i["index_type"]): i for i in shown["indexes"]}
    assert set(listed) == {("uid", "btree"), ("name", "bitmap"), ("name", "btree"), ("tags", "multivalue"),
                           ("nums", "multivalue")}
    total = len(rows)
    for (column, index_type), idx in listed.items():
        assert idx["row_ranges"] == [[0, total - 1]], (column, index_type)
        assert idx["files"] >= 5   # cut at records-per-range, two builds
        assert idx["origins"] and all(o["origin"] != "bgix" for o in idx["origins"])
    assert listed[("tags", "multivalue")]["key_type"] == "string"
    assert listed[("nums", "multivalue")]["key_type"] == "bigint"
    indexes = client.get(f"/v1/tables/{NAME}/indexes").json()["indexes"]
    assert sorted((i["column"], i["index_type"]) for i in indexes) == sorted(listed)


def test_multivalue_null_rows_are_the_rows_whose_array_is_null(
        fam: tuple[TestClient, Path, list[dict[str, Any]]]) -> None:
    """Paimon's multivalue files record no null rows (their null bitmaps are empty): the index's statistics count
    the rows whose array is NULL from the table, judged by pyarrow over pypaimon-rust's read of the rows."""
    client, _, rows = fam
    table = pa.Table.from_pylist(rows)
    indexes = {(i["column"], i["index_type"]): i for i in client.get(f"/v1/tables/{NAME}/indexes").json()["indexes"]}
    for column in ("tags", "nums"):
        want = table.column(column).null_count
        assert 0 < want < len(rows), column
        listed = indexes[column, "multivalue"]
        assert listed["null_rows"] == want, column
        elements = pc.list_flatten(table.column(column)).drop_null()
        assert listed["distinct_values"] == len(pc.unique(elements)), column
        page = client.get(f"/v1/tables/{NAME}/indexes/{column}/values", params={"limit": 3}).json()
        assert page["null_rows"] == want, column


def _scalar_leaf(rnd: random.Random) -> dict[str, Any]:
    col = rnd.choice(["uid", "name"])
    lit = (lambda: rnd.choice(UIDS + [rnd.randint(-520, 520)])) if col == "uid" else (
        lambda: rnd.choice(NAMES + ["zzz", "A"]))
    op = rnd.choice(["eq", "ne", "lt", "le", "gt", "ge", "in", "not_in", "between", "is_null", "is_not_null"]
                    + (["starts_with"] if col == "name" else []))
    leaf: dict[str, Any] = {"op": op, "column": col}
    if op in ("eq", "ne", "lt", "le", "gt", "ge"):
        leaf["value"] = lit()
    elif op in ("in", "not_in"):
        leaf["values"] = [lit() for _ in range(rnd.randint(1, 4))]
    elif op == "between":
        a, b = lit(), lit()
        leaf["low"], leaf["high"] = min(a, b), max(a, b)
    elif op == "starts_with":
        leaf["value"] = rnd.choice(["a", "Ü", "", "z", "é"])
    return leaf


def _array_leaf(rnd: random.Random) -> dict[str, Any]:
    col = rnd.choice(["tags", "nums"])
    pool: list[Any] = TAGS + ["nope"] if col == "tags" else [-(2**63), -3, 0, 7, 2**62, 5]
    op = rnd.choice(["array_contains", "arrays_overlap", "array_contains_all"])
    if op == "array_contains":
        return {"op": op, "column": col, "value": rnd.choice(pool)}
    return {"op": op, "column": col, "values": rnd.sample(pool, rnd.randint(1, 3))}


def _predicate(rnd: random.Random, depth: int = 2) -> dict[str, Any]:
    r = rnd.random()
    if depth == 0 or r < 0.4:
        return _array_leaf(rnd) if rnd.random() < 0.4 else _scalar_leaf(rnd)
    if r < 0.5:   # NOT only over scalar subtrees: an array leaf under NOT is declined (tested below)
        return {"op": "not", "arg": _scalar_leaf(rnd)}
    return {"op": rnd.choice(["and", "or"]), "args": [_predicate(rnd, depth - 1) for _ in range(rnd.randint(2, 3))]}


def test_random_predicates_over_every_family_match_a_plain_python_reading(
        fam: tuple[TestClient, Path, list[dict[str, Any]]]) -> None:
    client, _, rows = fam
    rnd = random.Random(5)
    for _ in range(150):
        p = _predicate(rnd)
        got = _ask(client, {"predicate": p})
        assert got["row_ids"] == _want(p, rows), p
        assert got["exact"] is True and got["coverage"]["complete"] is True, (p, got["explain"])


@pytest.mark.parametrize("where", [
    "uid = 70", "uid > 0", "uid <= -1", "uid BETWEEN -100 AND 100", "uid IN (0, 1, 9223372036854775806)",
    "uid <> 0", "uid IS NULL", "uid IS NOT NULL", "name = ''", "name LIKE 'a%'", "name >= 'b'",
    "array_contains(tags, 'vip')", "array_contains(tags, '')", "arrays_overlap(tags, array('ü', 'nope'))",
    "array_contains(nums, -9223372036854775808)", "array_contains(tags, 'vip') AND uid > 0",
])
def test_sql_answers_equal_pypaimon_rusts(fam: tuple[TestClient, Path, list[dict[str, Any]]], where: str) -> None:
    client, wh, _ = fam
    got = _ask(client, {"where": where})
    assert got["exact"] is True
    assert got["row_ids"] == rt.matching_row_ids(wh, NAME, where), where


def test_each_leaf_uses_the_index_that_answers_it_best(fam: tuple[TestClient, Path, list[dict[str, Any]]]) -> None:
    """`name` has a bitmap and a btree covering the same rows: a point look-up stays on the bitmap, a range
    seeks in the btree (no fallback scan, so it holds under a zero scan budget too)."""
    client, _, rows = fam
    got = _ask(client, {"where": "name > 'a'"})
    assert got["row_ids"] == _want({"op": "gt", "column": "name", "value": "a"}, rows)
    assert got["explain"]["budget_decisions"] == [] and got["explain"]["fallback_scan"] is False
    assert [leaf["index"] for leaf in got["explain"]["leaves"]] == ["btree"]
    point = _ask(client, {"where": "name = 'a'"})
    assert point["row_ids"] == _want({"op": "eq", "column": "name", "value": "a"}, rows)
    assert [leaf["index"] for leaf in point["explain"]["leaves"]] == ["bitmap"]
    # a zero scan budget declines nothing either family can answer without scanning
    mixed = _ask(client, {"where": "name > 'a' AND uid = 70 AND array_contains(tags, 'vip')"})
    assert sorted(leaf["index"] for leaf in mixed["explain"]["leaves"]) == ["btree", "btree", "multivalue"]


@pytest.mark.parametrize("where", ["NOT array_contains(tags, 'vip')", "NOT arrays_overlap(tags, array('vip'))"])
def test_what_an_array_index_cannot_tell_is_read_from_the_data_or_declined_never_answered_wrong(
        fam: tuple[TestClient, Path, list[dict[str, Any]]], where: str) -> None:
    client, _, rows = fam
    got = _ask(client, {"where": where, "scan": "never"})
    assert got["row_ids"] == [] and got["exact"] is False and got["explain"]["unsupported"]
    # inside an AND the declined child is dropped: a superset of the answer, and said so
    both = _ask(client, {"where": f"uid = 70 AND {where}", "scan": "never"})
    assert both["exact"] is False and both["row_ids"] == _want({"op": "eq", "column": "uid", "value": 70}, rows)
    # by default the column is read from the data: exact, with SQL's NULLs (a null array, or one holding NULL
    # that misses, is UNKNOWN, so not TRUE under NOT), judged on pypaimon's rows
    def not_vip(r: dict[str, Any]) -> bool:
        tags = r["tags"]
        return tags is not None and None not in tags and "vip" not in tags

    got = _ask(client, {"where": where})
    assert got["exact"] is True and got["row_ids"] == sorted(r["_ROW_ID"] for r in rows if not_vip(r))
    both = _ask(client, {"where": f"uid = 70 AND {where}"})
    assert both["exact"] is True and both["row_ids"] == sorted(r["_ROW_ID"] for r in rows
                                                               if r["uid"] == 70 and not_vip(r))


@pytest.mark.parametrize(("where", "words"), [
    ("tags = 'vip'", "array_contains"), ("tags IS NULL", "array_contains"), ("array_contains(uid, 70)", "uid"),
])
def test_operators_a_column_does_not_take_are_400(fam: tuple[TestClient, Path, list[dict[str, Any]]],
                                                  where: str, words: str) -> None:
    client, _, _ = fam
    r = client.post(f"/v1/tables/{NAME}/query", json={"where": where})
    assert r.status_code == 400 and words in r.json()["error"]["message"], r.text
