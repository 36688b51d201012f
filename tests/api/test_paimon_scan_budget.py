"""A Paimon table's own option `bitmap-index.fallback-scan-max-size` sets the query-time dictionary-scan budget of
its bitmap indexes (whoever built them): a `contains` leaf is scanned from the dictionary under the default
budget, declined under `0 b` (and then answered by reading the rows), exact either way."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa

from service.api.app import create_app
from tests.api.helpers import TestClient, make_settings
from tests.unit.tables.paimon import rust_tables as rt

ROWS = [None if i % 11 == 0 else f"user-{i % 37}" for i in range(500)]

def _answer(root: Path, options: dict[str, str]) -> dict[str, Any]:
    wh = root / "data" / "warehouse"
    location = rt.create_table(wh, "t", "id BIGINT, txt STRING", options)
    rt.append(wh, "t", pa.table({"id": pa.array(range(len(ROWS)), pa.int64()), "txt": pa.array(ROWS, pa.string())}))
    rt.create_index(wh, "t", "txt", "bitmap")
    with TestClient(create_app(make_settings(root))) as client:
        r = client.put("/v1/tables/t", json={"format": "paimon", "location": str(location)})
        assert r.status_code == 200, r.text
        r = client.post("/v1/tables/t/query", json={"where": "txt LIKE '%er-1%'", "result": "count", "explain": True})
        assert r.status_code == 200, r.text
        return r.json()  # type: ignore[no-any-return]

def test_the_default_budget_scans_the_dictionary(tmp_path: Path) -> None:
    got = _answer(tmp_path, {})
    assert got["count"] == sum(1 for v in ROWS if v is not None and "er-1" in v) and got["exact"]
    [d] = got["explain"]["budget_decisions"]
    assert (d["budget"], d["decision"]) == (256 << 20, "scan") and got["explain"]["scan"]["rows_scanned"] == 0

def test_the_tables_option_sets_the_scan_budget(tmp_path: Path) -> None:
    got = _answer(tmp_path, {"bitmap-index.fallback-scan-max-size": "0 b"})
    assert got["count"] == sum(1 for v in ROWS if v is not None and "er-1" in v) and got["exact"]
    [column] = got["explain"]["scan"]["columns"]   # declined by the budget: the rows are read instead
    assert "over budget 0" in column["reason"] and got["explain"]["scan"]["rows_scanned"] == len(ROWS)
