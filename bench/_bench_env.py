"""Imported by the benches before anything of the repository: the repository on sys.path (benches import `tests`
helpers and run from any folder) and Spark's environment (loopback, this interpreter for its Python workers),
unless the caller set them. One place for what every Spark bench needs before its first import.

    from _bench_env import REPO   # bench/ is on sys.path when a bench script runs
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
