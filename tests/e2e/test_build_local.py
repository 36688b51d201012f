"""The build job with engine "local" (same plan and worker code, no Spark): formats, row-id errors,
SIGKILL mid-job, two job processes racing to commit, and the `bgix build` command."""
from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.parquet as pq
import pytest

from index_format.storage import Storage
from service.build_job.main import run_job
from service.catalog import Catalog, RowIdError, Table
from service.cli import main as bgix_main
from tests.api.helpers import wait_until
from tests.factories import (
    append_file, assert_index_matches, index_answer, make_parquet_table, make_rows, oracle_table,
)

R = {"sorted-index.records-per-range": "1000"}
REPO = Path(__file__).resolve().parents[2]


def _catalog(tmp_path: Path) -> tuple[Catalog, Path]:
    wh = tmp_path / "wh"
    wh.mkdir(exist_ok=True)
    return Catalog(Storage(str(wh), [str(tmp_path)])), wh


def _spec(wh: Path, job: str, column: str, **kw: Any) -> dict[str, Any]:
    return {"job_id": job, "warehouse": str(wh), "allowed_roots": [str(wh.parent)], "table": "t",
            "index_column": column, "options": dict(R), "engine": "local", **kw}


def test_csv_table_local_engine(tmp_path: Path) -> None:
    loc = tmp_path / "csv"
    files = []
    for i, n in enumerate((400, 900)):
        f = loc / f"p{i}.csv"
        f.parent.mkdir(exist_ok=True)
        pcsv.write_csv(make_rows(n, seed=i).select(["n", "b"]), f)
        files.append(f)
    cat, wh = _catalog(tmp_path)
    cat.put_table(Table("t", str(loc), format="csv"))
    snap = run_job(_spec(wh, "j1", "n"))
    oracle_parts, next_id = [], 0
    for f in files:  # pyarrow's csv reader, positions counted here
        t = pcsv.read_csv(f).select(["n"])
        oracle_parts.append(t.append_column("_row_id", pa.array(np.arange(next_id, next_id + t.num_rows))))
        next_id += t.num_rows
    assert assert_index_matches(cat, snap, pa.concat_tables(oracle_parts), "n") > 5


def test_row_id_column_errors(tmp_path: Path) -> None:
    loc = tmp_path / "rid"
    loc.mkdir()
    base = make_rows(10, seed=1)
    pq.write_table(base.append_column("rid", pa.array([1, 2, 3, 4, 5, 6, 7, 8, 9, 3], pa.int64())), loc / "a.parquet")
    cat, wh = _catalog(tmp_path)
    cat.put_table(Table("t", str(loc), row_id_column="rid"))
    with pytest.raises(RowIdError, match="duplicate value 3"):
        run_job(_spec(wh, "j1", "s"))
    pq.write_table(base.append_column("rid", pa.array([1, 2, None, 4, 5, 6, 7, 8, 9, 10], pa.int64())),
                   loc / "a.parquet")
    with pytest.raises(RowIdError, match="null"):
        run_job(_spec(wh, "j2", "s"))
    pq.write_table(base.append_column("rid", pa.array([1, 2, -3, 4, 5, 6, 7, 8, 9, 10], pa.int64())),
                   loc / "a.parquet")
    with pytest.raises(RowIdError, match="negative"):
        run_job(_spec(wh, "j3", "s"))


