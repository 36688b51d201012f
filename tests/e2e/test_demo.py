"""The README demo path: `bgix demo --rows 50000 --no-serve` (a Paimon table written by pypaimon, one Spark build of
three columns through the API, committed into the table), counts checked against pypaimon's own read of the rows;
the plain-Parquet variant (`--format parquet`) checked with pandas."""
from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pyarrow.dataset as ds
import pytest

from service.cli.demo_cmd import EXAMPLE_QUERIES, SCANNER_QUERIES
from tests.unit.tables.paimon.paimon_tables import catalog

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
SCANNER_ORACLE = {
    "status = 'error'": ORACLE["status = 'error'"],
    "country IN ('DE', 'FR', 'NL')": ORACLE["country IN ('DE', 'FR', 'NL')"],
    "tenant = 'acme-01'": lambda d: d.tenant.eq("acme-01"),
    "status IS NULL": lambda d: d.status.isna(),
}
LINE = re.compile(r"count=\s*([\d,]+)\s+[\d.]+ ms\s+where: (.+)$")
SCANNER_LINE = re.compile(r"pypaimon rows=\s*([\d,]+)\s+[\d.]+ ms\s+(.+?)\s+where: (.+)$")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _demo(tmp_path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, BGIX_TOKEN="", PYTHONUNBUFFERED="1")
    cmd = [sys.executable, "-c", "from service.cli import main; raise SystemExit(main())", "demo",
           "--rows", "50000", "--no-serve", "--warehouse", str(tmp_path / "wh"), "--port", str(_free_port()), *extra]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"demo failed:\nSTDOUT\n{proc.stdout}\nSTDERR\n{proc.stderr[-4000:]}"
    return proc


def _printed(stdout: str, pattern: re.Pattern[str]) -> dict[str, re.Match[str]]:
    return {m.group(m.lastindex or 0).strip(): m for m in map(pattern.search, stdout.splitlines()) if m}


def _count(m: re.Match[str]) -> int:
    return int(m.group(1).replace(",", ""))


def test_oracle_covers_every_example_query() -> None:
    # The demo's default columns (status, country, tenant) answer every query but the ts one.
    assert {where for _, where, needs in EXAMPLE_QUERIES if "ts" not in needs} == set(ORACLE)
    assert {where for where, *_ in SCANNER_QUERIES} == set(SCANNER_ORACLE)


@pytest.mark.spark
@pytest.mark.slow
def test_paimon_demo_counts_match_pypaimons_read_and_pypaimons_scanner_uses_our_files(tmp_path: Path) -> None:
    proc = _demo(tmp_path)
    out = proc.stdout
    location = tmp_path / "wh" / "paimon" / "demo.db" / "events"
    rb = catalog(location.parent.parent).get_table("demo.events").new_read_builder().with_projection(
        ["tenant", "status", "country", "_ROW_ID"])
    df: pd.DataFrame = rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pandas()
    assert len(df) == 50_000 and df["_ROW_ID"].is_unique

    printed = _printed(out, LINE)
    assert set(printed) == set(ORACLE), out
    for where, oracle in ORACLE.items():
        assert _count(printed[where]) == int(oracle(df).sum()), where

    # pypaimon's own scanner found the files bgix committed and returned exactly the matching _ROW_IDs' count
    scanned = _printed(out, SCANNER_LINE)
    assert set(scanned) == set(SCANNER_ORACLE), out
    for where, oracle in SCANNER_ORACLE.items():
        assert _count(scanned[where]) == int(oracle(df).sum()), where
        assert scanned[where].group(2) == "same row ids as bgix", scanned[where].group(0)
    # one request built the three columns and committed them as one Paimon snapshot after the 4 data commits
    assert "create_global_index events.status,country,tenant" in out
    assert "(snapshot 5)" in out and "succeeded" in out
    # rows_indexed counts each column's rows, and the progress line says so
    assert "rows indexed 150,000 (50,000 rows × 3 columns)" in out, out
    assert "/dashboard" in out


@pytest.mark.slow
def test_parquet_demo_counts_match_pandas(tmp_path: Path) -> None:
    out = _demo(tmp_path, "--format", "parquet", "--engine", "local").stdout
    printed = _printed(out, LINE)
    assert set(printed) == set(ORACLE), out
    df = ds.dataset(tmp_path / "wh" / "source" / "events", format="parquet").to_table().to_pandas()
    assert len(df) == 50_000
    for where, oracle in ORACLE.items():
        assert _count(printed[where]) == int(oracle(df).sum()), where
    assert "succeeded" in out  # each build was polled to its end through GET /v1/jobs/{id}


def test_demo_without_java_says_so(tmp_path: Path) -> None:
    env = dict(os.environ, PATH=str(tmp_path), JAVA_HOME="")
    cmd = [sys.executable, "-c", "from service.cli import main; raise SystemExit(main())", "demo",
           "--rows", "1000", "--no-serve", "--warehouse", str(tmp_path / "wh")]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert "Java 17+ is required" in proc.stderr
