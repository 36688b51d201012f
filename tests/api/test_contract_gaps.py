"""Acceptance-audit regressions (issues 3 and 4): token on every mutation (row-id map rescans too),
location rules, early column checks, csv tables through the API, retired row ids never answered, and
the cache-bytes gauge. Expected values come from pandas / pyarrow on the source files."""
from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.parquet as pq
import pytest

from service.api.app import create_app
from tests.api.helpers import TestClient, make_settings, wait_job, write_table
from tests.api.predicates import make_frame

AUTH = {"Authorization": "Bearer s3cret"}


def _ids(mask: pd.Series, first_row_id: int = 0) -> set[int]:
    return {first_row_id + int(i) for i in np.flatnonzero(mask.to_numpy(dtype=bool, na_value=False))}


def test_row_id_map_rescan_needs_the_write_token(tmp_path: Path) -> None:
    write_table(tmp_path / "data" / "t", make_frame(np.random.default_rng(1), 40), 2)
    with TestClient(create_app(make_settings(tmp_path, token="s3cret"))) as client:
        r = client.put("/v1/tables/t", json={"location": str(tmp_path / "data" / "t")}, headers=AUTH)
        assert r.status_code == 200, r.text
        assert client.get("/v1/tables/t/files").status_code == 200   # a plain read stays open
        r = client.get("/v1/tables/t/files", params={"refresh": "true"})
        assert r.status_code == 401 and r.json()["error"]["code"] == "unauthorized"
        r = client.get("/v1/tables/t/files", params={"refresh": "true"}, headers=AUTH)
        assert r.status_code == 200 and r.json()["total_rows"] == 40


def test_location_must_be_absolute_and_outside_the_catalog_directories(tmp_path: Path) -> None:
    (tmp_path / "data" / "t").mkdir(parents=True)
    settings = make_settings(tmp_path)
    with TestClient(create_app(settings)) as client:
        r = client.put("/v1/tables/rel", json={"location": "data/t"})
        assert r.status_code == 403 and r.json()["error"]["code"] == "path_not_allowed", r.text
        # DELETE /v1/tables/{name} removes <warehouse>/tables/<name>: source data must never live there.
        inside = Path(settings.warehouse) / "tables" / "x" / "data"
        inside.mkdir(parents=True)
        for loc in (inside, Path(settings.warehouse) / "jobs"):
            r = client.put("/v1/tables/x", json={"location": str(loc)})
            assert r.status_code == 403 and r.json()["error"]["code"] == "path_not_allowed", r.text
        assert client.get("/v1/tables/rel").status_code == 404
        assert client.get("/v1/tables/x").status_code == 404


def test_create_global_index_checks_the_column_before_starting_a_job(tmp_path: Path) -> None:
    df = make_frame(np.random.default_rng(2), 30)
    write_table(tmp_path / "data" / "t", df, 1)
    (tmp_path / "data" / "p" / "dt=1").mkdir(parents=True)
    pq.write_table(pa.table({"v": ["a", "b"]}), tmp_path / "data" / "p" / "dt=1" / "f.parquet")
    with TestClient(create_app(make_settings(tmp_path))) as client:
        assert client.put("/v1/tables/t", json={"location": str(tmp_path / "data" / "t")}).status_code == 200
        assert client.put("/v1/tables/p", json={"location": str(tmp_path / "data" / "p"),
                                                "partition_columns": ["dt"]}).status_code == 200
        r = client.post("/v1/create_global_index", json={"table": "t", "index_column": "nosuch"})
        assert r.status_code == 400, r.text
        err = r.json()["error"]
        assert err["code"] == "unknown_column" and err["details"]["column"] == "nosuch"
        assert err["details"]["known"] == sorted(df.columns)
        for bad in ("a/b", "../x", "status,status"):   # several columns are fine, one twice is not (issue 33)
            r = client.post("/v1/create_global_index", json={"table": "t", "index_column": bad})
            assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_option", r.text
        r = client.post("/v1/create_global_index", json={"table": "p", "index_column": "dt"})
        assert r.status_code == 400 and "partition column" in r.json()["error"]["message"], r.text
        # options and partitions the job could only fail on are refused up front too
        for body in ({"table": "p", "index_column": "v", "partitions": "hh=1"},
                     {"table": "t", "index_column": "status", "partitions": "dt=1"},
                     {"table": "t", "index_column": "status", "options": "bitmap-index.compression=lzo"}):
            r = client.post("/v1/create_global_index", json=body)
            assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_option", r.text
        assert client.get("/v1/jobs").json()["jobs"] == []  # nothing was spawned for bad requests


