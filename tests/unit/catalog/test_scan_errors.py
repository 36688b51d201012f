"""Broken data files and corrupt catalog documents: named errors, never raw pyarrow errors or hangs; one
bad file or document fails only what needs it (issue 10, items 4-6)."""
from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.orc as orc
import pyarrow.parquet as pq
import pytest

from index_format.errors import InvalidOptionError
from index_format.storage import Storage
from service.catalog import Catalog, JobRecord, Snapshot, Table, TableNotFoundError
from service.catalog import warehouse_layout
from service.catalog.catalog_errors import CorruptDocumentError, DataFileError, LocationNotAllowedError
from service.tables.files.scan import count_rows, read_columns, read_schema, read_slice
from service.tables import open_source, register_table
from service.jobs.active_builds import active_jobs
from service.tables.files.data_files import DataFileMap
from tests.factories import file_id_oracle, make_parquet_table, make_rows


@pytest.fixture()
def catalog(tmp_path: Path) -> Catalog:
    (tmp_path / "wh").mkdir()
    return Catalog(Storage(str(tmp_path / "wh"), allowed_roots=[str(tmp_path / "data")]))


def _in_time(fn: Callable[[], Any], seconds: float = 10.0) -> BaseException | None:
    """Run fn in a daemon thread; the exception it raised, or fail if it hangs (a FIFO opened for reading)."""
    out: list[BaseException | None] = []

    def run() -> None:
        try:
            fn()
            out.append(None)
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            out.append(exc)

    th = threading.Thread(target=run, daemon=True)
    th.start()
    th.join(seconds)
    assert out, f"reader did not return within {seconds} s (blocked on a FIFO?)"
    return out[0]


def _valid_parquet_bytes(tmp_path: Path) -> bytes:
    p = tmp_path / "valid.parquet"
    pq.write_table(make_rows(300, 7), p, row_group_size=100)
    return p.read_bytes()


def _readers(storage: Storage, path: str, fmt: str) -> dict[str, Callable[[], Any]]:
    return {
        "count_rows": lambda: count_rows(storage, path, fmt, storage.size(path)),
        "read_schema": lambda: read_schema(storage, path, fmt),
        "read_columns": lambda: read_columns(storage, path, fmt, ["s"]),
        "read_slice": lambda: read_slice(storage, path, fmt, ["s"], 0, 10),
    }


