"""Paimon's bitmap file index (spec §7): our writer against every Java-written file byte for byte, our reader
against every Java answer (over Java's bytes and ours), round trips against a plain-Python evaluation under
Java's semantics, corrupt input, and the typed errors for bad options and types.
"""
from __future__ import annotations

import datetime as dt
import json
import math
import struct
from functools import cache
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyroaring import BitMap

from index_format.errors import (
    CorruptFileError, InvalidOptionError, TruncatedFileError, UnsupportedTypeError, UnsupportedVersionError,
)
from index_format.file_index.bitmap_index import BitmapReader, write_bitmap
from index_format.file_index.result import REMAIN, SKIP, FileIndexResult, Rows
from index_format.file_index.values import paimon_type
from index_format.types import KeyType
from tests.file_index_vectors import Query, VectorEntry, load_queries, load_rows, load_vectors

VECTORS = load_vectors(index_type="bitmap")
ARROW = {"STRING": pa.string(), "INT": pa.int32(), "BIGINT": pa.int64(), "BOOLEAN": pa.bool_(),
         "DATE": pa.date32(), "TIMESTAMP(3)": pa.timestamp("ms"), "DOUBLE": pa.float64()}


def _id(v: VectorEntry) -> str:
    return v.file.name


@cache
def _rows(path: Path, data_type: str) -> tuple[object, ...]:
    return tuple(load_rows(path, data_type))


_OURS: dict[Path, bytes] = {}


def _ours(v: VectorEntry) -> bytes:
    if v.file not in _OURS:
        _OURS[v.file] = write_bitmap(paimon_type(v.data_type), list(_rows(v.input, v.data_type)), v.options)
    return _OURS[v.file]


# ---------------------------------------------------------------- (a) byte-exact writer

def test_every_bitmap_vector_is_covered() -> None:
    assert len(VECTORS) == 43
    assert {v.data_type for v in VECTORS} <= set(ARROW)


@pytest.mark.parametrize("v", VECTORS, ids=_id)
def test_writer_matches_java_from_list(v: VectorEntry) -> None:
    assert _ours(v) == v.file.read_bytes()


@pytest.mark.parametrize("v", VECTORS, ids=_id)
def test_writer_matches_java_from_arrow(v: VectorEntry) -> None:
    kt = paimon_type(v.data_type)
    arr = pa.array(list(_rows(v.input, v.data_type)), type=ARROW[v.data_type], from_pandas=False)
    ref = v.file.read_bytes()
    assert write_bitmap(kt, arr, v.options) == ref
    half = len(arr) // 2
    assert write_bitmap(kt, pa.chunked_array([arr[:half], arr[half:]], type=arr.type), v.options) == ref


# ---------------------------------------------------------------- (b) Java's answers

_CMP = {"=": "eq", "!=": "ne", "<": "lt", "<=": "le", ">": "gt", ">=": "ge"}


def _ask(r: BitmapReader, q: Query, data_type: str) -> FileIndexResult:
    vals = q.values(data_type)
    if q.op in _CMP:
        return getattr(r, _CMP[q.op])(vals[0])
    if q.op == "IN":
        return r.isin(vals)
    if q.op == "NOT IN":
        return r.not_in(vals)
    if q.op == "IS NULL":
        return r.is_null()
    if q.op == "IS NOT NULL":
        return r.is_not_null()
    if q.op == "BETWEEN":
        return r.between(vals[0], vals[1])
    raise AssertionError(f"unexpected op {q.op}")


def _check_queries(v: VectorEntry, data: bytes) -> int:
    r = BitmapReader(data, paimon_type(v.data_type), path=v.file.name)
    assert v.queries is not None
    wrong = []
    queries = load_queries(v.queries)
    for q in queries:
        got = _ask(r, q, v.data_type)
        if q.outcome == "ROWS":
            ok = isinstance(got, Rows) and list(got.bitmap) == q.rows
        else:
            ok = got is (REMAIN if q.outcome == "REMAIN" else SKIP)
        if not ok:
            wrong.append(f"{q.label}: {got!r}")
    assert not wrong, wrong[:5]
    return len(queries)


