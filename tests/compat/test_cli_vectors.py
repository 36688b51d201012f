"""`bgix file inspect --json` and `bgix file build` on every Java reference vector (copied into tests/data/global_index).

Expected content comes from the vector's input TSV and vectors.tsv (Java's output), never from our reader.
"""
from __future__ import annotations

import json
import math
import struct
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from service.cli import main
from tests.compat.vectors import Vector, load_rows, load_vectors
from tests.data import GLOBAL_INDEX

_VECTORS_DIR = GLOBAL_INDEX
VECTORS = load_vectors(_VECTORS_DIR) if _VECTORS_DIR.exists() else []
ARROW = {"string": pa.string(), "boolean": pa.bool_(), "tinyint": pa.int8(), "smallint": pa.int16(),
         "int": pa.int32(), "bigint": pa.int64(), "float": pa.float32(), "double": pa.float64()}


def _norm(type_name: str, value: object) -> str:
    """A comparable spelling of a key: JSON floats may be "NaN"/"Infinity"; -0.0 stays distinct from 0.0."""
    if type_name in ("float", "double"):
        if isinstance(value, str):
            value = float(value.replace("Infinity", "inf"))
        assert isinstance(value, float | int)
        v = float(value)
        if type_name == "float" and not math.isnan(v):
            v = struct.unpack("<f", struct.pack("<f", v))[0]  # Java's float, widened as JSON does
        return "NaN" if math.isnan(v) else repr(v)
    return json.dumps(value)


def _expected(v: Vector) -> tuple[list[int], dict[str, list[int]]]:
    nulls, keys = [], {}
    for rid, value in load_rows(v.input, v.type):
        if value is None:
            nulls.append(rid)
        else:
            keys.setdefault(_norm(v.type, value), []).append(rid)
    return sorted(nulls), {k: sorted(ids) for k, ids in keys.items()}


def test_vectors_are_present() -> None:
    assert len(VECTORS) >= 20, f"reference vectors missing under {_VECTORS_DIR}"


@pytest.mark.parametrize("v", VECTORS, ids=lambda v: v.id)
def test_inspect_json_matches_the_input_rows(v: Vector, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["file", "inspect", str(v.file), "--type", v.type, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert {"footer", "null_rows", "non_null_rows", "values", "meta_hex"} <= set(doc)
    nulls, keys = _expected(v)
    assert doc["null_rows"] == nulls
    assert doc["non_null_rows"] == sorted(i for ids in keys.values() for i in ids)
    assert {_norm(v.type, e["key"]): e["row_ids"] for e in doc["values"]} == keys
    assert doc["footer"]["value_count"] == len(keys)
    assert doc["meta_hex"] == v.meta_hex
    assert all(b["crc"] == "ok" for b in doc["blocks"])


@pytest.mark.parametrize("v", [v for v in VECTORS if v.compression != "lzo"], ids=lambda v: v.id)
def test_build_from_parquet_reproduces_java(v: Vector, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = load_rows(v.input, v.type)
    src = tmp_path / "in.parquet"
    pq.write_table(pa.table({"rid": pa.array([r for r, _ in rows], pa.int64()),
                             "v": pa.array([x for _, x in rows], ARROW[v.type])}), src)
    out = tmp_path / "out.index"
    assert main(["file", "build", str(src), "--column", "v", "--type", v.type, "--row-id-column", "rid",
                 "--compression", v.compression, "--level", str(v.level), "--block-size", str(v.block_size),
                 "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    assert f"row_count {v.row_count}" in printed.splitlines()
    assert f"meta {v.meta_hex}" in printed.splitlines()
    if v.compression == "none":  # spec §2.8-2.9: uncompressed files are byte-identical to Java's
        assert out.read_bytes() == v.file.read_bytes()
    else:
        assert main(["file", "inspect", str(out), "--type", v.type, "--json"]) == 0
        doc = json.loads(capsys.readouterr().out)
        nulls, keys = _expected(v)
        assert doc["null_rows"] == nulls
        assert {_norm(v.type, e["key"]): e["row_ids"] for e in doc["values"]} == keys
