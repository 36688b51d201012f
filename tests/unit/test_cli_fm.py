"""`bgix file inspect|query` on fm files pypaimon-rust 0.4 wrote (tests/data/fm): the kind is found from the bytes,
inspect shows the footer, partitions, blocks and their checks, query answers SQL over column `v` as local row ids;
each judged against the rows recorded next to the files (plain Python, tests/unit/index_format/fm/fm_truth.py). A
damaged block is a message naming the file and the block, exit code 1, while inspect still describes the rest."""
from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from index_format.file_index.detect import detect_kind
from service.cli import main
from tests.data import BTREE, FM, GLOBAL_INDEX
from tests.unit.index_format.fm.fm_truth import like_truth, random_like, random_literal, rows_where

CASES = sorted(p.stem for p in FM.glob("*.json"))


def _case(name: str) -> dict[str, Any]:
    return json.loads((FM / f"{name}.json").read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def _files(name: str) -> list[tuple[Path, list[str | None], dict[str, Any]]]:
    """(file, its rows in local row-id order, its manifest entry) of every file of a case."""
    case = _case(name)
    out = []
    for f in case["files"]:
        a, b = f["row_range"]
        out.append((FM / f["file"], case["rows"][a:b + 1], f))
    return out


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    assert "Traceback" not in out.err
    return code, out.out, out.err


def _sql(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def test_fm_files_are_recognised_by_their_footer() -> None:
    for name in CASES:
        for path, _, _ in _files(name):
            data = path.read_bytes()
            assert detect_kind(data[:64], data[-64:], len(data)) == "global-fm-index", path
    for other, kind in ((GLOBAL_INDEX / "golden" / "category.bitmap.java.idx", "global-bitmap-index"),
                        (next(BTREE.glob("*.index")), "global-btree-index")):
        data = other.read_bytes()
        assert detect_kind(data[:64], data[-64:], len(data)) == kind


@pytest.mark.parametrize("name", CASES)
def test_inspect_json_describes_every_partition(capsys: pytest.CaptureFixture[str], name: str) -> None:
    options = _case(name)["options"] or ""
    for path, rows, entry in _files(name):
        code, out, err = _run(capsys, "file", "inspect", str(path), "--json")
        assert code == 0, err
        doc = json.loads(out)
        assert doc["kind"] == "global-fm-index" and doc["version"] == 1 and doc["file_size"] == entry["file_size"]
        assert doc["row_count"] == len(rows) == entry["row_count"] and doc["first_row_id"] == 0
        assert doc["container_directory"]["index_meta_hex"] == entry["index_meta"]
        assert doc["footer"]["magic"] == 0x464D4958 and doc["footer"]["feature_flags"] == 7
        assert doc["null_count"] == sum(v is None for v in rows)
        parts = doc["partitions"]
        assert len(parts) == doc["partition_count"] and parts[0]["offset"] == 0
        assert parts[0]["row_ids"][0] == 0 and parts[-1]["row_ids"][1] == len(rows) - 1
        for p, q in zip(parts, parts[1:]):   # contiguous bytes and rows
            assert p["offset"] + p["length"] == q["offset"] and p["row_ids"][1] + 1 == q["row_ids"][0]
        for p in parts:
            a, b = p["row_ids"]
            mine = rows[a:b + 1]
            present = [v for v in mine if v is not None]
            assert p["decoded"] == "ok" and all(bl["crc"] == "ok" for bl in p["blocks"])
            assert p["null_count"] == len(mine) - len(present)
            assert p["values"] == {"non_null": len(present), "distinct": len(set(present)),
                                   "empty": present.count("")}
            utf8 = b"".join(v.encode() for v in present)
            s = p["symbols"]
            assert s["separators"] == len(mine) and s["terminator"] == 1 and s["bytes"] == len(utf8)
            assert s["byte_counts"] == {f"{c:02x}": utf8.count(bytes((c,))) for c in sorted(set(utf8))}
            blocks = p["blocks"]   # in file order, contiguous up to the partition footer
            assert blocks[0]["offset"] == p["offset"]
            assert all(x["offset"] + x["stored"] == y["offset"] for x, y in zip(blocks, blocks[1:]))
            assert blocks[-1]["offset"] + blocks[-1]["stored"] == p["offset"] + p["length"] - 64
        rate = next((o.split("=")[1] for o in options.split(",") if "sa-sample-rate" in o), "32")
        assert doc["options"]["fm-index.sa-sample-rate"] == rate
        codec = next((o.split("=")[1] for o in options.split(",") if o.startswith("fm-index.compression=")), "lz4")
        codecs = {bl["codec"] for p in parts for bl in p["blocks"]}
        assert codecs <= {codec, "none"} and doc["options"]["fm-index.compression"] in (codec, "none")
        if name in ("default", "zstd", "parts"):
            assert doc["options"]["fm-index.compression"] == codec


def test_inspect_text_and_an_explicit_kind(capsys: pytest.CaptureFixture[str]) -> None:
    path = FM / "parts.0.index"
    code, out, err = _run(capsys, "file", "inspect", str(path))
    assert code == 0, err
    assert "fm index version 1, 700 rows" in out and "options in the file: fm-index.sa-sample-rate=4" in out
    assert "partition 10:" in out and "partition 3 wavelet level 0 block 0" in out and "crc error" not in out
    assert f"null rows: {sum(v is None for v in _case('parts')['rows'])}" in out
    code, out, _ = _run(capsys, "file", "inspect", str(path), "--kind", "global-fm-index", "--json")
    assert code == 0 and json.loads(out)["partition_count"] == 11
    code, _, err = _run(capsys, "file", "inspect", str(path), "--type", "INT")
    assert code == 2 and "STRING" in err


def _escaped(literal: str) -> str:
    """`literal` as a LIKE pattern matching itself (bgix's escape character is the backslash)."""
    return "".join("\\" + c if c in "\\%_" else c for c in literal)


def _predicates(rows: list[str | None], rng: random.Random) -> list[tuple[str, Any]]:
    """(SQL over v, the rows where it is TRUE) pairs, with SQL's three-valued logic for NOT."""
    nulls = {i for i, v in enumerate(rows) if v is None}
    universe = set(range(len(rows)))

    def where(test: Any) -> set[int]:
        return set(rows_where(rows, test))

    def like(p: str) -> set[int]:
        return set(like_truth(rows, p))
    out: list[tuple[str, set[int]]] = [
        ("v IS NULL", nulls), ("v IS NOT NULL", universe - nulls), ("v = ''", where(lambda v: v == "")),
        ("v LIKE '%vip%'", where(lambda v: "vip" in v)), ("v LIKE 'vip%'", where(lambda v: v.startswith("vip"))),
        ("v LIKE '%🙂'", where(lambda v: v.endswith("🙂"))), ("v LIKE '%\\%%'", where(lambda v: "%" in v)),
        ("v LIKE '%\\_%' AND v LIKE '%a%'", where(lambda v: "_" in v and "a" in v)),
        ("v > 'b' AND v <= 'x'", where(lambda v: b"b" < v.encode() <= b"x")),
    ]
    for _ in range(8):
        s = random_literal(rng, rows)
        out += [(f"v LIKE {_sql('%' + _escaped(s) + '%')}", where(lambda v, s=s: s in v)),
                (f"v = {_sql(s)}", where(lambda v, s=s: v == s)),
                (f"NOT v = {_sql(s)}", where(lambda v, s=s: v != s))]
        p = random_like(rng)
        out += [(f"v LIKE {_sql(p)}", like(p)), (f"NOT v LIKE {_sql(p)}", (universe - nulls) - like(p))]
    some = [random_literal(rng, rows) for _ in range(3)]
    out.append((f"v IN ({', '.join(map(_sql, some))})", where(lambda v: v in some)))
    out.append((f"v NOT IN ({', '.join(map(_sql, some))}) OR v IS NULL", where(lambda v: v not in some) | nulls))
    return out


@pytest.mark.parametrize("name", CASES)
def test_query_answers_equal_plain_python(capsys: pytest.CaptureFixture[str], name: str) -> None:
    rng = random.Random(name)
    for path, rows, _ in _files(name):
        preds = _predicates(rows, rng)
        argv = ["file", "query", str(path)]
        for sql, _ in preds:
            argv += ["--where", sql]
        code, out, err = _run(capsys, *argv)
        assert code == 0, err
        answers = json.loads(out)
        assert len(answers) == len(preds)
        for (sql, want), got in zip(preds, answers):
            assert got["rows"] == sorted(want), (path.name, sql)
            assert got["count"] == len(want)


def test_query_with_an_explicit_kind_and_type(capsys: pytest.CaptureFixture[str]) -> None:
    rows = _case("small")["rows"]
    code, out, err = _run(capsys, "file", "query", str(FM / "small.0.index"), "--kind", "global-fm-index",
                          "--type", "STRING", "--where", "v LIKE 'hello%'")
    assert code == 0, err
    assert json.loads(out) == [{"rows": [i for i, v in enumerate(rows) if v and v.startswith("hello")],
                                "count": 2}]


def _damaged(tmp_path: Path, name: str, at: int) -> Path:
    data = bytearray((FM / name).read_bytes())
    data[at] ^= 0xFF
    out = tmp_path / name
    out.write_bytes(bytes(data))
    return out


def test_a_corrupt_block_is_named_and_the_rest_still_described(capsys: pytest.CaptureFixture[str],
                                                               tmp_path: Path) -> None:
    code, out, _ = _run(capsys, "file", "inspect", str(FM / "parts.0.index"), "--json")
    part = json.loads(out)["partitions"][2]
    block = next(b for b in part["blocks"] if b["block"] == "partition 2 sample values block 0")
    bad = _damaged(tmp_path, "parts.0.index", block["offset"] + 3)
    code, out, err = _run(capsys, "file", "inspect", str(bad), "--json")
    assert code == 1
    assert str(bad) in err and "partition 2 sample values block 0" in err and "CRC" in err
    doc = json.loads(out)   # the structure is still printed
    broken = {b["block"]: b["crc"] for p in doc["partitions"] for b in p["blocks"] if b["crc"] != "ok"}
    assert list(broken) == ["partition 2 sample values block 0"] and broken[block["block"]].startswith("error")
    assert doc["partitions"][2]["decoded"].startswith("not tried")
    assert all(p["decoded"] == "ok" for i, p in enumerate(doc["partitions"]) if i != 2)
    code, out, err = _run(capsys, "file", "inspect", str(bad))
    assert code == 1 and "crc error" in out and "partition 2 sample values block 0" in err
    code, out, err = _run(capsys, "file", "query", str(bad), "--where", "v LIKE '%vip%'")
    assert code == 1 and out == ""
    assert str(bad) in err and "partition 2 sample values block 0" in err and "CRC" in err


def test_a_corrupt_footer_is_named(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    size = (FM / "small.0.index").stat().st_size
    bad = _damaged(tmp_path, "small.0.index", size - 2)   # the footer's CRC
    code, out, err = _run(capsys, "file", "inspect", str(bad))
    assert code == 1 and out == "" and str(bad) in err and "container footer" in err
    bad = _damaged(tmp_path, "small.0.index", size - 6)   # its magic: no longer recognised, unless named
    code, _, err = _run(capsys, "file", "query", str(bad), "--kind", "global-fm-index", "--where", "v = 'x'")
    assert code == 1 and str(bad) in err and "container footer" in err and "magic" in err


def test_flags_that_guess_another_kind_give_way_to_the_bytes(capsys: pytest.CaptureFixture[str]) -> None:
    path = str(FM / "small.0.index")
    rows = _case("small")["rows"]
    code, out, err = _run(capsys, "file", "inspect", path, "--index-type", "bitmap", "--json")
    assert code == 0, err
    assert json.loads(out)["kind"] == "global-fm-index"
    code, out, err = _run(capsys, "file", "query", path, "--index-type", "bitmap", "--where", "v = 'hello'")
    assert code == 0 and "answering it as the global index" in err
    assert json.loads(out) == [{"rows": [rows.index("hello")], "count": 1}]
    code, _, err = _run(capsys, "file", "query", path, "--schema", "a:STRING", "--where", "v = 'hello'")
    assert code == 2 and "leave out --schema" in err