@pytest.mark.parametrize("v", VECTORS, ids=_id)
def test_reader_answers_like_java_over_java_bytes(v: VectorEntry) -> None:
    assert _check_queries(v, v.file.read_bytes()) == v.query_count


@pytest.mark.parametrize("v", VECTORS, ids=_id)
def test_reader_answers_like_java_over_our_bytes(v: VectorEntry) -> None:
    assert _check_queries(v, _ours(v)) == v.query_count


@pytest.mark.parametrize("v", VECTORS, ids=_id)
def test_describe_and_entries(v: VectorEntry) -> None:
    kt = paimon_type(v.data_type)
    r = BitmapReader(v.file.read_bytes(), kt)
    d = json.loads(json.dumps(r.describe(), allow_nan=False))
    assert d["index_type"] == "bitmap"
    assert d["version"] == (1 if v.options.get("version") == "1" else 2)
    assert d["row_count"] == v.rows
    assert d["distinct"] == v.distinct == len(d["entries"]) == len(list(r.entries()))
    assert d["has_null"] == bool(v.nulls)
    if v.nulls:
        assert d["null"]["rows"] == v.nulls
    assert sum(e["rows"] for e in d["entries"]) + (v.nulls or 0) == v.rows
    if d["version"] == 2:
        assert v.detail == f"V2, {len(d['blocks'])} index block(s)"
        assert sum(b["entries"] for b in d["blocks"]) == v.distinct
    for e in d["entries"]:
        assert (e["rows"] == 1) == (e["offset"] < 0)


def test_describe_key_forms() -> None:
    data = write_bitmap(KeyType("string"), ["ü", b"\xff\xfe", "ü", None], {})
    keys = [e["key"] for e in BitmapReader(data, KeyType("string")).describe()["entries"]]
    assert sorted(map(json.dumps, keys)) == sorted(map(json.dumps, [{"hex": "fffe"}, "ü"]))
    data = write_bitmap(KeyType("double"), [math.nan, math.inf, -math.inf, -0.0, 1.5], {"version": "1"})
    keys = [e["key"] for e in BitmapReader(data, KeyType("double")).describe()["entries"]]
    assert sorted(map(json.dumps, keys)) == sorted(map(json.dumps, ["NaN", "Infinity", "-Infinity", -0.0, 1.5]))


def test_describe_can_cap_entries() -> None:
    data = write_bitmap(KeyType("int"), list(range(50)), {})
    d = BitmapReader(data, KeyType("int")).describe(max_entries=10)
    assert len(d["entries"]) == 10 and d["entries_truncated"] is True


# ---------------------------------------------------------------- (c) round trips

_UTC = dt.timezone.utc
_EPOCH = dt.datetime(1970, 1, 1)
_TYPES = {
    "string": (st.text(max_size=8), pa.string()),
    "boolean": (st.booleans(), pa.bool_()),
    "tinyint": (st.integers(-(1 << 7), (1 << 7) - 1), pa.int8()),
    "smallint": (st.integers(-(1 << 15), (1 << 15) - 1), pa.int16()),
    "int": (st.integers(-(1 << 31), (1 << 31) - 1), pa.int32()),
    "bigint": (st.integers(-(1 << 63), (1 << 63) - 1), pa.int64()),
    "float": (st.one_of(st.sampled_from([0.0, -0.0, math.nan, math.inf, -math.inf]), st.floats(width=32)),
              pa.float32()),
    "double": (st.one_of(st.sampled_from([0.0, -0.0, math.nan, math.inf, -math.inf]), st.floats()), pa.float64()),
    "date": (st.dates(), pa.date32()),
    "time": (st.builds(dt.time, st.integers(0, 23), st.integers(0, 59), st.integers(0, 59),
                       st.integers(0, 999).map(lambda ms: ms * 1000)), pa.time32("ms")),
    "timestamp(3)": (st.datetimes(dt.datetime(1900, 1, 1), dt.datetime(2200, 1, 1)), pa.timestamp("us")),
    "timestamp(6)": (st.datetimes(dt.datetime(1900, 1, 1), dt.datetime(2200, 1, 1)), pa.timestamp("us")),
    "timestamp_ltz(3)": (st.datetimes(dt.datetime(1900, 1, 1), dt.datetime(2200, 1, 1), timezones=st.just(_UTC)),
                         pa.timestamp("us", tz="UTC")),
    "timestamp_ltz(6)": (st.datetimes(dt.datetime(1900, 1, 1), dt.datetime(2200, 1, 1), timezones=st.just(_UTC)),
                         pa.timestamp("us", tz="UTC")),
}


