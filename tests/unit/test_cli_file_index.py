"""`bgix file build --index-type / --file-index-options`, `bgix file query` and `bgix file inspect` on the
Paimon file-index reference files: the command line writes Java's bytes from a Parquet column and prints
Java's answers; errors are exit code 2 (the request) or 1 (the file) with a message naming the problem.
"""
from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from index_format.file_index.values import paimon_type
from index_format.key_arrays import arrow_type
from service.cli import main
from tests.data import DELETION_VECTORS, GLOBAL_INDEX
from tests.file_index_vectors import VectorEntry, load_queries, load_rows, load_table, load_vectors, query_sql

PAYLOADS = [v for v in load_vectors() if v.index_type != "container"]
CONTAINERS = load_vectors(index_type="container")


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


@cache
def _parquet_of(input_tsv: Path, data_type: str, tmp: Path) -> Path:
    kt = paimon_type(data_type)
    out = tmp / f"{input_tsv.parent.name}.{input_tsv.stem}.{data_type.replace('(', '_').replace(')', '')}.parquet"
    if not out.exists():
        values = load_rows(input_tsv, data_type)
        pq.write_table(pa.table({"v": pa.array(values, type=arrow_type(kt))}), out)
    return out


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cli_file_index")


def _options(v: VectorEntry) -> list[str]:
    return ["--options", ";".join(f"{k}={x}" for k, x in v.options.items())] if v.options else []


@pytest.mark.parametrize("v", PAYLOADS, ids=lambda v: v.id)
def test_build_payload_is_javas_bytes(capsys: pytest.CaptureFixture[str], work: Path, v: VectorEntry) -> None:
    src = _parquet_of(v.input, v.data_type, work)
    out = work / f"{v.file.name}.ours"
    code, text, err = _run(capsys, "file", "build", str(src), "--column", "v", "--index-type", v.index_type,
                           "--type", v.data_type, *_options(v), "-o", str(out))
    assert code == 0, err
    assert out.read_bytes() == v.file.read_bytes()
    assert f"{v.size} bytes" in text


def _one_per_input(vectors: list[VectorEntry]) -> list[VectorEntry]:
    seen: dict[Path, VectorEntry] = {}
    for v in vectors:
        if v.queries is not None:
            seen.setdefault(v.queries, v)
    return list(seen.values())


@pytest.mark.parametrize("v", _one_per_input(PAYLOADS), ids=lambda v: v.id)
def test_query_prints_javas_answers(capsys: pytest.CaptureFixture[str], work: Path, v: VectorEntry) -> None:
    assert v.queries is not None
    queries = load_queries(v.queries)
    where = work / f"{v.queries.name}.json"
    where.write_text(json.dumps([query_sql(q, v.data_type) for q in queries]), encoding="utf-8")
    code, text, err = _run(capsys, "file", "query", str(v.file), "--index-type", v.index_type,
                           "--type", v.data_type, "--where-file", str(where))
    assert code == 0, err
    answers = json.loads(text)
    assert len(answers) == len(queries)
    for q, got in zip(queries, answers):
        if q.outcome in ("REMAIN", "true"):
            assert got == {"remain": True}, q.label
        elif q.outcome in ("SKIP", "false"):
            assert got == {"skip": True}, q.label
        else:
            assert got == {"rows": q.rows}, q.label


def _container_parquet(v: VectorEntry, tmp: Path) -> Path:
    cols, rows = load_table(v.input)
    arrays = {}
    for i, (name, typ) in enumerate(cols):
        values = [r[i] for r in rows]
        if typ.upper().startswith("MAP"):
            t = pa.map_(pa.string(), pa.string())
            arrays[name] = pa.array([None if m is None else list(m.items()) for m in values], type=t)
        else:
            arrays[name] = pa.array(values, type=arrow_type(paimon_type(typ)))
    out = tmp / f"{v.file.stem}.parquet"
    pq.write_table(pa.table(arrays), out)
    return out


@pytest.mark.parametrize("v", CONTAINERS, ids=lambda v: v.id)
def test_build_container_and_query_it(capsys: pytest.CaptureFixture[str], work: Path, v: VectorEntry) -> None:
    src = _container_parquet(v, work)
    out = work / f"{v.file.name}.ours"
    options = ";".join(f"{k}={x}" for k, x in v.options.items())
    code, _, err = _run(capsys, "file", "build", str(src), "--file-index-options", options,
                        "--schema", v.data_type, "-o", str(out))
    assert code == 0, err
    assert out.read_bytes() == v.file.read_bytes()
    if v.queries is None:
        return
    queries = load_queries(v.queries, container=True)
    types = dict(c.split(":", 1) for c in v.data_type.split(",") if ":" in c and "<" not in c.split(":", 1)[0])
    args = []
    for q in queries:
        assert q.column is not None
        args += ["--where", query_sql(q, types.get(q.column, "STRING"), q.column)]
    code, text, err = _run(capsys, "file", "query", str(v.file), "--schema", v.data_type, *args)
    assert code == 0, err
    for q, got in zip(queries, json.loads(text), strict=True):
        if q.outcome == "REMAIN":
            assert got == {"remain": True}, q.label
        elif q.count == 0:
            assert got in ({"skip": True}, {"rows": []}), q.label
        else:
            assert got == {"rows": q.rows}, q.label


