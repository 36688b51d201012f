"""bgix's commits never replace a snapshot file another writer put in place first, and one another writer replaced
is made again.

Paimon's snapshot commit is "rename snapshot-N into place unless it exists". pypaimon checks and then renames, so a
writer in another process (pypaimon-rust, Spark) whose snapshot-N lands between the check and the rename was
overwritten: its commit lost although it had reported success (and, the other way round, bgix's lost: the rare
concurrent-writers failure). The test puts the rival's snapshot-N in place at exactly that moment, by letting
every existence check of snapshot-N answer "absent" until bgix's writer tries to put its own there.
"""
from __future__ import annotations

import json
import os
import pathlib
import random
from pathlib import Path

import pyarrow as pa
import pytest
from pypaimon.filesystem.local_file_io import LocalFileIO
from pypaimon.index.index_file_handler import IndexFileHandler

from service.build_job.worker import build_tasks
from service.catalog import Table
from service.jobs.jobspec import JobSpec
from service.tables.build_tasks import RESULT_SCHEMA
from service.tables.paimon import open_paimon_table, table_storage
from service.tables.paimon.commit import SnapshotReplacedError, commit_index_files, commit_messages, writable_table
from service.tables.paimon.location import PaimonLocation
from service.tables.paimon.no_replace_io import NoReplaceLocalFileIO
from service.tables.paimon.paimon_source import PaimonSource, built_files
from tests.unit.tables.paimon.paimon_tables import create_table, make_rows, pypaimon_read, pypaimon_table


def _rival_lands_between_check_and_rename(monkeypatch: pytest.MonkeyPatch, target: Path, rival: str) -> dict:
    """Until a rename or link onto `target` is tried, `target` reads as absent; the rival's file is put there as
    soon as the writer first looks (so it lands after that writer's check, before its rename)."""
    state = {"tried": False, "placed": False}
    real_path_exists, real_io_exists = pathlib.Path.exists, LocalFileIO.exists
    real_rename, real_link = pathlib.Path.rename, os.link

    def hidden(path: object) -> bool:
        if Path(str(path).removeprefix("file://")) != target or state["tried"]:
            return False
        if not state["placed"]:
            target.write_text(rival)
            state["placed"] = True
        return True

    def path_exists(self: pathlib.Path, *a: object, **k: object) -> bool:
        return False if hidden(self) else real_path_exists(self, *a, **k)

    def io_exists(self: LocalFileIO, path: str) -> bool:
        return False if hidden(path) else real_io_exists(self, path)

    def rename(self: pathlib.Path, dst: object) -> object:
        if Path(str(dst)) == target:
            state["tried"] = True
        return real_rename(self, dst)

    def link(src: object, dst: object, *a: object, **k: object) -> None:
        if Path(str(dst)) == target:
            state["tried"] = True
        return real_link(src, dst, *a, **k)

    monkeypatch.setattr(pathlib.Path, "exists", path_exists)
    monkeypatch.setattr(LocalFileIO, "exists", io_exists)
    monkeypatch.setattr(pathlib.Path, "rename", rename)
    monkeypatch.setattr(os, "link", link)
    return state


def test_the_rivals_snapshot_stays_and_ours_commits_after_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    location = create_table(tmp_path, "t", commits=1, rows=40)
    writable = writable_table(PaimonLocation(str(tmp_path), "db", "t"))
    assert isinstance(writable.file_io.delegate, NoReplaceLocalFileIO)   # inside the roots' ConfinedFileIO
    before = pypaimon_read(location, ["status", "code"]).num_rows
    n = int(writable.snapshot_manager().get_latest_snapshot().id)
    # the rival: an empty commit on top of snapshot n, by another commit user (what pypaimon-rust's would be)
    rival = json.loads((location / "snapshot" / f"snapshot-{n}").read_text())
    rival.update(id=n + 1, commitUser="rival-writer", commitIdentifier=7)
    target = location / "snapshot" / f"snapshot-{n + 1}"

    wb = writable.new_batch_write_builder()
    write = wb.new_write()
    write.write_arrow(make_rows(random.Random(3), 25))
    messages = write.prepare_commit()
    write.close()
    state = _rival_lands_between_check_and_rename(monkeypatch, target, json.dumps(rival))
    sid = commit_messages(writable, messages, after=n)
    monkeypatch.undo()

    assert state["placed"] and state["tried"], "the race was not staged"
    assert json.loads(target.read_text())["commitUser"] == "rival-writer", "the rival's snapshot was replaced"
    assert sid == n + 2
    assert pypaimon_read(location, ["status", "code"]).num_rows == before + 25


