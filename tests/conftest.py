"""Shared test configuration: where the reference vectors live (inside the repo), Spark environment."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from tests.data import GLOBAL_INDEX
from tests.self_contained import OUTSIDE_READS

REPO = Path(__file__).resolve().parents[1]

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)


@pytest.fixture(scope="session")
def vectors_dir() -> Path:
    assert GLOBAL_INDEX.is_dir(), f"reference vectors not found at {GLOBAL_INDEX}"
    return GLOBAL_INDEX


@pytest.fixture(autouse=True)
def _reads_stay_in_repo() -> object:
    """Fail any test (or its fixtures) that read beside the repository: a clone has nothing there."""
    OUTSIDE_READS.take()
    yield
    seen = OUTSIDE_READS.take()
    assert not seen, f"test read outside the repository (a fresh clone lacks these): {sorted(set(seen))[:5]}"
