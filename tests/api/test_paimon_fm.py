"""The fm family through the HTTP API on a Paimon table where pypaimon-rust built the index (two builds, several
row ranges and partitions): LIKE, contains-style, prefix, suffix, =, IS NULL and their NOTs answer exactly, from
the fm files, as a plain-Python evaluation of the rows with SQL three-valued logic does."""
from __future__ import annotations

import random
import re
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest

from index_format.literals import like_regex
from service.api.app import create_app
from tests.api.helpers import TestClient, make_settings
from tests.unit.tables.paimon import rust_tables as rt

WORDS = ["vip", "vip-u", "a", "%", "_", "\\", "é", "🙂", ""]


def _rows(rng: random.Random, n: int) -> list[str | None]:
    return [None if rng.random() < 0.1 else "".join(rng.choice(WORDS) for _ in range(rng.randint(0, 3)))
            for _ in range(n)]


@pytest.fixture(scope="module")
def fm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TestClient, list[str | None]]]:
    root = tmp_path_factory.mktemp("fm")
    wh = root / "data" / "warehouse"
    location = rt.create_table(wh, "t", "id BIGINT, txt STRING", {"sorted-index.records-per-range": "300"})
    rng = random.Random(31)
    rows = _rows(rng, 700)
    rt.append(wh, "t", pa.table({"id": pa.array(range(700), pa.int64()), "txt": pa.array(rows, pa.string())}))
    rt.create_index(wh, "t", "txt", "fm", "fm-index.partition-row-count=50")
    more = _rows(rng, 300)    # a second build indexes only these
    rt.append(wh, "t", pa.table({"id": pa.array(range(700, 1000), pa.int64()), "txt": pa.array(more, pa.string())}))
    rt.create_index(wh, "t", "txt", "fm")
    with TestClient(create_app(make_settings(root))) as client:
        r = client.put("/v1/tables/t", json={"format": "paimon", "location": str(location)})
        assert r.status_code == 200, r.text
        yield client, rows + more


def _like(pattern: str) -> object:
    rx = re.compile(like_regex(pattern))
    return lambda v: rx.match(v) is not None


def test_the_table_lists_its_fm_index(fm: tuple[TestClient, list[str | None]]) -> None:
    client, _ = fm
    indexes = client.get("/v1/tables/t").json()["paimon"]["indexes"]
    assert [(i["column"], i["index_type"]) for i in indexes] == [("txt", "fm")]


def test_substring_and_like_predicates_are_exact_from_the_index(fm: tuple[TestClient, list[str | None]]) -> None:
    client, rows = fm
    rng = random.Random(5)
    cases = [("txt LIKE '%vip-u%'", _like("%vip-u%")), ("txt LIKE '%u'", _like("%u")),
             ("txt LIKE 'vip%'", _like("vip%")), ("txt = 'vip'", lambda v: v == "vip"), ("txt = ''", lambda v: v == "")]
    for _ in range(12):
        p = "".join(rng.choice(["%", "_", "a", "vip", "\\%", "\\_", "\\\\", "é", "-u"]) for _ in range(rng.randint(1, 4)))
        cases.append((f"txt LIKE '{p}'", _like(p)))
    for where, test in cases:
        for negate in (False, True):
            q = f"NOT ({where})" if negate else where
            got = client.post("/v1/tables/t/query", json={"where": q, "explain": True}).json()
            want = sorted(i for i, v in enumerate(rows) if v is not None and bool(test(v)) != negate)  # type: ignore[operator]
            assert got["row_ids"] == want and got["exact"], q
            assert got["explain"]["scan"]["rows_scanned"] == 0, q
    nulls = client.post("/v1/tables/t/query", json={"where": "txt IS NULL"}).json()
    assert nulls["row_ids"] == [i for i, v in enumerate(rows) if v is None]
