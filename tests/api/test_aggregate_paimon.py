"""POST /v1/tables/{t}/aggregate on Paimon tables, against pyarrow's group_by over the reads of Paimon's own readers:
a pypaimon table with deletion vectors (bitmap and btree indexes bgix built, rows deleted after the build, a commit
no index covers), and a pypaimon-rust table with a multivalue (ARRAY) index beside a btree.
"""
from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from service.api.app import create_app
from tests.api.helpers import TestClient, make_settings, wait_job
from tests.factories import random_array
from tests.api.test_aggregate import _ask, _got, _judge, _metrics, _same
from tests.unit.tables.paimon import rust_tables as rt
from tests.unit.tables.paimon.paimon_tables import (
    STATUSES, append, create_table, delete_rows, make_rows, pypaimon_read,
)

INDEXES = {"status": "bitmap", "flag": "bitmap", "code": "btree"}


@pytest.fixture(scope="module")
def dv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TestClient, Path, list[int]]]:
    root = tmp_path_factory.mktemp("aggregate_paimon")
    location = create_table(root / "data" / "warehouse", "events", commits=2, rows=700, seed=32)
    with TestClient(create_app(make_settings(root))) as client:
        r = client.put("/v1/tables/events", json={"format": "paimon", "location": str(location)})
        assert r.status_code == 200, r.text
        for column, index_type in INDEXES.items():
            r = client.post("/v1/create_global_index", json={"table": "events", "index_column": column,
                                                              "index_type": index_type})
            assert r.status_code == 202, r.text
            assert wait_job(client, r.json()["job_id"])["state"] == "succeeded"
        deleted = sorted(random.Random(3).sample(range(1400), 120)) + [0, 1399]
        delete_rows(location, deleted)
        append(location.parent.parent, "events", make_rows(random.Random(4), 250))   # no index covers it
        yield client, location, deleted


def _leaf(rnd: random.Random) -> tuple[str, Any]:
    """SQL text and its pandas truth (nullable booleans: NA is UNKNOWN)."""
    kind = rnd.randrange(4)
    if kind == 0:
        v = rnd.choice([s for s in STATUSES if s])
        return f"status = '{v}'", lambda d: d.status == v
    if kind == 1:
        lo = rnd.randint(-40, 30)
        return f"code BETWEEN {lo} AND {lo + 20}", lambda d: (d.code >= lo) & (d.code <= lo + 20)
    if kind == 2:
        return "flag", lambda d: d.flag == True  # noqa: E712 - a nullable boolean column
    return "NOT status IN ('ok', 'warn')", lambda d: ~pd.array(d.status.isin(["ok", "warn"]).mask(d.status.isna()),
                                                                      dtype="boolean")


def test_groups_match_pyarrow_over_pypaimons_live_rows(dv: tuple[TestClient, Path, list[int]]) -> None:
    client, location, deleted = dv
    live = pypaimon_read(location, ["status", "flag", "code"])
    assert not set(deleted) & set(live.column("_ROW_ID").to_pylist())     # pypaimon agrees they are gone
    df = pd.DataFrame({"status": pd.array(live.column("status").to_pylist(), dtype="string"),
                       "flag": pd.array(live.column("flag").to_pylist(), dtype="boolean"),
                       "code": pd.array(live.column("code").to_pylist(), dtype="Int64")})
    rnd = random.Random(11)
    groupings = [["status"], ["flag"], ["code"], ["status", "flag"], ["flag", "status", "code"], []]
    for i in range(12):
        group_by = groupings[i % len(groupings)]
        metric = rnd.choice([None, "code"])
        if i % 3 == 0:
            body: dict[str, Any] = {}
            truth = np.ones(len(df), dtype=bool)
        else:
            (a, fa), (b, fb) = _leaf(rnd), _leaf(rnd)
            op = rnd.choice(["AND", "OR"])
            body = {"where": f"({a}) {op} ({b})"}
            x, y = pd.array(fa(df), dtype="boolean"), pd.array(fb(df), dtype="boolean")
            truth = (x & y if op == "AND" else x | y).fillna(False).to_numpy(dtype=bool)
        answer = _ask(client, "events", {**body, "group_by": group_by, "metrics": _metrics(metric),
                                         "limit": 100_000})
        assert answer["exact"] is True and answer["coverage"]["complete"] is True, body
        assert answer["rows"] == int(truth.sum()), body
        _same(_got(answer, group_by), _judge(live.filter(pa.array(truth)), group_by, metric, "_ROW_ID"))


