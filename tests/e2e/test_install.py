"""`pip install bgix` with no extras serves Paimon and plain tables (issue 33, item 1).

The checkout's files (what git tracks or would track) are built into an sdist and a wheel from that sdist with
`python -m build`, as a release is; their contents are checked against the tree. The wheel then goes into a fresh
venv (not the project's .venv, no PYTHONPATH) without extras; from there every module must import but the
Spark-only ones, and `bgix serve` registers a Paimon table pypaimon wrote and a plain Parquet table, builds an index
on each (local engine) and answers a predicate as pyarrow does over the source rows (pypaimon's read of the Paimon
rows). /docs and /redoc load their assets from that install; a Spark build names the extra it needs.

Cost (~15 s on two cores): the builds ~3 s, the fresh venv's `pip install` ~6 s (from WHEELS, no bytecode compiled),
the imports ~4 s, serving ~2 s.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import tomllib
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from tests.api.helpers import wait_job
from tests.api.server import bgix_process
from tests.unit.tables.paimon.paimon_tables import create_table, pypaimon_read

pytestmark = [pytest.mark.install, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("index_format", "service")
# An sdist's own files beside the packages: the metadata setuptools writes, and what the build reads.
SDIST_EXTRAS = {"PKG-INFO", "setup.cfg", "pyproject.toml", "README.md", "MANIFEST.in"}
WHERE = "status = 'error' AND code > 0"
# The wheels of bgix's dependencies (and of its build requirements), kept between runs: pip installs from here
# without the network (~200 MB; 6 s rather than 8 s for the venv here). Per user, like the Spark CDS archives.
WHEELS = Path(tempfile.gettempdir()) / f"bgix-install-wheels-{os.getuid()}"


@dataclass
class Dists:
    src: Path          # the checkout's files, copied
    sdist: Path
    wheel: Path
    tmp: Path


def _run(args: list[str | Path], log: Path, **kwargs: Any) -> None:
    """Run a command with its output in `log`; a failure shows the log's tail."""
    with open(log, "ab") as out:
        done = subprocess.run([str(a) for a in args], stdout=out, stderr=subprocess.STDOUT, **kwargs)
    assert done.returncode == 0, f"{args} failed ({done.returncode}):\n{log.read_text()[-3000:]}"


