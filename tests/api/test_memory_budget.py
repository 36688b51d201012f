"""BGIX_CACHE_BYTES caps a worker's memory (issue 34): against a real `bgix serve` (one worker) with small cache
budgets, four clients at once send hundreds of distinct high-cardinality queries (IN lists of 1,000 ids of an
all-distinct column, points, narrow ranges, IN lists of a low-cardinality column) and ~900 KB predicates it
refuses; every query gets its exact count, every big one its 400, and the worker's resident memory
grows over its warm start by at most BGIX_CACHE_BYTES + BGIX_PARSE_CACHE_BYTES + a fixed overhead and then stays
flat, and the `bgix_cache_bytes` gauge stays within BGIX_CACHE_BYTES.

(The caches used to charge far less than their entries hold: a decoded one-row bitmap at its stored length plus
a little, ~530 bytes short of what it keeps alive, and a decoded dictionary block one count of a fixed size
whatever its keys and arrays took; 600 such queries at 1,000,000 rows took a worker with a 64 MiB budget from
145 MB to 293 MB while the gauge said 17 MB. With the caches charged right, glibc's defaults still let the heap
fragment under big bodies and concurrent request threads: 174 MiB of growth here, against 104 with the serving
process's allocator settings, service/server/gc_tuning.py.)
"""
from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import numpy as np
import pandas as pd
import pytest

from tests.api.helpers import build_indexes, write_table
from tests.api.server import bgix_process, rss_bytes

MiB = 2**20
ROWS = 300_000
STATES = ("ok", "error", "timeout", "warn")
# BGIX_CACHE_BYTES. Not smaller: what the old accounting left uncharged grows with the budget (the bitmap quarter's
# one-row bitmaps at ~1/6 of their cost), and at 16 MiB it stayed within OVERHEAD (54 MiB of growth over the warm
# start); at 80 MiB the old code grew 153 MiB, past the 132 MiB bound, and the fixed one 85 MiB.
CACHE = 80 * MiB
PARSE_CACHE = 4 * MiB     # BGIX_PARSE_CACHE_BYTES
OVERHEAD = 48 * MiB       # the fixed overhead over the two budgets (docs/configuration.md)
FLAT = 8 * MiB            # most growth over the second half of the queries, once the caches are full
CLIENTS = 4               # clients at once
QUERIES = 320             # ~7 in 10 touch 1,000 ids each: ~220,000 one-row bitmaps looked up
IN_SIZE = 1000


def _gauge(http: httpx.Client) -> float:
    text = http.get("/metrics").text
    return float(next(line for line in text.splitlines() if line.startswith("bgix_cache_bytes ")).split()[1])


def _ids(values: np.ndarray) -> str:
    return ",".join(map(str, values.tolist()))


def _query(rng: np.random.Generator, k: int, s_by_uid: np.ndarray) -> tuple[str, int]:
    """Query `k` of the mix, drawn from `rng`, and its count from the source rows (`s_by_uid[uid]`: the `s` of
    the row with that uid; uid is a permutation of 0..ROWS-1)."""
    kind = k % 10
    if kind <= 5:    # the shape of the report: s = 'error' AND 1,000 distinct ids
        uids = rng.choice(ROWS, IN_SIZE, replace=False)
        return f"s = 'error' AND uid IN ({_ids(uids)})", int(np.count_nonzero(s_by_uid[uids] == "error"))
    if kind == 6:    # a point
        uid = int(rng.integers(0, ROWS))
        return f"uid = {uid}", 1
    if kind == 7:    # a narrow range (a few hundred one-row bitmaps) and two states
        low = int(rng.integers(0, ROWS - 2000))
        high = low + int(rng.integers(100, 2000))
        return (f"uid BETWEEN {low} AND {high} AND s IN ('ok', 'warn')",
                int(np.count_nonzero(np.isin(s_by_uid[low:high + 1], ["ok", "warn"]))))
    if kind == 8:    # 1,000 distinct ids under another IN list
        uids = rng.choice(ROWS, IN_SIZE, replace=False)
        return (f"s IN ('timeout', 'warn') AND uid IN ({_ids(uids)})",
                int(np.count_nonzero(np.isin(s_by_uid[uids], ["timeout", "warn"]))))
    states = [s for s in STATES if rng.random() < 0.5] or ["error"]   # the low-cardinality column alone
    return (f"s IN ({', '.join(repr(s) for s in states)})",
            int(np.count_nonzero(np.isin(s_by_uid, states))))


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, int, np.ndarray]]:
    """`bgix serve` (one worker) with bitmap indexes on `uid` (all distinct) and `s` (four values), built through
    the API; yields (url, worker pid, `s` by uid)."""
    root = tmp_path_factory.mktemp("budget")
    rng = np.random.default_rng(34)
    df = pd.DataFrame({"uid": rng.permutation(ROWS).astype(np.int64),
                       "s": np.array(STATES, dtype=object)[rng.integers(0, len(STATES), ROWS)]})
    write_table(root / "data" / "t", df, 4)
    s_by_uid = np.empty(ROWS, dtype=object)
    s_by_uid[df["uid"].to_numpy()] = df["s"].to_numpy()
    env = {"BGIX_WAREHOUSE": str(root / "warehouse"), "BGIX_ALLOWED_ROOTS": str(root / "data"),
           "BGIX_BUILD_ENGINE": "local", "BGIX_BUILD_PREWARM": "false",
           "BGIX_CACHE_BYTES": str(CACHE), "BGIX_PARSE_CACHE_BYTES": str(PARSE_CACHE)}
    with bgix_process(env, root / "serve.log") as (url, proc):
        with httpx.Client(base_url=url, timeout=120.0) as http:
            build_indexes(http, "t", str(root / "data" / "t"), ("uid", "s"))
        yield url, proc.pid, s_by_uid


