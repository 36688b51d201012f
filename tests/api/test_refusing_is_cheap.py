"""Refusing a 1 MB predicate is cheap (issue 34, defect 5), against a real `bgix serve` (local build engine).

Five ~1 MB SQL texts of shapes sqlglot's general parser reads slowly (5–16 s of CPU each before: parenthesized
terms, two-column comparisons, deep parentheses, BETWEEN terms, a simple chain that breaks at its very end) are
each refused with 400 predicate_limit naming BGIX_MAX_PREDICATE_TOKENS, and the server process spends little CPU
on all five (/proc/<pid>/stat utime + stime, a generous bound; no wall-clock assertion). A parse past the query's
time budget stops too: with BGIX_MAX_PREDICATE_TOKENS raised so the general parser takes a big text, the 503
query_timeout comes and the CPU the server spends afterwards stays small (before, it kept parsing for seconds).
Counts of the small queries after are checked against pandas on the source rows.
"""
from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import numpy as np
import pandas as pd
import pytest

from tests.api.helpers import write_table
from tests.api.server import bgix_process

pytestmark = pytest.mark.slow

MB = 980_000        # ~1 MB: QueryRequest takes `where` texts of up to 1,000,000 characters
CPU_BOUND_S = 0.5   # for all five refusals together (before: 30 s and more)


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")   # utime, stime


def _settled_cpu(pid: int, limit_s: float = 60.0) -> float:
    """The process's CPU seconds once it stops using CPU (two samples 0.5 s apart agree), at most limit_s."""
    deadline = time.monotonic() + limit_s
    last = _cpu_seconds(pid)
    while time.monotonic() < deadline:
        time.sleep(0.5)
        now = _cpu_seconds(pid)
        if now - last < 0.02:
            return now
        last = now
    return last


def _mb(term: Callable[[int], str], joiner: str = " OR ") -> str:
    parts, size, i = [], 0, 0
    while size < MB:
        parts.append(term(i))
        size += len(parts[-1]) + len(joiner)
        i += 1
    return joiner.join(parts)


SHAPES = {
    "parenthesized terms": _mb(lambda i: f"(n = {i})"),
    "column against column": _mb(lambda i: f"(n = s{i})"),
    "deep parentheses": _mb(lambda i: "(" * 30 + f"n = {i}" + ")" * 30, " AND "),
    "between terms": _mb(lambda i: f"n BETWEEN {i} AND {i + 1}"),
    "a chain broken at its end": _mb(lambda i: f"n = {i}") + " OR (",
}


def _frame(rows: int = 2000) -> pd.DataFrame:
    rng = np.random.default_rng(34)
    return pd.DataFrame({"n": rng.integers(0, 50, rows)})


def _serve(tmp_path: Path, **env: str):  # type: ignore[no-untyped-def]
    df = _frame()
    write_table(tmp_path / "data" / "t", df, 2)
    full = {"BGIX_WAREHOUSE": str(tmp_path / "warehouse"), "BGIX_ALLOWED_ROOTS": str(tmp_path),
            "BGIX_BUILD_ENGINE": "local", "BGIX_BUILD_PREWARM": "false", **env}
    return df, bgix_process(full, tmp_path / "serve.log")


def _ready(http: httpx.Client, root: Path) -> None:
    assert http.put("/v1/tables/t", json={"location": str(root / "data" / "t")}).status_code == 200
    job = http.post("/v1/create_global_index", json={"table": "t", "index_column": "n"}).json()
    for _ in range(600):
        state = http.get(f"/v1/jobs/{job['job_id']}").json()["state"]
        if state not in ("queued", "running"):
            break
        time.sleep(0.1)
    assert state == "succeeded"


def test_refusing_a_1_mb_predicate_costs_little_cpu(tmp_path: Path) -> None:
    df, server = _serve(tmp_path, BGIX_QUERY_TIMEOUT_S="5")
    with server as (url, proc), httpx.Client(base_url=url, timeout=120) as http:
        _ready(http, tmp_path)
        point = http.post("/v1/tables/t/query", json={"where": "n = 7", "result": "count"})
        assert point.json()["count"] == int((df["n"] == 7).sum())
        before = _cpu_seconds(proc.pid)
        for shape, text in SHAPES.items():
            assert MB - 100 <= len(text) < 1_000_000
            r = http.post("/v1/tables/t/query", json={"where": text, "result": "count"})
            assert r.status_code == 400, (shape, r.status_code, r.text[:300])
            error = r.json()["error"]
            assert error["code"] == "predicate_limit" and "BGIX_MAX_PREDICATE_TOKENS" in error["message"], shape
        spent = _settled_cpu(proc.pid) - before   # anything still burning shows here
        assert spent < CPU_BOUND_S, f"{spent:.2f} s of CPU to refuse {len(SHAPES)} predicates of 1 MB"
        # the server still answers right
        r = http.post("/v1/tables/t/query", json={"where": "n = 3 OR n = 4", "result": "count"})
        assert r.json()["count"] == int(df["n"].isin([3, 4]).sum())


def test_a_parse_past_its_budget_stops(tmp_path: Path) -> None:
    # the general parser is let take the text (a budget far over its tokens), and the query budget is short
    df, server = _serve(tmp_path, BGIX_QUERY_TIMEOUT_S="0.5", BGIX_MAX_PREDICATE_TOKENS="10000000")
    with server as (url, proc), httpx.Client(base_url=url, timeout=120) as http:
        _ready(http, tmp_path)
        text = SHAPES["parenthesized terms"]   # 5 s of CPU and more to parse in full
        start = _cpu_seconds(proc.pid)
        r = http.post("/v1/tables/t/query", json={"where": text, "result": "count"})
        assert r.status_code == 503 and r.json()["error"]["code"] == "query_timeout", r.text[:300]
        spent = _settled_cpu(proc.pid) - start   # all it spends on it, however busy the machine
        assert spent < 2.0, f"{spent:.2f} s of CPU for a query of a 0.5 s budget: the parse went on after its 503"
        r = http.post("/v1/tables/t/query", json={"where": "n = 7", "result": "count"})
        assert r.json()["count"] == int((df["n"] == 7).sum())
