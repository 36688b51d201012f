"""`"result": "global_index_result"`: the whole answer as Paimon Java's GlobalIndexResultSerializer bytes
(application/octet-stream) that decode to the same ids as `result: row_ids`, with the JSON answer's count,
exactness, coverage and snapshots in headers, for exact, declined and not fully covered answers alike."""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from pyroaring import BitMap64

from index_format.global_index_result import decode
from service.api.app import create_app
from tests.api.helpers import TestClient, build_indexes, make_settings, wait_job, write_table

ROWS = 400


@pytest.fixture(scope="module")
def app_client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TestClient, Path]]:
    """Table `t` (two files): `n` indexed, `s` indexed with no budget for scans, so a LIKE that needs one is
    declined (an inexact answer)."""
    root = tmp_path_factory.mktemp("gir")
    rng = np.random.default_rng(30)
    df = pd.DataFrame({"s": rng.choice(["ab", "ba", "cab", "x", None], ROWS), "n": rng.integers(0, 20, ROWS)})
    write_table(root / "data" / "t", df, 2)
    with TestClient(create_app(make_settings(root))) as client:
        build_indexes(client, "t", str(root / "data" / "t"), ["n"])
        r = client.post("/v1/create_global_index", json={
            "table": "t", "index_column": "s", "options": {"bitmap-index.fallback-scan-max-size": "0 b"}})
        assert r.status_code == 202, r.text
        assert wait_job(client, r.json()["job_id"])["state"] == "succeeded"
        yield client, root


def _both(client: TestClient, where: str, scan: str = "auto") -> tuple[dict[str, Any], Any]:
    """The JSON row_ids answer and the global_index_result response of one predicate."""
    as_json = client.post("/v1/tables/t/query", json={"where": where, "result": "row_ids", "limit": 100_000,
                                                      "scan": scan})
    assert as_json.status_code == 200, as_json.text
    as_bytes = client.post("/v1/tables/t/query", json={"where": where, "result": "global_index_result",
                                                       "scan": scan})
    assert as_bytes.status_code == 200, as_bytes.text
    return as_json.json(), as_bytes


def _same_answer(data: dict[str, Any], r: Any) -> None:
    assert r.headers["content-type"] == "application/octet-stream"
    got = decode(r.content)
    assert got.scores is None
    assert got.row_ids == BitMap64(data["row_ids"])
    assert int(r.headers["X-Bgix-Count"]) == data["count"] == len(got.row_ids)
    assert r.headers["X-Bgix-Exact"] == str(data["exact"]).lower()
    assert r.headers["X-Bgix-Coverage-Complete"] == str(data["coverage"]["complete"]).lower()
    assert r.headers["X-Bgix-Snapshots"] == ",".join(f"{c}={s}" for c, s in sorted(data["snapshots"].items()))


@pytest.mark.parametrize("where", [
    "n = 3", "n IN (1, 2, 17) AND NOT s = 'ab'", "s IS NULL OR n > 15", "s LIKE 'a%'", "n < 0",
])
def test_bytes_decode_to_the_row_ids_answer(app_client: tuple[TestClient, Path], where: str) -> None:
    data, r = _both(app_client[0], where)
    assert data["exact"] is True and data["coverage"]["complete"] is True
    _same_answer(data, r)


@pytest.mark.parametrize("where", ["s LIKE '%a%b'", "n = 3 AND s LIKE '%a%b'"])
def test_a_declined_leaf_says_inexact_in_its_header(app_client: tuple[TestClient, Path], where: str) -> None:
    data, r = _both(app_client[0], where, scan="never")
    assert data["exact"] is False   # the LIKE needs a scan its index has no budget for
    _same_answer(data, r)
    data, r = _both(app_client[0], where)   # by default the column is read from the data: exact
    assert data["exact"] is True
    _same_answer(data, r)


def test_plan_only_is_json_whatever_the_result(app_client: tuple[TestClient, Path]) -> None:
    client, _ = app_client
    r = client.post("/v1/tables/t/query", json={"where": "n = 3", "result": "global_index_result", "explain": "plan"})
    assert r.status_code == 200 and r.json()["result"] == "plan"
    assert client.get("/v1/tables/t/plan", params={"where": "n = 3", "result": "global_index_result"}).status_code == 200


def test_rows_no_index_covers_say_so_in_the_header(app_client: tuple[TestClient, Path]) -> None:
    """Runs last in this module: it appends a file no index covers yet."""
    client, root = app_client
    write_table(root / "data" / "extra", pd.DataFrame({"s": ["ab"] * 10, "n": [3] * 10}), 1)
    (root / "data" / "extra" / "part-000.parquet").rename(root / "data" / "t" / "part-009.parquet")
    assert client.get("/v1/tables/t/files", params={"refresh": True}).json()["total_rows"] == ROWS + 10
    data, r = _both(client, "n = 3", scan="never")
    assert data["coverage"] == {"complete": False, "uncovered_ranges": [[ROWS, ROWS + 9]]}
    _same_answer(data, r)
    assert r.headers["X-Bgix-Coverage-Complete"] == "false"
    data, r = _both(client, "n = 3")   # by default the appended rows are read: exact and complete
    assert data["coverage"]["complete"] is True and set(range(ROWS, ROWS + 10)) <= set(data["row_ids"])
    _same_answer(data, r)
    assert r.headers["X-Bgix-Coverage-Complete"] == "true"
