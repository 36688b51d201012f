"""The writer's dense route (index_format.dense_bitmaps): 16-bit keys over strictly ascending row ids, sorted
per 65536-id container only.

Ground truth: the literal spec writer of test_writer.py (BitMap64.run_optimize() bytes per key, spec §1/§2.8/
§2.9) over plain-Python groups of the input, and plain-Python sets read back. Inputs the route does not suit
must take the general route (and still be right).
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from index_format import dense_bitmaps, parse_type
from index_format.global_index import writer
from index_format.global_index.writer import write_index_bytes
from index_format.options import IndexOptions
from tests.unit.index_format.global_index.index_sets import read_sets, truth
from tests.unit.index_format.global_index.test_writer import _spec_writer


@pytest.fixture
def dense_calls(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Every input may take the dense route; the row counts it was taken for."""
    monkeypatch.setattr(writer, "_DENSE_ROWS", 1)
    calls: list[int] = []
    real = writer.key_bitmaps

    def counted(codes: np.ndarray, rid: np.ndarray) -> dense_bitmaps.KeyBitmaps:
        calls.append(len(rid))
        return real(codes, rid)

    monkeypatch.setattr(writer, "key_bitmaps", counted)
    return calls


@pytest.fixture(params=["one part, per-block sorts", "parts, per-block sorts", "parts, one sort per part"])
def layout(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Small parts (in chunks of few rows) on three workers, and each way of sorting a part's blocks."""
    if request.param != "one part, per-block sorts":
        monkeypatch.setattr(dense_bitmaps, "_PART_ROWS", 1500)
        monkeypatch.setattr(dense_bitmaps, "THREADS", 3)
        monkeypatch.setattr(dense_bitmaps, "_CHUNK_ROWS", 700)
    monkeypatch.setattr(dense_bitmaps, "_LOOP_ROWS", 1 << 40 if "one sort" in request.param else 0)


def _ids(rng: np.random.Generator, n: int, shape: str) -> np.ndarray:
    """Strictly ascending ids: consecutive, small gaps, gaps of many containers, or close below 2^32."""
    if shape == "consecutive":
        return np.arange(7, 7 + n, dtype=np.int64)
    if shape == "gaps":
        return np.cumsum(rng.integers(1, 40, n)).astype(np.int64)
    if shape == "sparse":
        return np.cumsum(rng.integers(1, 200_000, n)).astype(np.int64)
    ids = np.cumsum(rng.integers(1, 40, n)).astype(np.int64)
    return ids + ((1 << 32) - 1 - int(ids[-1]))


def _words(rng: np.random.Generator, n: int) -> list[str | None]:
    """A hot key (bitmap containers), runs of one key on consecutive rows, many rare keys, some nulls."""
    pool = ["", "é", "\U0001F600", "a\x00", "b" * 30] + [f"k{i:03d}" for i in range(400)]
    out: list[str | None] = []
    while len(out) < n:
        r = rng.random()
        if r < 0.05:
            out.append(None)
        elif r < 0.45:
            out.append("hot")
        elif r < 0.5:
            out.extend([pool[int(rng.integers(0, len(pool)))]] * int(rng.integers(2, 9)))
        else:
            out.append(pool[int(rng.integers(0, len(pool)))])
    return out[:n]


def _oracle(words: list[str | None], rids: np.ndarray, block_size: int) -> bytes:
    groups: dict[bytes, list[int]] = {}
    for w, r in zip(words, rids.tolist()):
        if w is not None:
            groups.setdefault(w.encode(), []).append(r)
    nulls = [r for w, r in zip(words, rids.tolist()) if w is None]
    return _spec_writer(sorted(groups.items()), nulls, block_size)


@pytest.mark.parametrize("shape", ["consecutive", "gaps", "sparse", "high"])
@pytest.mark.parametrize("seed", [0, 1])
def test_strings_match_the_spec_writer(shape: str, seed: int, layout: None, dense_calls: list[int]) -> None:
    rng = np.random.default_rng(seed)
    n = 9000
    words = _words(rng, n)
    rids = _ids(rng, n, shape)
    expected = _oracle(words, rids, 200)
    plain = pa.array(words, pa.string())
    for form in (plain, plain.cast(pa.large_string()), plain.dictionary_encode(),
                 pa.chunked_array([plain[:4000].dictionary_encode(), plain[4000:].dictionary_encode()])):
        data, written = write_index_bytes(form, rids, parse_type("string"), IndexOptions(dictionary_block_size=200))
        assert data == expected, (shape, form.type)
        assert written.row_count == n and written.has_nulls
    assert dense_calls and set(dense_calls) == {n - words.count(None)}


def test_array_or_run_containers_exactly_as_java(layout: None, dense_calls: list[int]) -> None:
    # one container each: c ids in r runs stay an array while c <= 2r + 1 (spec §1), else become runs
    per_key = {
        "a-tie": [0, 1, 2, 5, 6],                  # 5 ids, 2 runs: array
        "b-runs": [0, 1, 2, 5, 6, 7],              # 6 ids, 2 runs: runs
        "c-pairs": [10, 11, 20, 21, 30, 31, 40],   # 7 ids, 4 runs: array
        "d-long": list(range(100, 140)),           # one run
        "e-bitmap": list(range(200, 200 + 2 * 5000, 2)),   # over 4096 ids: a bitmap container
        "f-lone": [70000],
    }
    # each key in its own containers (a row id belongs to one row)
    rows = sorted(((i << 16) + r, k) for i, (k, ids) in enumerate(per_key.items()) for r in ids)
    rids = np.array([r for r, _ in rows], dtype=np.int64)
    words: list[str | None] = [k for _, k in rows]
    data, _ = write_index_bytes(pa.array(words), rids, parse_type("string"))
    assert data == _oracle(words, rids, 16384)
    assert dense_calls == [len(rows)]


@pytest.mark.parametrize("shape", ["gaps", "sparse"])
def test_small_int_ranges_match_the_general_route(shape: str, layout: None, dense_calls: list[int],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(3)
    n = 8000
    values = [None if rng.random() < 0.03 else int(v) for v in rng.integers(-30_000, 30_000, n)]
    values[100:160] = [5] * 60
    rids = _ids(rng, n, shape)
    for type_text, arrow in (("bigint", pa.int64()), ("smallint", pa.int16()), ("int", pa.int32())):
        data, _ = write_index_bytes(pa.array(values, arrow), rids, parse_type(type_text))
        assert read_sets(data, type_text) == truth(values, rids.tolist())
        with monkeypatch.context() as m:
            m.setattr(writer, "_DENSE_ROWS", 1 << 60)
            assert data == write_index_bytes(pa.array(values, arrow), rids, parse_type(type_text))[0]
    assert len(dense_calls) == 3


@pytest.mark.parametrize("case", ["repeated id", "unsorted", "id 2^32", "wide int range", "all null"])
def test_inputs_it_does_not_suit_take_the_general_route(case: str, dense_calls: list[int]) -> None:
    rng = np.random.default_rng(8)
    n = 3000
    rids = np.cumsum(rng.integers(1, 9, n)).astype(np.int64)
    values: list[int | None] = [int(v) for v in rng.integers(0, 50, n)]
    if case == "repeated id":
        rids[1000] = rids[999]
    elif case == "unsorted":
        rids = rids[::-1].copy()
    elif case == "id 2^32":
        rids[-1] = 1 << 32
    elif case == "wide int range":
        values[5] = 1 << 20
    else:
        values = [None] * n
    data, _ = write_index_bytes(pa.array(values, pa.int64()), rids, parse_type("bigint"))
    assert read_sets(data, "bigint") == truth(values, rids.tolist())
    assert dense_calls == []


def test_all_null_rows_and_no_rows(dense_calls: list[int]) -> None:
    rids = np.arange(50, dtype=np.int64)
    data, written = write_index_bytes(pa.array([None] * 50, pa.string()), rids, parse_type("string"))
    assert data == _oracle([None] * 50, rids, 16384)
    assert written.value_count == 0 and written.first_key is None
