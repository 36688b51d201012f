"""`bgix file build` run as its own process loads only what it needs: none of the web, SQL, Paimon, pandas
or Spark stacks (each a noticeable share of a command-line build's time), and not pyarrow.parquet's
filesystem layer. Ground truth: the child's own sys.modules after the command, and its index file read
back against the Parquet rows."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from index_format import open_index

REPO = Path(__file__).resolve().parents[2]
# imported by `file build` at some time or other, or close to it (pyarrow.parquet imports pyarrow.fs; its
# read_table and to_numpy import pandas; pyarrow.compute is the large-dictionary ranking's only)
HEAVY = ("pandas", "pydantic", "fastapi", "starlette", "uvicorn", "sqlglot", "pypaimon", "pypaimon_rust", "httpx",
         "pyspark", "pyarrow.dataset", "pyarrow.compute", "pyarrow.fs", "pyarrow.parquet", "concurrent.futures",
         "zstandard", "lz4")

# the console script's own call (main() reads sys.argv), then the modules it left loaded
_RUNNER = ("import json, sys\n"
           "from service.cli import main\n"
           "code = main()\n"
           "sys.stderr.write('MODULES ' + json.dumps(sorted(sys.modules)) + '\\n')\n"
           "sys.exit(code)\n")


def _run(*argv: str) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.run([sys.executable, "-c", _RUNNER, *argv], capture_output=True, text=True, env=env,
                          cwd=REPO, timeout=120)
    line = [ln for ln in proc.stderr.splitlines() if ln.startswith("MODULES ")]
    assert line, proc.stderr
    return proc, set(json.loads(line[-1][len("MODULES "):]))


def test_file_build_loads_no_heavy_module(tmp_path: Path) -> None:
    words = [None if i % 11 == 0 else f"w{i % 37:02d}" for i in range(5000)]
    src, out = tmp_path / "in.parquet", tmp_path / "w.index"
    pq.write_table(pa.table({"w": words, "n": list(range(5000))}), src)
    proc, modules = _run("file", "build", str(src), "--column", "w", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "index_format.global_index.writer" in modules   # the runner saw the build's modules
    assert sorted(m for m in HEAVY if m in modules) == []
    reader = open_index(str(out), "string")
    assert sorted(reader.null_rows()) == [i for i, w in enumerate(words) if w is None]
    for w in ("w00", "w36"):
        assert sorted(reader.eq(w)) == [i for i, x in enumerate(words) if x == w]


def test_file_build_of_ints_with_row_ids_loads_no_heavy_module(tmp_path: Path) -> None:
    src, out = tmp_path / "in.parquet", tmp_path / "n.index"
    pq.write_table(pa.table({"n": [i % 7 for i in range(3000)], "rid": [10 * i for i in range(3000)]}), src)
    proc, modules = _run("file", "build", str(src), "--column", "n", "--row-id-column", "rid", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert sorted(m for m in HEAVY if m in modules) == []
    assert sorted(open_index(str(out), "bigint").eq(3)) == [10 * i for i in range(3000) if i % 7 == 3]
