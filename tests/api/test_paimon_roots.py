"""A Paimon table that points outside BGIX_ALLOWED_ROOTS is never read or written there, through a real `bgix serve`.

Three routes out of the roots, each with a table pypaimon writes: a data file replaced by a symlink to a file
outside, `data-file.external-paths` (or `global-index.external-path`) naming a directory outside, and
`snapshot/`, `manifest/`, `schema/` moved outside and symlinked back. bgix refuses the table at registration (403 `path_not_allowed` naming the path), and
a table that turned bad after its registration fails its build with PathNotAllowedError and its queries with 403:
the outside rows never reach an index (`/values`), and no file appears outside. An external path inside the roots
keeps working (pypaimon's own read is the judge).
"""
from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.api.helpers import wait_job
from tests.api.server import bgix_server
from tests.unit.tables.paimon.paimon_tables import FULL_OPTIONS, create_table, pypaimon_read, pypaimon_table

pytestmark = pytest.mark.slow
SECRET = "SECRET-OUTSIDE"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[httpx.Client, Path]]:
    root = tmp_path_factory.mktemp("roots")
    (root / "data").mkdir()
    (root / "outside").mkdir()
    env = {"BGIX_WAREHOUSE": str(root / "warehouse"), "BGIX_ALLOWED_ROOTS": str(root / "data"),
           "BGIX_BUILD_ENGINE": "local", "BGIX_SNAPSHOT_TTL_SECONDS": "0"}
    with bgix_server(env, root / "serve.log") as url, httpx.Client(base_url=url, timeout=60.0) as http:
        yield http, root


def _register(http: httpx.Client, name: str, location: Path) -> httpx.Response:
    return http.put(f"/v1/tables/{name}", json={"format": "paimon", "location": str(location)})


def _refused(r: httpx.Response, *names: str) -> None:
    assert r.status_code == 403, r.text
    err = r.json()["error"]
    assert err["code"] == "path_not_allowed", err
    for name in names:
        assert name in err["message"], err


def _build(http: httpx.Client, name: str, column: str = "status") -> httpx.Response | dict[str, Any]:
    """The refused request, or the finished job (bounded poll)."""
    r = http.post("/v1/create_global_index", json={"table": name, "index_column": column})
    if r.status_code != 202:
        return r
    return wait_job(http, r.json()["job_id"], timeout=180)


def _build_refused(http: httpx.Client, name: str, *names: str) -> None:
    got = _build(http, name)
    if isinstance(got, httpx.Response):
        _refused(got, *names)
        return
    assert got["state"] == "failed", got
    assert got["error"].startswith("PathNotAllowedError"), got
    for n in names:
        assert n in got["error"], got


def _files(directory: Path) -> dict[str, int]:
    return {str(p.relative_to(directory)): p.stat().st_mtime_ns for p in directory.rglob("*") if p.is_file()}


def test_a_data_file_linked_outside_is_never_indexed(served: tuple[httpx.Client, Path]) -> None:
    http, root = served
    location = create_table(root / "data" / "wa", "events", commits=1, rows=300)
    assert _register(http, "linked", location).status_code == 200
    split_files = [f for s in pypaimon_table(location).new_read_builder().new_scan().plan().splits() for f in s.files]
    data_file = Path(split_files[0].file_path.removeprefix("file:"))
    # the same file (schema, field ids, row count) with every status replaced, put outside and linked in
    original = pq.ParquetFile(data_file).read()
    i = original.schema.get_field_index("status")
    secret = original.set_column(i, original.schema.field(i), pa.array([SECRET] * original.num_rows, pa.string()))
    outside = root / "outside" / "secret.parquet"
    pq.write_table(secret, outside)
    data_file.unlink()
    data_file.symlink_to(outside)

    _build_refused(http, "linked", str(data_file))
    r = http.get("/v1/tables/linked/indexes/status/values")
    assert SECRET not in r.text and r.status_code == 404, r.text   # no index at all: the build committed nothing
    _refused(_register(http, "linked_again", location), str(data_file), str(outside))


def test_external_paths_outside_are_refused_inside_are_served(served: tuple[httpx.Client, Path]) -> None:
    http, root = served
    outside = root / "outside" / "external"
    location = create_table(root / "data" / "wb", "events", commits=1, rows=300, options={
        **FULL_OPTIONS, "data-file.external-paths": f"file://{outside}",
        "data-file.external-paths.strategy": "round-robin"})
    assert list(outside.rglob("*.parquet")), "pypaimon wrote no data file to the external path"
    _refused(_register(http, "external_out", location), "data-file.external-paths", str(outside))
    index_out = root / "outside" / "global-index"
    location = create_table(root / "data" / "wi", "events", commits=1, rows=50, options={
        **FULL_OPTIONS, "global-index.external-path": f"file://{index_out}"})
    _refused(_register(http, "index_out", location), "global-index.external-path", str(index_out))

    inside = root / "data" / "external"
    location = create_table(root / "data" / "wc", "events", commits=1, rows=300, options={
        **FULL_OPTIONS, "data-file.external-paths": f"file://{inside}",
        "data-file.external-paths.strategy": "round-robin"})
    assert list(inside.rglob("*.parquet"))
    assert _register(http, "external_in", location).status_code == 200
    job = _build(http, "external_in")
    assert isinstance(job, dict) and job["state"] == "succeeded", job
    values = http.get("/v1/tables/external_in/indexes/status/values", params={"limit": 100}).json()
    statuses = pypaimon_read(location, ["status"]).column("status").to_pylist()
    want = {s: statuses.count(s) for s in set(statuses) if s is not None}
    assert {v["value"]: v["rows"] for v in values["values"]} == want


def test_metadata_linked_outside_is_never_written(served: tuple[httpx.Client, Path]) -> None:
    http, root = served
    location = create_table(root / "data" / "wd", "events", commits=1, rows=300)
    assert _register(http, "meta", location).status_code == 200
    outside = root / "outside" / "meta"
    outside.mkdir()
    for name in ("snapshot", "manifest", "schema"):
        shutil.move(str(location / name), str(outside / name))
        os.symlink(outside / name, location / name)
    before = _files(outside)
    assert pypaimon_read(location, ["status"]).num_rows == 300   # the table still reads, through the links

    _build_refused(http, "meta", str(location))
    assert _files(outside) == before, "bgix wrote where the table's metadata links lead"
    _refused(http.post("/v1/tables/meta/query", json={"where": "status = 'ok'"}), str(location))
    _refused(_register(http, "meta_again", location), str(location))
