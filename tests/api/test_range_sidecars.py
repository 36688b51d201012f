"""Range sidecars through the service (issue 11): ranges are answered from them once they exist, with the
same rows as the bitmap files (checked against pandas on the source rows); merged range leaves show in
explain; a broken sidecar or `bgix.range-sidecar=false` falls back to the bitmap files.
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from service.api.app import create_app
from tests.api.helpers import TestClient, make_settings, wait_job, wait_until, write_table

N = 6000


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    rng = np.random.default_rng(11)
    amounts = pd.Series(rng.integers(-500, 500, N), dtype="Int64").mask(rng.random(N) < 0.07)
    names = pd.array([None if rng.random() < 0.05 else f"n{int(v):04d}é" for v in rng.integers(0, 900, N)],
                     dtype="string")
    return pd.DataFrame({"amount": amounts, "name": names})


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory, frame: pd.DataFrame) -> Any:
    root = tmp_path_factory.mktemp("sidecars")
    write_table(root / "data" / "t", frame, 3)
    with TestClient(create_app(make_settings(root))) as client:
        assert client.put("/v1/tables/t", json={"location": str(root / "data" / "t")}).status_code == 200
        for column, options in (("amount", "sorted-index.records-per-range=2500"), ("name", "")):
            r = client.post("/v1/create_global_index", json={"table": "t", "index_column": column,
                                                             "options": options})
            assert r.status_code == 202, r.text
            assert wait_job(client, r.json()["job_id"])["state"] == "succeeded"
        yield client, root


def _ask(client: TestClient, where: str) -> dict[str, Any]:
    r = client.post("/v1/tables/t/query", json={"where": where, "result": "row_ids", "limit": 100000,
                                                    "explain": True})
    assert r.status_code == 200, r.text
    return r.json()


def _rows(data: dict[str, Any]) -> set[int]:
    return set(data["row_ids"])


def _until_sidecars(client: TestClient, where: str) -> dict[str, Any]:
    seen: dict[str, Any] = {}

    def from_sidecars() -> dict[str, Any] | None:
        seen.update(_ask(client, where))
        explain = seen["explain"]
        return dict(seen) if explain["sidecars_used"] > 0 and not explain["budget_decisions"] else None  # every range

    return wait_until(from_sidecars, 60, lambda: f"a sidecar used for {where!r}: {seen.get('explain')}", interval=0.1)


CASES = [
    ("amount >= -20 AND amount < 130", lambda f: f.amount.ge(-20) & f.amount.lt(130)),
    ("amount > 250 OR amount <= -400", lambda f: f.amount.gt(250) | f.amount.le(-400)),
    ("amount BETWEEN 0 AND 10", lambda f: f.amount.between(0, 10)),
    ("NOT (amount < 0)", lambda f: f.amount.ge(0)),
    ("amount NOT BETWEEN -100 AND 100", lambda f: f.amount.lt(-100) | f.amount.gt(100)),
    ("name >= 'n0100' AND name < 'n0200é'", lambda f: f.name.ge("n0100") & f.name.lt("n0200é")),
    ("name > 'n0850'", lambda f: f.name.gt("n0850")),
]


@pytest.mark.parametrize(("where", "expected"), CASES, ids=[c[0] for c in CASES])
def test_ranges_from_sidecars_equal_pandas(service: Any, frame: pd.DataFrame, where: str, expected: Any) -> None:
    client, _ = service
    want = set(frame.index[expected(frame).fillna(False).to_numpy(dtype=bool)].tolist())
    first = _ask(client, where)             # maybe before any sidecar exists: the bitmap files answer
    assert _rows(first) == want
    data = _until_sidecars(client, where)
    assert _rows(data) == want
    assert data["explain"]["fallback_scan"] is False
    assert data["explain"]["budget_decisions"] == []


def test_explain_shows_the_merged_range_leaf(service: Any) -> None:
    client, _ = service
    data = _until_sidecars(client, "amount >= -20 AND amount < 130")
    (leaf,) = data["explain"]["leaves"]
    assert leaf["op"] == "range_set" and "[-20, 130)" in leaf["leaf"]
    assert all("sidecars" in r for r in leaf["ranges"] if r["candidates"])


def test_derived_sidecars_live_in_the_warehouse(service: Any) -> None:
    client, root = service
    _until_sidecars(client, "amount > 0")
    found = list((root / "warehouse").rglob("*.range-bitmap"))
    assert found, "no sidecar file in the warehouse"
    assert not list((root / "data").rglob("*.range-bitmap")), "a sidecar was written among the data files"


def test_broken_sidecars_fall_back_to_the_bitmap_files(tmp_path: Path, frame: pd.DataFrame) -> None:
    write_table(tmp_path / "data" / "t", frame, 2)
    settings = make_settings(tmp_path)
    with TestClient(create_app(settings)) as client:
        client.put("/v1/tables/t", json={"location": str(tmp_path / "data" / "t")})
        r = client.post("/v1/create_global_index", json={"table": "t", "index_column": "amount"})
        assert wait_job(client, r.json()["job_id"])["state"] == "succeeded"
        _until_sidecars(client, "amount > 10")
    for path in (tmp_path / "warehouse").rglob("*.range-bitmap"):
        path.write_bytes(path.read_bytes()[:40])   # truncated
    want = set(frame.index[frame.amount.gt(10).fillna(False).to_numpy(dtype=bool)].tolist())
    with TestClient(create_app(settings)) as client:  # a fresh process: nothing cached
        data = _ask(client, "amount > 10")
        assert _rows(data) == want
        assert data["explain"]["sidecars_used"] == 0


def test_option_off_means_no_sidecar(tmp_path: Path, frame: pd.DataFrame) -> None:
    write_table(tmp_path / "data" / "t", frame, 2)
    with TestClient(create_app(make_settings(tmp_path))) as client:
        client.put("/v1/tables/t", json={"location": str(tmp_path / "data" / "t")})
        r = client.post("/v1/create_global_index", json={"table": "t", "index_column": "amount",
                                                         "options": "bgix.range-sidecar=false"})
        assert wait_job(client, r.json()["job_id"])["state"] == "succeeded"
        want = set(frame.index[frame.amount.lt(-3).fillna(False).to_numpy(dtype=bool)].tolist())
        for _ in range(5):
            data = _ask(client, "amount < -3")
            assert _rows(data) == want and data["explain"]["sidecars_used"] == 0
            time.sleep(0.05)
        assert not list((tmp_path / "warehouse").rglob("*.range-bitmap"))


@pytest.mark.parametrize("room", ["planes fit", "roaring only"])
def test_sidecar_cache_keeps_planes_only_within_its_budget(tmp_path: Path, room: str) -> None:
    """A sidecar the cache cannot keep with its planes is kept without them (else each query would reopen
    it and rebuild them), and is charged what it may grow to."""
    from index_format.range_bitmap import RangeBitmapReader, write_from_codes
    from index_format.storage import Storage
    from index_format.types import parse_type
    from service.query.range_sidecars import Sidecars

    kt = parse_type("bigint")
    codes = np.random.default_rng(5).integers(0, 500, 200_000)
    data = write_from_codes(kt, np.arange(500, dtype=np.int64) * 7, codes, len(codes))
    probe = RangeBitmapReader(data, kt)
    budget = probe.memory_bound(planes=True) if room == "planes fit" else probe.memory_bound(planes=False)
    sidecars = Sidecars(Storage(str(tmp_path / "wh"), [str(tmp_path)]), budget)
    reader = RangeBitmapReader(data, kt)
    sidecars._keep(("f", 1), reader)
    assert sidecars.readers.get(("f", 1)) is reader
    assert reader.planes == (room == "planes fit")
    assert (reader._slices().planes() is not None) == (room == "planes fit")
    assert sidecars.readers.bytes == reader.memory_bound(planes=reader.planes) <= budget
    assert reader.count_range(700, 2100) == int(((codes >= 100) & (codes <= 300)).sum())


def test_point_counts_never_open_a_sidecar_and_use_key_counts_once_open(
        tmp_path: Path, frame: pd.DataFrame, monkeypatch: pytest.MonkeyPatch) -> None:
    """A count of `=` / `IN` reads a sidecar's key counts only when a range already opened it: a dashboard's
    point look-ups never start opening or deriving sidecars. Counts equal pandas on either path."""
    from index_format.range_bitmap import bsi as bsi_mod

    monkeypatch.setattr(bsi_mod, "PLANES_MIN_FILL", 0.0)   # planes (and so key counts) even for 6,000 rows
    write_table(tmp_path / "data" / "t", frame, 1)
    with TestClient(create_app(make_settings(tmp_path))) as client:
        assert client.put("/v1/tables/t", json={"location": str(tmp_path / "data" / "t")}).status_code == 200
        job = client.post("/v1/create_global_index", json={"table": "t", "index_column": "amount"}).json()
        assert wait_job(client, job["job_id"])["state"] == "succeeded"
        qs = client.app.state.services.query_service

        def count(where: str) -> int:
            r = client.post("/v1/tables/t/query", json={"where": where, "result": "count"})
            assert r.status_code == 200, r.text
            return int(r.json()["count"])

        want = int(frame.amount.isin([3, 7, -40]).sum())
        assert count("amount IN (3, 7, -40)") == want
        assert len(qs.sidecars.readers) == 0          # the point count opened no sidecar
        assert count("amount > 0") == int(frame.amount.gt(0).sum())   # a range opens it
        assert len(qs.sidecars.readers) == 1
        bsi = next(iter(qs.sidecars.readers._entries.values()))[0]._slices()
        wait_until(lambda: bsi.code_counts() is not None, 30, "the sidecar's code counts", interval=0.02)
        assert count("amount IN (3, 7, -40)") == want
        assert count("amount = 7") == int(frame.amount.eq(7).sum())
        assert count("amount <> 7") == int(frame.amount.ne(7).sum())
        # a new view of the table (snapshot re-read: new file refs) still finds the open sidecar's key counts
        from index_format.range_bitmap.range_bitmap_reader import RangeBitmapReader
        answers: list[int | None] = []
        original = RangeBitmapReader.count_keys

        def spy(self: RangeBitmapReader, values: object) -> int | None:
            answers.append(original(self, values))  # type: ignore[arg-type]
            return answers[-1]

        monkeypatch.setattr(RangeBitmapReader, "count_keys", spy)
        qs.invalidate("t")
        assert count("amount = 3") == int(frame.amount.eq(3).sum())
        assert answers and answers[-1] == int(frame.amount.eq(3).sum())
