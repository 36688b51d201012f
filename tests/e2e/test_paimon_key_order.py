"""`bgix.key-order` on a Paimon table's INT column (spec §2.7): bytes order for pypaimon 2.1 readers, logical by default.

Judges: pypaimon's read of `[code, _ROW_ID]` (the oracle) and pypaimon's own `DataEvolutionGlobalIndexScanner`
over the files bgix committed; bgix's query API must answer from either order.
"""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pypaimon.common.predicate_builder import PredicateBuilder
from pypaimon.globalindex.data_evolution_global_index_scanner import DataEvolutionGlobalIndexScanner

from index_format import open_index, parse_type
from service.api.app import create_app
from service.tables.paimon import list_index_entries, open_paimon_table
from tests.api.helpers import TestClient, make_settings, wait_job
from tests.unit.tables.paimon.paimon_tables import create_table, pypaimon_read, pypaimon_table

R = {"sorted-index.records-per-range": "700"}
EQ = [-40, -17, -1, 0, 1, 7, 39, 40, 1000]     # make_rows draws code from -40..40 (and nulls); 1000 is absent
IN = [[-3, 3, 255], [-40, 40], [-256, -1, 0, 1000]]


@pytest.fixture()
def api(tmp_path: Path) -> Iterator[tuple[TestClient, Path]]:
    location = create_table(tmp_path / "data" / "warehouse", "events", commits=3, rows=1000)
    with TestClient(create_app(make_settings(tmp_path))) as client:
        r = client.put("/v1/tables/events", json={"format": "paimon", "location": str(location)})
        assert r.status_code == 200, r.text
        yield client, location


def _build(client: TestClient, options: dict[str, str]) -> None:
    r = client.post("/v1/create_global_index", json={"table": "events", "index_column": "code",
                                                     "index_type": "bitmap", "options": {**R, **options}})
    assert r.status_code == 202, r.text
    job = wait_job(client, r.json()["job_id"])
    assert job["state"] == "succeeded", job


def _oracle(location: Path) -> list[tuple[int, int | None]]:
    data = pypaimon_read(location, ["code"])
    return list(zip(data.column("_ROW_ID").to_pylist(), data.column("code").to_pylist(), strict=True))


def _orders(location: Path) -> set[str]:
    entries = list_index_entries(open_paimon_table(str(location)))["code"]
    assert sum(e.row_range_end - e.row_range_start + 1 for e in entries) == 3000
    return {open_index(e.path, parse_type("int")).key_order for e in entries}


def _bgix_agrees(client: TestClient, pairs: list[tuple[int, int | None]]) -> None:
    for where, test in [*((f"code = {v}", lambda x, v=v: x == v) for v in EQ),
                        *((f"code IN ({', '.join(map(str, vs))})", lambda x, vs=vs: x in vs) for vs in IN),
                        ("code >= -5 AND code < 9", lambda x: x is not None and -5 <= x < 9)]:
        r = client.post("/v1/tables/events/query", json={"where": where, "limit": 100_000})
        assert r.status_code == 200, r.text
        got = r.json()
        assert got["coverage"]["complete"] is True
        assert got["row_ids"] == sorted(rid for rid, x in pairs if test(x)), where


def test_bytes_order_index_is_searched_exactly_by_pypaimon(api: tuple[TestClient, Path]) -> None:
    client, location = api
    _build(client, {"bgix.key-order": "bytes"})
    assert _orders(location) == {"bytes"}
    pairs = _oracle(location)
    table = pypaimon_table(location)
    pb = PredicateBuilder(table.fields)
    preds: list[tuple[Any, Any]] = [(pb.equal("code", v), lambda x, v=v: x == v) for v in EQ]
    preds += [(pb.is_in("code", vs), lambda x, vs=vs: x in vs) for vs in IN]
    for pred, test in preds:
        with DataEvolutionGlobalIndexScanner.create(table, predicate=pred) as scanner:  # it holds the files open
            got = scanner.scan(pred).results()
        assert got is not None, pred
        assert {int(i) for i in got} == {rid for rid, x in pairs if test(x)}, pred
    _bgix_agrees(client, pairs)


def test_default_logical_order_index_is_answered_by_bgix(api: tuple[TestClient, Path]) -> None:
    client, location = api
    _build(client, {})
    assert _orders(location) == {"logical"}
    _bgix_agrees(client, _oracle(location))