def test_inspect_detects_every_kind(capsys: pytest.CaptureFixture[str], work: Path) -> None:
    abc = next(v for v in CONTAINERS if v.file.name == "abc.java.idx")
    code, text, err = _run(capsys, "file", "inspect", str(abc.file))
    assert code == 0, err
    doc = json.loads(text)
    assert doc["kind"] == "file-index-container"
    assert {(e["column"], e["index_type"]) for e in doc["entries"]} == {
        ("a", "bloom-filter"), ("a", "bitmap"), ("b", "range-bitmap"), ("c", "bsi")}
    code, text, err = _run(capsys, "file", "inspect", str(abc.file), "--schema", abc.data_type)
    assert code == 0, err
    payloads = json.loads(text)["payloads"]
    assert {p["index_type"] for p in payloads} == {"bloom-filter", "bitmap", "range-bitmap", "bsi"}
    bitmap = next(v for v in PAYLOADS if v.file.name == "int_mixed.v2.b128.java.idx")
    code, text, err = _run(capsys, "file", "inspect", str(bitmap.file), "--index-type", "bitmap", "--type", "INT")
    assert code == 0, err
    doc = json.loads(text)
    assert doc["kind"] == "payload" and doc["index_type"] == "bitmap" and doc["row_count"] == bitmap.rows
    dv = DELETION_VECTORS / "dvindex-32"
    code, text, err = _run(capsys, "file", "inspect", str(dv))
    assert code == 0, err
    doc = json.loads(text)
    assert doc["kind"] == "deletion-vector-index" and doc["bits"] == 32
    assert [x["positions"] for x in doc["vectors"]] == [[2, 3], [1]]
    hashes = work / "bucket.index"
    hashes.write_bytes(b"".join(h.to_bytes(4, "big", signed=True) for h in (7, -1, 2 ** 31 - 1)))
    code, text, err = _run(capsys, "file", "inspect", str(hashes))
    assert code == 0, err
    doc = json.loads(text)
    assert doc["kind"] == "bucket-hash-index" and doc["hashes"] == [7, -1, 2 ** 31 - 1]
    golden = GLOBAL_INDEX / "golden" / "category.bitmap.java.idx"
    code, text, err = _run(capsys, "file", "inspect", str(golden))
    assert code == 0, err
    assert json.loads(text)["kind"] == "global-bitmap-index"


def test_errors_name_the_problem(capsys: pytest.CaptureFixture[str], work: Path) -> None:
    v = next(x for x in PAYLOADS if x.file.name == "int_mixed.default.java.idx")
    f = str(v.file)
    code, text, err = _run(capsys, "file", "query", f, "--index-type", "range-bitmap", "--type", "INT",
                           "--where", "v > 1", "--where", "v = 'abc'")
    assert code == 2 and text == "" and "predicate 2" in err and "'abc'" in err
    code, _, err = _run(capsys, "file", "query", f, "--index-type", "range-bitmap", "--type", "INT", "--where", "w = 1")
    assert code == 2 and "unknown column 'w'" in err
    code, _, err = _run(capsys, "file", "query", f, "--where", "v = 1")
    assert code == 2 and "--index-type" in err
    code, _, err = _run(capsys, "file", "query", f, "--index-type", "range-bitmap", "--type", "INT")
    assert code == 2 and "--where" in err
    bad_json = work / "bad.json"
    bad_json.write_text("{not json", encoding="utf-8")
    code, _, err = _run(capsys, "file", "query", f, "--index-type", "range-bitmap", "--type", "INT",
                        "--where-file", str(bad_json))
    assert code == 2 and "bad.json" in err
    src = _parquet_of(v.input, v.data_type, work)
    code, _, err = _run(capsys, "file", "build", str(src), "--column", "v", "--index-type", "bitmap",
                        "--options", "version", "-o", str(work / "x.idx"))
    assert code == 2 and "'version'" in err
    code, _, err = _run(capsys, "file", "build", str(src), "--column", "nope", "--index-type", "bitmap",
                        "-o", str(work / "x.idx"))
    assert code == 2 and "no column 'nope'" in err
    assert not (work / "x.idx").exists()
    truncated = work / "truncated.idx"
    truncated.write_bytes(v.file.read_bytes()[:100])
    code, _, err = _run(capsys, "file", "query", str(truncated), "--index-type", "range-bitmap", "--type", "INT",
                        "--where", "v > 1")
    assert code == 1 and "truncated.idx" in err
