"""The suite needs nothing beside the repository: the guard in conftest catches reads of the folder beside it."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.self_contained import OUTSIDE_READS
from tests.data import DELETION_VECTORS, FILE_INDEX, GLOBAL_INDEX

REPO = Path(__file__).resolve().parents[1]


def test_guard_records_a_read_beside_the_repo() -> None:
    probe = REPO.parent / "shared" / "vectors" / "no-such-file-bgix-probe"
    with pytest.raises(OSError):
        probe.open("rb")
    assert str(probe) in OUTSIDE_READS.take()  # taken, so this test itself stays green


def test_guard_ignores_reads_inside_the_repo_and_tmp(tmp_path: Path) -> None:
    (tmp_path / "x").write_bytes(b"1")
    (tmp_path / "x").read_bytes()
    (GLOBAL_INDEX / "vectors.tsv").read_text(encoding="utf-8")
    assert OUTSIDE_READS.take() == []


def test_reference_files_are_in_the_tree() -> None:
    assert len(list((GLOBAL_INDEX / "java").glob("*.java.idx"))) >= 20
    assert (GLOBAL_INDEX / "golden" / "category.bitmap.java.idx").is_file()
    assert sorted(p.name for p in DELETION_VECTORS.iterdir() if p.name.startswith("dv")) == ["dvindex-32", "dvindex-64"]
    assert (FILE_INDEX / "vectors.tsv").is_file()


def test_no_test_source_names_the_shared_folder() -> None:
    offenders = [str(p.relative_to(REPO)) for p in (REPO / "tests").rglob("*.py")
                 if p.name != "test_self_contained.py" and '"shared"' in p.read_text(encoding="utf-8")]
    assert offenders == []


def test_guard_ignores_folders_the_run_makes_beside_a_clone_in_the_temp_folder(tmp_path: Path) -> None:
    """A clone at /tmp/<name> has pytest's and the tests' temp folders beside it: not reads beside the repo; a
    folder that stood there before the run (or one that is not there at all) is."""
    from tests.self_contained import OutsideReads

    repo = tmp_path / "clone"
    repo.mkdir()
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "v").write_bytes(b"1")
    guard = OutsideReads(repo).install()
    try:
        made = tmp_path / "tmp-made-later"
        made.mkdir()
        (made / "x").write_bytes(b"1")
        (made / "x").read_bytes()
        (tmp_path / "pytest-of-me").mkdir()
        with pytest.raises(OSError):   # a temp folder of the run, gone by the time it is read
            (tmp_path / "bgix-jobs-gone" / "state.json").open("rb")
        (tmp_path / "shared" / "written.png").write_bytes(b"1")   # a write is no read
        assert guard.take() == []
        (tmp_path / "shared" / "v").read_bytes()
        with pytest.raises(OSError):
            (tmp_path / "absent" / "y").open("rb")
        assert guard.take() == [str(tmp_path / "shared" / "v"), str(tmp_path / "absent" / "y")]
    finally:
        guard.active = False