@pytest.mark.slow
def test_cache_budget_caps_worker_memory(served: tuple[str, int, np.ndarray]) -> None:
    url, pid, s_by_uid = served

    def ask(http: httpx.Client, where: str, want: int) -> None:
        r = http.post("/v1/tables/t/query", json={"where": where, "result": "count"})
        assert r.status_code == 200, r.text[:300]
        assert r.json()["count"] == want, f"{where[:120]}…: {r.json()['count']} != {want}"

    with httpx.Client(base_url=url, timeout=120.0) as http:
        # Warm start: each column's reader open and each code path run once, on a few ids only (so that the
        # baseline holds code, pools and readers, not a cache's worth of blocks and bitmaps).
        ask(http, "s = 'error'", int(np.count_nonzero(s_by_uid == "error")))
        ask(http, "uid = 7", 1)
        ask(http, "s = 'error' AND uid IN (1, 2, 3)", int(np.count_nonzero(s_by_uid[[1, 2, 3]] == "error")))
        ask(http, "uid BETWEEN 10 AND 20 AND s IN ('ok', 'warn')",
            int(np.count_nonzero(np.isin(s_by_uid[10:21], ["ok", "warn"]))))
        base = rss_bytes(pid)
    samples: list[int] = []

    def client(c: int) -> None:
        """CLIENTS clients at once (the worker's request threads allocate side by side), each its share of the
        mix, every fourth query followed by a ~900 KB predicate refused for a literal over
        BGIX_MAX_LITERAL_BYTES (big bodies come and go between the cached objects)."""
        rng = np.random.default_rng(35 + c)
        with httpx.Client(base_url=url, timeout=120.0) as http:
            for k in range(c, QUERIES, CLIENTS):
                ask(http, *_query(rng, k, s_by_uid))
                if k % 4 == 3:
                    r = http.post("/v1/tables/t/query", json={"where": f"s = '{k:06d}" + "x" * 900_000 + "'"})
                    assert r.status_code == 400 and r.json()["error"]["code"] == "predicate_limit", r.text[:300]
                samples.append(rss_bytes(pid))

    gauges = []
    with ThreadPoolExecutor(CLIENTS) as pool, httpx.Client(base_url=url, timeout=120.0) as http:
        running = [pool.submit(client, c) for c in range(CLIENTS)]
        while not all(f.done() for f in running):
            gauges.append(_gauge(http))
            time.sleep(0.5)
        for f in running:
            f.result()
        gauges.append(_gauge(http))
    half = QUERIES // 2
    growth = max(samples) - base
    late = samples[-1] - samples[half - 1]
    trace = ", ".join(f"{(samples[i] - base) / MiB:.0f}" for i in range(24, len(samples), 25))
    detail = (f"warm RSS {base / MiB:.0f} MiB, peak {max(samples) / MiB:.0f} MiB, final {samples[-1] / MiB:.0f} MiB; "
              f"growth every 25 queries: {trace} MiB; bgix_cache_bytes: "
              f"{', '.join(f'{g / MiB:.1f}' for g in gauges)} MiB")
    assert max(gauges) <= CACHE, f"bgix_cache_bytes over BGIX_CACHE_BYTES ({CACHE / MiB:.0f} MiB): {detail}"
    assert growth <= CACHE + PARSE_CACHE + OVERHEAD, (
        f"RSS grew {growth / MiB:.1f} MiB over the warm start, more than BGIX_CACHE_BYTES {CACHE / MiB:.0f} + "
        f"BGIX_PARSE_CACHE_BYTES {PARSE_CACHE / MiB:.0f} + {OVERHEAD / MiB:.0f} MiB: {detail}")
    assert late <= FLAT, f"RSS grew {late / MiB:.1f} MiB over the last {QUERIES - half} queries: {detail}"