def _oracle_key(kt: KeyType, v: object) -> object:
    """Java's key equality, computed without index_format: float bits (one NaN, -0.0 != 0.0), timestamps
    floored to millis (p <= 3) or micros, TIME as millis of the day."""
    name = kt.name
    if name in ("float", "double"):
        if math.isnan(v):  # type: ignore[arg-type]
            return "NaN"
        return struct.pack(">f" if name == "float" else ">d", v)
    if name in ("timestamp", "timestamp_ltz"):
        base = _EPOCH.replace(tzinfo=_UTC) if v.tzinfo is not None else _EPOCH  # type: ignore[attr-defined]
        micros = (v - base) // dt.timedelta(microseconds=1)  # type: ignore[operator]
        return micros // 1000 if kt.time_precision <= 3 else micros
    if name == "time":
        return ((v.hour * 60 + v.minute) * 60 + v.second) * 1000 + v.microsecond // 1000  # type: ignore[attr-defined]
    return v


def _expected_in(kt: KeyType, rows: list[object], lits: list[object]) -> BitMap:
    keys = {None if v is None else _oracle_key(kt, v) for v in lits}
    return BitMap(i for i, v in enumerate(rows) if (None if v is None else _oracle_key(kt, v)) in keys)


@st.composite
def _case(draw: st.DrawFn) -> tuple[KeyType, list[object], list[object], dict[str, str], pa.DataType]:
    spelling = draw(st.sampled_from(sorted(_TYPES)))
    values, arrow_type = _TYPES[spelling]
    pool = draw(st.lists(values, min_size=1, max_size=12))
    null_rate = draw(st.sampled_from([0.0, 0.2, 1.0]))
    rows = draw(st.lists(st.one_of(st.sampled_from(pool), st.none()) if null_rate else st.sampled_from(pool),
                         max_size=80))
    if null_rate == 1.0:
        rows = [None] * len(rows)
    literals = pool + draw(st.lists(values, max_size=3)) + [None]
    opts = {"version": draw(st.sampled_from(["1", "2"]))}
    if opts["version"] == "2":
        opts["index-block-size"] = draw(st.sampled_from(["64b", "100b", "256b", "16kb"]))
    return paimon_type(spelling), rows, literals, opts, arrow_type


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_case(), st.data())
def test_round_trip_matches_plain_evaluation(case: tuple, data: st.DataObject) -> None:
    kt, rows, literals, opts, arrow_type = case
    blob = write_bitmap(kt, rows, opts)
    assert write_bitmap(kt, pa.array(rows, type=arrow_type, from_pandas=False), opts) == blob
    r = BitmapReader(blob, kt)
    n = len(rows)
    everything = BitMap(range(n))
    for lit in literals:
        want = _expected_in(kt, rows, [lit])
        assert r.eq(lit) == Rows(want), lit
        assert r.ne(lit) == Rows(everything - want), lit   # Java: the flip includes null rows
    lits = data.draw(st.lists(st.sampled_from(literals), max_size=4))
    want = _expected_in(kt, rows, lits)
    assert r.isin(lits) == Rows(want)
    assert r.not_in(lits) == Rows(everything - want)
    nulls = BitMap(i for i, v in enumerate(rows) if v is None)
    assert r.is_null() == Rows(nulls)
    assert r.is_not_null() == Rows(everything - nulls)
    assert r.lt(literals[0]) is REMAIN and r.between(literals[0], literals[0]) is REMAIN
    d = r.describe()
    assert d["row_count"] == n and d["distinct"] == len({_oracle_key(kt, v) for v in rows if v is not None})


