"""The bsi file index (index_format.file_index.bsi_index) against Paimon's Java writer and reader.

(a) every reference payload rebuilt byte for byte; (b) every reference answer, over Java's bytes and ours;
(c) round trips per type against a plain evaluation (nulls never match a comparison or `!=`); (d) damaged
payloads decode or raise a typed error naming the file and the part; (e) unsupported types and options.
"""
from __future__ import annotations

import datetime as dt
import decimal
import struct
import time
from collections.abc import Callable, Sequence
from functools import cache
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyroaring import BitMap

from index_format.errors import (CorruptFileError, IndexFormatError, InvalidOptionError, TruncatedFileError,
                                 UnsupportedTypeError, UnsupportedVersionError)
from index_format.file_index.bsi_index import BsiReader, write_bsi
from index_format.file_index.formats import open_payload, write_payload
from index_format.file_index.result import REMAIN, FileIndexResult, Rows
from index_format.file_index.values import paimon_type
from index_format.types import KeyType, parse_type
from tests.file_index_vectors import Query, VectorEntry, load_queries, load_rows, load_vectors

VECTORS = load_vectors(index_type="bsi")
LONG_MIN, LONG_MAX = -(1 << 63), (1 << 63) - 1


@cache
def _rows(path: Path, data_type: str) -> list[object]:
    return load_rows(path, data_type)


def _answer(r: BsiReader, q: Query, data_type: str) -> FileIndexResult:
    vals = q.values(data_type)
    one = vals[0] if vals else None
    return {
        "=": lambda: r.eq(one), "!=": lambda: r.ne(one), "<": lambda: r.lt(one), "<=": lambda: r.le(one),
        ">": lambda: r.gt(one), ">=": lambda: r.ge(one), "IN": lambda: r.isin(vals),
        "NOT IN": lambda: r.not_in(vals), "IS NULL": r.is_null, "IS NOT NULL": r.is_not_null,
        "BETWEEN": lambda: r.between(vals[0], vals[1]),
    }[q.op]()


def test_reference_set_is_complete() -> None:
    assert len(VECTORS) == 7
    assert sum(v.query_count for v in VECTORS) == 230


# ---------------------------------------------------------------- (a) bytes

@pytest.mark.parametrize("v", VECTORS, ids=lambda v: v.id)
def test_rebuilds_reference_bytes(v: VectorEntry) -> None:
    kt = paimon_type(v.data_type)
    rows = _rows(v.input, v.data_type)
    java = v.file.read_bytes()
    assert write_bsi(kt, rows, v.options) == java
    # the same bytes from an Arrow column, and through the registry
    assert write_bsi(kt, pa.array(rows, type=pa.int64() if kt.name == "bigint" else pa.int32()), {}) == java
    assert write_payload("bsi", kt, rows, v.options) == java


@pytest.mark.parametrize("v", VECTORS, ids=lambda v: v.id)
def test_describe_matches_vector_detail(v: VectorEntry) -> None:
    d = BsiReader(v.file.read_bytes(), paimon_type(v.data_type), path=str(v.file)).describe()
    assert d["row_count"] == v.rows
    parts = []
    for side in ("positive", "negative"):
        p = d[side]
        assert isinstance(p, dict)
        parts.append(f"{side}: max {p['max']}, {p['slices']} slices" if p["present"] else f"no {side} BSI")
    assert "; ".join(parts) == v.detail
    nonnull = v.rows - (v.nulls or 0)
    sides = [p for p in (d["positive"], d["negative"]) if p["present"]]  # type: ignore[index]
    assert sum(p["ebm_cardinality"] for p in sides) == nonnull  # type: ignore[index]


# ---------------------------------------------------------------- (b) answers

@pytest.mark.parametrize("which", ["java", "ours"])
@pytest.mark.parametrize("v", VECTORS, ids=lambda v: v.id)
def test_reference_answers(v: VectorEntry, which: str) -> None:
    kt = paimon_type(v.data_type)
    data = v.file.read_bytes() if which == "java" else write_bsi(kt, _rows(v.input, v.data_type), {})
    r = open_payload("bsi", data, kt, path=str(v.file))
    assert isinstance(r, BsiReader)
    assert v.queries is not None
    queries = load_queries(v.queries)
    assert len(queries) == v.query_count
    for q in queries:
        got = _answer(r, q, v.data_type)
        if q.outcome == "ROWS":
            assert isinstance(got, Rows), q.label
            assert list(got.bitmap) == q.rows, q.label
        else:
            assert repr(got) == q.outcome, q.label


# ---------------------------------------------------------------- (c) round trips

