"""Seeded random columns through the range-bitmap writer and reader, checked against a plain evaluation.

The oracle is independent of the library: Java order is computed here (floats via Double.compare's bit
mapping: -0.0 < 0.0, NaN greatest and all NaNs equal; strings as unsigned UTF-8 bytes), and Paimon's
top-k rules (spec 2.5) are restated directly on sorted Python lists.
"""
from __future__ import annotations

import datetime as dt
import decimal
import math
import random
import struct
from collections.abc import Callable
from fractions import Fraction

import numpy as np
import pyarrow as pa
import pytest
from pyroaring import BitMap64

from index_format.key_arrays import arrow_type
from index_format.range_bitmap import RangeBitmapReader, write_from_codes, write_range_bitmap
from index_format.types import KeyType, parse_type

EPOCH = dt.datetime(1970, 1, 1)
TYPES = ["int", "bigint", "double", "float", "string", "date", "timestamp(3)", "timestamp(6)", "boolean",
         "tinyint", "smallint", "decimal(10,2)"]
CASES = 480


def _double_order(x: float) -> int:
    bits = 0x7FF8000000000000 if x != x else struct.unpack(">q", struct.pack(">d", x))[0]
    return bits ^ 0x7FFFFFFFFFFFFFFF if bits < 0 else bits


def jkey(kt: KeyType, v: object) -> object:
    """Java order of a value, as a Python-comparable object."""
    name = kt.name
    if name == "string":
        return str(v).encode("utf-8")
    if name in ("double", "float"):
        return _double_order(float(v))  # type: ignore[arg-type]
    if name == "decimal":
        return int(decimal.Decimal(v).scaleb(2))  # type: ignore[arg-type]
    if name == "date":
        return (v - dt.date(1970, 1, 1)).days  # type: ignore[operator]
    if name == "timestamp":
        micros = (v - EPOCH) // dt.timedelta(microseconds=1)  # type: ignore[operator]
        return micros // 1000 if kt.time_precision <= 3 else micros
    if name == "boolean":
        return int(bool(v))
    return v


def _f32(x: float) -> float:
    return struct.unpack(">f", struct.pack(">f", x))[0]


_CHARS = ["a", "b", "z", "A", "0", " ", "\x00", "\x7f", "é", "ß", "Ω", "中", "文", "\U0001F600", "\U00010348",
          "\u0301", "\uffff", "~"]


def _gen_value(kt: KeyType, rng: random.Random, pool: list[object]) -> object:
    if pool and rng.random() < 0.4:
        return rng.choice(pool)
    name = kt.name
    if name == "int":
        return rng.choice([rng.randint(-50, 50), rng.randint(-(1 << 31), (1 << 31) - 1), -(1 << 31), (1 << 31) - 1])
    if name == "bigint":
        return rng.choice([rng.randint(-1000, 1000), rng.randint(-(1 << 63), (1 << 63) - 1), -(1 << 63)])
    if name == "tinyint":
        return rng.randint(-128, 127)
    if name == "smallint":
        return rng.randint(-(1 << 15), (1 << 15) - 1)
    if name == "boolean":
        return rng.random() < 0.5
    if name in ("double", "float"):
        x = rng.choice([-0.0, 0.0, math.nan, math.inf, -math.inf, 1e-300, -1e-300, 5e-324, 1.5, -1.5,
                        rng.uniform(-1e6, 1e6), float(rng.randint(-20, 20)), rng.gauss(0, 1)])
        return _f32(x) if name == "float" and not math.isinf(x) and x == x and abs(x) < 1e38 else x
    if name == "string":
        return "".join(rng.choice(_CHARS) for _ in range(rng.choice([0, 0, 1, 1, 2, 3, 5, 12])))
    if name == "date":
        return dt.date(1970, 1, 1) + dt.timedelta(days=rng.randint(-40000, 40000))
    if name == "timestamp":
        micros = rng.randint(-(10 ** 15), 10 ** 15)
        if kt.time_precision <= 3:
            micros -= micros % 1000
        return EPOCH + dt.timedelta(microseconds=micros)
    if name == "decimal":
        return decimal.Decimal(rng.randint(-10 ** 6, 10 ** 6)).scaleb(-2)
    raise AssertionError(name)


def _gen_probe(kt: KeyType, rng: random.Random, present: list[object]) -> object:
    if present and rng.random() < 0.6:
        return rng.choice(present)
    return _gen_value(kt, rng, [])


