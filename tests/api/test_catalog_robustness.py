"""Catalog robustness over HTTP (issue 10, items 4-6): registration checks partition columns and refuses the
warehouse; broken data files are listed per file instead of failing the table or the build; a corrupt catalog
document fails only the requests that need it."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from service.api.app import create_app
from service.catalog import warehouse_layout
from tests.api.helpers import TestClient, make_settings, wait_job, write_table
from tests.factories import file_id_oracle


def _frame(n: int, seed: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"status": rng.choice(["vip", "new", "old"], n), "age": rng.integers(0, 90, n)})


def _build(client: TestClient, table: str, column: str) -> dict[str, object]:
    r = client.post("/v1/create_global_index", json={"table": table, "index_column": column})
    assert r.status_code == 202, r.text
    return wait_job(client, r.json()["job_id"])


def _count(client: TestClient, table: str, where: str) -> int:
    r = client.post(f"/v1/tables/{table}/query", json={"where": where, "result": "count"})
    assert r.status_code == 200, r.text
    return int(r.json()["count"])


def test_registration_checks_partition_columns(tmp_path: Path) -> None:
    data = tmp_path / "data"
    for dt in ("2026-01-01", "2026-01-02"):
        write_table(data / "p" / f"dt={dt}", _frame(50), 1)
    with TestClient(create_app(make_settings(tmp_path))) as client:
        for cols, needle in ((["../x"], "../x"), (["a/b"], "a/b"), ([""], "''"), (["dt", "dt"], "twice"),
                             (["hh"], "'hh'"), (["x\u0001"], "partition column")):
            r = client.put("/v1/tables/pbad", json={"location": str(data / "p"), "partition_columns": cols})
            assert r.status_code == 400, (cols, r.text)
            err = r.json()["error"]
            assert err["code"] == "invalid_option" and needle in err["message"], (cols, err)
        assert client.get("/v1/tables/pbad").status_code == 404  # nothing was registered
        r = client.put("/v1/tables/p", json={"location": str(data / "p"), "partition_columns": ["dt"]})
        assert r.status_code == 200, r.text
        files = client.get("/v1/tables/p/files").json()
        assert sorted(f["partition"]["dt"] for f in files["files"]) == ["2026-01-01", "2026-01-02"]
        assert files["errors"] == []


def test_registration_refuses_the_warehouse_and_its_parents(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    settings = make_settings(tmp_path, allowed_roots=[str(tmp_path)])
    with TestClient(create_app(settings)) as client:
        wh = settings.warehouse
        for loc, needle in ((wh, "warehouse root"), (str(tmp_path), "contains the warehouse"),
                            (f"{wh}/jobs", "catalog directory")):
            r = client.put("/v1/tables/cat", json={"location": loc, "format": "json"})
            assert r.status_code == 403, (loc, r.text)
            err = r.json()["error"]
            assert err["code"] == "path_not_allowed" and needle in err["message"], err
        assert client.get("/v1/tables").json()["tables"] == []


def test_broken_data_files_are_listed_per_file_and_refused_by_the_build(tmp_path: Path) -> None:
    loc = tmp_path / "data" / "t"
    df = _frame(900)
    write_table(loc, df, 3)
    good = sorted(loc.glob("part-*.parquet"))
    (loc / "part-000a.parquet").write_bytes(b"")            # empty
    (loc / "part-001a.parquet").write_bytes(b"not parquet")  # junk
    os.mkfifo(loc / "part-002a.parquet")                      # would block a reader
    (loc / "z.parquet").mkdir()                               # a directory named like a file
    (loc / "z.parquet" / "inner.parquet").write_bytes(b"PAR1PAR1")
    broken = {str(loc / n) for n in ("part-000a.parquet", "part-001a.parquet", "part-002a.parquet",
                                     "z.parquet/inner.parquet")}
    with TestClient(create_app(make_settings(tmp_path))) as client:
        assert client.put("/v1/tables/t", json={"location": str(loc)}).status_code == 200
        for params in ({}, {"refresh": "true"}):
            r = client.get("/v1/tables/t/files", params=params)
            assert r.status_code == 200, r.text
            body = r.json()
            assert [(f["path"], f["first_row_id"], f["row_count"]) for f in body["files"]] == file_id_oracle(good)
            assert body["total_rows"] == len(df)
            errors = {e["path"]: e["reason"] for e in body["errors"]}
            assert set(errors) == broken and all(errors.values())
            assert "FIFO" in errors[str(loc / "part-002a.parquet")]
        # A build would quietly leave the broken files' rows out: it is refused, naming one of them.
        r = client.post("/v1/create_global_index", json={"table": "t", "index_column": "status"})
        assert r.status_code == 422, r.text
        err = r.json()["error"]
        assert err["code"] == "unreadable_data_file" and err["details"]["path"] in broken, err

        # The junk file is fixed and the rest removed: the next scan gives it ids after the others.
        extra = _frame(40, seed=9)
        pq.write_table(pa.Table.from_pandas(extra, preserve_index=False), loc / "part-001a.parquet")
        (loc / "part-000a.parquet").unlink()
        (loc / "part-002a.parquet").unlink()
        shutil.rmtree(loc / "z.parquet")
        body = client.get("/v1/tables/t/files", params={"refresh": "true"}).json()
        assert body["files"][-1]["path"] == str(loc / "part-001a.parquet")
        assert body["files"][-1]["first_row_id"] == len(df) and body["total_rows"] == len(df) + 40
        assert body["errors"] == []
        assert _build(client, "t", "status")["state"] == "succeeded"
        assert _count(client, "t", "status = 'vip'") == int((df["status"] == "vip").sum() +
                                                            (extra["status"] == "vip").sum())


def _corrupt_column_chunk(path: Path, column: str) -> None:
    """Overwrite one column's pages in place: the footer (row counts, schema) still reads."""
    md = pq.ParquetFile(path).metadata
    data = bytearray(path.read_bytes())
    for g in range(md.num_row_groups):
        rg = md.row_group(g)
        c = next(rg.column(i) for i in range(rg.num_columns) if rg.column(i).path_in_schema == column)
        start = c.dictionary_page_offset or c.data_page_offset
        data[start:start + c.total_compressed_size] = b"\xff" * c.total_compressed_size
    path.write_bytes(bytes(data))