def _clean_env(**extra: str) -> dict[str, str]:
    """This process's environment without what would let the fresh venv see the project's code or venv."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON")}
    return {**env, "PYTHONNOUSERSITE": "1", **extra}


def _venv(path: Path, log: Path, *requirements: str | Path) -> Path:
    """A venv at `path` without pip of its own (the project's pip installs into it: no ensurepip to pay for), with
    `requirements` installed from WHEELS alone; what WHEELS lacks (the first run, a new dependency) is downloaded
    into it from the package index first. No bytecode is compiled: the imports compile what they use."""
    _run([sys.executable, "-m", "venv", "--without-pip", path], log)
    python = path / "bin" / "python"
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check"]
    install = [*pip, "--python", python, "install", "--no-compile", "--no-index", "--find-links", WHEELS,
               *requirements]
    if subprocess.run([str(a) for a in install], capture_output=True, env=_clean_env(), cwd=path).returncode:
        WHEELS.mkdir(parents=True, exist_ok=True)
        _run([*pip, "download", "--dest", WHEELS, *requirements], log, env=_clean_env(), cwd=path)
        for ours in WHEELS.glob("bgix-*"):   # the wheel under test is named by its path, never taken from here
            ours.unlink()
        _run(install, log, env=_clean_env(), cwd=path)
    return python


@pytest.fixture(scope="module")
def dists(tmp_path_factory: pytest.TempPathFactory) -> Dists:
    tmp = tmp_path_factory.mktemp("install")
    src = tmp / "src"
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        if (ROOT / name).is_file():   # a tracked file deleted in the work tree is no longer there
            (src / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, src / name)
    requires = tomllib.loads((src / "pyproject.toml").read_text())["build-system"]["requires"]
    builder = _venv(tmp / "build-env", tmp / "build.log", *requires, "build")
    # `python -m build` builds the sdist, then the wheel from the unpacked sdist (so the sdist must be whole)
    _run([builder, "-m", "build", "--no-isolation", "--outdir", tmp / "dist", src], tmp / "build.log",
         env=_clean_env())
    (sdist,) = (tmp / "dist").glob("*.tar.gz")
    (wheel,) = (tmp / "dist").glob("*.whl")
    return Dists(src=src, sdist=sdist, wheel=wheel, tmp=tmp)


def _package_files(src: Path) -> set[str]:
    """Every file of the two packages in the checkout: modules, py.typed, the dashboard's static files and
    templates."""
    return {p.relative_to(src).as_posix() for top in PACKAGES for p in (src / top).rglob("*") if p.is_file()}


def test_sdist_and_wheel_hold_the_packages_and_nothing_else(dists: Dists) -> None:
    expected = _package_files(dists.src)
    assert {"index_format/py.typed", "service/py.typed", "service/api/templates/dashboard.html",
            "service/api/static/dashboard.js", "service/cli/__init__.py"} <= expected

    with zipfile.ZipFile(dists.wheel) as whl:
        in_wheel = {n for n in whl.namelist() if not n.endswith("/")}
    info = {n for n in in_wheel if n.split("/", 1)[0].endswith(".dist-info")}
    assert in_wheel - info == expected

    with tarfile.open(dists.sdist) as tar:
        top = dists.sdist.name.removesuffix(".tar.gz")
        in_sdist = {m.name.removeprefix(f"{top}/") for m in tar.getmembers() if m.isfile()}
    packaged = {n for n in in_sdist if n.split("/", 1)[0] in PACKAGES}
    assert packaged == expected
    others = in_sdist - packaged
    assert {n for n in others if not n.startswith("bgix.egg-info/")} <= SDIST_EXTRAS, "tests, bench, docs, …"
    assert {"pyproject.toml", "README.md"} <= others


# Run in the fresh venv: where bgix was imported from, which modules fail to import (and on what), which of the
# extras' packages are absent.
_PROBE = """
import importlib, importlib.util, json, pkgutil
import index_format, service
failed = {}
for pkg in (index_format, service):
    for m in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + "."):
        if m.name.endswith(".__main__"):
            continue   # runs a program
        try:
            importlib.import_module(m.name)
        except ImportError as exc:
            failed[m.name] = exc.name or repr(exc)
print(json.dumps({"files": [index_format.__file__, service.__file__], "failed": failed,
                  "absent": [n for n in ("pyspark", "s3fs", "pytest") if importlib.util.find_spec(n) is None]}))
"""


def _spark_modules() -> list[str]:
    """The modules allowed to import pyspark: pyproject.toml's import-linter contract ('pyspark only in …')."""
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    (contract,) = [c for c in contracts if c.get("forbidden_modules") == ["pyspark"]]
    return [rule.split(" -> ")[0] for rule in contract["ignore_imports"]]


def _may_need_spark(module: str, allowed: list[str]) -> bool:
    return any(module == a or (a.endswith(".**") and module.startswith(a[:-2])) for a in allowed)


@pytest.fixture(scope="module")
def venv(dists: Dists) -> Iterator[Path]:
    path = dists.tmp / "venv"
    _venv(path, dists.tmp / "install.log", dists.wheel)
    yield path / "bin"


def _rows_matching(table: pa.Table) -> list[int]:
    """The row ids where WHERE holds (SQL: a NULL operand is never TRUE), by pyarrow."""
    hit = pc.fill_null(pc.and_(pc.equal(table["status"], "error"), pc.greater(table["code"], 0)), False)
    return sorted(table.filter(hit)["_ROW_ID"].to_pylist())


