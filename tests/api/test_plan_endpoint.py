"""The query plan over HTTP (`"explain": "plan"`, GET /v1/tables/{name}/plan): made without opening any index
file, it names the index, the pruned files and the coverage the real query then uses, and the rows no index
covers (checked against the table's row count, not against bgix's own answer)."""
from __future__ import annotations

from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from service.api.app import create_app
from tests.api.helpers import FILES, TestClient, build_indexes, make_settings, write_table

PREDICATES = ("status = 'vip'", "age > 30 AND NOT country = 'US'", "status IN ('vip', 'trial') OR age IS NULL",
              "country LIKE 'U%'", "status = 'vip' OR NOT status = 'vip' OR status IS NULL")


def _build(client: TestClient, root: Path) -> None:
    build_indexes(client, "events", str(root / "data" / "events"), ("status", "country", "age"))


def _bytes_read(client: TestClient) -> float:
    for line in client.get("/metrics").text.splitlines():
        if line.startswith("bgix_index_bytes_read_total "):
            return float(line.split()[1])
    raise AssertionError("no bgix_index_bytes_read_total metric")


def test_a_plan_opens_no_index_file_and_matches_the_query_it_plans(tmp_path: Path,
                                                                  events_frame: pd.DataFrame) -> None:
    write_table(tmp_path / "data" / "events", events_frame, FILES)
    settings = make_settings(tmp_path)
    with TestClient(create_app(settings)) as client:
        _build(client, tmp_path)
    # a fresh app on the same warehouse: nothing cached, so any read would show
    app = create_app(settings)
    with TestClient(app) as client:
        plans = {}
        for where in PREDICATES:
            r = client.post("/v1/tables/events/query", json={"where": where, "explain": "plan"})
            assert r.status_code == 200, r.text
            body = r.json()
            assert body["result"] == "plan" and "count" not in body and "X-Bgix-Count" not in r.headers
            plans[where] = body
        got = client.get("/v1/tables/events/plan", params={"where": PREDICATES[1]})
        assert got.status_code == 200 and got.json() == plans[PREDICATES[1]]
        assert _bytes_read(client) == 0
        assert len(app.state.services.query_service.readers) == 0   # no reader opened

        rows = len(events_frame)
        for where, body in plans.items():
            plan = body["plan"]
            # every row is indexed: no uncovered rows, and the plan's covered ranges are the table's rows
            assert body["coverage"] == {"complete": True, "uncovered_ranges": []}
            assert plan["coverage"]["covered"] == [[0, rows - 1]] and plan["coverage"]["uncovered"] == []
            used = {leaf["column"] for leaf in plan["leaves"]}
            assert set(body["snapshots"]) == used
            for leaf in plan["leaves"]:
                assert leaf["index"]["family"] == "bitmap" and leaf["declined"] is None
            answered = client.post("/v1/tables/events/query", json={"where": where, "explain": True})
            assert answered.status_code == 200, answered.text
            assert answered.json()["explain"]["plan"] == plan, where
        assert _bytes_read(client) > 0   # the real queries read


def test_a_plan_names_the_rows_no_index_covers(tmp_path: Path, events_frame: pd.DataFrame) -> None:
    write_table(tmp_path / "data" / "events", events_frame, FILES)
    with TestClient(create_app(make_settings(tmp_path))) as client:
        _build(client, tmp_path)
        extra = events_frame.head(40).reset_index(drop=True)   # appended after the build: no index covers it
        pq.write_table(pa.Table.from_pandas(extra, preserve_index=False),
                       tmp_path / "data" / "events" / "part-999.parquet")
        assert client.get("/v1/tables/events/files", params={"refresh": "true"}).status_code == 200
        r = client.post("/v1/tables/events/query", json={"where": "status = 'vip'", "explain": "plan"})
        assert r.status_code == 200, r.text
        rows = len(events_frame)
        want = [[rows, rows + len(extra) - 1]]
        assert r.json()["coverage"] == {"complete": False, "uncovered_ranges": want}
        assert r.json()["plan"]["coverage"]["uncovered"] == want


def test_a_plan_is_refused_like_a_query(tmp_path: Path, events_frame: pd.DataFrame) -> None:
    write_table(tmp_path / "data" / "events", events_frame, FILES)
    with TestClient(create_app(make_settings(tmp_path))) as client:
        _build(client, tmp_path)
        r = client.get("/v1/tables/events/plan", params={"where": "nope = 1"})
        assert r.status_code == 400 and r.json()["error"]["code"] == "unknown_column", r.text
        r = client.get("/v1/tables/missing/plan", params={"where": "status = 'vip'"})
        assert r.status_code == 404, r.text
        r = client.post("/v1/tables/events/query", json={"where": "status = 'vip'", "explain": "plans"})
        assert r.status_code == 422 and r.json()["error"]["code"] == "invalid_request", r.text
