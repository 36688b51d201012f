"""Shared test configuration: where the reference vectors live, Spark environment."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
VECTORS = SHARED / "vectors"

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)


@pytest.fixture(scope="session")
def vectors_dir() -> Path:
    assert VECTORS.is_dir(), f"reference vectors not found at {VECTORS}"
    return VECTORS