def _column(kt: KeyType, rng: random.Random) -> list[object]:
    n = rng.choice([0, 1, 2, 5, 17, 64, 150, 300])
    distinct_target = rng.choice([1, 2, 3, 10, 50, 1000])
    pool = [_gen_value(kt, rng, []) for _ in range(distinct_target)]
    null_rate = rng.choice([0.0, 0.0, 0.1, 0.5, 1.0])
    return [None if rng.random() < null_rate else _gen_value(kt, rng, pool) for _ in range(n)]


def _bm(rows: list[int]) -> BitMap64:
    return BitMap64(sorted(rows))


class Oracle:
    def __init__(self, kt: KeyType, values: list[object]) -> None:
        self.kt = kt
        self.values = values
        self.keys = [None if v is None else jkey(kt, v) for v in values]
        self.nulls = [i for i, k in enumerate(self.keys) if k is None]
        self.present = [i for i, k in enumerate(self.keys) if k is not None]

    def where(self, pred: Callable[[object], bool]) -> BitMap64:
        return _bm([i for i in self.present if pred(self.keys[i])])

    def top(self, k: int, nulls_first: bool, strict: bool, found: BitMap64 | None, largest: bool) -> BitMap64:
        if not self.present:
            return _bm(list(range(len(self.values))))
        sel = (lambda i: True) if found is None else (lambda i: i in found)
        nulls = [i for i in self.nulls if sel(i)]
        rows = [i for i in self.present if sel(i)]

        def best(m: int) -> list[int]:
            if m <= 0 or not rows:
                return []
            if len(rows) <= m:
                return rows
            ordered = sorted((self.keys[i] for i in rows), reverse=largest)
            t = ordered[m - 1]
            better = [i for i in rows if (self.keys[i] > t if largest else self.keys[i] < t)]  # type: ignore[operator]
            ties = [i for i in rows if self.keys[i] == t]
            if not strict:
                return better + ties
            return better + ties[len(ties) - (m - len(better)):]

        if not nulls_first:
            got = best(k)
            if len(got) >= k:
                return _bm(got)
            return _bm(got + (nulls[:k - len(got)] if strict else nulls))
        if len(nulls) >= k:
            return _bm(nulls[:k] if strict else nulls)
        return _bm(nulls + best(k - len(nulls)))


def _codes(kt: KeyType, values: list[object]) -> tuple[list[object], np.ndarray]:
    distinct: dict[object, object] = {}
    for v in values:
        if v is not None:
            distinct.setdefault(jkey(kt, v), v)
    order = sorted(distinct)
    index = {k: i for i, k in enumerate(order)}
    codes = np.array([-1 if v is None else index[jkey(kt, v)] for v in values], dtype=np.int64)
    return [distinct[k] for k in order], codes


def _range_literal(kt: KeyType, rng: random.Random, present: list[object]) -> tuple[object, object]:
    """(literal passed to range(), its exact Java-order position as a comparable) — off-grid where possible."""
    v = _gen_probe(kt, rng, present)
    name = kt.name
    if name == "timestamp" and rng.random() < 0.5:
        lit = v + dt.timedelta(microseconds=rng.choice([1, 499, 500, 999]))  # type: ignore[operator]
        micros = (lit - EPOCH) // dt.timedelta(microseconds=1)
        return lit, (Fraction(micros, 1000) if kt.time_precision <= 3 else micros)
    if name == "decimal" and rng.random() < 0.5:
        lit = decimal.Decimal(v) + decimal.Decimal("0.005") * rng.choice([-1, 1])  # type: ignore[arg-type]
        return lit, lit.scaleb(2)
    if name == "float" and rng.random() < 0.3:
        lit = rng.choice([0.1, -0.1, 1.0000001, 3.3])
        return lit, _double_order(lit)
    return v, jkey(kt, v)


@pytest.mark.parametrize("block", range(8))
def test_random_columns(block: int) -> None:
    per = CASES // 8
    for case in range(block * per, (block + 1) * per):
        rng = random.Random(1000 + case)
        type_name = TYPES[case % len(TYPES)]
        kt = parse_type(type_name)
        values = _column(kt, rng)
        chunk = rng.choice([None, 0, 1, 3, 4, 8, 9, 16, 24, 40, 100, "1kb"])
        _check_case(kt, values, chunk, rng, f"case {case} ({type_name}, {len(values)} rows, chunk {chunk})")