def _spawn(tmp_path: Path, spec: dict[str, Any], name: str) -> subprocess.Popen[str]:
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(spec))
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen([sys.executable, "-m", "service.build_job.main", "--spec", str(path)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


@pytest.mark.slow
def test_sigkill_mid_job_leaves_old_snapshot_and_next_run_cleans_up(tmp_path: Path) -> None:
    gen = make_parquet_table(tmp_path, rows_per_file=(500, 700))
    cat, wh = _catalog(tmp_path)
    cat.put_table(Table("t", str(gen.location)))
    first = run_job(_spec(wh, "j1", "s"))
    old = list(gen.files)
    for i in range(4):
        append_file(gen, 10 + i, 600, seed=10 + i)
    proc = _spawn(tmp_path, _spec(wh, "j2", "s", test_hooks={"sleep_per_batch": 1.5}), "j2")
    job_dir = cat.job_index_dir("t", "s", "j2")
    try:
        wait_until(lambda: len(cat.storage.list(job_dir, recursive=True)) >= 1, 60, "a partial index file")
        wait_until(lambda: cat.read_progress("j2")["ranges_done"] >= 1, 30, "progress in the job record")
        progress = cat.read_progress("j2")
        assert progress["ranges_total"] == 3 and 0 < progress["fraction"] < 1
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate(timeout=30)   # reaped, and its pipes closed
    assert cat.current_snapshot("t", "s") == first
    assert_index_matches(cat, first, oracle_table(old, ["s"]), "s")
    partial = cat.storage.list(job_dir, recursive=True)
    assert partial  # left behind by the killed process …
    again = run_job(_spec(wh, "j3", "s"))
    assert all(not cat.storage.exists(p) for p in partial)  # … and collected by the next run
    assert cat.get_job("j2").state == "failed" and "exited" in (cat.get_job("j2").error or "")
    assert_index_matches(cat, again, oracle_table(gen.files, ["s"]), "s")


@pytest.mark.slow
def test_two_job_processes_exactly_one_commit_wins(tmp_path: Path) -> None:
    gen = make_parquet_table(tmp_path, rows_per_file=(300, 300, 300))
    cat, wh = _catalog(tmp_path)
    cat.put_table(Table("t", str(gen.location)))
    hooks = {"sleep_per_batch": 0.7, "skip_active_check": True}
    procs = [_spawn(tmp_path, _spec(wh, f"race{i}", "s", test_hooks=hooks), f"race{i}") for i in range(2)]
    codes = [p.wait(timeout=120) for p in procs]
    for p in procs:
        p.communicate(timeout=30)
    assert sorted(codes) == [0, 1]
    jobs = {j.id: j for j in cat.list_jobs()}
    loser = jobs[f"race{codes.index(1)}"]
    winner = jobs[f"race{codes.index(0)}"]
    assert loser.state == "failed" and "CommitConflictError" in (loser.error or "")
    assert winner.state == "succeeded" and cat.snapshot_ids("t", "s") == [1]
    snap = cat.current_snapshot("t", "s")
    assert snap.job_id == winner.id
    assert_index_matches(cat, snap, oracle_table(gen.files, ["s"]), "s")
    assert not cat.storage.list(cat.job_index_dir("t", "s", loser.id), recursive=True)


def test_invalid_spec_is_recorded_in_the_job_record(tmp_path: Path) -> None:
    cat, wh = _catalog(tmp_path)
    proc = _spawn(tmp_path, {"job_id": "bad", "warehouse": str(wh), "index_column": "s", "engine": "local"}, "bad")
    assert proc.wait(timeout=60) == 1
    proc.communicate(timeout=30)
    job = cat.get_job("bad")
    assert job.state == "failed" and "table" in (job.error or "")


def test_bgix_build_takes_a_location_relative_to_the_working_directory(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    gen = make_parquet_table(tmp_path, rows_per_file=(300,))
    monkeypatch.chdir(tmp_path)
    assert bgix_main(["build", "--warehouse", "wh", "--table", "t", "--location", gen.location.name,
                      "--column", "n", "--engine", "local"]) == 0
    assert json.loads(capsys.readouterr().out)["rows_covered"] == 300
    cat = Catalog(Storage(str(tmp_path / "wh"), [str(tmp_path)]))
    assert cat.get_table("t").location == str(gen.location)
    snap = cat.current_snapshot("t", "n")
    assert assert_index_matches(cat, snap, oracle_table(gen.files, ["n"]), "n") > 5


def test_bgix_build_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    gen = make_parquet_table(tmp_path, rows_per_file=(500, 800),
                             partitions=[{"dt": "2026-06-18"}, {"dt": "2026-06-19"}])
    wh = tmp_path / "wh"
    code = bgix_main(["build", "--warehouse", str(wh), "--table", "t", "--location", str(gen.location),
                      "--partition-columns", "dt", "--column", "n", "--engine", "local",
                      "--options", "sorted-index.records-per-range=400,bitmap-index.compression=zstd"])
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    assert out["snapshot_id"] == 1 and out["rows_covered"] == 1300 and out["key_type"] == "int"
    cat = Catalog(Storage(str(wh), [str(tmp_path)]))
    snap = cat.current_snapshot("t", "n")
    assert snap.options["bitmap-index.compression"] == "zstd"
    assert assert_index_matches(cat, snap, oracle_table(gen.files, ["n"]), "n") > 5
    assert bgix_main(["build", "--warehouse", str(wh), "--table", "t", "--column", "n",
                      "--index-type", "bloom", "--engine", "local"]) == 1
    assert "bitmap" in capsys.readouterr().err
    # one index per column of a bgix table: another family replaces it, only with rebuild
    btree = ["build", "--warehouse", str(wh), "--table", "t", "--column", "n", "--index-type", "btree",
             "--engine", "local"]
    assert bgix_main(btree) == 1
    assert "rebuild" in capsys.readouterr().err
    assert bgix_main([*btree, "--options", "rebuild=true,sorted-index.records-per-range=400"]) == 0
    assert json.loads(capsys.readouterr().out)["index_type"] == "btree"
    snap = cat.current_snapshot("t", "n")
    assert snap.index_type == "btree" and len(snap.files) >= 3
    assert assert_index_matches(cat, snap, oracle_table(gen.files, ["n"]), "n") > 5
    files = [e.path for e in snap.files]
    assert bgix_main(["build", "--warehouse", str(wh), "--table", "t", "--column", "n", "--drop"]) == 0
    assert cat.current_snapshot("t", "n") is None and not any(cat.storage.exists(p) for p in files)
    assert bgix_main(["build", "--warehouse", str(wh), "--table", "t", "--column", "n", "--drop"]) == 1


def test_key_order_bytes_option_reaches_the_files_and_the_snapshot(tmp_path: Path) -> None:
    # bgix.key-order (spec §2.7) flows create options → job spec → workers → writer; recorded in the snapshot
    from index_format import open_index, parse_type
    gen = make_parquet_table(tmp_path, rows_per_file=(500, 700))
    cat, wh = _catalog(tmp_path)
    cat.put_table(Table("t", str(gen.location)))
    for column, order in (("n", "bytes"), ("b", "logical")):
        opts = {**R, "bgix.key-order": order.upper()} if order == "bytes" else dict(R)
        snap = run_job(_spec(wh, f"j-{column}", column, options=opts))
        assert snap.options["bgix.key-order"] == order
        kt = parse_type(snap.key_type)
        assert {open_index(f.path, kt, storage=cat.storage, size=f.file_size).key_order for f in snap.files} == {order}
        assert_index_matches(cat, snap, oracle_table(gen.files, [column]), column)


def test_a_multivalue_index_of_a_list_column(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A Parquet list<string> column: the multivalue index holds each row under each of its distinct elements;
    null and empty lists and null elements under none (judged by plain Python over the source rows)."""
    rng = random.Random(4)
    tags = [None if rng.random() < 0.1 else [rng.choice(["vip", "", "ü", None, "x"]) for _ in range(rng.randint(0, 3))]
            for _ in range(900)]
    src = tmp_path / "src"
    src.mkdir()
    pq.write_table(pa.table({"tags": pa.array(tags[:500], pa.list_(pa.string()))}), src / "a.parquet")
    pq.write_table(pa.table({"tags": pa.array(tags[500:], pa.list_(pa.string()))}), src / "b.parquet")
    wh = tmp_path / "wh"
    assert bgix_main(["build", "--warehouse", str(wh), "--table", "t", "--location", str(src), "--column", "tags",
                      "--index-type", "multivalue", "--engine", "local",
                      "--options", "sorted-index.records-per-range=400"]) == 0
    capsys.readouterr()
    cat = Catalog(Storage(str(wh), [str(tmp_path)]))
    snap = cat.current_snapshot("t", "tags")
    assert snap.index_type == "multivalue" and snap.key_type == "string"
    for value in ("vip", "", "ü", "nope"):
        want = {i for i, t in enumerate(tags) if t is not None and value in t}
        assert set(index_answer(cat, snap, lambda r, v=value: r.eq(v))) == want, value
    assert not set(index_answer(cat, snap, lambda r: r.null_rows()))   # nulls have no postings (spec §8)
    assert bgix_main(["build", "--warehouse", str(wh), "--table", "t", "--column", "tags",
                      "--engine", "local"]) == 1   # a bitmap index cannot hold a list
    assert "multivalue" in capsys.readouterr().err


def _moved(seen: list[dict[str, Any]], total: int) -> list[dict[str, Any]]:
    """The progress readings strictly between start and end, in fraction and in ranges."""
    return [p for p in seen if 0 < p["fraction"] < 1 and 0 < p["ranges_done"] < total]


def test_local_build_progress_moves_range_by_range(tmp_path: Path) -> None:
    # 4 ranges of 1000 rows, slowed per batch: a reader sees ranges done one by one, and the number of ranges
    # from the moment the plan is made (never "0/0" once the build started)
    gen = make_parquet_table(tmp_path, rows_per_file=(1000, 1000, 1000, 1000), row_group_size=250)
    cat, wh = _catalog(tmp_path)
    cat.put_table(Table("t", str(gen.location)))
    from tests.factories import observe_progress
    snap, seen = observe_progress(cat, "job-p", lambda: run_job(
        _spec(wh, "job-p", "s", test_hooks={"sleep_per_batch": 0.3})))
    assert snap is not None and snap.row_count == 4000
    final = cat.get_job("job-p").progress
    assert (final["fraction"], final["rows_indexed"], final["ranges_done"], final["ranges_total"]) == (1.0, 4000, 4, 4)
    assert _moved(seen, 4), seen
    started = [p for p in seen if p["ranges_total"]]
    assert started and started[0]["ranges_done"] == 0 and all(p["ranges_total"] == 4 for p in started), seen
    fractions = [p["fraction"] for p in seen]
    assert fractions == sorted(fractions), seen
