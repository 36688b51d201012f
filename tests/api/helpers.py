"""Shared builders for the API tests: Parquet tables in row-id order, app settings on a temporary
warehouse (local build engine), and the bounded poll every test waits with (`wait_until`, `wait_job`)."""
from __future__ import annotations

import time
from pathlib import Path
from collections.abc import Iterable
from typing import Any, Callable, TypeVar

import httpx
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from fastapi.testclient import TestClient  # its import warning is ignored by name in pyproject.toml

from service.server.settings import Settings

__all__ = ["COLUMNS", "FILES", "JOB_ENDED", "ROWS_PER_FILE", "TestClient", "build_indexes", "make_settings",
           "python_runs", "wait_job", "wait_until", "write_table"]

T = TypeVar("T")

COLUMNS = ("status", "country", "age", "score")
FILES = 3
ROWS_PER_FILE = 600


def python_runs(ids: list[int]) -> list[list[int]]:
    """Sorted ids → inclusive [first, last] runs, in plain Python (the oracle for `ranges` results)."""
    runs: list[list[int]] = []
    for i in ids:
        if runs and runs[-1][1] == i - 1:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    return runs


def write_table(directory: Path, df: pd.DataFrame, files: int) -> None:
    """Split `df` into `files` Parquet files named so that path order = row-id order."""
    directory.mkdir(parents=True, exist_ok=True)
    for i, part in enumerate(np.array_split(np.arange(len(df)), files)):
        chunk = df.iloc[part].reset_index(drop=True)
        pq.write_table(pa.Table.from_pandas(chunk, preserve_index=False), directory / f"part-{i:03d}.parquet")


def make_settings(root: Path, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "warehouse": str(root / "warehouse"), "allowed_roots": [str(root / "data")],
        "build_engine": "local", "snapshot_ttl_seconds": 0.0, "job_poll_seconds": 0.05,
    }
    values.update(overrides)
    return Settings(**values)


JOB_ENDED = ("succeeded", "failed", "cancelled")


def wait_until(check: Callable[[], T], timeout: float, what: str | Callable[[], str],
               interval: float = 0.05) -> T:
    """Call `check` until it returns something truthy and return that, for at most `timeout` seconds; then fail
    with `what` (a callable is asked only then, so it can show the last state seen). The one poll of the tests."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"not within {timeout} s: {what() if callable(what) else what}")
        time.sleep(interval)


def wait_job(client: httpx.Client | Callable[[str], httpx.Response], job_id: str,
             timeout: float = 120.0) -> dict[str, Any]:
    """Poll `GET /v1/jobs/{job_id}` until the job ends (bounded) and return it. `client`: a TestClient or an httpx
    client of a real server, or a function doing the GET for a path (e.g. on one chosen worker)."""
    get = getattr(client, "get", client)
    seen: dict[str, Any] = {}

    def ended() -> dict[str, Any] | None:
        r = get(f"/v1/jobs/{job_id}")
        assert r.status_code == 200, r.text
        seen.update(r.json())
        return dict(seen) if seen["state"] in JOB_ENDED else None

    return wait_until(ended, timeout, lambda: f"job {job_id} to end (last seen: {seen})", interval=0.1)


def build_indexes(client: httpx.Client, table: str, location: str | None, columns: Iterable[str],
                  timeout: float = 120.0) -> None:
    """Register `table` at `location` (None: it is registered already), then build a bitmap index on each of
    `columns` one after the other, each asserted to succeed."""
    if location is not None:
        r = client.put(f"/v1/tables/{table}", json={"location": location})
        assert r.status_code == 200, r.text
    for column in columns:
        r = client.post("/v1/create_global_index", json={"table": table, "index_column": column})
        assert r.status_code == 202, r.text
        assert wait_job(client, r.json()["job_id"], timeout=timeout)["state"] == "succeeded"
