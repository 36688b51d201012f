"""The default (Spark) build engine through the API: create_global_index → job process running a local
Spark session → queries checked against pandas."""
from __future__ import annotations

import random

import numpy as np
import pytest

from service.api.app import create_app
from tests.api.helpers import TestClient, make_settings, wait_job, write_table
from tests.api.predicates import expected_ids, make_frame, random_predicate, to_sql

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def test_spark_engine_build_answers_like_pandas(tmp_path) -> None:
    df = make_frame(np.random.default_rng(42), 900)
    write_table(tmp_path / "data" / "t", df, 3)
    settings = make_settings(tmp_path, build_engine="spark", spark_master="local[2]")
    with TestClient(create_app(settings)) as client:
        assert client.put("/v1/tables/t", json={"location": str(tmp_path / "data" / "t")}).status_code == 200
        r = client.post("/v1/create_global_index", json={"table": "t", "index_column": "status",
                                                          "options": {"sorted-index.records-per-range": 400}})
        assert r.status_code == 202, r.text
        job = wait_job(client, r.json()["job_id"], timeout=400)
        assert job["state"] == "succeeded", job
        assert job["progress"]["rows_indexed"] == len(df)
        rnd = random.Random(1)
        checked = 0
        while checked < 40:
            pred = random_predicate(rnd, df)
            if any(c in to_sql(pred) for c in ("country", "age", "score")):
                continue
            got = client.post("/v1/tables/t/query", json={"where": to_sql(pred), "limit": 100_000}).json()
            want = sorted(expected_ids(pred, df))
            if got["row_ids"] != want:
                explain = client.post("/v1/tables/t/query", json={"where": to_sql(pred), "result": "count",
                                                                   "explain": True}).json()
                snap = client.app.state.services.catalog.current_snapshot("t", "status")
                extra = sorted(set(got["row_ids"]) - set(want))[:20]
                missing = sorted(set(want) - set(got["row_ids"]))[:20]
                raise AssertionError(f"{to_sql(pred)}: extra {extra} missing {missing} explain {explain} "
                                     f"files {[(f.path, f.range_start, f.range_end, f.row_count, f.meta_hex) for f in snap.files]}")
            checked += 1
