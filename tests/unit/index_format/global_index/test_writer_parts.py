"""The writer's parallel path: large inputs with row ids in order are hashed, sorted and serialized in parts
(one per thread), and dictionary columns are encoded without hashing.

Ground truth: pyroaring's BitMap64.run_optimize() bytes per key (Java's, spec §1) and plain-Python sets of
the input rows; a file written in parts must also be byte-identical to the one-part file of the same rows.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from pyroaring import BitMap64

from index_format import key_arrays
from index_format.bitmaps import serialize_parts
from index_format.global_index import writer
from index_format.global_index.writer import write_index_bytes
from index_format.storage import BytesSource
from index_format import open_index, parse_type
from tests.unit.index_format.global_index.index_sets import read_sets as _read, truth as _truth


def _expected(ids: np.ndarray) -> bytes:
    bm = BitMap64(ids.tolist())
    bm.run_optimize()
    return bm.serialize()


def _group(rng: np.random.Generator) -> np.ndarray:
    kind = int(rng.integers(0, 7))
    if kind == 0:
        return np.array([int(rng.integers(0, 1 << 22))])
    if kind == 1:   # a run across container boundaries
        a = int(rng.integers(0, 1 << 22))
        return np.arange(a, a + int(rng.integers(1, 70000)))
    if kind == 2:   # sparse, many containers
        return np.unique(rng.integers(0, 1 << 22, int(rng.integers(1, 400))))
    if kind == 3:   # an array container of cardinality 2·runs + 1 (Java keeps the array)
        base = int(rng.integers(0, 60)) << 16
        return base + np.array([1, 2, 3, 4, 9])
    if kind == 4:   # a bitmap container
        base = int(rng.integers(0, 60)) << 16
        return base + np.arange(0, 9000, 2)
    if kind == 5:   # ids past 2^32
        return np.unique(np.concatenate([rng.integers(0, 1 << 22, 5), (1 << 33) + rng.integers(0, 9, 3)]))
    return (int(rng.integers(0, 64)) << 16) + np.array([0, 7, 65535])  # in one part only


def _split(ids: np.ndarray, cuts: list[int]) -> list[np.ndarray]:
    edges = [0] + [int(np.searchsorted(ids, c)) for c in cuts] + [len(ids)]
    return [ids[a:b] for a, b in zip(edges[:-1], edges[1:])]


def test_serialize_parts_equals_bitmap64_per_key() -> None:
    rng = np.random.default_rng(11)
    for _ in range(60):
        groups = [np.sort(_group(rng)).astype(np.int64) for _ in range(int(rng.integers(1, 8)))]
        # cut points on container boundaries; a key may have no ids in some parts
        cuts = sorted({int(c) << 16 for c in rng.integers(1, 64, int(rng.integers(1, 4)))})
        per_key = [_split(g, cuts) for g in groups]
        parts = []
        for p in range(len(cuts) + 1):
            pieces = [pk[p] for pk in per_key]
            rid = np.concatenate(pieces).astype(np.int64)
            bounds = np.concatenate([[0], np.cumsum([len(x) for x in pieces])]).astype(np.int64)
            parts.append((rid, bounds))
        buf, offs = serialize_parts(parts)
        for i, g in enumerate(groups):
            assert buf[offs[i]:offs[i + 1]] == _expected(g), (i, g[:8])


def test_duplicate_ids_inside_a_part_are_stored_once() -> None:
    ids = np.array([3, 3, 70000, 70000, 70001], dtype=np.int64)
    parts = [(ids[:2], np.array([0, 2])), (ids[2:], np.array([0, 3]))]
    buf, offs = serialize_parts(parts)
    assert buf[offs[0]:offs[1]] == _expected(np.unique(ids))


@pytest.fixture
def small_parts(monkeypatch: pytest.MonkeyPatch) -> None:
    """Parts of a few thousand rows, so small inputs take the parallel path."""
    monkeypatch.setattr(writer, "_PART_ROWS", 3000)
    monkeypatch.setattr(writer, "THREADS", 3)
    monkeypatch.setattr(key_arrays, "PART_ROWS", 3000)
    monkeypatch.setattr(key_arrays, "THREADS", 3)


def _one_part(keys: object, rids: np.ndarray, type_text: str) -> bytes:
    return write_index_bytes(keys, rids, parse_type(type_text))[0]


def _rows(rng: np.random.Generator, n: int) -> np.ndarray:
    # ascending ids with gaps, spanning many 65536-id containers, some repeated
    return np.cumsum(rng.integers(0, 90, n)).astype(np.int64)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_strings_in_parts_match_one_part_and_the_rows(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(seed)
    n = 12000
    pool = ["", "é", "ü-x", "\U0001F600", "a", "b" * 40] + [f"k{i:04d}" for i in range(300)]
    keys = [None if rng.random() < 0.05 else pool[int(rng.integers(0, len(pool)))] for _ in range(n)]
    for i in range(100, 140):   # runs of one key on consecutive ids
        keys[i] = "run"
    rids = _rows(rng, n)   # includes repeated ids
    expected = _one_part(pa.array(keys, pa.string()), rids, "string")
    monkeypatch.setattr(writer, "_PART_ROWS", 3000)
    monkeypatch.setattr(writer, "THREADS", 3)
    monkeypatch.setattr(key_arrays, "PART_ROWS", 3000)
    monkeypatch.setattr(key_arrays, "THREADS", 3)
    assert len(writer._cuts(rids, 3)) >= 2
    for form in (pa.array(keys, pa.string()), pa.array(keys, pa.large_string()),
                 pa.array([None if k is None else k.encode() for k in keys], pa.binary()),
                 pa.array(keys, pa.string()).dictionary_encode(),
                 pa.chunked_array([pa.array(keys[:5000]).dictionary_encode(),
                                   pa.array(keys[5000:]).dictionary_encode()])):
        data, written = write_index_bytes(form, rids, parse_type("string"))
        assert data == expected, form.type
        sets, nulls = _read(data, "string")
        truth, truth_nulls = _truth(keys, rids.tolist())
        assert sets == truth and nulls == truth_nulls
        assert written.row_count == n


def test_dictionary_with_repeated_and_unused_values(small_parts: None) -> None:
    # a dictionary may list a value twice or not use it; equal strings must still be one key
    dictionary = pa.array(["b", "a", "b", "zz", "unused"])
    idx = np.random.default_rng(4).integers(0, 4, 9000).astype(np.int32)
    arr = pa.DictionaryArray.from_arrays(pa.array(idx), dictionary)
    rids = np.arange(0, 9000 * 20, 20, dtype=np.int64)
    keys = [dictionary[int(i)].as_py() for i in idx]
    sets, _ = _read(write_index_bytes(arr, rids, parse_type("string"))[0], "string")
    assert sets == _truth(keys, rids.tolist())[0]
    assert set(sets) == {"a", "b", "zz"}


def test_all_null_segment_and_ints_in_parts(small_parts: None) -> None:
    rng = np.random.default_rng(9)
    n = 10000
    keys = [None] * 4000 + [int(v) for v in rng.integers(-50, 50, n - 4000)]
    rids = _rows(rng, n)
    data, _ = write_index_bytes(pa.array(keys, pa.int64()), rids, parse_type("bigint"))
    assert _read(data, "bigint") == _truth(keys, rids.tolist())
    skeys = [None if k is None else str(k) for k in keys]
    data, _ = write_index_bytes(pa.array(skeys, pa.string()), rids, parse_type("string"))
    assert _read(data, "string") == _truth(skeys, rids.tolist())


@pytest.mark.parametrize("form", ["plain", "dictionary"])
def test_python_and_arrow_rankings_agree(form: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # small dictionaries are ranked in Python, large ones by pyarrow.compute: same file either way
    rng = np.random.default_rng(21)
    pool = ["", "a", "a\x00", "é", "e\u0301", "\uffff", "\U0001F600", "Z", "z", "ab", "b"]
    keys = [None if rng.random() < 0.1 else pool[int(rng.integers(0, len(pool)))] for _ in range(3000)]
    arr = pa.array(keys, pa.string())
    if form == "dictionary":
        arr = arr.dictionary_encode()
    rids = np.arange(3000, dtype=np.int64)
    by_python = write_index_bytes(arr, rids, parse_type("string"))[0]
    monkeypatch.setattr(key_arrays, "_PY_RANK_MAX", 0)
    by_arrow = write_index_bytes(arr, rids, parse_type("string"))[0]
    assert by_python == by_arrow
    sets, nulls = _read(by_python, "string")
    truth, truth_nulls = _truth(keys, rids.tolist())
    assert sets == truth and nulls == truth_nulls
    # the file's keys are in Java's order: unsigned UTF-8 bytes
    order = [k for k, _, _ in open_index(BytesSource(by_python), parse_type("string")).located_entries()]
    assert order == sorted(truth, key=lambda k: k.encode())
