"""The `bgix` command line run as a user runs it (its own process): a wrong flag, input or output path gets a
clear message and a non-zero exit, never a traceback or a silently empty answer; files it writes are readable
by others under umask 022 (issue 23). Truth: pyarrow over the source Parquet; file modes from os.stat."""
from __future__ import annotations

import json
import os
import queue
import socket
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

REPO = Path(__file__).resolve().parents[2]
_SCRIPT = Path(sys.executable).with_name("bgix")   # the console script pip installed in this venv
STATUSES = ["ok", "bad", "warn", None]


def bgix(*argv: str, cwd: Path, env: dict[str, str] | None = None,
         umask: int | None = None) -> subprocess.CompletedProcess[str]:
    """Run `bgix argv…` as its own process (the console script when installed, else the same entry point)."""
    cmd = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-c",
                                                   "import sys; from service.cli import main; sys.exit(main())"]
    base = dict(os.environ if env is None else env)
    base.setdefault("PYTHONPATH", str(REPO))
    preexec = (lambda: os.umask(umask)) if umask is not None else None
    return subprocess.run([*cmd, *argv], capture_output=True, text=True, cwd=cwd, env=base, timeout=180,
                          preexec_fn=preexec)


def failed(proc: subprocess.CompletedProcess[str], code: int, *words: str) -> str:
    """Assert a clean failure: exit `code`, no traceback, nothing on stdout, every word in the message."""
    assert proc.returncode == code, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.stdout == "", proc.stdout
    for w in words:
        assert w in proc.stderr, (w, proc.stderr)
    return proc.stderr


