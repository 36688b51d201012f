"""`bgix file inspect|query` on btree files (pypaimon-rust's and ours) against the table rows read in plain Python."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from service.cli import main
from tests.data import BTREE, GLOBAL_INDEX
from tests.unit.index_format.btree.btree_cases import load_rows, load_vectors

VECTORS = {v.file.name.split(".")[0] + "." + v.compression: v for v in load_vectors()}


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_inspect_without_type_shows_the_structure(capsys: pytest.CaptureFixture[str]) -> None:
    v = VECTORS["string.zstd"]
    code, out, _ = _run(capsys, "file", "inspect", str(v.file))
    assert code == 0
    doc = json.loads(out)
    assert doc["format"] == "btree" and doc["version"] == 1 and doc["bloom_filter"] is None
    assert doc["block_count"] == len(doc["blocks"]) > 1 and all(b["crc"] == "ok" for b in doc["blocks"])
    assert "zstd" in doc["compression"] and doc["index_block"]["crc"] == "ok"
    assert doc["footer"]["magic"] == 0x50425449


def test_inspect_with_type_lists_keys_and_rows(capsys: pytest.CaptureFixture[str]) -> None:
    v = VECTORS["string.none"]
    rows = load_rows(v)
    code, out, _ = _run(capsys, "file", "inspect", str(v.file), "--type", "string", "--json")
    assert code == 0
    doc = json.loads(out)
    expect: dict[str, list[int]] = {}
    for rid, val in rows:
        if val is not None:
            expect.setdefault(val, []).append(rid)
    assert {e["key"]: e["row_ids"] for e in doc["values"]} == {k: sorted(r) for k, r in expect.items()}
    assert doc["null_rows"] == sorted(rid for rid, val in rows if val is None)
    assert doc["key_count"] == len(expect) and doc["row_count"] == len(rows)
    assert doc["first_key"] == min(expect, key=str.encode) and doc["last_key"] == max(expect, key=str.encode)
    code, out, _ = _run(capsys, "file", "inspect", str(v.file), "--type", "string")
    assert code == 0 and "btree index version 1" in out and "data block 0" in out and "crc ok" in out


def test_query_answers_predicates(capsys: pytest.CaptureFixture[str]) -> None:
    v = VECTORS["bigint.none"]
    rows = load_rows(v)
    present = sorted({val for _, val in rows if val is not None})
    a, b = present[3], present[-4]
    preds = {f"v = {a}": lambda x: x == a, f"v IN ({a}, {b}, 5)": lambda x: x in (a, b, 5),
             f"v > {a} AND v <= {b}": lambda x: a < x <= b, f"v <> {a}": lambda x: x != a,
             f"v BETWEEN {-(1 << 63)} AND 0": lambda x: x <= 0}
    argv = ["file", "query", str(v.file), "--type", "bigint"]
    for p in preds:
        argv += ["--where", p]
    code, out, err = _run(capsys, *argv, "--where", "v IS NULL")
    assert code == 0, err
    answers = json.loads(out)
    for answer, test in zip(answers, preds.values()):
        assert answer["rows"] == sorted(rid for rid, x in rows if x is not None and test(x))
        assert answer["count"] == len(answer["rows"])
    assert answers[-1]["rows"] == sorted(rid for rid, x in rows if x is None)


def test_query_string_prefix_and_bitmap_files(capsys: pytest.CaptureFixture[str]) -> None:
    v = VECTORS["string.lz4"]
    rows = load_rows(v)
    code, out, _ = _run(capsys, "file", "query", str(v.file), "--type", "string", "--where", "v LIKE 'key-0%'",
                        "--where", "v = ''")
    assert code == 0
    got = json.loads(out)
    assert got[0]["rows"] == sorted(r for r, x in rows if x is not None and x.startswith("key-0"))
    assert got[1]["rows"] == sorted(r for r, x in rows if x == "")
    golden = GLOBAL_INDEX / "golden" / "category.bitmap.java.idx"   # the same path serves bitmap files
    code, out, _ = _run(capsys, "file", "query", str(golden), "--type", "string", "--where", "v = 'odd'")
    assert code == 0 and json.loads(out) == [{"rows": [0, 2], "count": 2}]


def test_errors_are_messages(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    v = VECTORS["bigint.none"]
    code, _, err = _run(capsys, "file", "query", str(v.file), "--where", "v = 1")
    assert code == 2 and "--type" in err
    bad = tmp_path / "bad.index"
    data = bytearray(v.file.read_bytes())
    data[5] ^= 1
    bad.write_bytes(bytes(data))
    code, out, err = _run(capsys, "file", "inspect", str(bad), "--type", "bigint")
    assert code == 1 and "data block at 0" in err and "CRC" in err
    code, out, _ = _run(capsys, "file", "inspect", str(bad))
    assert code == 0 and json.loads(out)["blocks"][0]["crc"].startswith("error")
    assert (BTREE / "vectors.tsv").exists()
