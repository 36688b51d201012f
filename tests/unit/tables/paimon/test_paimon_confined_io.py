"""ConfinedFileIO: every read, write, rename, list and open of pypaimon's FileIO (and of its pyarrow file system)
resolves the path first and refuses one outside the roots, before anything happens there; paths inside behave as
pypaimon's own FileIO (its no-replace rename included). A real pypaimon commit through a table whose `manifest/`
was linked outside after loading is refused, and nothing appears outside."""
from __future__ import annotations

import random
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pypaimon.filesystem.local_file_io import LocalFileIO

from index_format.errors import PathNotAllowedError
from service.tables.paimon.commit import writable_table
from service.tables.paimon.confined_io import ConfinedFileIO, refusal_in, roots_of
from service.tables.paimon.location import parse_location
from service.tables.paimon.paimon_writes import append_arrow
from service.tables.paimon.table import open_paimon_table
from tests.unit.tables.paimon.paimon_tables import create_table, make_rows


def _files(directory: Path) -> list[str]:
    return sorted(str(p) for p in directory.rglob("*"))


def test_paths_through_a_link_out_of_the_roots_are_refused_before_any_io(tmp_path: Path) -> None:
    inside, outside = tmp_path / "in", tmp_path / "out"
    inside.mkdir()
    outside.mkdir()
    pq.write_table(pa.table({"a": [1, 2]}), outside / "x.parquet")
    (inside / "link").symlink_to(outside)
    (inside / "x.parquet").symlink_to(outside / "x.parquet")
    io = ConfinedFileIO(LocalFileIO(str(inside)), roots_of([str(inside)]), str(inside))
    before = _files(outside)
    refused = [
        lambda: io.write_file(f"{inside}/link/new", "x"),
        lambda: io.new_output_stream(f"file://{inside}/link/new"),
        lambda: io.try_to_write_atomic(f"{inside}/link/new", "x"),
        lambda: io.mkdirs(f"{inside}/link/dir"),
        lambda: io.rename(f"{inside}/ok", f"{inside}/link/moved"),
        lambda: io.copy_file(f"{inside}/x.parquet", f"{inside}/copy"),
        lambda: io.delete(f"{inside}/link/x.parquet"),
        lambda: io.new_input_stream(f"{inside}/x.parquet"),
        lambda: io.read_file_utf8(f"{inside}/link/x.parquet"),
        lambda: io.exists(f"{inside}/link/x.parquet"),
        lambda: io.list_status(f"{inside}/link"),
        lambda: io.get_file_size(f"{inside}/x.parquet"),
        lambda: io.filesystem.open_input_file(f"{inside}/x.parquet"),
        lambda: pq.ParquetFile(f"{inside}/x.parquet", filesystem=io.filesystem).read(),
        lambda: io.filesystem.open_output_stream(f"{inside}/link/y"),
    ]
    for op in refused:
        with pytest.raises(PathNotAllowedError, match="outside the allowed roots"):
            op()
    assert _files(outside) == before

    # inside the roots it is pypaimon's FileIO: write, read, list, and a rename that never replaces
    io.write_file(f"{inside}/a", "first")
    io.write_file(f"{inside}/b", "second")
    assert io.read_file_utf8(f"{inside}/a") == "first"
    assert not io.rename(f"{inside}/b", f"{inside}/a") and io.read_file_utf8(f"{inside}/a") == "first"
    assert {s.base_name for s in io.list_status(str(inside))} >= {"a", "b"}


def test_a_commit_through_a_manifest_dir_linked_out_writes_nothing_there(tmp_path: Path) -> None:
    location = create_table(tmp_path / "data" / "wh", "events", commits=1, rows=100)
    roots = [str(tmp_path / "data")]
    writable = writable_table(parse_location(str(location)), roots=roots)
    outside = tmp_path / "outside"
    (location / "manifest").rename(outside)
    (location / "manifest").symlink_to(outside)
    before = _files(outside)
    with pytest.raises(Exception) as info:
        append_arrow(writable, make_rows(random.Random(1), 50))
    assert refusal_in(info.value) is not None, info.value
    assert _files(outside) == before
    with pytest.raises(PathNotAllowedError, match="manifest"):   # and opening it names the link
        open_paimon_table(str(location), roots=roots)