@pytest.mark.parametrize("options, copies", [({"version": "1"}, 1), ({}, 1), ({"index-block-size": "20b"}, 2)])
@pytest.mark.parametrize("type_name, fmt, other_nan", [("double", ">d", 0x7FF0000000000001), ("float", ">f", 0xFFC00001)])
def test_any_nan_in_a_file_is_the_nan_key(options: dict[str, str], copies: int, type_name: str, fmt: str,
                                          other_nan: int) -> None:
    kt = KeyType(type_name)
    blob = write_bitmap(kt, [math.nan, 1.0, math.nan], options)
    canonical = struct.pack(fmt, math.nan)
    assert blob.count(canonical) == copies   # the entry (and, one entry per block, the block's first key)
    patched = blob.replace(canonical, other_nan.to_bytes(len(canonical), "big"))
    r = BitmapReader(patched, kt)
    assert r.eq(math.nan) == Rows(BitMap([0, 2]))          # readDouble + Double.equals: every NaN is one key
    assert r.eq(1.0) == Rows(BitMap([1]))


def test_empty_input() -> None:
    for opts in ({}, {"version": "1"}):
        blob = write_bitmap(KeyType("int"), [], opts)
        r = BitmapReader(blob, KeyType("int"))
        assert r.eq(1) == Rows(BitMap()) and r.ne(1) == Rows(BitMap()) and r.is_null() == Rows(BitMap())
    assert write_bitmap(KeyType("int"), [], {}) == bytes([2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0])


def test_results_are_not_shared_with_the_cache() -> None:
    r = BitmapReader(write_bitmap(KeyType("int"), [1, 1, 2], {}), KeyType("int"))
    first = r.eq(1)
    assert isinstance(first, Rows)
    first.bitmap.add(99)
    assert r.eq(1) == Rows(BitMap([0, 1]))


def test_in_with_empty_list_is_an_empty_bitmap_like_java() -> None:
    r = BitmapReader(write_bitmap(KeyType("int"), [1, None, 2], {}), KeyType("int"))
    assert r.isin([]) == Rows(BitMap())
    assert r.not_in([]) == Rows(BitMap([0, 1, 2]))


def test_large_dense_and_run_bitmaps_round_trip() -> None:
    rows = [i % 3 for i in range(200_000)] + [7] * 70_000 + [None] * 5000
    blob = write_bitmap(KeyType("bigint"), pa.array(rows, type=pa.int64()), {"version": "1"})
    r = BitmapReader(blob, KeyType("bigint"))
    assert r.eq(7) == Rows(BitMap(range(200_000, 270_000)))
    assert r.eq(1) == Rows(BitMap(range(1, 200_000, 3)))
    assert r.is_null() == Rows(BitMap(range(270_000, 275_000)))


# ---------------------------------------------------------------- (d) corruption

_FUZZED = ["tiny.v1.java.idx", "tiny.v2.b16.java.idx", "single_value.v1.java.idx", "single_value.v2.b64.java.idx",
           "all_null.v1.java.idx", "all_null.v2.java.idx", "resize_edge.v1.java.idx", "resize_edge.v2.b64.java.idx",
           "boolean.v2.b16.java.idx", "double_special.v2.b48.java.idx"]


def _exercise(data: bytes, kt: KeyType) -> None:
    r = BitmapReader(data, kt)
    json.dumps(r.describe())
    for e in list(r.entries())[:20]:
        r.eq(_any_literal(kt, e.key))
    r.is_null()
    r.is_not_null()
    r.ne(None)


def _any_literal(kt: KeyType, key: object) -> object:
    if kt.name == "double":
        return struct.unpack(">d", struct.pack(">q", key))[0]  # type: ignore[arg-type]
    if kt.name == "string":
        return bytes(key).decode("utf-8", "replace")  # type: ignore[arg-type]
    return key