@pytest.fixture()
def data(tmp_path: Path) -> Path:
    """d.parquet: a string column `status` (with nulls) and an int column `n`, 1000 rows, fixed seed."""
    status = [STATUSES[(i * 7 + i // 13) % 4] for i in range(1000)]
    pq.write_table(pa.table({"status": status, "n": pa.array([i % 13 for i in range(1000)], pa.int64())}),
                   tmp_path / "d.parquet")
    return tmp_path


def truth(path: Path, column: str, value: object) -> list[int]:
    col = pq.read_table(path, columns=[column]).column(column).to_pylist()
    return [i for i, v in enumerate(col) if v == value]


# -- item 1: a global index file queried as a file-index payload -------------------------------------------

def test_global_index_queried_with_payload_flags_answers_as_the_global_index(data: Path) -> None:
    built = bgix("file", "build", "d.parquet", "--column", "status", "-o", "g.index", cwd=data)
    assert built.returncode == 0, built.stderr
    expected = truth(data / "d.parquet", "status", "ok")
    assert expected   # the answer cannot pass by being empty
    for flags in (["--index-type", "bitmap", "--type", "STRING"], ["--type", "STRING"],
                  ["--index-type", "bsi", "--type", "string"]):
        proc = bgix("file", "query", "g.index", *flags, "--where", "v = 'ok'", "--where", "v IS NULL", cwd=data)
        assert proc.returncode == 0, (flags, proc.stderr)
        assert "Traceback" not in proc.stderr
        ok, nulls = json.loads(proc.stdout)
        assert ok == {"rows": expected, "count": len(expected)}
        assert nulls["rows"] == truth(data / "d.parquet", "status", None)
        if "--index-type" in flags:   # said, not silently ignored
            assert "global bitmap index file, not a" in proc.stderr and "--index-type is not needed" in proc.stderr


def test_global_index_query_without_type_names_the_file_kind_and_the_flag(data: Path) -> None:
    assert bgix("file", "build", "d.parquet", "--column", "n", "-o", "n.index", cwd=data).returncode == 0
    proc = bgix("file", "query", "n.index", "--where", "v = 3", cwd=data)
    failed(proc, 2, "n.index is a global bitmap index file", "add --type", "e.g. --type BIGINT")
    assert bgix("file", "build", "d.parquet", "--column", "status", "-o", "s.index", cwd=data).returncode == 0
    proc = bgix("file", "query", "s.index", "--where", "v = 'ok'", cwd=data)
    failed(proc, 2, "s.index is a global bitmap index file", "--type STRING")
    proc = bgix("file", "query", "n.index", "--schema", "v:BIGINT", "--where", "v = 3", cwd=data)
    failed(proc, 2, "global bitmap index file, not a file-index container", "--type")
    # a --type the keys cannot have: refused, not answered with no rows
    proc = bgix("file", "query", "n.index", "--type", "STRING", "--where", "v = '3'", cwd=data)
    failed(proc, 2, "8-byte binary keys", "not STRING", "--type must be the type of the column")
    proc = bgix("file", "query", "s.index", "--type", "BIGINT", "--where", "v = 3", cwd=data)
    failed(proc, 2, "does not hold BIGINT keys", "--type must be the type of the column")
    proc = bgix("file", "query", "n.index", "--type", "BIGINT", "--where", "v = 3", cwd=data)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)[0]["rows"] == truth(data / "d.parquet", "n", 3)


@pytest.mark.slow
def test_a_payload_read_as_another_type_is_refused(data: Path) -> None:
    for written in ("bitmap", "bsi", "bloom-filter", "range-bitmap"):
        built = bgix("file", "build", "d.parquet", "--column", "n", "--index-type", written, "-o", written, cwd=data)
        assert built.returncode == 0, built.stderr
    # the bsi and bloom-filter readers, like Java's, accepted some other types' bytes: answers [] or "skip"
    for written, asked in (("range-bitmap", "bsi"), ("range-bitmap", "bloom-filter"), ("bloom-filter", "bsi"),
                           ("bitmap", "bsi"), ("range-bitmap", "bitmap")):
        proc = bgix("file", "query", written, "--index-type", asked, "--type", "BIGINT", "--where", "v = 3",
                    cwd=data)
        err = failed(proc, 2, written)
        assert f"not a {asked} payload" in err or f"--index-type {written}?" in err, err
    right = bgix("file", "query", "range-bitmap", "--index-type", "range-bitmap", "--type", "BIGINT",
                 "--where", "v = 3", cwd=data)
    assert right.returncode == 0, right.stderr
    assert json.loads(right.stdout)[0]["rows"] == truth(data / "d.parquet", "n", 3)


def test_a_container_queried_with_index_type_asks_for_its_schema(data: Path) -> None:
    built = bgix("file", "build", "d.parquet", "--file-index-options", "file-index.bitmap.columns=status,n",
                 "-o", "c.fidx", cwd=data)
    assert built.returncode == 0, built.stderr
    proc = bgix("file", "query", "c.fidx", "--index-type", "bitmap", "--type", "STRING", "--where", "v = 'ok'",
                cwd=data)
    failed(proc, 2, "file index container", "--schema")
    proc = bgix("file", "query", "c.fidx", "--schema", "status:STRING,n:BIGINT", "--where", "status = 'ok'",
                cwd=data)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)[0]["rows"] == truth(data / "d.parquet", "status", "ok")


# -- item 3: files are written with the umask's mode ------------------------------------------------------

def test_file_build_writes_world_readable_files_under_umask_022(data: Path) -> None:
    for argv, out in ((["--column", "status"], "g.index"), (["--column", "n", "--index-type", "bsi"], "b.payload"),
                      (["--file-index-options", "file-index.bitmap.columns=n"], "c.fidx")):
        proc = bgix("file", "build", "d.parquet", *argv, "-o", out, cwd=data, umask=0o022)
        assert proc.returncode == 0, proc.stderr
        assert stat.S_IMODE((data / out).stat().st_mode) == 0o644, out
    proc = bgix("file", "build", "d.parquet", "--column", "n", "-o", "private.index", cwd=data, umask=0o077)
    assert proc.returncode == 0, proc.stderr
    assert stat.S_IMODE((data / "private.index").stat().st_mode) == 0o600   # the umask decides, both ways


def _modes(root: Path) -> dict[str, int]:
    return {str(p.relative_to(root)): stat.S_IMODE(p.stat().st_mode) for p in root.rglob("*") if p.is_file()}


def test_build_writes_index_files_sidecars_and_catalog_documents_0644(data: Path) -> None:
    (data / "t").mkdir()
    (data / "d.parquet").rename(data / "t" / "d.parquet")
    proc = bgix("build", "--warehouse", "wh", "--table", "t", "--location", "t", "--column", "status",
                "--engine", "local", cwd=data, umask=0o022)
    assert proc.returncode == 0, proc.stderr
    modes = _modes(data / "wh")
    assert any(p.endswith(".index") for p in modes) and any(p.endswith(".range-bitmap") for p in modes), modes
    assert any(p.startswith("tables/") for p in modes), modes
    assert {p: m for p, m in modes.items() if m != 0o644} == {}


@pytest.mark.slow
def test_paimon_build_writes_index_files_0644(tmp_path: Path) -> None:
    from service.tables.paimon.paimon_writes import WARM_UP_COLUMN, write_warm_up_table

    location = Path(write_warm_up_table(tmp_path / "paimon"))
    before = set(_modes(location))
    proc = bgix("build", "--warehouse", "wh", "--table", "p", "--location", str(location), "--format", "paimon",
                "--column", WARM_UP_COLUMN, "--engine", "local", cwd=tmp_path, umask=0o022)
    assert proc.returncode == 0, proc.stderr
    new = {p: m for p, m in _modes(location).items() if p not in before}
    assert any(p.startswith("index/") and p.endswith(".index") for p in new), new
    assert {p: m for p, m in new.items() if m != 0o644} == {}


# -- item 5: bad input gets a message, not a traceback ----------------------------------------------------

def test_file_build_of_a_file_that_is_not_parquet(data: Path) -> None:
    (data / "notes.csv").write_text("status,n\nok,1\n")
    proc = bgix("file", "build", "notes.csv", "--column", "status", "-o", "x.index", cwd=data)
    failed(proc, 2, "notes.csv is not a Parquet file")
    proc = bgix("file", "build", "notes.csv", "--column", "status", "--index-type", "bitmap", "-o", "x.payload",
                cwd=data)
    failed(proc, 2, "notes.csv is not a Parquet file")
    assert not (data / "x.index").exists() and not (data / "x.payload").exists()


def test_file_build_into_a_missing_directory_creates_nothing(data: Path) -> None:
    proc = bgix("file", "build", "d.parquet", "--column", "n", "-o", "nosuch/dir/x.index", cwd=data)
    failed(proc, 2, "does not exist", str(data / "nosuch" / "dir"))
    assert not (data / "nosuch").exists()
    proc = bgix("file", "build", "d.parquet", "--column", "n", "--index-type", "bitmap", "-o", "nosuch/x", cwd=data)
    failed(proc, 2, "does not exist")
    assert not (data / "nosuch").exists()


def test_file_build_with_a_type_that_does_not_match_the_column(data: Path) -> None:
    for column, given, parquet_type, extra in (("status", "INT", "string", []),
                                               ("n", "STRING", "int64", ["--index-type", "bitmap"]),
                                               ("status", "TIMESTAMP(3)", "string", [])):
        proc = bgix("file", "build", "d.parquet", "--column", column, "--type", given, *extra, "-o", "x", cwd=data)
        failed(proc, 2, f"--type {given}", f"column {column!r}", f"Parquet type is {parquet_type}")
    proc = bgix("file", "build", "d.parquet", "--column", "n", "--type", "INT", "-o", "ok.index", cwd=data)
    assert proc.returncode == 0, proc.stderr   # another width of the same kind is fine


def test_build_of_an_unknown_column_names_the_columns(data: Path) -> None:
    (data / "t").mkdir()
    (data / "d.parquet").rename(data / "t" / "d.parquet")
    proc = bgix("build", "--warehouse", "wh", "--table", "t", "--location", "t", "--column", "nosuch",
                "--engine", "local", cwd=data)
    failed(proc, 1, "no column 'nosuch'", "status, n")


def test_build_with_a_missing_location_registers_nothing(data: Path) -> None:
    proc = bgix("build", "--warehouse", "wh", "--table", "t", "--location", str(data / "nosuch"), "--column", "n",
                "--engine", "local", cwd=data)
    failed(proc, 2, f"--location {data / 'nosuch'} does not exist", "nothing was registered")
    assert not (data / "wh" / "tables" / "t").exists()


# -- item 8: option separators, codec message, serve's start-up lines --------------------------------------

@pytest.mark.slow
def test_options_take_either_separator_in_both_builds(data: Path) -> None:
    opts = "bitmap-index.compression=zstd;bitmap-index.compression-level=3"   # `bgix build` took only ','
    (data / "t").mkdir()
    (data / "d.parquet").rename(data / "t" / "d.parquet")
    proc = bgix("build", "--warehouse", "wh", "--table", "t", "--location", "t", "--column", "status",
                "--engine", "local", "--options", opts, cwd=data)
    assert proc.returncode == 0, proc.stderr
    (snap,) = (data / "wh" / "tables" / "t" / "indexes" / "status" / "snapshots").glob("*.json")
    recorded = json.loads(snap.read_text())["options"]
    assert (recorded["bitmap-index.compression"], recorded["bitmap-index.compression-level"]) == ("zstd", "3")
    payload = "version=1,index-block-size=256b"   # `bgix file build` took only ';'

    proc = bgix("file", "build", "t/d.parquet", "--column", "status", "--index-type", "bitmap", "--options",
                payload, "-o", "p", cwd=data)
    assert proc.returncode == 0, proc.stderr
    proc = bgix("file", "query", "p", "--index-type", "bitmap", "--type", "STRING", "--where", "v = 'ok'", cwd=data)
    assert json.loads(proc.stdout)[0]["rows"] == truth(data / "t" / "d.parquet", "status", "ok")


def test_a_comma_in_a_value_stays_in_the_value(data: Path) -> None:
    opts = "file-index.bitmap.columns=status,n;file-index.bloom-filter.columns=n"
    proc = bgix("file", "build", "d.parquet", "--file-index-options", opts, "-o", "c.fidx", cwd=data)
    assert proc.returncode == 0, proc.stderr
    proc = bgix("file", "inspect", "c.fidx", cwd=data)
    doc = json.loads(proc.stdout)
    assert sorted(json.dumps(doc).count(c) > 0 for c in ('"status"', '"n"')) == [True, True], doc


def test_codec_errors_say_lzo_is_read_only(data: Path) -> None:
    (data / "t").mkdir()
    (data / "d.parquet").rename(data / "t" / "d.parquet")
    for codec, words in (("foo", ["writable: none, zstd, lz4", "lzo can only be read"]),
                         ("lzo", ["can be read but not written", "none, zstd"])):
        proc = bgix("build", "--warehouse", "wh", "--table", "t", "--location", "t", "--column", "status",
                    "--engine", "local", "--options", f"bitmap-index.compression={codec}", cwd=data)
        err = failed(proc, 1, *words)
        assert "expected none, zstd, lz4 or lzo" not in err


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _serve_lines(cwd: Path, env: dict[str, str], workers: int, want: str) -> str:
    """stderr of `bgix serve` until a line containing `want` appears (then the server is stopped)."""
    port = _free_port()
    cmd = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-c",
                                                   "import sys; from service.cli import main; sys.exit(main())"]
    proc = subprocess.Popen([*cmd, "serve", "--port", str(port), "--workers", str(workers)], cwd=cwd, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    lines: queue.Queue[str] = queue.Queue()
    assert proc.stderr is not None
    reader = threading.Thread(target=lambda: [lines.put(ln) for ln in proc.stderr], daemon=True)  # type: ignore
    reader.start()
    seen = []
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                line = lines.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                break
            seen.append(line)
            if want in line:
                return "".join(seen).replace(str(port), "PORT")
    finally:
        proc.terminate()
        proc.wait(30)
        reader.join(30)        # it ends at the pipe's end, then the pipe is closed
        proc.stderr.close()
    raise AssertionError("".join(seen))


@pytest.mark.slow
def test_serve_prints_the_warehouse_and_warns_about_a_relative_default(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k.upper() != "BGIX_WAREHOUSE"}
    env.setdefault("PYTHONPATH", str(REPO))
    out = _serve_lines(tmp_path, env, 2, "serving on")
    assert "Traceback" not in out
    assert f"warehouse {tmp_path / 'warehouse'}" in out
    assert "BGIX_WAREHOUSE is not set" in out and "does not exist" in out
    assert "serving on http://127.0.0.1:PORT with 2 workers" in out
    (tmp_path / "wh").mkdir()
    out = _serve_lines(tmp_path, {**env, "BGIX_WAREHOUSE": str(tmp_path / "wh")}, 1, "Uvicorn running")
    assert f"warehouse {tmp_path / 'wh'}" in out and "has no tables" in out
    assert "BGIX_WAREHOUSE is not set" not in out and "does not exist" not in out


def test_serve_with_a_bad_setting_says_which(tmp_path: Path) -> None:
    proc = bgix("serve", "--port", "0", "--workers", "1", cwd=tmp_path, env={**os.environ, "BGIX_CACHE_BYTES": "abc"})
    failed(proc, 2, "bad BGIX_* setting", "cache_bytes", "abc")


def test_file_build_takes_the_global_index_options_create_global_index_takes(data: Path) -> None:
    """`--options` on a global index build was silently ignored; now it applies Paimon's keys (the same file as
    the flag it stands for) and refuses what it cannot write."""
    by_flag = bgix("file", "build", "d.parquet", "--column", "n", "--compression", "zstd", "-o", "a.index", cwd=data)
    by_option = bgix("file", "build", "d.parquet", "--column", "n", "--options",
                     "bitmap-index.compression=zstd,bitmap-index.compression-level=1", "-o", "b.index", cwd=data)
    plain = bgix("file", "build", "d.parquet", "--column", "n", "-o", "c.index", cwd=data)
    assert by_flag.returncode == by_option.returncode == plain.returncode == 0, (by_option.stderr, plain.stderr)
    assert (data / "a.index").read_bytes() == (data / "b.index").read_bytes() != (data / "c.index").read_bytes()
    failed(bgix("file", "build", "d.parquet", "--column", "n", "--options", "bitmap-index.compression=lzo",
                "-o", "d.index", cwd=data), 2, "lzo", "can be read but not written")
    failed(bgix("file", "build", "d.parquet", "--column", "n", "--options", "nope=1", "-o", "d.index", cwd=data),
           2, "unknown option 'nope'")
    assert not (data / "d.index").exists()
