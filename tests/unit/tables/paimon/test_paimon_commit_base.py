"""A bgix build never commits over a snapshot whose index manifest is lost.

pypaimon reads a missing index manifest as one listing nothing, and its commit carries the previous index manifest
over by reading it: a commit over the lost file wrote a snapshot without the deletion vectors (and the other
index files) the lost one listed, so every reader saw the deleted rows again. The build here is planned and
written while the table is healthy; the file goes before the commit (the window a build's tasks leave).

Judges: pypaimon (its snapshot manager, its read of the rows once the file is back).
"""
from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow as pa
import pytest
from pypaimon.globalindex.create_global_index import create_global_index

from service.build_job.worker import build_tasks
from service.catalog import Table
from service.catalog.catalog_errors import CorruptTableMetadataError
from service.jobs.jobspec import JobSpec
from service.tables.build_tasks import RESULT_SCHEMA
from service.tables.paimon import open_paimon_table, table_storage
from service.tables.paimon.commit import commit_index_files
from service.tables.paimon.paimon_source import PaimonSource, built_files
from tests.unit.tables.paimon.corrupt_tables import metadata_file
from tests.unit.tables.paimon.paimon_tables import create_table, delete_rows, pypaimon_read, pypaimon_table

DELETED = list(range(0, 120, 3))


def test_a_build_whose_base_lost_its_index_manifest_commits_nothing(tmp_path: Path) -> None:
    location = create_table(tmp_path, "t", commits=2, rows=150)
    assert create_global_index(pypaimon_table(location), "status", index_type="bitmap") > 0
    delete_rows(location, DELETED)
    live = sorted(r["_ROW_ID"] for r in pypaimon_read(location, ["status"]).to_pylist())
    assert len(live) == 300 - len(DELETED)

    pinned = open_paimon_table(str(location))
    spec = JobSpec(job_id="base", warehouse=str(location), table="t", index_column="flag",
                   table_format="paimon", options={})
    plan = PaimonSource(None, Table("t", str(location), "paimon")).plan_build(spec)  # type: ignore[arg-type]
    written = pa.Table.from_batches(list(build_tasks(range(plan.tasks), plan)), schema=RESULT_SCHEMA)
    files = built_files(plan, written)
    assert files and all(Path(f.path).exists() for f in files)

    manifest = metadata_file(location, "index_manifest")
    kept = tmp_path / "kept-index-manifest"
    shutil.move(manifest, kept)
    sid = pinned.snapshot_id
    with pytest.raises(CorruptTableMetadataError) as info:
        commit_index_files(pinned, files, table_storage(pinned))
    assert info.value.path == str(manifest) and "missing" in info.value.reason

    assert pypaimon_table(location).snapshot_manager().get_latest_snapshot().id == sid   # nothing committed
    assert not any(Path(f.path).exists() for f in files)   # the build's files were taken back
    shutil.move(kept, manifest)
    assert sorted(r["_ROW_ID"] for r in pypaimon_read(location, ["status"]).to_pylist()) == live