@pytest.mark.parametrize("kind", ["empty", "junk", "magic_only", "truncated"])
def test_broken_parquet_raises_data_file_error_naming_the_file(tmp_path: Path, kind: str) -> None:
    data = tmp_path / "data"
    data.mkdir()
    valid = _valid_parquet_bytes(tmp_path)
    content = {"empty": b"", "junk": b"this is not parquet\n" * 5, "magic_only": b"PAR1" * 3,
               "truncated": valid[: len(valid) // 2]}[kind]
    f = data / "x.parquet"
    f.write_bytes(content)
    storage = Storage(str(tmp_path / "wh"), allowed_roots=[str(data)])
    for name, fn in _readers(storage, str(f), "parquet").items():
        exc = _in_time(fn)
        assert isinstance(exc, DataFileError), (name, exc)
        assert exc.path == str(f) and exc.reason and str(f) in str(exc)


def test_broken_orc_raises_data_file_error(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    f = data / "x.orc"
    f.write_bytes(b"not orc at all")
    storage = Storage(str(tmp_path / "wh"), allowed_roots=[str(data)])
    for name, fn in _readers(storage, str(f), "orc").items():
        exc = _in_time(fn)
        assert isinstance(exc, DataFileError) and exc.path == str(f), (name, exc)


@pytest.mark.parametrize("kind", ["fifo", "directory"])
def test_non_regular_files_are_refused_without_opening_them(tmp_path: Path, kind: str) -> None:
    data = tmp_path / "data"
    data.mkdir()
    f = data / "x.parquet"
    if kind == "fifo":
        os.mkfifo(f)
    else:
        f.mkdir()
    storage = Storage(str(tmp_path / "wh"), allowed_roots=[str(data)])
    for name, fn in _readers(storage, str(f), "parquet").items():
        exc = _in_time(fn)
        assert isinstance(exc, DataFileError), (name, exc)
        assert exc.path == str(f) and ("FIFO" if kind == "fifo" else "directory") in exc.reason


def _broken_table(tmp_path: Path) -> tuple[Path, list[Path], dict[str, str]]:
    gen = make_parquet_table(tmp_path / "data", rows_per_file=(300, 200, 100))
    loc = gen.location
    (loc / "a-empty.parquet").write_bytes(b"")
    (loc / "b-junk.parquet").write_bytes(b"garbage" * 10)
    os.mkfifo(loc / "c-fifo.parquet")
    (loc / "d-dir.parquet").mkdir()
    (loc / "d-dir.parquet" / "inner.parquet").write_bytes(b"junk inside a directory named like a file")
    broken = {str(loc / "a-empty.parquet"): "", str(loc / "b-junk.parquet"): "",
              str(loc / "c-fifo.parquet"): "FIFO", str(loc / "d-dir.parquet" / "inner.parquet"): ""}
    return loc, gen.files, broken


def test_scan_maps_readable_files_and_reports_broken_ones(catalog: Catalog, tmp_path: Path) -> None:
    loc, good, broken = _broken_table(tmp_path)
    catalog.put_table(Table("t", str(loc)))
    live = _in_time(lambda: DataFileMap(catalog).refresh("t"))
    assert live is None  # returned without raising or hanging
    files = DataFileMap(catalog).live("t")
    assert [(f.path, f.first_row_id, f.row_count) for f in files] == file_id_oracle(good)
    bad = {u.path: u.reason for u in DataFileMap(catalog).unreadable("t")}
    assert set(bad) == set(broken)
    for path, needle in broken.items():
        assert needle in bad[path] and bad[path]
    assert open_source(catalog, "t").source_columns() == pq.read_schema(good[0]).names

    # Nothing changed: no new row-id map version is written.
    versions = catalog.storage.list(warehouse_layout.files_dir("t"))
    DataFileMap(catalog).refresh("t")
    assert catalog.storage.list(warehouse_layout.files_dir("t")) == versions

    # The junk file becomes a valid file: it gets ids after the current maximum, the others keep theirs.
    fixed = loc / "b-junk.parquet"
    pq.write_table(make_rows(50, 9), fixed)
    files2 = DataFileMap(catalog).refresh("t")
    end = max(f.end_row_id for f in files)
    assert [(f.path, f.first_row_id, f.row_count) for f in files2] == [
        *[(f.path, f.first_row_id, f.row_count) for f in files], (str(fixed), end, 50)]
    assert str(fixed) not in {u.path for u in DataFileMap(catalog).unreadable("t")}


def test_mapped_file_turned_junk_is_retired_and_reported(catalog: Catalog, tmp_path: Path) -> None:
    gen = make_parquet_table(tmp_path / "data", rows_per_file=(300, 200))
    catalog.put_table(Table("t", str(gen.location)))
    before = DataFileMap(catalog).live("t")
    gen.files[0].write_bytes(b"junk now")
    live = DataFileMap(catalog).refresh("t")
    assert [f.path for f in live] == [str(gen.files[1])]
    assert [f.path for f in DataFileMap(catalog).retired("t")] == [str(gen.files[0])]
    assert [u.path for u in DataFileMap(catalog).unreadable("t")] == [str(gen.files[0])]
    assert live[0].first_row_id == before[1].first_row_id  # untouched file keeps its ids


def test_file_outside_the_partition_layout_is_reported_not_fatal(catalog: Catalog, tmp_path: Path) -> None:
    gen = make_parquet_table(tmp_path / "data", rows_per_file=(100, 100), partitions=[{"dt": "1"}, {"dt": "2"}])
    catalog.put_table(Table("t", str(gen.location), partition_columns=["dt"]))
    stray = gen.location / "stray.parquet"
    pq.write_table(make_rows(10, 3), stray)
    live = DataFileMap(catalog).refresh("t")
    assert sorted(f.path for f in live) == sorted(str(p) for p in gen.files)
    [u] = DataFileMap(catalog).unreadable("t")
    assert u.path == str(stray) and "dt" in u.reason


def test_source_columns_skips_a_junk_first_file(catalog: Catalog, tmp_path: Path) -> None:
    loc = tmp_path / "data" / "t"
    loc.mkdir(parents=True)
    (loc / "a.parquet").write_bytes(b"junk")
    pq.write_table(make_rows(5, 1), loc / "b.parquet")
    catalog.put_table(Table("t", str(loc)))
    assert open_source(catalog, "t").source_columns() == pq.read_schema(loc / "b.parquet").names


# -- registration ------------------------------------------------------------------------------------

@pytest.mark.parametrize("bad", ["../x", "a/b", "a=b", "", "   ", "x\n", "a\x00", "..", " dt"])
def test_partition_column_names_must_be_plain(catalog: Catalog, tmp_path: Path, bad: str) -> None:
    (tmp_path / "data" / "t").mkdir(parents=True)
    with pytest.raises(InvalidOptionError, match="partition column") as info:
        catalog.put_table(Table("t", str(tmp_path / "data" / "t"), partition_columns=[bad]))
    assert repr(bad) in str(info.value)
    assert catalog.list_tables() == []


def test_partition_columns_must_match_the_hive_levels(catalog: Catalog, tmp_path: Path) -> None:
    gen = make_parquet_table(tmp_path / "data", rows_per_file=(10, 10),
                             partitions=[{"dt": "1", "hh": "0"}, {"dt": "2", "hh": "1"}])
    loc = str(gen.location)
    with pytest.raises(InvalidOptionError, match="given twice"):
        register_table(catalog, Table("t", loc, partition_columns=["dt", "dt"]))
    with pytest.raises(InvalidOptionError, match="'zz'"):
        register_table(catalog, Table("t", loc, partition_columns=["dt", "zz"]))
    with pytest.raises(InvalidOptionError, match="order"):
        register_table(catalog, Table("t", loc, partition_columns=["hh", "dt"]))
    assert catalog.list_tables() == []
    register_table(catalog, Table("t", loc, partition_columns=["dt", "hh"]))
    register_table(catalog, Table("u", loc, partition_columns=["hh"]))  # a subset of the levels is fine
    assert [f.partition for f in DataFileMap(catalog).live("t")] == [{"dt": "1", "hh": "0"}, {"dt": "2", "hh": "1"}]
    # An empty location cannot be checked against files: plain names are enough.
    (tmp_path / "data" / "empty").mkdir()
    register_table(catalog, Table("e", str(tmp_path / "data" / "empty"), partition_columns=["dt"]))


def test_warehouse_root_and_its_parents_are_refused(tmp_path: Path) -> None:
    wh = tmp_path / "lake" / "wh"
    wh.mkdir(parents=True)
    cat = Catalog(Storage(str(wh), allowed_roots=[str(tmp_path)]))
    for loc, needle in ((wh, "warehouse root"), (tmp_path / "lake", "contains the warehouse"),
                        (tmp_path, "contains the warehouse"), (wh / "tables" / "x", "catalog directory")):
        with pytest.raises(LocationNotAllowedError, match=needle):
            cat.put_table(Table("t", str(loc)))
    (tmp_path / "lake" / "other").mkdir()
    assert cat.put_table(Table("t", str(tmp_path / "lake" / "other"))).location == str(tmp_path / "lake" / "other")
    assert cat.check_location(str(wh / "data")) == str(wh / "data")  # beside the catalog dirs: allowed


# -- corrupt catalog documents -----------------------------------------------------------------------

def _write(catalog: Catalog, rel: str, data: bytes) -> str:
    full = catalog.storage.resolve(rel)
    Path(full).parent.mkdir(parents=True, exist_ok=True)
    Path(full).write_bytes(data)
    return full


@pytest.mark.parametrize("content", [b"{not json", b"[1, 2]", b"\xff\xfe", b'{"name": "bad"}',
                                     b'{"name": 3, "location": "/x"}'])
def test_corrupt_table_document(catalog: Catalog, tmp_path: Path, content: bytes) -> None:
    gen = make_parquet_table(tmp_path / "data", rows_per_file=(10,))
    catalog.put_table(Table("good", str(gen.location)))
    catalog.put_table(Table("bad", str(gen.location)))
    doc = _write(catalog, warehouse_layout.table_json("bad"), content)
    with pytest.raises(CorruptDocumentError) as info:
        catalog.get_table("bad")
    assert info.value.path == doc and doc in str(info.value)
    good, broken = catalog.scan_tables()
    assert [t.name for t in good] == ["good"] and list(broken) == ["bad"]
    assert [t.name for t in catalog.list_tables()] == ["good"]
    catalog.drop_table("bad")  # cleanup works without parsing the document
    assert not Path(catalog.storage.resolve(warehouse_layout.table_dir("bad"))).exists()
    assert gen.files[0].exists()
    with pytest.raises(TableNotFoundError):
        catalog.drop_table("bad")


def _snapshot(column: str) -> Snapshot:
    return Snapshot(id=0, table="t", column=column, key_type="string")


def test_corrupt_snapshot_fails_only_its_column(catalog: Catalog, tmp_path: Path) -> None:
    gen = make_parquet_table(tmp_path / "data", rows_per_file=(10,))
    catalog.put_table(Table("t", str(gen.location)))
    catalog.commit("t", "s", None, _snapshot("s"))
    catalog.commit("t", "n", None, _snapshot("n"))
    doc = _write(catalog, warehouse_layout.snapshot_json("t", "s", 1), b"{not json")
    with pytest.raises(CorruptDocumentError) as info:
        catalog.current_snapshot("t", "s")
    assert info.value.path == doc
    assert [s.column for s in catalog.list_indexes("t")] == ["n"]
    src = open_source(catalog, "t").view()
    assert list(src.columns) == ["n"]
    assert list(src.broken_columns) == ["s"] and src.broken_columns["s"].path == doc
    catalog.drop_index("t", "s")  # an operator can drop the broken index
    assert open_source(catalog, "t").view().broken_columns == {}


def test_corrupt_row_id_map_names_the_document(catalog: Catalog, tmp_path: Path) -> None:
    gen = make_parquet_table(tmp_path / "data", rows_per_file=(10,))
    catalog.put_table(Table("t", str(gen.location)))
    DataFileMap(catalog).live("t")
    doc = _write(catalog, warehouse_layout.files_json("t", 1), json.dumps({"files": "nope"}).encode())
    for fn in (DataFileMap(catalog).live, DataFileMap(catalog).refresh):
        with pytest.raises(CorruptDocumentError) as info:
            fn("t")
        assert info.value.path == doc


def test_corrupt_job_record_is_skipped(catalog: Catalog) -> None:
    catalog.put_job(JobRecord(id="j1", table="t", column="s", state="succeeded"))
    catalog.put_job(JobRecord(id="j2", table="t", column="n", state="running"))
    doc = _write(catalog, warehouse_layout.job_json("j0"), b"{not json")
    _write(catalog, warehouse_layout.job_json("j3"), b'{"id": "j3", "table": "t", "column": "s", "created_at": "x"}')
    assert [j.id for j in catalog.list_jobs()] == ["j1", "j2"]
    jobs, broken = catalog.scan_jobs()
    assert sorted(broken) == ["j0", "j3"] and broken["j0"].path == doc
    assert [j.id for j in active_jobs(catalog, "t")] == ["j2"]
    with pytest.raises(CorruptDocumentError):
        catalog.get_job("j0")


def test_orc_table_with_a_broken_file(catalog: Catalog, tmp_path: Path) -> None:
    loc = tmp_path / "data" / "o"
    loc.mkdir(parents=True)
    orc.write_table(pa.table({"a": [1, 2, 3]}), str(loc / "a.orc"))
    (loc / "b.orc").write_bytes(b"")
    catalog.put_table(Table("o", str(loc), format="orc"))
    assert [(f.path, f.row_count) for f in DataFileMap(catalog).live("o")] == [(str(loc / "a.orc"), 3)]
    assert [u.path for u in DataFileMap(catalog).unreadable("o")] == [str(loc / "b.orc")]
