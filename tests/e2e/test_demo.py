"""The README demo path: `bgix demo --rows 50000 --no-serve` (Spark build through the API), counts checked with pandas."""
from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pyarrow.dataset as ds
import pytest

from service.cli.demo_cmd import EXAMPLE_QUERIES

# Independent oracle: each example WHERE evaluated by pandas on the source rows under SQL null rules
# (a comparison with NULL is never TRUE; NOT of UNKNOWN stays UNKNOWN).
ORACLE = {
    "status = 'error'": lambda d: d.status.eq("error"),
    "country IN ('DE', 'FR', 'NL')": lambda d: d.country.isin(["DE", "FR", "NL"]),
    "NOT (status = 'ok')": lambda d: d.status.notna() & d.status.ne("ok"),
    "tenant LIKE 'acme%'": lambda d: d.tenant.str.startswith("acme").fillna(False).astype(bool),
    "status = 'timeout' AND country = 'US'": lambda d: d.status.eq("timeout") & d.country.eq("US"),
    "country IS NULL": lambda d: d.country.isna(),
    "tenant >= 'globex' AND tenant < 'hooli'": lambda d: d.tenant.notna() & d.tenant.ge("globex") & d.tenant.lt("hooli"),
}
LINE = re.compile(r"count=\s*([\d,]+)\s+[\d.]+ ms\s+where: (.+)$")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_oracle_covers_every_example_query() -> None:
    # The demo's default columns (status, country, tenant) answer every query but the ts one.
    assert {where for _, where, needs in EXAMPLE_QUERIES if "ts" not in needs} == set(ORACLE)


@pytest.mark.spark
@pytest.mark.slow
def test_demo_prints_counts_that_match_pandas(tmp_path: Path) -> None:
    warehouse = tmp_path / "wh"
    env = dict(os.environ, BGIX_TOKEN="", PYTHONUNBUFFERED="1")
    cmd = [sys.executable, "-c", "from service.cli import main; raise SystemExit(main())", "demo",
           "--rows", "50000", "--no-serve", "--warehouse", str(warehouse), "--port", str(_free_port())]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"demo failed:\nSTDOUT\n{proc.stdout}\nSTDERR\n{proc.stderr[-4000:]}"

    printed = {}
    for line in proc.stdout.splitlines():
        m = LINE.search(line)
        if m:
            printed[m.group(2).strip()] = int(m.group(1).replace(",", ""))
    assert set(printed) == set(ORACLE), proc.stdout

    df = ds.dataset(warehouse / "source" / "events", format="parquet").to_table().to_pandas()
    assert len(df) == 50_000
    for where, oracle in ORACLE.items():
        assert printed[where] == int(oracle(df).sum()), where
    assert "/dashboard" in proc.stdout
    assert "succeeded" in proc.stdout  # each build was polled to its end through GET /v1/jobs/{id}


def test_demo_without_java_says_so(tmp_path: Path) -> None:
    env = dict(os.environ, PATH=str(tmp_path), JAVA_HOME="")
    cmd = [sys.executable, "-c", "from service.cli import main; raise SystemExit(main())", "demo",
           "--rows", "1000", "--no-serve", "--warehouse", str(tmp_path / "wh")]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert "Java 17+ is required" in proc.stderr
