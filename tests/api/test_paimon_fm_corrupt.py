"""A corrupt fm index file in a Paimon table (pypaimon-rust built the index: three row ranges, one file each, several
partitions per file): a query that needs the file is 500 corrupt_index_file naming the file and the block, while
the rest keeps serving — the table's other index (a btree), and the fm index's other files wherever the query does
not need the corrupt one (an AND whose other side is FALSE over the corrupt file's row range, in either order);
GET /v1/tables/{t}/indexes lists both indexes and names the broken one under `errors`.

Judges: the rows written (plain Python, tests/unit/index_format/fm/fm_truth.py) and pypaimon's index manifest
(which file holds which row range)."""
from __future__ import annotations

import random
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pypaimon.index.index_file_handler import IndexFileHandler

from index_format.fm.fm_reader import open_fm_index
from service.api.app import create_app
from tests.api.helpers import TestClient, make_settings
from tests.unit.index_format.fm.fm_truth import like_truth, random_texts, rows_where
from tests.unit.tables.paimon import rust_tables as rt
from tests.unit.tables.paimon.paimon_tables import catalog

N, R = 900, 300            # rows; sorted-index.records-per-range: fm files of rows 0–299, 300–599, 600–899
BROKEN = (300, 599)        # the row range whose fm file is damaged; uid = id // R, so uid = 1 is exactly its rows


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str | None]]:
    root = tmp_path_factory.mktemp("fmbase")
    wh = root / "data" / "wh"
    rt.create_table(wh, "t", "id BIGINT, uid BIGINT, txt STRING", {"sorted-index.records-per-range": str(R)})
    rows = random_texts(random.Random(7), N)
    rt.append(wh, "t", pa.table({"id": pa.array(range(N), pa.int64()),
                                 "uid": pa.array([i // R for i in range(N)], pa.int64()),
                                 "txt": pa.array(rows, pa.string())}))
    rt.create_index(wh, "t", "txt", "fm", "fm-index.partition-row-count=100")
    rt.create_index(wh, "t", "uid", "btree")
    return root, rows


def _fm_file(location: Path, row_range: tuple[int, int]) -> Path:
    """The fm file pypaimon's listing of the index manifest gives for `row_range`."""
    table = catalog(location.parent.parent).get_table(f"{rt.DB}.{location.name}")
    for e in IndexFileHandler(table=table).scan(None):
        gim = e.index_file.global_index_meta
        if e.kind == 0 and e.index_file.index_type == "fm" and \
                (int(gim.row_range_start), int(gim.row_range_end)) == row_range:
            return location / "index" / str(e.index_file.file_name)
    raise AssertionError(f"no fm file for rows {row_range}")


def _damage_block(path: Path) -> str:
    """Flip a byte of the first block of partition 1 (its wavelet level 0 block 0); the block's name."""
    first = open_fm_index(str(path), "string").partitions[1].start
    data = bytearray(path.read_bytes())
    data[first + 5] ^= 0xFF
    path.write_bytes(bytes(data))
    return "partition 1 wavelet level 0 block 0"


def _damage_footer(path: Path) -> str:
    data = bytearray(path.read_bytes())
    data[-30] ^= 0xFF   # the container footer's row count: its CRC no longer matches
    path.write_bytes(bytes(data))
    return "container footer"


@pytest.mark.parametrize("damage", [_damage_block, _damage_footer], ids=["block", "footer"])
def test_a_corrupt_fm_file_fails_only_the_queries_that_need_it(base: tuple[Path, list[str | None]], tmp_path: Path,
                                                                damage: Callable[[Path], str]) -> None:
    root, rows = base
    shutil.copytree(root / "data", tmp_path / "data")
    location = tmp_path / "data" / "wh" / "default.db" / "t"
    broken = _fm_file(location, BROKEN)
    block = damage(broken)
    nulls = {i for i, v in enumerate(rows) if v is None}

    def uid(k: int) -> set[int]:
        return set(range(k * R, (k + 1) * R))

    def vip() -> set[int]:
        return set(rows_where(rows, lambda v: "vip" in v))

    with TestClient(create_app(make_settings(tmp_path))) as client:
        r = client.put("/v1/tables/t", json={"format": "paimon", "location": str(location)})
        assert r.status_code == 200, r.text

        def query(where: str) -> Any:
            return client.post("/v1/tables/t/query", json={"where": where, "limit": 100_000})

        def named(r: Any) -> None:
            assert r.status_code == 500, r.text
            err = r.json()["error"]
            assert err["code"] == "corrupt_index_file" and err["details"]["path"] == str(broken), err
            assert err["details"]["block"] == block and str(broken) in err["message"] and block in err["message"]

        # what needs the broken file: named, file and block
        for where in ("txt LIKE '%vip%'", "txt IS NULL", "NOT txt = 'a'", "uid = 1 AND txt LIKE '%vip%'",
                      "txt LIKE '%vip%' AND uid = 1", "txt LIKE '%vip%' OR uid = 0"):
            named(query(where))
        named(client.get("/v1/tables/t/indexes/txt/values"))
        # the rest: the other column, and the fm index's other files where the AND is FALSE over the broken range
        cases: list[tuple[str, set[int]]] = [
            ("uid = 2", uid(2)), ("uid >= 1", uid(1) | uid(2)),
            ("uid = 0 AND txt LIKE '%vip%'", uid(0) & vip()),
            ("txt LIKE '%vip%' AND uid = 2", uid(2) & vip()),
            ("uid IN (0, 2) AND NOT txt LIKE '%a%'", (uid(0) | uid(2)) - set(like_truth(rows, "%a%")) - nulls),
            ("(uid = 0 OR uid = 2) AND (txt IS NULL OR txt = '')",
             (uid(0) | uid(2)) & (nulls | set(rows_where(rows, lambda v: v == "")))),
        ]
        for where, want in cases:
            r = query(where)
            assert r.status_code == 200, (where, r.text)
            assert r.json()["row_ids"] == sorted(want) and r.json()["exact"], where
        assert client.get("/v1/tables/t/indexes/uid/values").status_code == 200
        assert client.get("/v1/tables/t").status_code == 200
        listed = client.get("/v1/tables/t/indexes")
        assert listed.status_code == 200, listed.text
        body = listed.json()
        by = {(i["column"], i["index_type"]): i for i in body["indexes"]}
        assert set(by) == {("txt", "fm"), ("uid", "btree")}
        assert by["uid", "btree"]["distinct_values"] == 3 and by["txt", "fm"]["distinct_values"] is None
        (err,) = body["errors"]
        assert (err["column"], err["index_type"], err["error"]["code"]) == ("txt", "fm", "corrupt_index_file")
        assert err["error"]["details"]["path"] == str(broken) and err["error"]["details"]["block"] == block
