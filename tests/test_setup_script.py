"""scripts/setup.sh says what it installs (a first run spends about 2 minutes making `.venv`): its `--dry-run` in a
copy of the set-up files without a `.venv` prints the first run's lines and runs nothing, and an up-to-date `.venv`
says so. The judge of what bgix and the extras bring is pyproject.toml, read with tomllib."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _copy(tmp_path: Path) -> Path:
    (tmp_path / "scripts").mkdir()
    shutil.copy(REPO / "scripts" / "setup.sh", tmp_path / "scripts" / "setup.sh")
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


def _dry_run(root: Path) -> list[str]:
    # a script without the flag would really install (minutes): fail at once instead
    assert "--dry-run" in (root / "scripts" / "setup.sh").read_text(), "scripts/setup.sh has no --dry-run"
    env = dict(os.environ, PYTHON=sys.executable, BGIX_SKIP_APT="1")
    out = subprocess.run(["bash", str(root / "scripts" / "setup.sh"), "--dry-run"], env=env, capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout == ""   # the lines go to stderr: stdout is the caller's (scripts/demo.sh's demo output)
    return [line for line in out.stderr.splitlines() if line.startswith("[setup] ")]


def _extras(lines: list[str]) -> str:
    """The extras of the pip command the dry run would run."""
    command = next(line for line in lines if "would run:" in line and " -e " in line)
    found = re.search(r" -e \.\[([^\]]+)\]", command)
    assert found, command
    return found.group(1)


def _names(requirements: list[str]) -> list[str]:
    return [re.split(r"[<>=!~;\[ ]", r, maxsplit=1)[0] for r in requirements]


def test_a_first_run_says_what_it_installs_before_the_long_wait(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    lines = _dry_run(root)
    assert lines, lines
    assert "about 2 minutes" in lines[0] and ".venv" in lines[0], lines[0]
    assert any(line.startswith("[setup] creating .venv with Python 3.") for line in lines), lines
    # the extras the pip command really installs, and every package pyproject.toml lists for bgix and for them
    extras = _extras(lines).split(",")
    project = tomllib.loads((root / "pyproject.toml").read_text())["project"]
    said = next(line for line in lines if line.startswith("[setup] pip install -e "))
    for extra in extras:
        assert f"[{extra}]" in lines[0] and f"[{extra}]" in said, (extra, said)
        for name in _names(project["optional-dependencies"][extra]):
            assert re.search(rf"[(, ]{re.escape(name)}[,)]", said), (name, said)
    for name in _names(project["dependencies"]):
        assert re.search(rf"[(, ]{re.escape(name)}[,)]", said), (name, said)
    assert not (root / ".venv").exists()   # a dry run makes nothing


def test_an_up_to_date_venv_says_so_and_names_its_extras(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    extras = _extras(_dry_run(root))
    python = root / ".venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text("#!/bin/sh\n")
    python.chmod(0o755)
    stamp = root / ".venv" / ".bgix-installed"
    stamp.touch()
    os.utime(root / "pyproject.toml", (1, 1))   # older than the stamp: nothing to install
    assert _dry_run(root) == [f"[setup] .venv is up to date (bgix with its [{extras}] extras); nothing to install"]
