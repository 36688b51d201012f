"""Shared builders for the API tests: Parquet tables in row-id order, app settings on a temporary
warehouse (local build engine), and a bounded job poll."""
from __future__ import annotations

import time
import warnings
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from service.server.settings import Settings

with warnings.catch_warnings():
    # starlette deprecates its httpx-based TestClient in favour of httpx2, which is not installed
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

__all__ = ["COLUMNS", "FILES", "ROWS_PER_FILE", "TestClient", "make_settings", "python_runs", "wait_job",
           "write_table"]

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


def wait_job(client: httpx.Client, job_id: str, timeout: float = 120.0) -> dict[str, Any]:
    """Poll the job until it ends (bounded); `client`: a TestClient or an httpx client of a real server."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job = client.get(f"/v1/jobs/{job_id}").json()
        if job["state"] in ("succeeded", "failed", "cancelled"):
            return job
        time.sleep(0.1)
    raise AssertionError(f"job {job_id} did not finish within {timeout} s: {job}")
