"""Predicates with their SQL answers, row by row, shared by the two translations of bgix predicates: pyarrow
(tests/unit/test_arrow_predicate.py) and Spark (tests/e2e/test_spark_filter_exactness.py). The answers are Spark
SQL 4.3's on the same rows (written down from a session; the Spark test checks they still hold): LIKE with bgix's
escapes, NaN ordered above every value and equal to itself, the array functions' NULL rules, numbers outside a
column's type compared exactly, NULL literals, columns named in another case.
"""
from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pyarrow as pa

# Each group: (rows as an Arrow table, [(where, the answer per row: True / False / None for UNKNOWN)]).
STRINGS = pa.table({"s": ["a\nb", "a😀b", "ab", None, "a%b", "a_b", "axb"]})
LIKE_CASES = [
    ("s LIKE 'a_b'", [True, True, False, None, True, True, True]),      # `_` is one code point, a newline too
    ("s LIKE 'a%b'", [True, True, True, None, True, True, True]),
    ("s LIKE 'a\\%b'", [False, False, False, None, True, False, False]),
    ("s LIKE 'a\\_b'", [False, False, False, None, False, True, False]),
    ("s LIKE 'a\\xb'", [False, False, False, None, False, False, True]),  # bgix: `\` makes any character literal
    ("s LIKE '%'", [True, True, True, None, True, True, True]),
    ("NOT s LIKE 'a%'", [False, False, False, None, False, False, False]),
]

FLOATS = pa.table({"f": [0.0, float("nan"), None, -1.0, 2.0, float("inf")]})
FLOAT_CASES = [
    ("f > 1", [False, True, None, False, True, True]),                   # NaN above every value (Spark, Java)
    ("f >= CAST('Infinity' AS DOUBLE)", [False, True, None, False, False, True]),
    ("f < 1", [True, False, None, True, False, False]),
    ("f = CAST('NaN' AS DOUBLE)", [False, True, None, False, False, False]),   # NaN equals NaN
    ("f <> CAST('NaN' AS DOUBLE)", [True, False, None, True, True, True]),
    ("f < CAST('NaN' AS DOUBLE)", [True, False, None, True, True, True]),
    ("NOT f > CAST('NaN' AS DOUBLE)", [True, True, None, True, True, True]),
    ("f IN (CAST('NaN' AS DOUBLE), 2)", [False, True, None, False, True, False]),
]

ARRAYS = pa.table({"t": pa.array([[1, 2], [], None, [1, None], [3], [None]], pa.list_(pa.int64()))})
ARRAY_CASES = [
    ("array_contains(t, 1)", [True, False, None, True, False, None]),
    ("array_contains(t, 2)", [True, False, None, None, False, None]),
    ("array_contains(t, NULL)", [None] * 6),
    ("arrays_overlap(t, array())", [False, False, None, False, False, False]),
    ("arrays_overlap(t, array(1))", [True, False, None, True, False, None]),
    ("arrays_overlap(t, array(3, NULL))", [None, False, None, None, True, None]),
    ("NOT arrays_overlap(t, array())", [True, True, None, True, True, True]),   # the D1 rows
    ("array_contains_all(t, array(1, 2))", [True, False, None, None, False, None]),
    ("array_contains_all(t, array())", [True, True, None, True, True, True]),
]

NUMBERS = pa.table({"i": pa.array([1, 2, 3, None], pa.int32()), "d": pa.array(
    [Decimal("1.25"), Decimal("1.26"), None, Decimal("-1.00")], pa.decimal128(10, 2)), "Name": ["x", "y", None, "x"]})
NUMBER_CASES = [
    ("i > 2.5", [False, False, True, None]),          # numbers outside the type compare exactly (SQL)
    ("i = 2.5", [False, False, False, None]),
    ("i IN (2.5, 3)", [False, False, True, None]),
    ("i < 300000000000", [True, True, True, None]),
    ("d > 1.255", [False, True, None, False]),
    ("i BETWEEN NULL AND 2", [None, None, False, None]),
    ("NOT i BETWEEN NULL AND 2", [None, None, True, None]),
    ("i < NULL", [None] * 4),
    ("i = NULL OR i = 1", [True, None, None, None]),
    ("name = 'x'", [True, False, None, True]),          # columns resolve ignoring case, as bind does
    ("TRUE AND NOT FALSE", [True] * 4),
]

_UTC = dt.timezone.utc
TIMES = pa.table({
    "ts": pa.array([dt.datetime(2024, 1, 1, tzinfo=_UTC), dt.datetime(2024, 1, 2, tzinfo=_UTC), None],
                   pa.timestamp("us", tz="UTC")),
    "nt": pa.array([dt.datetime(2024, 1, 1), dt.datetime(2024, 1, 2, 0, 0, 0, 5), None], pa.timestamp("us")),
    "day": pa.array([dt.date(2024, 1, 1), dt.date(2024, 1, 2), None], pa.date32()),
})
TIME_CASES = [
    ("ts > TIMESTAMP '2024-01-01 12:00:00'", [False, True, None]),      # a zone-less literal is UTC (bind's rule)
    ("ts = CAST('2024-01-02T00:00:00Z' AS TIMESTAMP)", [False, True, None]),
    ("nt > TIMESTAMP '2024-01-02 00:00:00'", [False, True, None]),      # microseconds count
    ("nt BETWEEN TIMESTAMP '2024-01-01 00:00:00' AND TIMESTAMP '2024-01-01 00:00:00'", [True, False, None]),
    ("day = DATE '2024-01-02'", [False, True, None]),
    ("day IN ('2024-01-01', NULL)", [True, None, None]),                # text literals coerced to the column type
]

CASES = [(table, where, want) for table, group in ((STRINGS, LIKE_CASES), (FLOATS, FLOAT_CASES),
                                                   (ARRAYS, ARRAY_CASES), (NUMBERS, NUMBER_CASES),
                                                   (TIMES, TIME_CASES))
         for where, want in group]
