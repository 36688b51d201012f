"""Fixtures for the API tests: seeded source rows and an app with every column indexed through the API."""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from service.api.app import create_app
from tests.api.helpers import COLUMNS, FILES, ROWS_PER_FILE, TestClient, make_settings, wait_job, write_table
from tests.api.predicates import make_frame


@pytest.fixture(scope="session")
def events_frame() -> pd.DataFrame:
    """The source rows; the index is the row id (files are numbered in row-id order)."""
    return make_frame(np.random.default_rng(20261122), FILES * ROWS_PER_FILE)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, events_frame: pd.DataFrame
          ) -> Iterator[tuple[TestClient, pd.DataFrame, Path]]:
    """An app with table `events` registered and a bitmap index on every column (local engine)."""
    root = tmp_path_factory.mktemp("api")
    write_table(root / "data" / "events", events_frame, FILES)
    app = create_app(make_settings(root))
    with TestClient(app) as client:
        r = client.put("/v1/tables/events", json={"location": str(root / "data" / "events")})
        assert r.status_code == 200, r.text
        jobs = []
        for col in COLUMNS:
            r = client.post("/v1/create_global_index", json={
                "table": "events", "index_column": col,
                # small dictionary blocks so lookups cross block boundaries even on small data
                "options": "bitmap-index.dictionary-block-size=256 b"})
            assert r.status_code == 202, r.text
            jobs.append(r.json()["job_id"])
        for job_id in jobs:
            job = wait_job(client, job_id)
            assert job["state"] == "succeeded", job
        yield client, events_frame, root
