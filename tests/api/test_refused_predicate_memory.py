"""Refused and malformed ~900 KB predicates leave nothing behind: against a real `bgix serve` with two worker
processes, hundreds of distinct ones each get their 400, and no worker's resident memory grows with them.

(The error of a query used to sit in a reference cycle with the frames it passed through, which the serving
GC settings collect rarely, so every refused text, its request body and its tokens stayed alive.)
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import numpy as np
import pandas as pd
import pytest

from tests.api.helpers import build_indexes, write_table
from tests.api.server import bgix_process, rss_bytes

WORKERS = 2
REFUSED = 320
MALFORMED = 320
BIG = 60_000   # one literal within BGIX_MAX_LITERAL_BYTES (65,536); 15 of them make a ~900 KB text


def _workers(parent: int) -> list[int]:
    """The server's child processes (its workers; multiprocessing's small resource tracker among them)."""
    return [int(p) for p in Path(f"/proc/{parent}/task/{parent}/children").read_text().split()]


def _refused(k: int) -> str:
    """A distinct ~900 KB text whose one literal is over BGIX_MAX_LITERAL_BYTES: 400 predicate_limit."""
    return f"s = '{k:06d}" + "x" * 900_000 + "'"


def _chain(k: int, term: Callable[[int, str], str]) -> str:
    return " OR ".join(term(i, f"{k:06d}{i}" + "y" * BIG) for i in range(15))


# Distinct ~900 KB texts, each wrong in its own way: (text of request k, expected error code).
_MALFORMED: list[tuple[Callable[[int], str], str]] = [
    (lambda k: "s = = " + _chain(k, lambda i, v: f"s = '{v}'"), "invalid_predicate"),         # syntax
    (lambda k: _chain(k, lambda i, v: f"zz{i} = '{v}'"), "unknown_column"),                 # unknown column
    (lambda k: _chain(k, lambda i, v: f"n = '{v}'"), "invalid_literal"),                    # type mismatch
    (lambda k: f"s = '{k:06d}" + "z" * 900_000, "invalid_predicate"),                       # unterminated
    (lambda k: f"n = 1{k}e OR " + _chain(k, lambda i, v: f"s = '{v}'"), "invalid_predicate"),  # bad number
]


def _junk(k: int) -> str:
    """900 KB of printable junk (tokenized in full before it failed, the costliest kind, so sent rarely; now
    refused for its tokens over BGIX_MAX_PREDICATE_TOKENS before tokenizing)."""
    return f"{k:06d} " + "".join(chr(33 + (i * 7 + k) % 90) for i in range(900_000))


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, int]]:
    root = tmp_path_factory.mktemp("refused")
    rng = np.random.default_rng(24)
    df = pd.DataFrame({"s": np.array(["a", "b", "c"], dtype=object)[rng.integers(0, 3, 3000)],
                       "n": pd.array(rng.integers(-100, 100, 3000), dtype="Int64")})
    write_table(root / "data" / "t", df, 3)
    env = {"BGIX_WAREHOUSE": str(root / "warehouse"), "BGIX_ALLOWED_ROOTS": str(root), "BGIX_BUILD_ENGINE": "local",
           "BGIX_BUILD_PREWARM": "false"}
    with bgix_process(env, root / "serve.log", workers=WORKERS) as (url, proc):
        with httpx.Client(base_url=url, timeout=60.0) as http:
            build_indexes(http, "t", str(root / "data" / "t"), ("s", "n"), timeout=60.0)
        yield url, proc.pid


@pytest.mark.slow
def test_refused_and_malformed_predicates_do_not_grow_any_worker(served: tuple[str, int]) -> None:
    url, parent = served
    pids = _workers(parent)
    assert len(pids) >= WORKERS, pids
    # Several connections: SO_REUSEPORT spreads connections (not requests) over the workers.
    clients = [httpx.Client(base_url=url, timeout=60.0) for _ in range(4)]

    def send(i: int, where: str, code: str) -> None:
        r = clients[i % len(clients)].post("/v1/tables/t/query", json={"where": where})
        assert r.status_code == 400 and r.json()["error"]["code"] == code, r.text[:300]

    try:
        def round_(first: int, count: int) -> None:
            for k in range(first, first + count):
                send(k, _refused(k), "predicate_limit")
            for k in range(first, first + count):
                make, code = _MALFORMED[k % len(_MALFORMED)]
                send(k, make(k), code)
            for k in range(first, first + count // 40):
                send(k, _junk(k), "predicate_limit")

        round_(0, 40)   # warm-up: imports, thread pools, allocator arenas
        before = {pid: rss_bytes(pid) for pid in pids}
        round_(1000, max(REFUSED, MALFORMED))
        grown = {pid: rss_bytes(pid) - before[pid] for pid in pids}
    finally:
        for c in clients:
            c.close()
    worst = max(grown.values())
    assert worst < 30 * 2**20, f"RSS grew by {[f'{g / 2**20:.1f}' for g in grown.values()]} MiB per process " \
                               f"over {REFUSED} refused and {MALFORMED} malformed ~900 KB predicates"