def test_csv_table_registered_through_the_api_answers_like_pandas(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    frames = [pd.DataFrame({"k": rng.choice(["x", "y", "z"], 50), "n": rng.integers(0, 9, 50)})
              for _ in range(2)]
    data = tmp_path / "data" / "c"
    data.mkdir(parents=True)
    for i, f in enumerate(frames):
        pcsv.write_csv(pa.Table.from_pandas(f, preserve_index=False), data / f"part-{i}.csv")
    df = pd.concat(frames, ignore_index=True)  # path order = row-id order
    with TestClient(create_app(make_settings(tmp_path))) as client:
        r = client.put("/v1/tables/c", json={"location": str(data), "format": "csv"})
        assert r.status_code == 200 and r.json()["format"] == "csv", r.text
        for col in ("k", "n"):
            job = client.post("/v1/create_global_index", json={"table": "c", "index_column": col}).json()
            assert wait_job(client, job["job_id"])["state"] == "succeeded"
        for where, mask in (("k = 'y'", df.k == "y"), ("NOT k = 'x' AND n >= 4", (df.k != "x") & (df.n >= 4))):
            body = client.post("/v1/tables/c/query", json={"where": where, "limit": 1000}).json()
            assert set(body["row_ids"]) == _ids(mask), where


def test_rows_of_a_rewritten_file_are_never_answered(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    df = make_frame(rng, 200)
    data = tmp_path / "data" / "t"
    write_table(data, df, 2)  # part-000: rows 0..99, part-001: rows 100..199
    with TestClient(create_app(make_settings(tmp_path))) as client:
        assert client.put("/v1/tables/t", json={"location": str(data)}).status_code == 200
        job = client.post("/v1/create_global_index", json={"table": "t", "index_column": "status"}).json()
        assert wait_job(client, job["job_id"])["state"] == "succeeded"
        time.sleep(0.01)  # the rewrite must get a new mtime
        new = make_frame(rng, 60)
        pq.write_table(pa.Table.from_pandas(new, preserve_index=False), data / "part-000.parquet")
        files = client.get("/v1/tables/t/files", params={"refresh": "true"}).json()["files"]
        by_path = {Path(f["path"]).name: f for f in files}
        assert by_path["part-001.parquet"]["first_row_id"] == 100
        new_first = by_path["part-000.parquet"]["first_row_id"]
        assert new_first == 200  # the rewritten file got fresh ids after the maximum
        old = df.iloc[100:].reset_index(drop=True)
        for where, mask, new_mask in (
                ("status = 'vip'", old.status == "vip", new.status == "vip"),
                ("NOT status = 'vip'", old.status.notna() & (old.status != "vip"),
                 new.status.notna() & (new.status != "vip")),
                ("status IS NULL", old.status.isna(), new.status.isna())):
            body = client.post("/v1/tables/t/query", json={"where": where, "limit": 1000, "scan": "never"}).json()
            # Ids 0..99 named the old rows of part-000: they name no row now and must not come back.
            assert set(body["row_ids"]) == _ids(mask, 100), where
            assert body["coverage"]["uncovered_ranges"] == [[new_first, new_first + 59]]
            # by default the rewritten file's rows are read and answered too: exact over every live row
            body = client.post("/v1/tables/t/query", json={"where": where, "limit": 1000}).json()
            assert set(body["row_ids"]) == _ids(mask, 100) | _ids(new_mask, new_first), where
            assert body["exact"] is True and body["coverage"] == {"complete": True, "uncovered_ranges": []}
        (index,) = client.get("/v1/tables/t/indexes").json()["indexes"]
        assert index["stale"] is True
        assert index["uncovered_ranges"] == [[new_first, new_first + 59]]
        assert index["null_rows"] == int(old.status.isna().sum())
        assert index["distinct_values"] == old.status.nunique()
        # value look-ups count only rows that still exist (the indexed part-001 rows)
        values = client.get("/v1/tables/t/indexes/status/values", params={"limit": 100}).json()["values"]
        assert {v["value"]: v["rows"] for v in values} == old.status.value_counts().to_dict()
        assert [v["rows"] for v in values] == sorted(old.status.value_counts().tolist(), reverse=True)


def test_cache_bytes_gauge_reports_every_cache_under_the_budget(tmp_path: Path) -> None:
    write_table(tmp_path / "data" / "t", make_frame(np.random.default_rng(3), 50), 1)
    with TestClient(create_app(make_settings(tmp_path))) as client:
        assert client.put("/v1/tables/t", json={"location": str(tmp_path / "data" / "t")}).status_code == 200
        job = client.post("/v1/create_global_index", json={"table": "t", "index_column": "age"}).json()
        assert wait_job(client, job["job_id"])["state"] == "succeeded"
        # A point look-up opens a reader and decodes a bitmap; a range is answered by the range sidecar.
        assert client.post("/v1/tables/t/query", json={"where": "age = 3"}).status_code == 200
        assert client.post("/v1/tables/t/query", json={"where": "age > 3"}).status_code == 200
        qs = client.app.state.services.query_service
        assert qs.readers.bytes > 0 and qs.blocks.bytes > 0
        held = (qs.readers.bytes + qs.blocks.bytes + qs.bitmaps.bytes + qs.sidecars.readers.bytes
                + qs._file_ids.bytes)
        line = next(x for x in client.get("/metrics").text.splitlines() if x.startswith("bgix_cache_bytes "))
        assert float(line.split()[1]) == pytest.approx(held)


def test_files_result_of_a_row_id_column_table_maps_ids_by_value(tmp_path: Path) -> None:
    rng = np.random.default_rng(11)
    rid = rng.permutation(np.arange(0, 3_000, 5, dtype="int64"))[:400]  # unsorted, with gaps
    df = pd.DataFrame({"rid": rid, "s": rng.choice(["a", "b", "c"], size=len(rid))})
    data = tmp_path / "data" / "r"
    data.mkdir(parents=True)
    parts = [df.iloc[:250].reset_index(drop=True), df.iloc[250:].reset_index(drop=True)]
    for i, part in enumerate(parts):
        pq.write_table(pa.Table.from_pandas(part, preserve_index=False), data / f"part-{i}.parquet")
    with TestClient(create_app(make_settings(tmp_path))) as client:
        assert client.put("/v1/tables/r", json={"location": str(data), "row_id_column": "rid"}).status_code == 200
        job = client.post("/v1/create_global_index", json={"table": "r", "index_column": "s"}).json()
        assert wait_job(client, job["job_id"])["state"] == "succeeded"
        body = client.post("/v1/tables/r/query", json={"where": "s = 'b'", "result": "files",
                                                       "limit": 100_000}).json()
        got = {Path(f["path"]).name: f for f in body["files"]}
        for i, part in enumerate(parts):
            f = got[f"part-{i}.parquet"]
            want = np.flatnonzero((part.s == "b").to_numpy()).tolist()  # positions in the file
            assert f["matches"] == len(want) and f["positions"] == want
        # paged: each page names the files of its own rows only; over the pages each file's matches add up
        pages: dict[str, list[int]] = {}
        cursor = None
        while True:
            page = client.post("/v1/tables/r/query", json={"where": "s = 'b'", "result": "files", "limit": 20,
                                                           **({"cursor": cursor} if cursor else {})}).json()
            assert sum(f["matches"] for f in page["files"]) <= 20
            for f in page["files"]:
                assert f["matches"] == len(f["positions"]) > 0
                pages.setdefault(Path(f["path"]).name, []).extend(f["positions"])
            cursor = page["next_cursor"]
            if cursor is None:
                break
        for i, part in enumerate(parts):
            assert sorted(pages[f"part-{i}.parquet"]) == np.flatnonzero((part.s == "b").to_numpy()).tolist()


def test_constant_predicates_report_the_coverage_they_were_answered_on(tmp_path: Path) -> None:
    data = tmp_path / "data" / "p"
    frames = {}
    for dt in ("1", "2"):
        (data / f"dt={dt}").mkdir(parents=True)
        frames[dt] = pd.DataFrame({"v": np.random.default_rng(int(dt)).choice(["a", "b"], 40)})
        pq.write_table(pa.Table.from_pandas(frames[dt], preserve_index=False), data / f"dt={dt}" / "f.parquet")
    with TestClient(create_app(make_settings(tmp_path))) as client:
        r = client.put("/v1/tables/p", json={"location": str(data), "partition_columns": ["dt"]})
        assert r.status_code == 200, r.text
        job = client.post("/v1/create_global_index", json={"table": "p", "index_column": "v",
                                                           "partitions": "dt=1"}).json()
        assert wait_job(client, job["job_id"])["state"] == "succeeded"
        body = client.post("/v1/tables/p/query", json={"where": "TRUE", "limit": 1000, "scan": "never"}).json()
        # SQL: TRUE holds for all 80 rows; the index covers dt=1 (ids 0..39) only, and must say so.
        assert body["row_ids"] == list(range(40))
        assert body["coverage"] == {"complete": False, "uncovered_ranges": [[40, 79]]}
        body = client.post("/v1/tables/p/query", json={"where": "v = 'a' OR TRUE", "result": "count",
                                                       "scan": "never"}).json()
        assert body["count"] == 40 and body["coverage"]["uncovered_ranges"] == [[40, 79]]
        # by default the partition never built is read: every row, exactly
        body = client.post("/v1/tables/p/query", json={"where": "TRUE", "limit": 1000}).json()
        assert body["row_ids"] == list(range(80)) and body["coverage"]["complete"] is True
        body = client.post("/v1/tables/p/query", json={"where": "v = 'a'", "result": "count"}).json()
        assert body["count"] == int((frames["1"].v == "a").sum() + (frames["2"].v == "a").sum())
        assert body["exact"] is True and body["coverage"]["complete"] is True
        # result "files": each entry names its hive partition (README), the directory the file is in
        body = client.post("/v1/tables/p/query", json={"where": "v = 'a'", "result": "files"}).json()
        assert [(Path(f["path"]).parent.name, f["partition"], f["matches"]) for f in body["files"]] == \
            [(f"dt={dt}", {"dt": dt}, int((frames[dt].v == "a").sum())) for dt in ("1", "2")]


def test_a_build_process_that_cannot_start_does_not_block_the_index(tmp_path: Path, monkeypatch) -> None:
    import service.server.build_runners as runners_module

    write_table(tmp_path / "data" / "t", make_frame(np.random.default_rng(4), 30), 1)
    with TestClient(create_app(make_settings(tmp_path)), raise_server_exceptions=False) as client:
        assert client.put("/v1/tables/t", json={"location": str(tmp_path / "data" / "t")}).status_code == 200

        def no_process(*args: object, **kwargs: object) -> None:
            raise OSError("Resource temporarily unavailable")

        with monkeypatch.context() as m:
            m.setattr(runners_module.subprocess, "Popen", no_process)
            r = client.post("/v1/create_global_index", json={"table": "t", "index_column": "age"})
            assert r.status_code == 500 and r.json()["error"]["code"] == "internal", r.text
        (job,) = client.get("/v1/jobs").json()["jobs"]
        assert job["state"] == "failed" and "could not start" in job["error"]
        r = client.post("/v1/create_global_index", json={"table": "t", "index_column": "age"})
        assert r.status_code == 202, r.text  # not 409: the failed attempt holds no lock on the index
        assert wait_job(client, r.json()["job_id"])["state"] == "succeeded"