EPOCH = dt.datetime(1970, 1, 1)


def _ints(bits: int) -> st.SearchStrategy[int]:
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    if bits == 64:
        lo += 1   # Long.MIN_VALUE cannot be written (tested separately)
    return st.one_of(st.sampled_from([lo, lo + 1, -1, 0, 1, hi - 1, hi]), st.integers(lo, hi),
                     st.integers(max(lo, -300), min(hi, 300)))


_MILLI_DT = st.datetimes(min_value=dt.datetime(1800, 1, 1), max_value=dt.datetime(2300, 1, 1)).map(
    lambda d: d.replace(microsecond=d.microsecond // 1000 * 1000))
_SMALL_DT = st.sampled_from([EPOCH, EPOCH - dt.timedelta(microseconds=1000), EPOCH + dt.timedelta(microseconds=1000)])

# type → strategy of canonical values whose Java long is exact (so Python's own order is the index's order)
TYPES: dict[str, st.SearchStrategy[object]] = {
    "tinyint": _ints(8), "smallint": _ints(16), "int": _ints(32), "bigint": _ints(64),
    "date": st.dates(min_value=dt.date(1, 1, 1), max_value=dt.date(9999, 12, 31)),
    "time(3)": st.times().map(lambda t: t.replace(microsecond=t.microsecond // 1000 * 1000)),
    "timestamp(3)": st.one_of(_MILLI_DT, _SMALL_DT),
    "timestamp(6)": st.one_of(st.datetimes(min_value=dt.datetime(1800, 1, 1), max_value=dt.datetime(2300, 1, 1)),
                              _SMALL_DT),
    "timestamp_ltz(3)": st.one_of(_MILLI_DT, _SMALL_DT).map(lambda d: d.replace(tzinfo=dt.timezone.utc)),
    "decimal(10,2)": st.decimals(min_value=-99999999, max_value=99999999, places=2, allow_nan=False,
                                 allow_infinity=False),
    "decimal(18,0)": st.integers(-(10**18) + 1, 10**18 - 1).map(decimal.Decimal),
}


def _column(spelling: str) -> st.SearchStrategy[list[object]]:
    vals = TYPES[spelling]
    return st.one_of(
        st.lists(st.one_of(st.none(), vals), min_size=0, max_size=60),
        st.lists(st.none(), min_size=1, max_size=5),        # all null
        st.lists(vals, min_size=1, max_size=1),             # a single row
        st.lists(st.one_of(st.none(), vals), min_size=1, max_size=8).map(lambda xs: xs * 20),  # repeats
    )


def _plain(values: Sequence[object], pred: Callable[[object], bool]) -> list[int]:
    return [i for i, x in enumerate(values) if x is not None and pred(x)]


@pytest.mark.parametrize("spelling", sorted(TYPES))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_round_trip_matches_plain_evaluation(spelling: str, data: st.DataObject) -> None:
    kt = parse_type(spelling)
    values = data.draw(_column(spelling), label="values")
    present = [x for x in values if x is not None]
    lits = data.draw(st.lists(st.one_of(st.sampled_from(present) if present else TYPES[spelling],
                                        TYPES[spelling]), min_size=1, max_size=4), label="literals")
    payload = write_bsi(kt, values, {})
    r = BsiReader(payload, kt, path="mem")

    def rows(res: FileIndexResult) -> list[int]:
        assert isinstance(res, Rows)
        return list(res.bitmap)

    assert rows(r.is_null()) == [i for i, x in enumerate(values) if x is None]
    assert rows(r.is_not_null()) == _plain(values, lambda x: True)
    for a in lits:
        assert rows(r.eq(a)) == _plain(values, lambda x: x == a), a
        assert rows(r.ne(a)) == _plain(values, lambda x: x != a), a
        assert rows(r.lt(a)) == _plain(values, lambda x: x < a), a  # type: ignore[operator]
        assert rows(r.le(a)) == _plain(values, lambda x: x <= a), a  # type: ignore[operator]
        assert rows(r.gt(a)) == _plain(values, lambda x: x > a), a  # type: ignore[operator]
        assert rows(r.ge(a)) == _plain(values, lambda x: x >= a), a  # type: ignore[operator]
    lo, hi = min(lits[0], lits[-1]), max(lits[0], lits[-1])  # type: ignore[type-var]
    assert rows(r.between(lo, hi)) == _plain(values, lambda x: lo <= x <= hi)  # type: ignore[operator]
    assert rows(r.between(hi, lo)) == _plain(values, lambda x: hi <= x <= lo)  # type: ignore[operator]
    assert rows(r.isin(lits)) == _plain(values, lambda x: x in lits)
    assert rows(r.not_in(lits)) == _plain(values, lambda x: x not in lits)
    if kt.name == "bigint":
        # the Long.MIN_VALUE literal: nothing equals or is below it, every non-null row is above it
        assert rows(r.eq(LONG_MIN)) == [] and rows(r.lt(LONG_MIN)) == [] and rows(r.le(LONG_MIN)) == []
        assert rows(r.gt(LONG_MIN)) == rows(r.ge(LONG_MIN)) == _plain(values, lambda x: True)
        assert rows(r.ne(LONG_MIN)) == _plain(values, lambda x: True)


@settings(max_examples=40, deadline=None)
@given(values=_column("bigint"))
def test_arrow_and_python_inputs_give_the_same_bytes(values: list[object]) -> None:
    kt = KeyType("bigint")
    ours = write_bsi(kt, values, {})
    assert write_bsi(kt, pa.array(values, type=pa.int64()), {}) == ours
    half = len(values) // 2
    chunked = pa.chunked_array([pa.array(values[:half], pa.int64()), pa.array(values[half:], pa.int64())])
    assert write_bsi(kt, chunked, {}) == ours


@pytest.mark.parametrize("spelling, arrow, pyvalues", [
    ("date", pa.date32(), [dt.date(1969, 12, 31), None, dt.date(2024, 2, 29)]),
    ("timestamp(3)", pa.timestamp("us"), [dt.datetime(1969, 12, 31, 23, 59, 59, 999500), None, EPOCH]),
    ("timestamp(6)", pa.timestamp("ns"), [dt.datetime(1950, 1, 1, 0, 0, 0, 1), EPOCH, None]),
    ("timestamp_ltz(3)", pa.timestamp("ms", tz="UTC"), [dt.datetime(2000, 1, 1, tzinfo=dt.timezone.utc), None]),
    ("time(3)", pa.time32("ms"), [dt.time(0, 0), dt.time(23, 59, 59, 999000), None]),
    ("smallint", pa.int16(), [-32768, 32767, None, 0]),
    ("decimal(10,2)", pa.decimal128(10, 2), [decimal.Decimal("-1.25"), None, decimal.Decimal("99.99")]),
])
def test_arrow_columns_of_other_types(spelling: str, arrow: pa.DataType, pyvalues: list[object]) -> None:
    kt = parse_type(spelling)
    assert write_bsi(kt, pa.array(pyvalues, type=arrow), {}) == write_bsi(kt, pyvalues, {})


def test_timestamp_keys_floor_like_java() -> None:
    # getMillisecond / toMicros floor: 1969-12-31 23:59:59.9995 is millisecond -1, not 0
    kt = parse_type("timestamp(3)")
    r = BsiReader(write_bsi(kt, [dt.datetime(1969, 12, 31, 23, 59, 59, 999500)], {}), kt)
    assert r.describe()["negative"] == {"present": True, "min": 0, "max": 1, "slices": 1, "ebm_cardinality": 1}


def test_zero_only_and_empty_files() -> None:
    kt = KeyType("int")
    d = BsiReader(write_bsi(kt, [0, None, 0], {}), kt).describe()
    assert d["positive"] == {"present": True, "min": 0, "max": 0, "slices": 0, "ebm_cardinality": 2}
    assert d["negative"] == {"present": False}
    empty = write_bsi(kt, [], {})
    assert empty == b"\x01\x00\x00\x00\x00\x00\x00"
    r = BsiReader(empty, kt)
    assert r.is_null() == Rows(BitMap()) and r.eq(1) == Rows(BitMap()) and r.isin([]) == Rows(BitMap())


def test_in_of_nothing_and_null_literals() -> None:
    kt = KeyType("int")
    r = BsiReader(write_bsi(kt, [1, -1, None], {}), kt)
    assert r.isin([]) == Rows(BitMap())              # Java reduces an empty stream to an empty bitmap
    assert r.not_in([]) == Rows(BitMap([0, 1]))      # EBM minus nothing: still no nulls
    # a NULL literal is a NullPointerException in Java's value mapper: cannot prune
    for res in (r.eq(None), r.ne(None), r.lt(None), r.le(None), r.gt(None), r.ge(None),
                r.isin([1, None]), r.not_in([None]), r.between(None, 1), r.between(1, None)):
        assert res is REMAIN
    assert r.top_n(1, descending=True, nulls_first=False, strict=True) is REMAIN


def test_decimal_literal_outside_a_long_is_remain() -> None:
    # Java would wrap BigInteger.longValue(); an answer from a wrapped literal could prune matching rows
    kt = parse_type("decimal(38,0)")
    r = BsiReader(write_bsi(kt, [decimal.Decimal(5)], {}), kt)
    assert r.lt(decimal.Decimal(2) ** 70) is REMAIN
    assert r.eq(decimal.Decimal(5)) == Rows(BitMap([0]))


def test_write_timing_one_million_int_rows() -> None:
    rng = np.random.default_rng(7)
    col = pa.array(rng.integers(-(1 << 31), 1 << 31, 1_000_000).astype(np.int32), mask=rng.random(1_000_000) < 0.02)
    start = time.perf_counter()
    payload = write_bsi(KeyType("int"), col, {})
    assert time.perf_counter() - start < 10
    r = BsiReader(payload, KeyType("int"))
    assert len(r.is_not_null().bitmap) == 1_000_000 - col.null_count  # type: ignore[attr-defined]


# ---------------------------------------------------------------- (d) damaged payloads

SMALL = [v for v in VECTORS if v.size <= 12_000]


def _probe(r: BsiReader) -> None:
    r.describe()
    for lit in (0, 1, -1, 4988, -897347, LONG_MIN):
        if r.kt.name != "bigint" and lit == LONG_MIN:
            continue
        r.eq(lit)
        r.ne(lit)
        r.lt(lit)
        r.ge(lit)
    r.between(-5, 5)
    r.is_null()


@pytest.mark.timeout(600)
@pytest.mark.parametrize("v", SMALL, ids=lambda v: v.id)
@pytest.mark.slow
def test_every_flip_and_truncation_is_typed(v: VectorEntry) -> None:
    data = v.file.read_bytes()
    kt = paimon_type(v.data_type)
    name = str(v.file)
    failures: list[str] = []
    blobs = [(f"cut@{n}", data[:n]) for n in range(len(data))]
    for pos in range(len(data)):
        for mask in (0x01, 0xFF):
            blobs.append((f"flip{mask:#x}@{pos}", data[:pos] + bytes([data[pos] ^ mask]) + data[pos + 1:]))
    for case, blob in blobs:
        start = time.perf_counter()
        try:
            _probe(BsiReader(blob, kt, path=name))
        except (CorruptFileError, UnsupportedVersionError) as exc:
            if exc.path != name or not exc.block:
                failures.append(f"{case}: error lacks path or block: {exc!r}")
            if case.startswith("cut") and not isinstance(exc, TruncatedFileError):
                failures.append(f"{case}: a cut should read as truncated: {exc!r}")
        except Exception as exc:  # noqa: BLE001 - any other kind is the failure being looked for
            failures.append(f"{case}: {type(exc).__name__}: {exc}")
        if time.perf_counter() - start > 2:
            failures.append(f"{case}: took {time.perf_counter() - start:.1f} s")
        if len(failures) > 20:
            break
    assert not failures, "\n".join(failures[:20])


def test_errors_name_the_part() -> None:
    kt = KeyType("int")
    data = write_bsi(kt, [5, 1, 7, -2], {})
    with pytest.raises(TruncatedFileError) as info:
        BsiReader(data[:-3], kt, path="f.idx")
    assert info.value.path == "f.idx" and info.value.block == "negative BSI slice 1"
    blocks = set()
    for n in range(len(data)):
        with pytest.raises(TruncatedFileError) as info:
            BsiReader(data[:n], kt, path="f.idx")
        assert info.value.path == "f.idx" and info.value.offset is not None
        blocks.add(info.value.block)
    assert blocks == {"bsi header", "positive BSI header", "positive BSI existence bitmap",
                      "positive BSI slice count", "positive BSI slice 0", "positive BSI slice 1",
                      "positive BSI slice 2", "negative BSI flag", "negative BSI header",
                      "negative BSI existence bitmap", "negative BSI slice count", "negative BSI slice 0",
                      "negative BSI slice 1"}
    with pytest.raises(UnsupportedVersionError) as vinfo:
        BsiReader(b"\x02" + data[1:], kt, path="f.idx")
    assert vinfo.value.block == "bsi header"


def test_absurd_counts_are_refused_before_allocating() -> None:
    kt = KeyType("int")
    head = struct.pack(">bib", 1, 10, 1) + struct.pack(">bqq", 1, 0, 7)
    ebm = struct.pack("<II", 12346, 0)
    with pytest.raises(CorruptFileError) as info:   # slices are decoded until the bytes run out
        BsiReader(head + ebm + struct.pack(">i", 0x7FFFFFFF) + ebm * 8 + b"\0" * 4, kt, path="x")
    assert info.value.block == "positive BSI slice 8"
    with pytest.raises(CorruptFileError, match="negative slice count"):
        BsiReader(head + ebm + struct.pack(">i", -1), kt, path="x")
    with pytest.raises(CorruptFileError, match="containers"):
        BsiReader(head + struct.pack("<II", 12346, 0xFFFFFFFF), kt, path="x")
    with pytest.raises(TruncatedFileError):   # 65536 run containers claimed by a 4-byte cookie
        BsiReader(head + struct.pack("<I", 12347 | 0xFFFF0000), kt, path="x")
    with pytest.raises(CorruptFileError, match="malformed"):   # array values out of order
        BsiReader(head + struct.pack("<IIHHI", 12346, 1, 0, 1, 16) + struct.pack("<HH", 9, 3), kt, path="x")


@settings(max_examples=300, deadline=None)
@given(blob=st.binary(max_size=80))
def test_random_bytes_decode_or_raise_typed(blob: bytes) -> None:
    try:
        _probe(BsiReader(b"\x01" + blob, KeyType("bigint"), path="r"))
    except IndexFormatError as exc:
        assert exc.path == "r"


def test_java_reader_quirks_on_odd_but_valid_files() -> None:
    kt = KeyType("int")
    good = write_bsi(kt, [3, None], {})
    # version 0 and negative versions pass Java's `version > 1` check; any non-zero flag byte is true
    assert BsiReader(b"\x00" + good[1:], kt).eq(3) == Rows(BitMap([0]))
    assert BsiReader(b"\x05".join([good[:5], good[6:]]), kt).eq(3) == Rows(BitMap([0]))
    # trailing bytes are ignored (Java reads from a stream) but reported
    r = BsiReader(good + b"junk", kt)
    assert r.eq(3) == Rows(BitMap([0])) and r.describe()["trailing_bytes"] == 4
    # a negative row count flips nothing: IS NULL is then the non-null set, as Java's flip(0, n <= 0) is a no-op
    assert BsiReader(good[:1] + struct.pack(">i", -1) + good[5:], kt).is_null() == Rows(BitMap([0]))


# ---------------------------------------------------------------- (e) types and options

@pytest.mark.parametrize("spelling", ["string", "boolean", "float", "double"])
def test_unsupported_types(spelling: str) -> None:
    kt = parse_type(spelling)
    with pytest.raises(UnsupportedTypeError):
        write_bsi(kt, [None], {})
    with pytest.raises(UnsupportedTypeError):
        BsiReader(b"\x01\x00\x00\x00\x00\x00\x00", kt)


def test_long_min_value_cannot_be_written() -> None:
    with pytest.raises(UnsupportedTypeError, match="Long.MIN_VALUE") as info:
        write_bsi(KeyType("bigint"), [1, None, LONG_MIN], {})
    assert "row 2" in str(info.value)
    with pytest.raises(UnsupportedTypeError, match="Long.MIN_VALUE"):
        write_bsi(KeyType("bigint"), pa.array([LONG_MIN], pa.int64()), {})
    # a DECIMAL whose unscaled value is Long.MIN_VALUE hits the same Java limit
    with pytest.raises(UnsupportedTypeError, match="Long.MIN_VALUE"):
        write_bsi(parse_type("decimal(19,0)"), [decimal.Decimal(LONG_MIN)], {})


@pytest.mark.parametrize("spelling, value", [
    ("tinyint", 128), ("tinyint", -129), ("smallint", 1 << 15), ("int", -(1 << 31) - 1), ("bigint", 1 << 63),
    ("decimal(38,0)", decimal.Decimal(1 << 64)), ("int", True), ("int", 1.5), ("bigint", "7"),
])
def test_values_the_type_cannot_hold(spelling: str, value: object) -> None:
    with pytest.raises(UnsupportedTypeError):
        write_bsi(parse_type(spelling), [0, value], {})


def test_arrow_values_the_type_cannot_hold() -> None:
    with pytest.raises(UnsupportedTypeError, match="TINYINT"):
        write_bsi(KeyType("tinyint"), pa.array([1, 300], pa.int32()), {})
    with pytest.raises(UnsupportedTypeError):
        write_bsi(KeyType("bigint"), pa.array([1 << 63], pa.uint64()), {})


def test_bsi_takes_no_options() -> None:
    with pytest.raises(InvalidOptionError, match="no options"):
        write_bsi(KeyType("int"), [1], {"items": "10"})
    with pytest.raises(InvalidOptionError):
        write_payload("bsi", KeyType("int"), [1], {"version": "1"})
