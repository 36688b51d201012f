"""A broken file of a Paimon table is named: every metadata file a read of the latest snapshot goes through
(schema, snapshot, manifest lists, manifests, index manifest) as CorruptTableMetadataError, a data file as
DataFileError, by every reader (opening, the view, planning a build, a build task's direct and pypaimon reads);
a deletion vector stays IndexFormatError; a junk LATEST hint harms nothing.

Which file plays which part comes from pypaimon (tests/unit/tables/paimon/corrupt_tables.py); the damage is seeded.
"""
from __future__ import annotations

import pickle
import shutil
from pathlib import Path

import pytest
from pypaimon.globalindex.create_global_index import create_global_index

from index_format.errors import IndexFormatError
from index_format.storage import Storage
from service.catalog.catalog_errors import CorruptTableMetadataError, DataFileError
from service.tables.paimon import open_paimon_table, plan_splits, read_rows
from service.tables.paimon.broken_files import find_corrupt_metadata
from service.tables.paimon.build_plan import plan_build
from service.tables.paimon.direct_read import direct_batches
from service.tables.paimon.drop import drop_column_indexes
from service.tables.paimon.view import load_paimon_view
from tests.unit.tables.paimon.corrupt_tables import (
    METADATA_PARTS, break_dictionary_indices, corrupt, data_files, deletion_vector_file, metadata_file,
)
from tests.unit.tables.paimon.paimon_tables import create_table, delete_rows, pypaimon_read, pypaimon_table

PLAIN = {"row-tracking.enabled": "true", "data-evolution.enabled": "true", "file.compression": "none"}


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A table with a pypaimon bitmap index on status and a deletion vector (every kind of metadata file)."""
    location = create_table(tmp_path_factory.mktemp("base") / "wh", "events", commits=2, rows=300)
    assert create_global_index(pypaimon_table(location), "status", index_type="bitmap") > 0
    delete_rows(location, [1, 5, 7])
    return location


def _copy(base: Path, tmp_path: Path) -> Path:
    shutil.copytree(base.parent.parent, tmp_path / "wh")
    return tmp_path / "wh" / base.parent.name / base.name


def _view(location: Path):  # noqa: ANN202
    return load_paimon_view("t", str(location), Storage(str(location.parent.parent), []))


@pytest.mark.parametrize("how", ["junk", "random", "middle", "truncate"])
@pytest.mark.parametrize("part", METADATA_PARTS)
def test_a_corrupt_metadata_file_is_named_by_the_view(base: Path, tmp_path: Path, part: str, how: str) -> None:
    location = _copy(base, tmp_path)
    broken = metadata_file(location, part)
    corrupt(broken, how, seed=len(part))
    with pytest.raises(CorruptTableMetadataError) as info:
        _view(location)
    assert info.value.path == str(broken)
    assert str(broken) in str(info.value) and info.value.reason
    again = pickle.loads(pickle.dumps(info.value))   # crosses to build workers and back
    assert (type(again), str(again), again.path) == (CorruptTableMetadataError, str(info.value), str(broken))


@pytest.mark.parametrize("part", METADATA_PARTS)
def test_every_reader_names_the_same_file(base: Path, tmp_path: Path, part: str) -> None:
    """Opening (schema, snapshot) or the first read of the rest: plan_splits, a build plan, a drop."""
    location = _copy(base, tmp_path)
    broken = metadata_file(location, part)
    corrupt(broken, "random", seed=3)
    opened_fine = part not in ("schema", "snapshot")
    calls = [lambda: drop_column_indexes(str(location), "status")]
    if opened_fine:
        table = open_paimon_table(str(location))
        read = plan_splits if part != "index_manifest" else lambda t: plan_build(t, ["status"], records_per_range=10)
        calls.append(lambda: read(table))
    else:
        calls.append(lambda: open_paimon_table(str(location)))
    snapshots = sorted((location / "snapshot").iterdir())
    for call in calls:
        with pytest.raises(CorruptTableMetadataError) as info:
            call()
        assert info.value.path == str(broken)
    assert sorted((location / "snapshot").iterdir()) == snapshots   # the drop committed nothing


def test_the_walk_finds_nothing_in_a_healthy_table_and_a_junk_hint_harms_nothing(base: Path, tmp_path: Path
                                                                                 ) -> None:
    location = _copy(base, tmp_path)
    assert find_corrupt_metadata(str(location)) is None
    corrupt(metadata_file(location, "latest_hint"), "junk")
    view = _view(location)
    assert view.snapshot_id == pypaimon_table(location).snapshot_manager().get_latest_snapshot().id
    assert view.description.row_count == 600 and len(view.deleted) == 3


def test_a_missing_manifest_is_named_as_missing(base: Path, tmp_path: Path) -> None:
    location = _copy(base, tmp_path)
    gone = metadata_file(location, "manifest")
    gone.unlink()
    with pytest.raises(CorruptTableMetadataError) as info:
        _view(location)
    assert info.value.path == str(gone) and "missing" in info.value.reason


@pytest.mark.parametrize("how", ["junk", "truncate"])
def test_a_corrupt_deletion_vector_stays_an_index_format_error(base: Path, tmp_path: Path, how: str) -> None:
    location = _copy(base, tmp_path)
    broken = deletion_vector_file(location)
    corrupt(broken, how)
    with pytest.raises(IndexFormatError) as info:
        _view(location)
    assert info.value.path == str(broken)


@pytest.mark.parametrize("how", ["junk", "middle", "dictionary"])
def test_a_corrupt_data_file_is_named_by_both_task_reads(tmp_path: Path, how: str) -> None:
    """The direct Parquet read and pypaimon's reader of the same split name the file; the other splits still
    read as pypaimon reads them."""
    location = create_table(tmp_path / "wh", "plain", options=PLAIN, commits=2, rows=300)
    want = pypaimon_read(location, ["status"]).num_rows
    broken = data_files(location)[0]
    if how == "dictionary":
        break_dictionary_indices(broken, "status")
    else:
        corrupt(broken, how, seed=11)
    table = open_paimon_table(str(location))
    read = 0
    for split in plan_splits(table):
        names = {Path(str(f.file_path).removeprefix("file:")) for f in split.files}
        if broken not in names:
            batches = direct_batches(table, split, ["status"], ["status"])
            assert batches is not None
            read += sum(b.num_rows for b in batches)
            continue
        with pytest.raises(DataFileError) as direct:
            batches = direct_batches(table, split, ["status"], ["status"])
            assert batches is not None
            list(batches)
        with pytest.raises(DataFileError) as slow:
            read_rows(table, ["status"], [split])
        for info in (direct, slow):
            assert info.value.path == str(broken) and str(broken) in str(info.value)
    assert 0 < read < want