def _check_case(kt: KeyType, values: list[object], chunk: object, rng: random.Random, label: str) -> None:
    data = write_range_bitmap(kt, values, chunk_size=chunk)  # type: ignore[arg-type]
    arr = pa.array(values, type=arrow_type(kt))
    assert write_range_bitmap(kt, arr, chunk_size=chunk) == data, label  # type: ignore[arg-type]
    keys, codes = _codes(kt, values)
    assert write_from_codes(kt, keys, codes, len(values), chunk_size=chunk) == data, label  # type: ignore[arg-type]
    o = Oracle(kt, values)
    r = RangeBitmapReader(data, kt)
    assert r.row_count == len(values), label
    assert r.cardinality == len(keys), label
    if keys:
        assert jkey(kt, r.min) == jkey(kt, keys[0]) and jkey(kt, r.max) == jkey(kt, keys[-1]), label
    assert r.is_null() == _bm(o.nulls) == r.null_rows(), label
    assert r.is_not_null() == _bm(o.present) == r.non_null_rows(), label
    present = [v for v in values if v is not None]
    for _ in range(8):
        p = _gen_probe(kt, rng, present)
        pk = jkey(kt, p)
        assert r.eq(p) == o.where(lambda k: k == pk), (label, "=", p)
        assert r.not_eq(p) == o.where(lambda k: k != pk), (label, "!=", p)
        assert r.lt(p) == o.where(lambda k: k < pk), (label, "<", p)  # type: ignore[operator]
        assert r.le(p) == o.where(lambda k: k <= pk), (label, "<=", p)  # type: ignore[operator]
        assert r.gt(p) == o.where(lambda k: k > pk), (label, ">", p)  # type: ignore[operator]
        assert r.ge(p) == o.where(lambda k: k >= pk), (label, ">=", p)  # type: ignore[operator]
    for _ in range(3):
        lits = [_gen_probe(kt, rng, present) for _ in range(rng.randint(0, 4))]
        lk = {jkey(kt, x) for x in lits}
        assert r.isin(lits) == o.where(lambda k: k in lk), (label, "IN", lits)
        assert r.not_in(lits) == o.where(lambda k: k not in lk), (label, "NOT IN", lits)
        a, b = _gen_probe(kt, rng, present), _gen_probe(kt, rng, present)
        ak, bk = jkey(kt, a), jkey(kt, b)
        assert r.between(a, b) == o.where(lambda k: ak <= k <= bk), (label, "BETWEEN", a, b)  # type: ignore[operator]
    for _ in range(10):
        low = high = None
        lowk = highk = None
        if rng.random() < 0.8:
            low, lowk = _range_literal(kt, rng, present)
        if rng.random() < 0.8:
            high, highk = _range_literal(kt, rng, present)
        li, hi = rng.random() < 0.5, rng.random() < 0.5
        if kt.name == "float":
            okeys = {i: _double_order(float(values[i])) for i in o.present}  # type: ignore[arg-type]
        else:
            okeys = {i: o.keys[i] for i in o.present}

        def inside(i: int) -> bool:
            k = okeys[i]
            if lowk is not None and not (k >= lowk if li else k > lowk):  # type: ignore[operator]
                return False
            return highk is None or (k <= highk if hi else k < highk)  # type: ignore[operator]

        want = _bm([i for i in o.present if inside(i)])
        got = r.range(low, high, low_inclusive=li, high_inclusive=hi)
        assert got == want, (label, "range", low, high, li, hi)
        assert r.count_range(low, high, low_inclusive=li, high_inclusive=hi) == len(want), label
    n = len(values)
    for _ in range(4):
        k = rng.choice([0, 1, 2, 3, 5, max(n // 2, 1), n, n + 3])
        nulls_first, strict = rng.random() < 0.5, rng.random() < 0.5
        found = None if rng.random() < 0.5 else _bm([i for i in range(n) if rng.random() < 0.6])
        assert r.topk(k, nulls_first=nulls_first, strict=strict, found=found) == \
            o.top(k, nulls_first, strict, found, True), (label, "TOPK", k, nulls_first, strict)
        assert r.bottomk(k, nulls_first=nulls_first, strict=strict, found=found) == \
            o.top(k, nulls_first, strict, found, False), (label, "BOTTOMK", k, nulls_first, strict)
    for i in rng.sample(range(n), min(n, 5)):
        got = r.get(i)
        assert (got is None) == (values[i] is None), label
        if got is not None:
            assert jkey(kt, got) == jkey(kt, values[i]), label


def test_many_rows_many_chunks_from_codes() -> None:
    """Larger shapes: 200k rows, 30k distinct keys, several chunk sizes; codes path equals values path."""
    rng = np.random.default_rng(5)
    kt = parse_type("bigint")
    keys = np.unique(rng.integers(-(1 << 40), 1 << 40, 30_000))
    codes = rng.integers(-1, len(keys), 200_000)
    codes[:len(keys)] = np.arange(len(keys))  # every key used
    values = pa.array(keys[np.maximum(codes, 0)], mask=codes < 0)
    for chunk in (0, 24, "16kb"):
        data = write_from_codes(kt, keys, codes, len(codes), chunk_size=chunk)
        assert write_range_bitmap(kt, values, chunk_size=chunk) == data
        r = RangeBitmapReader(data, kt)
        assert r.slice_count == 15
        lo, hi = int(keys[1234]), int(keys[20000])
        want = np.flatnonzero((codes >= 1234) & (codes <= 20000))
        assert r.range(lo, hi) == BitMap64(want.tolist())
        assert r.count_range(lo, hi, low_inclusive=False) == int(((codes > 1234) & (codes <= 20000)).sum())
        assert r.eq(int(keys[77])) == BitMap64(np.flatnonzero(codes == 77).tolist())
    strings = sorted({f"k{int(x):08d}" for x in rng.integers(0, 10 ** 8, 5000)})
    scodes = rng.integers(-1, len(strings), 20_000)
    skt = parse_type("string")
    sdata = write_from_codes(skt, strings, scodes, len(scodes), chunk_size="64b")
    sr = RangeBitmapReader(sdata, skt)
    assert sr.range(strings[10], strings[4000], high_inclusive=False) == \
        BitMap64(np.flatnonzero((scodes >= 10) & (scodes < 4000)).tolist())


def test_write_from_codes_validates() -> None:
    kt = parse_type("int")
    with pytest.raises(ValueError):
        write_from_codes(kt, [3, 1], np.array([0, 1]), 2)
    with pytest.raises(ValueError):
        write_from_codes(kt, [1, 3], np.array([0, 2]), 2)
    with pytest.raises(ValueError):
        write_from_codes(kt, [1, 3], np.array([0, 1]), 3)
    with pytest.raises(ValueError):
        write_from_codes(kt, [1, None], np.array([0, 1]), 2)
    assert write_from_codes(kt, [], np.full(5, -1), 5) == write_range_bitmap(kt, [None] * 5)
    assert len(write_range_bitmap(kt, [None] * 5)) == 1080


def test_exact_bounds_between_representable_keys() -> None:
    """range() compares exactly: off-grid literals (doubles on a float column, sub-unit timestamps, decimals
    beyond the scale) fall between two keys instead of being truncated onto one."""
    f = parse_type("float")
    values = [0.0, -0.0, _f32(1e-45), _f32(0.1), 3.0e38, math.inf, math.nan, None]
    r = RangeBitmapReader(write_range_bitmap(f, values), f)
    assert r.range(1e-50, None) == BitMap64([2, 3, 4, 5, 6])
    assert r.range(None, 1e-50) == BitMap64([0, 1])
    assert r.range(0.1, None, low_inclusive=False) == BitMap64([3, 4, 5, 6])   # float32(0.1) > 0.1
    assert r.range(None, 0.1) == BitMap64([0, 1, 2])
    assert r.range(1e39, None) == BitMap64([5, 6])            # above every finite float
    assert r.eq(1e39) == BitMap64([5])                        # Paimon's (float) cast: +Infinity
    assert r.range(-0.0, 0.0) == BitMap64([0, 1])
    assert r.range(0.0, 0.0) == BitMap64([0]) and r.count_range(0.0, 0.0) == 1
    t3 = parse_type("timestamp(3)")
    base = dt.datetime(2020, 1, 1)
    ts = [base, base + dt.timedelta(milliseconds=1), base + dt.timedelta(milliseconds=2)]
    rt = RangeBitmapReader(write_range_bitmap(t3, ts), t3)
    half = base + dt.timedelta(microseconds=1500)
    assert rt.range(half, None) == BitMap64([2])
    assert rt.range(None, half) == BitMap64([0, 1])
    assert rt.ge(half) == BitMap64([1, 2])                      # Paimon truncates the literal to millis
    d = parse_type("decimal(10,2)")
    rd = RangeBitmapReader(write_range_bitmap(d, [decimal.Decimal("1.00"), decimal.Decimal("1.01")]), d)
    assert rd.range(decimal.Decimal("1.005"), None) == BitMap64([1])
    assert rd.range(None, decimal.Decimal("1.005")) == BitMap64([0])
    i = parse_type("int")
    ri = RangeBitmapReader(write_range_bitmap(i, np.array([1, 2, 3], dtype=np.int32)), i)
    assert ri.range(1.5, 2.5) == BitMap64([1]) and ri.range(np.int64(2), None) == BitMap64([1, 2])
    assert ri.range(3, 1) == BitMap64() and ri.count_range(3, 1) == 0
    assert ri.range(2, 2, low_inclusive=False) == BitMap64()