@pytest.mark.parametrize("name", _FUZZED)
def test_every_flip_and_truncation_decodes_or_raises_corrupt(name: str) -> None:
    v = next(x for x in VECTORS if x.file.name == name)
    kt = paimon_type(v.data_type)
    ref = v.file.read_bytes()
    _exercise(ref, kt)
    variants: list[tuple[str, bytes]] = [(f"truncated to {i}", ref[:i]) for i in range(len(ref))]
    for i in range(len(ref)):
        for mask in (0xFF, 0x01, 0x80):
            b = bytearray(ref)
            b[i] ^= mask
            variants.append((f"byte {i} ^ {mask:#x}", bytes(b)))
    for label, data in variants:
        try:
            _exercise(data, kt)
        except UnsupportedVersionError:
            assert label.startswith("byte 0 "), label
        except CorruptFileError as exc:
            assert exc.path is None and exc.block, label
        except Exception as exc:  # noqa: BLE001 - the point of the test
            pytest.fail(f"{name}, {label}: {type(exc).__name__}: {exc}")


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=64), st.sampled_from(["int", "string", "double", "boolean"]))
def test_random_bytes_never_crash(blob: bytes, type_name: str) -> None:
    kt = KeyType(type_name)
    for data in (blob, bytes([1]) + blob, bytes([2]) + blob):
        try:
            _exercise(data, kt)
        except (CorruptFileError, UnsupportedVersionError):
            pass


def test_corrupt_errors_name_the_file_and_part() -> None:
    v = next(x for x in VECTORS if x.file.name == "str_mixed.v2.b256.java.idx")
    ref = v.file.read_bytes()
    with pytest.raises(TruncatedFileError) as info:
        BitmapReader(ref[:30], KeyType("string"), path="x.idx")
    assert info.value.path == "x.idx" and "x.idx" in str(info.value)
    r = BitmapReader(ref[:-10], KeyType("string"), path="x.idx")   # the last bitmap is cut short
    with pytest.raises(CorruptFileError) as info2:
        r.describe()
    assert info2.value.block is not None and info2.value.block.startswith("bitmap of key")


def test_other_versions_are_rejected() -> None:
    blob = bytearray(write_bitmap(KeyType("int"), [1, 2], {}))
    for version in (0, 3, 255):
        blob[0] = version
        with pytest.raises(UnsupportedVersionError):
            BitmapReader(bytes(blob), KeyType("int"))


# ---------------------------------------------------------------- (e) typed errors

@pytest.mark.parametrize("options, option", [
    ({"version": "3"}, "version"), ({"version": "x"}, "version"), ({"version": ""}, "version"),
    ({"index-block-size": "-1"}, "index-block-size"), ({"index-block-size": "12 parsecs"}, "index-block-size"),
    ({"index-block-size": "8b"}, "index-block-size"), ({"block-size": "1kb"}, "block-size"),
])
def test_bad_options(options: dict[str, str], option: str) -> None:
    with pytest.raises(InvalidOptionError, match=option):
        write_bitmap(KeyType("int"), [1, 1, 2], options)


def test_block_size_must_hold_the_longest_key() -> None:
    with pytest.raises(InvalidOptionError, match="index-block-size"):
        write_bitmap(KeyType("string"), ["x" * 100], {"index-block-size": "64b"})
    write_bitmap(KeyType("string"), ["x" * 100], {"index-block-size": "64b", "version": "1"})  # V1 has no blocks
    write_bitmap(KeyType("string"), ["x" * 48], {"index-block-size": "64b"})  # 4 + (4 + 48) + 8 = 64 fits


@pytest.mark.parametrize("kt", [KeyType("decimal", 10, 2), KeyType("decimal", 38, 0)], ids=str)
def test_unsupported_types(kt: KeyType) -> None:
    with pytest.raises(UnsupportedTypeError, match="DECIMAL"):
        write_bitmap(kt, [1], {})
    with pytest.raises(UnsupportedTypeError):
        BitmapReader(b"\x02", kt)


@pytest.mark.parametrize("kt, values", [
    (KeyType("tinyint"), [1, 200]), (KeyType("int"), [1 << 40]),
    (KeyType("tinyint"), pa.array([1, 200], type=pa.int64())), (KeyType("int"), pa.array(["a"])),
    (KeyType("string"), pa.array([1, 2])), (KeyType("date"), pa.array([1.5])),
    (KeyType("string"), ["a", 5]), (KeyType("string"), ["\ud800"]), (KeyType("int"), 5),
])
def test_values_that_do_not_fit_the_type(kt: KeyType, values: object) -> None:
    with pytest.raises(UnsupportedTypeError):
        write_bitmap(kt, values, {})