def test_deleted_rows_never_count_even_from_the_indexes_alone(dv: tuple[TestClient, Path, list[int]]) -> None:
    client, location, deleted = dv
    live = pypaimon_read(location, ["status", "flag", "code"])
    indexed = live.filter(pa.compute.less(live.column("_ROW_ID"), 1400))
    answer = _ask(client, "events", {"group_by": ["status"], "scan": "never", "metrics": _metrics("code")})
    assert answer["exact"] is False and answer["coverage"] == {"complete": False,
                                                                "uncovered_ranges": [[1400, 1649]]}
    _same(_got(answer, ["status"]), _judge(indexed, ["status"], "code", "_ROW_ID"))
    assert answer["rows"] == 1400 + 250 - len(set(deleted))


def test_a_partition_column_without_an_index_is_a_named_400(dv: tuple[TestClient, Path, list[int]]) -> None:
    client, _, _ = dv
    r = client.post("/v1/tables/events/aggregate", json={"group_by": ["dt"]})
    assert r.status_code == 400 and r.json()["error"]["code"] == "no_index", r.text
    assert "dt" in r.json()["error"]["message"]


# ---- multivalue: array elements are the groups ---------------------------------------------------------------------
TAGS = ["vip", "trial", "", "ü", "churned"]


def _rows(rng: random.Random, start: int, n: int) -> pa.Table:
    return pa.table({
        "id": pa.array(range(start, start + n), pa.int64()),
        "uid": pa.array([None if rng.random() < 0.08 else rng.randint(-30, 30) for _ in range(n)], pa.int64()),
        "tags": pa.array([random_array(rng, TAGS) for _ in range(n)], pa.list_(pa.string())),
    })


@pytest.fixture(scope="module")
def mv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TestClient, pa.Table]]:
    root = tmp_path_factory.mktemp("aggregate_multivalue")
    wh = root / "data" / "warehouse"
    location = rt.create_table(wh, "mv", "id BIGINT, uid BIGINT, tags ARRAY<STRING>",
                               {"sorted-index.records-per-range": "400"})
    rng = random.Random(8)
    rt.append(wh, "mv", _rows(rng, 0, 900))
    rt.create_index(wh, "mv", "tags", "multivalue")
    rt.create_index(wh, "mv", "uid", "btree")
    rows = rt.read_rows(wh, "mv", ["uid", "tags"])
    table = pa.table({"_ROW_ID": pa.array([r["_ROW_ID"] for r in rows], pa.int64()),
                      "uid": pa.array([r["uid"] for r in rows], pa.int64()),
                      "tags": pa.array([r["tags"] for r in rows], pa.list_(pa.string()))})
    with TestClient(create_app(make_settings(root))) as client:
        r = client.put("/v1/tables/mv", json={"format": "paimon", "location": str(location)})
        assert r.status_code == 200, r.text
        yield client, table


@pytest.mark.parametrize(("where", "keep"), [
    (None, lambda r: True),
    ("uid > 0", lambda r: r["uid"] is not None and r["uid"] > 0),
    ("array_contains(tags, 'vip')", lambda r: r["tags"] is not None and "vip" in r["tags"]),
])
def test_multivalue_elements_are_the_groups(mv: tuple[TestClient, pa.Table], where: str | None, keep: Any) -> None:
    client, table = mv
    mask = pa.array([bool(keep(r)) for r in table.to_pylist()])
    body = {"group_by": ["tags"], "metrics": _metrics("uid"), **({"where": where} if where else {})}
    answer = _ask(client, "mv", body)
    assert answer["exact"] is True
    _same(_got(answer, ["tags"]), _judge(table.filter(mask), ["tags"], "uid", "_ROW_ID"))
    two = _ask(client, "mv", {**body, "group_by": ["uid", "tags"], "limit": 100_000})
    _same(_got(two, ["uid", "tags"]), _judge(table.filter(mask), ["uid", "tags"], "uid", "_ROW_ID"))