def _build_and_query(http: httpx.Client, table: str, body: dict[str, Any]) -> dict[str, Any]:
    r = http.put(f"/v1/tables/{table}", json=body)
    assert r.status_code == 200, r.text
    r = http.post("/v1/create_global_index", json={"table": table, "index_column": "status"})
    assert r.status_code == 202, r.text
    job = wait_job(http, r.json()["job_id"])
    assert job["state"] == "succeeded", job
    r = http.post(f"/v1/tables/{table}/query", json={"where": WHERE, "limit": 100_000})
    assert r.status_code == 200, r.text
    answer: dict[str, Any] = r.json()
    assert answer["exact"] is True and answer["coverage"]["complete"] is True, answer
    return answer


def test_a_fresh_install_without_extras_serves_paimon_and_plain_tables(venv: Path, dists: Dists) -> None:
    probe = subprocess.run([venv / "python", "-c", _PROBE], env=_clean_env(), cwd=dists.tmp,
                           capture_output=True, text=True)
    assert probe.returncode == 0, probe.stderr
    found = json.loads(probe.stdout)
    site = venv.parent / "lib"
    assert all(Path(f).is_relative_to(site) for f in found["files"]), found["files"]   # not the checkout's
    assert found["absent"] == ["pyspark", "s3fs", "pytest"], "an extra's package came with the base install"
    allowed = _spark_modules()
    assert {m: name for m, name in found["failed"].items()
            if not (name.split(".")[0] == "pyspark" and _may_need_spark(m, allowed))} == {}

    wh = dists.tmp / "wh"
    paimon = create_table(wh / "source" / "paimon", "events", commits=2, rows=600)   # pypaimon writes it
    plain = wh / "source" / "plain"
    plain.mkdir(parents=True)
    paimon_rows = pypaimon_read(paimon, ["status", "code", "flag", "dt"])
    for i, part in enumerate((paimon_rows.slice(0, 500), paimon_rows.slice(500))):
        pq.write_table(part.drop_columns(["_ROW_ID"]), plain / f"part-{i}.parquet")

    env = _clean_env(PATH=f"{venv}{os.pathsep}{os.environ.get('PATH', '')}", BGIX_WAREHOUSE=str(wh),
                     BGIX_BUILD_ENGINE="local", BGIX_BUILD_PREWARM="false")
    env.pop("BGIX_ALLOWED_ROOTS", None)
    with bgix_process({}, dists.tmp / "serve.log", bgix=venv / "bgix", base_env=env) as (url, _), \
            httpx.Client(base_url=url, timeout=60.0) as http:
        got = _build_and_query(http, "pevents", {"format": "paimon", "location": str(paimon)})
        assert got["row_ids"] == _rows_matching(paimon_rows)

        got = _build_and_query(http, "events", {"format": "parquet", "location": str(plain)})
        files = sorted(http.get("/v1/tables/events/files").json()["files"], key=lambda f: f["first_row_id"])
        parts = [pq.read_table(f["path"]) for f in files]   # the row values from pyarrow, in row-id order
        rows = pa.concat_tables(parts).append_column("_ROW_ID", pa.array(range(sum(len(p) for p in parts))))
        assert [f["first_row_id"] for f in files] == [0, 500]
        assert got["row_ids"] == _rows_matching(rows)

        for page in ("/docs", "/redoc"):   # offline API docs: every asset from this install
            html = http.get(page).raise_for_status().text
            assert "://" not in html, html
            assets = re.findall(r'(?:src|href)="(/[^"]+)"', html)
            assert any(a.endswith(".js") for a in assets), html
            for asset in assets:
                r = http.get(asset)
                assert r.status_code == 200 and r.content, asset

    # Spark builds are the spark extra's: without it a Spark build (`bgix build`'s default engine, as the service's)
    # says what to install rather than only "No module named 'pyspark'".
    spark_build = subprocess.run([venv / "bgix", "build", "--warehouse", wh, "--table", "events", "--column", "flag"],
                                 env=env, cwd=dists.tmp, capture_output=True, text=True)
    assert spark_build.returncode == 1 and "pip install 'bgix[spark]'" in spark_build.stderr, spark_build.stderr
