"""Global indexes of types bgix does not serve (issue 31): a Paimon table where pypaimon-rust built `full-text` and
`fm` on one STRING column and `ivf-flat` on a vector column. Every index is listed with `served` and, for those
bgix does not read, why; a predicate on a column whose only index is unserved is answered (by the scan step,
exactly), never refused as an unknown column; the served fm answers its column's LIKE."""
from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest

from service.api.app import create_app
from tests.api.helpers import TestClient, make_settings
from tests.unit.index_format.fm.fm_truth import like_truth
from tests.unit.tables.paimon import rust_tables as rt

ROWS = 400


def _texts(rng: random.Random) -> list[str | None]:
    return [None if rng.random() < 0.1 else rng.choice(["vip-u", "vip", "user", "é", ""]) + f" {rng.randint(0, 99)}"
            for _ in range(ROWS)]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TestClient, list[str | None]]]:
    root = tmp_path_factory.mktemp("unserved")
    wh = root / "data" / "warehouse"
    rng = random.Random(31)
    texts = _texts(rng)
    for name in ("both", "fulltext_only"):
        rt.create_table(wh, name, "id BIGINT, txt STRING, emb ARRAY<FLOAT>")
        rt.append(wh, name, pa.table({
            "id": pa.array(range(ROWS), pa.int64()), "txt": pa.array(texts, pa.string()),
            "emb": pa.array([[float(i), 1.0, 2.0, 3.0] for i in range(ROWS)], pa.list_(pa.float32()))}))
        rt.create_index(wh, name, "txt", "full-text")
    rt.create_index(wh, "both", "txt", "fm")
    rt.create_index(wh, "both", "emb", "ivf-flat", "ivf-flat.dimension=4")
    with TestClient(create_app(make_settings(root))) as client:
        for name in ("both", "fulltext_only"):
            r = client.put(f"/v1/tables/{name}", json={"format": "paimon", "location": str(wh / "default.db" / name)})
            assert r.status_code == 200, r.text
        yield client, texts


def _expected(texts: list[str | None], pattern: str) -> list[int]:
    return list(like_truth(texts, pattern))


def test_every_index_is_listed_with_whether_bgix_serves_it(served: tuple[TestClient, list[str | None]]) -> None:
    client, _ = served
    indexes = client.get("/v1/tables/both").json()["paimon"]["indexes"]
    listed = {(i["column"], i["index_type"]): i for i in indexes}
    assert set(listed) == {("txt", "fm"), ("txt", "full-text"), ("emb", "ivf-flat")}
    assert listed[("txt", "fm")]["served"] is True and listed[("txt", "fm")]["reason"] is None
    full_text, vector = listed[("txt", "full-text")], listed[("emb", "ivf-flat")]
    assert full_text["served"] is False and "full-text" in full_text["reason"] and "scan" in full_text["reason"]
    assert vector["served"] is False and "vector" in vector["reason"]
    for unserved in (full_text, vector):
        assert unserved["rows"] == ROWS and unserved["files"] >= 1 and unserved["row_ranges"] == [[0, ROWS - 1]]
        assert unserved["key_type"] is None
    # the query side's view: only the served index is an index of the column
    assert [(i["column"], i["index_type"]) for i in client.get("/v1/tables/both/indexes").json()["indexes"]] \
        == [("txt", "fm")]


def test_like_uses_the_served_fm_index(served: tuple[TestClient, list[str | None]]) -> None:
    client, texts = served
    got = client.post("/v1/tables/both/query", json={"where": "txt LIKE '%vip-u%'", "explain": True}).json()
    assert got["exact"] and got["row_ids"] == _expected(texts, "%vip-u%")
    assert got["explain"]["scan"]["rows_scanned"] == 0


def test_a_column_with_only_an_unserved_index_is_answered_by_the_scan(
        served: tuple[TestClient, list[str | None]]) -> None:
    client, texts = served
    r = client.post("/v1/tables/fulltext_only/query", json={"where": "txt LIKE '%vip%'", "explain": True})
    assert r.status_code == 200, r.text
    got = r.json()
    assert got["exact"] and got["row_ids"] == _expected(texts, "%vip%")
    assert got["explain"]["scan"]["decision"] == "scanned" and got["explain"]["scan"]["rows_scanned"] == ROWS
    # with the scan off the answer says which rows it did not answer (none are covered); the column is never
    # "unknown"
    off = client.post("/v1/tables/fulltext_only/query", json={"where": "txt LIKE '%vip%'", "scan": "never"})
    assert off.status_code == 200, off.text
    assert off.json()["coverage"] == {"complete": False, "uncovered_ranges": [[0, ROWS - 1]]}, json.dumps(off.json())
