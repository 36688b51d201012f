"""fm files pypaimon-rust 0.4 wrote (tests/data/fm, made by its make.py): our reader's answers equal plain Python
over the rows, its index metadata equals the manifest's, and our writer reproduces the files byte for byte from
the same rows and options (none, lz4 through pypaimon-rust's own LZ4 encoder, zstd)."""
from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from index_format.fm.fm_format import decode_index_meta
from index_format.fm.fm_reader import open_fm_index
from index_format.fm.fm_writer import fm_options, write_fm_bytes
from tests.data import FM as FM_DATA
from tests.unit.index_format.fm.fm_truth import check_reader

FM = FM_DATA
CASES = sorted(p.stem for p in FM.glob("*.json"))


def _case(name: str) -> dict[str, object]:
    return json.loads((FM / f"{name}.json").read_text(encoding="utf-8"))   # type: ignore[no-any-return]


def _files(name: str) -> list[tuple[Path, list[str | None], dict[str, object]]]:
    case = _case(name)
    rows: list[str | None] = case["rows"]   # type: ignore[assignment]
    out = []
    for f in case["files"]:   # type: ignore[attr-defined]
        a, b = f["row_range"]
        out.append((FM / f["file"], rows[a:b + 1], f))
    return out


def test_the_cases_cover_what_the_family_must_hold() -> None:
    rows = [v for name in CASES for v in _case(name)["rows"]]   # type: ignore[attr-defined]
    assert None in rows and "" in rows
    assert any(v and len(v) > 100 for v in rows) and any(v and ord(max(v)) > 0xFFFF for v in rows)
    assert all(any(v and c in v for v in rows) for c in "%_\\")
    assert any(len(open_fm_index(str(p), "string").partitions) > 3 for n in CASES for p, _, _ in _files(n))
    assert sum(len(_files(n)) for n in CASES) > len(CASES)   # one case has several row ranges


@pytest.mark.parametrize("name", CASES)
def test_reader_answers_equal_plain_python(name: str) -> None:
    rng = random.Random(name)
    for path, rows, entry in _files(name):
        r = open_fm_index(str(path), "string", size=entry["file_size"])   # type: ignore[arg-type]
        assert r.size == entry["file_size"] and r.row_count == entry["row_count"] == len(rows)
        assert r.meta == decode_index_meta(bytes.fromhex(entry["index_meta"]), path="manifest")   # type: ignore[arg-type]
        assert entry["index_type"] == "fm"
        check_reader(r, rows, rng)


@pytest.mark.parametrize("name", CASES)
def test_writer_reproduces_the_files(name: str) -> None:
    opts = fm_options(_case(name)["options"])   # type: ignore[arg-type]  # JSON: a string or null
    for path, rows, entry in _files(name):
        data, meta = write_fm_bytes(rows, 0, opts)
        assert meta.hex() == entry["index_meta"]
        assert data == path.read_bytes()


def test_the_manifest_metadata_of_an_fm_file_bounds_no_keys() -> None:
    """The service reads every index entry's `_INDEX_META` as file metadata: an fm file's says nothing about its keys
    (it may hold any value, and nulls), so no predicate prunes it."""
    from index_format.global_index.filemeta import parse_meta
    from index_format.types import parse_type
    meta = bytes.fromhex(_case("small")["files"][0]["index_meta"])   # type: ignore[index]
    got = parse_meta(parse_type("string"), meta)
    assert (got.first_key, got.last_key, got.has_nulls, got.only_nulls) == (None, None, True, False)
