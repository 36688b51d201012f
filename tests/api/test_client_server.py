"""The Python client against a real `bgix serve` process on 127.0.0.1: the full loop register → build →
poll → query (checked against pandas), error envelopes mapped back to library exceptions, the client's
import hygiene, and a bounded loopback load test."""
from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from pyroaring import BitMap64

from index_format.errors import BindError, ParseError, PathNotAllowedError, UnknownColumnError
from service.catalog.catalog_errors import TableNotFoundError
from service.client import Client, UnauthorizedError
from tests.api.predicates import make_frame
from tests.api.server import bgix_server
from tests.api.helpers import write_table

TOKEN = "tok-123"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = tmp_path_factory.mktemp("server")
    df = make_frame(np.random.default_rng(99), 1500)
    write_table(root / "data" / "events", df, 3)
    env = {"BGIX_WAREHOUSE": str(root / "warehouse"), "BGIX_ALLOWED_ROOTS": str(root / "data"),
           "BGIX_BUILD_ENGINE": "local", "BGIX_TOKEN": TOKEN, "BGIX_CACHE_BYTES": str(8 << 20)}
    with bgix_server(env, root / "serve.log") as url:
        with Client(url, token=TOKEN) as client:
            client.register_table("events", str(root / "data" / "events"))
            jobs = [client.create_global_index("events", col, options={"bitmap-index.dictionary-block-size": "512 b"})
                    for col in ("status", "country", "age")]
            for job in jobs:
                assert client.wait(job, timeout=120).state == "succeeded"
        yield url, df, root


def test_client_full_loop_matches_pandas(server) -> None:
    url, df, _ = server
    with Client(url, token=TOKEN) as client:
        got = client.query("events", where="status IN ('vip','trial') AND NOT country = 'US'")
        assert isinstance(got.rows, BitMap64) and got.is_exact
        mask = df.status.isin(["vip", "trial"]).fillna(False) & df.country.notna() & (df.country != "US")
        assert set(got) == set(df.index[mask.to_numpy(dtype=bool)].tolist())
        assert client.count("events", where="age IS NULL") == int(df.age.isna().sum())
        pred = {"op": "or", "args": [{"op": "lt", "column": "age", "value": 10},
                                     {"op": "starts_with", "column": "status", "value": "v"}]}
        want = (df.age.notna() & (df.age < 10)) | (df.status.notna() & df.status.str.startswith("v").fillna(False))
        assert client.row_ids("events", predicate=pred, page_size=50) == df.index[want.to_numpy(dtype=bool)].tolist()
        values = client.values("events", "country", limit=100)
        assert {v.value: v.rows for v in values.values} == {k: int(n) for k, n in df.country.value_counts().items()}
        files = client.files("events")
        assert sum(f.row_count for f in files) == len(df) and files[0].first_row_id == 0
        assert {i.column for i in client.indexes("events")} == {"status", "country", "age"}


def test_client_maps_errors_to_library_exceptions(server) -> None:
    url, _, root = server
    with Client(url, token=TOKEN) as client:
        with pytest.raises(UnknownColumnError) as info:
            client.count("events", where="nope = 1")
        assert info.value.known == ["age", "country", "score", "status"]   # the table's columns, indexed or not
        with pytest.raises(BindError):
            client.count("events", where="age = 'old'")
        with pytest.raises(ParseError):
            client.count("events", where="age = = 1")
        with pytest.raises(TableNotFoundError):
            client.count("nothing", where="a = 1")
        with pytest.raises(PathNotAllowedError):
            client.register_table("evil", "/etc")
    with Client(url) as anonymous:
        with pytest.raises(UnauthorizedError):
            anonymous.register_table("x", str(root / "data" / "events"))
        assert anonymous.count("events", where="age > 50") >= 0  # reads need no token by default


def test_client_import_loads_no_fastapi_or_pyspark() -> None:
    code = ("import sys, service.client; bad = [m for m in ('fastapi', 'pyspark', 'starlette', 'uvicorn') "
            "if m in sys.modules]; print(bad); sys.exit(1 if bad else 0)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr


def test_bounded_loopback_load(server) -> None:
    """4 threads × up to 250 point/IN queries each, stopped after 30 s: every answer 200 and exact."""
    url, df, _ = server
    statuses = sorted(df.status.dropna().unique().tolist())
    expected = {s: int((df.status == s).sum()) for s in statuses}
    errors: list[str] = []
    done = [0]
    lock = threading.Lock()
    deadline = time.monotonic() + 30

    def worker(seed: int) -> None:
        rng = np.random.default_rng(seed)
        with Client(url) as client:
            for _ in range(250):
                if time.monotonic() > deadline:
                    return
                s = statuses[int(rng.integers(len(statuses)))]
                try:
                    n = client.count("events", where=f"status = '{s}'")
                    if n != expected[s]:
                        errors.append(f"{s}: {n} != {expected[s]}")
                except Exception as exc:  # collected and asserted below
                    errors.append(repr(exc))
                with lock:
                    done[0] += 1

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    start = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    elapsed = time.monotonic() - start
    assert not any(t.is_alive() for t in threads)
    assert errors == []
    assert done[0] >= 200, f"only {done[0]} requests in {elapsed:.1f} s"
