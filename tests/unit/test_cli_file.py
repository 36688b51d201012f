"""`bgix file build|inspect` round trip against pyarrow-computed truth and the golden file (spec §12.1)."""
from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from service.cli import main


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_inspect_golden_json(capsys: pytest.CaptureFixture[str], vectors_dir: Path) -> None:
    code, out, _ = _run(capsys, "file", "inspect", str(vectors_dir / "golden" / "category.bitmap.java.idx"),
                        "--type", "string", "--json")
    assert code == 0
    doc = json.loads(out)
    assert doc["footer"]["value_count"] == 2
    assert doc["null_rows"] == []
    assert doc["non_null_rows"] == [0, 1, 2, 3]
    assert doc["values"][0]["key"] == "even" and doc["values"][0]["row_ids"] == [1, 3]
    assert doc["values"][1]["key"] == "odd" and doc["values"][1]["row_ids"] == [0, 2]
    assert doc["meta_hex"] == "040000006576656e030000006f6464000100"  # spec §12.1
    assert doc["blocks"][0]["crc"] == "ok"


def test_inspect_text_and_special_floats(capsys: pytest.CaptureFixture[str], vectors_dir: Path) -> None:
    path = str(vectors_dir / "java" / "double_special.none1.b16384.java.idx")
    code, out, _ = _run(capsys, "file", "inspect", path, "--type", "double")
    assert code == 0 and "dictionary block 0" in out and "crc ok" in out
    code, out, _ = _run(capsys, "file", "inspect", path, "--type", "double", "--json")
    keys = [v["key"] for v in json.loads(out)["values"]]
    assert keys[0] == "-Infinity" and keys[-1] == "NaN" and "Infinity" in keys


@pytest.mark.parametrize("compression", ["none", "zstd", "lz4"])
def test_build_then_inspect_matches_source(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                           compression: str) -> None:
    cities = ["oslo", "rome", None, "lima", "oslo", "rome", "oslo", None, "kyiv"] * 30
    rids = [1000 + 3 * i for i in range(len(cities))]
    src = tmp_path / "in.parquet"
    pq.write_table(pa.table({"city": cities, "rid": rids}), src)
    out_file = tmp_path / "city.index"
    code, out, err = _run(capsys, "file", "build", str(src), "--column", "city", "--row-id-column", "rid",
                          "--compression", compression, "--block-size", "24", "-o", str(out_file))
    assert code == 0, err
    assert f"row_count {len(cities)}" in out
    meta_line = [ln for ln in out.splitlines() if ln.startswith("meta ")][0]
    code, out, _ = _run(capsys, "file", "inspect", str(out_file), "--type", "string", "--json")
    doc = json.loads(out)
    expect: dict[str, list[int]] = {}
    for c, r in zip(cities, rids):
        if c is not None:
            expect.setdefault(c, []).append(r)
    assert {v["key"]: v["row_ids"] for v in doc["values"]} == expect
    assert [v["key"] for v in doc["values"]] == sorted(expect)
    assert doc["null_rows"] == [r for c, r in zip(cities, rids) if c is None]
    assert meta_line == f"meta {doc['meta_hex']}"


def test_build_positions_and_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "n.parquet"
    pq.write_table(pa.table({"n": pa.array([5, -1, 5, None], pa.int32())}), src)
    out_file = tmp_path / "n.index"
    code, out, _ = _run(capsys, "file", "build", str(src), "--column", "n", "-o", str(out_file))
    assert code == 0
    code, out, _ = _run(capsys, "file", "inspect", str(out_file), "--type", "int", "--json")
    doc = json.loads(out)
    assert [(v["key"], v["row_ids"]) for v in doc["values"]] == [(-1, [1]), (5, [0, 2])]
    bad = tmp_path / "bad.index"
    bad.write_bytes(out_file.read_bytes()[:-1] + b"\x00")
    code, _, err = _run(capsys, "file", "inspect", str(bad), "--type", "int")
    assert code == 1 and "magic" in err


def test_build_input_problems_are_messages_not_tracebacks(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "e.parquet"
    pq.write_table(pa.table({"s": ["a", "b", None], "rid": pa.array([1, None, 3], pa.int64())}), src)
    out_file = tmp_path / "x.index"
    code, _, err = _run(capsys, "file", "build", str(src), "--column", "nope", "-o", str(out_file))
    assert code == 2 and "no column 'nope'" in err and "s, rid" in err
    code, _, err = _run(capsys, "file", "build", str(src), "--column", "s", "--row-id-column", "rid",
                        "-o", str(out_file))
    assert code == 2 and "1 null values" in err
    code, _, err = _run(capsys, "file", "build", str(tmp_path / "missing.parquet"), "--column", "s",
                        "-o", str(out_file))
    assert code == 1 and "no such file" in err
    assert not out_file.exists()
