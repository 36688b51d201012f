"""The README demo path: `bgix demo --rows 50000 --no-serve` (a Paimon table written by pypaimon, one Spark build of
three columns through the API, committed into the table), counts checked against pypaimon's own read of the rows;
the plain-Parquet variant (`--format parquet`) checked with pandas."""
from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
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


def _process_tree(root: int) -> dict[int, tuple[bytes, bytes]]:
    """Every process below `root` → (its start time, its command line), read from /proc."""
    stats: dict[int, list[bytes]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                raw = (entry / "stat").read_bytes()
            except OSError:
                continue
            stats[int(entry.name)] = raw[raw.rfind(b")") + 2:].split()
    tree: dict[int, tuple[bytes, bytes]] = {}
    todo = [p for p, f in stats.items() if int(f[1]) == root]
    while todo:
        p = todo.pop()
        try:
            cmd = Path(f"/proc/{p}/cmdline").read_bytes().replace(b"\0", b" ")
        except OSError:
            continue
        tree[p] = (stats[p][19], cmd)
        todo.extend(q for q, f in stats.items() if int(f[1]) == p)
    return tree


def _running(pid: int, started: bytes) -> bool:
    """The same process (pid and start time) still exists and has not exited (a zombie has)."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return False
    fields = raw[raw.rfind(b")") + 2:].split()
    return fields[19] == started and fields[0] not in (b"Z", b"X")


def _port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1.0)
        return s.connect_ex(("127.0.0.1", port)) == 0


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_stop_signal_stops_the_demo_and_everything_it_started(tmp_path: Path, sig: signal.Signals) -> None:
    """`bgix demo` serving (its service, the build runner and the runner's Spark JVM up) gets SIGTERM, or SIGINT as a
    terminal's Ctrl-C sends it to the foreground process group: it exits, none of its processes is left, and its
    port is closed."""
    port = _free_port()
    env = dict(os.environ, BGIX_TOKEN="", PYTHONUNBUFFERED="1")
    cmd = [sys.executable, "-c", "from service.cli import main; raise SystemExit(main())", "demo", "--rows", "2000",
           "--commits", "1", "--columns", "status", "--warehouse", str(tmp_path / "wh"), "--port", str(port)]
    log = tmp_path / "demo.log"   # a file, not a pipe: processes left behind would hold a pipe open
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    tree: dict[int, tuple[bytes, bytes]] = {}
    try:
        deadline = time.monotonic() + 240
        while "\nServing;" not in log.read_text():
            assert proc.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
        tree = _process_tree(proc.pid)
        commands = [c for _, c in tree.values()]
        # what the issue saw left behind: the service, its build runner and the runner's Spark JVM
        assert any(b" serve " in c for c in commands) and any(b"service.build_job.build_runner" in c for c in commands)
        assert any(b"java" in c.split(b" ", 1)[0] for c in commands), commands
        assert _port_open(port)
        if sig == signal.SIGINT:
            os.killpg(proc.pid, sig)   # the demo's own group: its service and runner have sessions of their own
        else:
            os.kill(proc.pid, sig)
        assert proc.wait(timeout=60) == 0, log.read_text()
        left = [c.decode(errors="replace")[:200] for p, (t, c) in tree.items() if _running(p, t)]
        assert left == [], left
        assert not _port_open(port)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        for p, (t, _) in tree.items():   # what a failing demo left behind must not outlive the test
            if _running(p, t):
                os.kill(p, signal.SIGKILL)