def test_rename_onto_an_existing_file_fails_and_keeps_both(tmp_path: Path) -> None:
    io = NoReplaceLocalFileIO(str(tmp_path))
    (tmp_path / "a").write_text("mine")
    (tmp_path / "b").write_text("theirs")
    assert io.rename(str(tmp_path / "a"), str(tmp_path / "b")) is False
    assert (tmp_path / "b").read_text() == "theirs" and (tmp_path / "a").read_text() == "mine"
    assert io.rename(str(tmp_path / "a"), str(tmp_path / "sub" / "c")) is True
    assert (tmp_path / "sub" / "c").read_text() == "mine" and not (tmp_path / "a").exists()
    assert io.rename(str(tmp_path / "missing"), str(tmp_path / "d")) is False


def _built(location: Path) -> tuple[object, list, object]:
    """A bgix build of `status` on the table, written but not committed: (pinned table, files, storage)."""
    pt = open_paimon_table(str(location))
    spec = JobSpec(job_id="replaced", warehouse=str(location), table="t", index_column="status",
                   table_format="paimon", options={"sorted-index.records-per-range": "10000"})
    plan = PaimonSource(None, Table("t", str(location), "paimon")).plan_build(spec)  # type: ignore[arg-type]
    written = pa.Table.from_batches(list(build_tasks(range(plan.tasks), plan)), schema=RESULT_SCHEMA)
    return pt, built_files(plan, written), table_storage(pt)


def _replace_after_rename(monkeypatch: pytest.MonkeyPatch, location: Path, times: int) -> list[int]:
    """The first `times` snapshots bgix renames into place are replaced at once by a rival's (what a writer whose
    snapshot write checks and then renames does when it checked before ours landed); returns their ids."""
    replaced: list[int] = []
    real = NoReplaceLocalFileIO.rename

    def rename(self: NoReplaceLocalFileIO, src: str, dst: str) -> bool:
        done = real(self, src, dst)
        name = Path(dst).name
        if done and name.startswith("snapshot-") and len(replaced) < times:
            n = int(name.removeprefix("snapshot-"))
            rival = json.loads((location / "snapshot" / f"snapshot-{n - 1}").read_text())
            rival.update(id=n, commitUser="rival-writer", commitIdentifier=100 + n)
            Path(dst).write_text(json.dumps(rival))
            replaced.append(n)
        return done

    monkeypatch.setattr(NoReplaceLocalFileIO, "rename", rename)
    return replaced


def test_a_commit_another_writer_replaced_is_made_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    location = create_table(tmp_path, "t", commits=2, rows=300)
    pt, files, storage = _built(location)
    n = pt.snapshot_id
    replaced = _replace_after_rename(monkeypatch, location, times=1)
    sid = commit_index_files(pt, files, storage)
    monkeypatch.undo()
    assert replaced == [n + 1] and sid == n + 2
    assert json.loads((location / "snapshot" / f"snapshot-{n + 1}").read_text())["commitUser"] == "rival-writer"
    # pypaimon's own listing: the committed files are there and exist on disk
    listed = {str(e.index_file.file_name) for e in IndexFileHandler(table=pypaimon_table(location)).scan(None)
              if e.index_file.index_type == "bitmap"}
    assert listed == {f.file_name for f in files}
    assert all(Path(f.path).exists() for f in files)


def test_a_writer_that_keeps_replacing_fails_the_commit_cleanly(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    location = create_table(tmp_path, "t", commits=2, rows=300)
    pt, files, storage = _built(location)
    replaced = _replace_after_rename(monkeypatch, location, times=99)
    with pytest.raises(SnapshotReplacedError, match="another writer's rename replaced it"):
        commit_index_files(pt, files, storage)
    monkeypatch.undo()
    assert len(replaced) == 3, "three attempts"
    assert not any(Path(f.path).exists() for f in files), "the build's files are deleted: no snapshot holds them"
    assert not [e for e in IndexFileHandler(table=pypaimon_table(location)).scan(None)
                if e.index_file.index_type == "bitmap"]