def test_build_over_an_unreadable_column_chunk_names_the_file(tmp_path: Path) -> None:
    loc = tmp_path / "data" / "t"
    df = _frame(600)
    write_table(loc, df, 3)
    files = sorted(loc.glob("*.parquet"))
    with TestClient(create_app(make_settings(tmp_path))) as client:
        assert client.put("/v1/tables/t", json={"location": str(loc)}).status_code == 200
        first = _build(client, "t", "status")
        assert first["state"] == "succeeded", first
        before = client.get("/v1/tables/t/indexes").json()

        _corrupt_column_chunk(files[1], "status")
        job = _build(client, "t", "status")
        assert job["state"] == "failed"
        assert "DataFileError" in job["error"] and str(files[1]) in job["error"], job["error"]

        # The previous index is intact and answers: the rewritten file's old ids are retired.
        after = client.get("/v1/tables/t/indexes").json()
        assert [i["snapshot_id"] for i in after["indexes"]] == [i["snapshot_id"] for i in before["indexes"]]
        kept = pd.concat([pq.read_table(p).to_pandas() for p in (files[0], files[2])])
        assert _count(client, "t", "status = 'vip'") == int((kept["status"] == "vip").sum())
        # The footer still reads, so the file is mapped (with new ids), not reported as unreadable.
        body = client.get("/v1/tables/t/files").json()
        assert str(files[1]) in {f["path"] for f in body["files"]} and body["errors"] == []


def test_corrupt_documents_fail_only_what_needs_them(tmp_path: Path) -> None:
    loc = tmp_path / "data" / "t"
    df = _frame(300)
    write_table(loc, df, 2)
    settings = make_settings(tmp_path)
    wh = Path(settings.warehouse)
    with TestClient(create_app(settings)) as client:
        for name in ("good", "bad"):
            assert client.put(f"/v1/tables/{name}", json={"location": str(loc)}).status_code == 200
        for column in ("status", "age"):
            assert _build(client, "good", column)["state"] == "succeeded"

        # One column's current snapshot is corrupt: the other column still answers.
        snaps = sorted((wh / warehouse_layout.snapshots_dir("good", "age")).glob("*.json"))
        snaps[-1].write_text("{not json")
        assert _count(client, "good", "status = 'vip'") == int((df["status"] == "vip").sum())
        r = client.post("/v1/tables/good/query", json={"where": "age > 10", "result": "count"})
        assert r.status_code >= 400, r.text  # the column is out of the view (query_service names the doc)
        listed = client.get("/v1/tables/good/indexes").json()
        assert [i["column"] for i in listed["indexes"]] == ["status"]

        # A garbage table.json: the other table is still listed; the broken one is flagged and droppable.
        (wh / warehouse_layout.table_json("bad")).write_text("{not json")
        body = client.get("/v1/tables").json()
        assert [t["name"] for t in body["tables"]] == ["good"] and body["count"] == 1
        [err] = body["errors"]
        assert err["name"] == "bad" and err["error"]["code"] == "corrupt_catalog_document"
        assert str(wh / warehouse_layout.table_json("bad")) in err["error"]["message"]
        r = client.get("/v1/tables/bad")
        assert r.status_code == 500
        assert r.json()["error"]["code"] == "corrupt_catalog_document", r.text
        assert str(wh / warehouse_layout.table_json("bad")) in r.json()["error"]["message"]
        r = client.delete("/v1/tables/bad")
        assert r.status_code == 200, r.text
        assert not (wh / warehouse_layout.table_dir("bad")).exists()
        assert sorted(p.name for p in loc.iterdir()) == ["part-000.parquet", "part-001.parquet"]
        assert "errors" not in client.get("/v1/tables").json()

        # A corrupt job record: GET /v1/jobs lists the others, and new builds are not blocked.
        jobs_before = client.get("/v1/jobs").json()["jobs"]
        (wh / warehouse_layout.job_json("broken-job")).write_text("{not json")
        r = client.get("/v1/jobs")
        assert r.status_code == 200, r.text
        assert [j["id"] for j in r.json()["jobs"]] == [j["id"] for j in jobs_before]
        assert _build(client, "good", "status")["state"] == "succeeded"


@pytest.mark.parametrize("content", ["", "[]", '{"files": 3}'])
def test_corrupt_row_id_map_is_named(tmp_path: Path, content: str) -> None:
    loc = tmp_path / "data" / "t"
    write_table(loc, _frame(100), 1)
    settings = make_settings(tmp_path)
    with TestClient(create_app(settings)) as client:
        assert client.put("/v1/tables/t", json={"location": str(loc)}).status_code == 200
        assert client.get("/v1/tables/t/files").status_code == 200
        doc = Path(settings.warehouse) / warehouse_layout.files_json("t", 1)
        doc.write_text(content)
        r = client.get("/v1/tables/t/files", params={"refresh": "true"})
        assert r.status_code == 500
        assert r.json()["error"]["code"] == "corrupt_catalog_document" and str(doc) in r.json()["error"]["message"]
