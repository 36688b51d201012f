"""`bgix build` with the default Spark engine from a plain shell (issue 23): no PYSPARK_PYTHON, PYTHONPATH or
SPARK_LOCAL_IP set, the venv's `bgix` run by its path with the venv not on PATH (Spark's default `python3`
is then the system one, which has no bgix). Truth: pyarrow over the source Parquet."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from index_format import open_index

pytestmark = [pytest.mark.spark, pytest.mark.slow]
BGIX = Path(sys.executable).with_name("bgix")   # scripts/setup.sh installs it (pip install -e)


def test_bgix_build_with_spark_from_a_plain_shell(tmp_path: Path) -> None:
    assert BGIX.exists(), f"{BGIX}: run scripts/setup.sh"
    (tmp_path / "events").mkdir()
    words = [None if i % 9 == 0 else f"w{i % 5}" for i in range(600)]
    pq.write_table(pa.table({"w": words}), tmp_path / "events" / "part-0.parquet")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "LANG": "C.UTF-8"}
    if "JAVA_HOME" in os.environ:
        env["JAVA_HOME"] = os.environ["JAVA_HOME"]
    proc = subprocess.run([str(BGIX), "build", "--warehouse", "wh", "--table", "events", "--location", "events",
                           "--column", "w", "--master", "local[1]"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr and "ModuleNotFoundError" not in proc.stderr, proc.stderr[-3000:]
    assert json.loads(proc.stdout)["rows_covered"] == 600
    (index_file,) = (tmp_path / "wh").rglob("*.index")
    reader = open_index(str(index_file), "string")
    assert sorted(reader.null_rows()) == [i for i, w in enumerate(words) if w is None]
    assert sorted(reader.eq("w3")) == [i for i, w in enumerate(words) if w == "w3"]
