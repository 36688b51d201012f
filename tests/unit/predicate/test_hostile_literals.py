"""Hostile literals × column types: only BgixError subclasses may escape parse + bind (issue 10 item 3)."""
from __future__ import annotations

import datetime as dt
import decimal
import itertools
import math

import pytest

from index_format.errors import BgixError, BindError, ParseError, PredicateLimitError
from index_format.predicate import bind, from_json, parse_where
from index_format.predicate.tree import BoundLeaf
from index_format.types import parse_type

TYPES = ["string", "tinyint", "int", "bigint", "float", "double", "decimal(10,2)", "decimal(38,0)",
         "date", "time", "timestamp(3)", "timestamp(9)", "timestamp_ltz(6)", "boolean"]

# SQL literal texts: huge/odd numbers, bad Unicode, oversized text, special words.
SQL_LITERALS = [
    "9" * 5000, "9" * 41, "9" * 39, "-" + "9" * 39, "1e999999999", "-1e999999999", "1e-999999999",
    "1e400", "0.000000000000000000000000000000000000000001", "1" + "0" * 38 + ".5",
    "'\ud800'", "'a\udfffb'", "'" + "x" * 70_000 + "'", "'" + "é" * 40_000 + "'", "'NaN'", "'Infinity'",
    "'-Infinity'", "'sNaN'", "'1e999999999'", "'" + "9" * 5000 + "'", "'9999-12-31T23:59:59.999999999'",
    "'0000-00-00'", "'24:00:00'", "''", "' '", "'\x00'", "NULL", "TRUE", "FALSE", "-0.0", "0x10", "$$a$$",
    "CAST('x' AS DATE)", "CAST('99999-01-01' AS TIMESTAMP)", "DATE '2024-02-30'", "'2024-01-01T00:00:00+99:00'",
]
JSON_LITERALS = [
    10 ** 5000, -(10 ** 5000), 10 ** 39, 2 ** 64, -(2 ** 63) - 1, 1e308, -1e308, math.inf, -math.inf, math.nan,
    "\ud800", "a\udfffb", "x" * 70_000, "9" * 5000, "1e999999999", "-1e999999999", "sNaN", "NaN", "", "\x00",
    True, False, None, 0, -0.0, 5e-324, "9999-12-31", "0001-01-01T00:00:00", "99999-01-01",
    "1" * 4301 + ".5", "1E+999999999",
]


def _bind_all(node: object, kt: str) -> None:
    bound = bind(node, {"c": parse_type(kt)})  # type: ignore[arg-type]
    assert bound is not None


@pytest.mark.parametrize("kt", TYPES)
def test_sql_hostile_literals_raise_only_bgix_errors(kt: str) -> None:
    failures = []
    for lit, op in itertools.product(SQL_LITERALS, ["=", "<", "IN", "BETWEEN", "LIKE", "starts_with"]):
        text = {"IN": f"c IN ({lit}, 1)", "BETWEEN": f"c BETWEEN {lit} AND {lit}", "LIKE": f"c LIKE {lit}",
                "starts_with": f"starts_with(c, {lit})"}.get(op, f"c {op} {lit}")
        try:
            _bind_all(parse_where(text), kt)
        except BgixError:
            pass
        except Exception as e:  # noqa: BLE001 - the point of the test
            failures.append((text[:60], type(e).__name__, str(e)[:80]))
    assert failures == []


@pytest.mark.parametrize("kt", TYPES)
def test_json_hostile_literals_raise_only_bgix_errors(kt: str) -> None:
    failures = []
    for lit in JSON_LITERALS:
        for obj in ({"op": "eq", "column": "c", "value": lit}, {"op": "in", "column": "c", "values": [lit, 1]},
                    {"op": "between", "column": "c", "low": lit, "high": lit},
                    {"op": "like", "column": "c", "pattern": lit},
                    {"op": "contains", "column": "c", "value": lit}):
            try:
                _bind_all(from_json(obj), kt)
            except BgixError:
                pass
            except Exception as e:  # noqa: BLE001
                failures.append((obj["op"], repr(lit)[:40], type(e).__name__, str(e)[:80]))
    assert failures == []


@pytest.mark.parametrize("kt", TYPES)
def test_direct_leaf_values_raise_only_bgix_errors(kt: str) -> None:
    # The Python client builds Leafs without from_json: bind alone must also stay typed.
    from index_format.predicate.tree import Leaf
    failures = []
    for lit in JSON_LITERALS + [decimal.Decimal("1E+999999999"), decimal.Decimal("sNaN"),
                                dt.datetime.max, dt.date.min, b"\xff", b"ok", object()]:
        try:
            _bind_all(Leaf("eq", "c", lit), kt)
        except BgixError:
            pass
        except Exception as e:  # noqa: BLE001
            failures.append((repr(lit)[:40], type(e).__name__, str(e)[:80]))
    assert failures == []


def test_lone_surrogate_is_a_parse_error_with_position() -> None:
    with pytest.raises(ParseError, match="lone surrogate") as sql:
        parse_where("s = 'ab\ud800'")
    assert sql.value.position == 7
    with pytest.raises(ParseError, match="lone surrogate") as js:
        from_json({"op": "in", "column": "s", "values": ["ok", "\ud800"]})
    assert js.value.position == "$.values[1]"


def test_huge_integers_are_parse_errors_not_value_errors() -> None:
    with pytest.raises(ParseError, match="5000 digits"):
        parse_where("n = " + "9" * 5000)
    with pytest.raises(ParseError, match="more than 40 digits") as js:
        from_json({"op": "eq", "column": "n", "value": 10 ** 5000})
    assert js.value.position == "$.value"
    # 39 digits still parse: DECIMAL(38) / unsigned 128-bit range.
    assert parse_where("n = " + "9" * 39).value == int("9" * 39)


def test_out_of_range_numbers_equal_no_value_and_other_kinds_are_bind_errors() -> None:
    # a number past the type's range equals no value: FALSE for every value, NULL for null rows (SQL compares numbers)
    for tree, kt in ((parse_where("n = 128"), "tinyint"), (parse_where("n = 1e999999999"), "bigint"),
                     (from_json({"op": "eq", "column": "n", "value": 2 ** 64}), "bigint")):
        bound = bind(tree, {"n": parse_type(kt)})
        assert [leaf.op for leaf in (bound.left, bound.right)] == ["is_null", "always_unknown"], tree  # type: ignore[attr-defined]
    with pytest.raises(BindError, match="not a number"):
        bind(parse_where("n = '128x'"), {"n": parse_type("tinyint")})
    with pytest.raises(BindError, match="outside"):
        bind(parse_where("n = '128'"), {"n": parse_type("tinyint")})   # a string is not compared as a number


def test_surrogate_in_bound_string_is_refused() -> None:
    from index_format.predicate.tree import Leaf
    with pytest.raises(BindError, match="Unicode"):
        bind(Leaf("eq", "s", "a\ud800"), {"s": parse_type("string")})
    with pytest.raises(BindError, match="Unicode"):
        bind(Leaf("like", "s", pattern="%\ud800_"), {"s": parse_type("string")})


def test_literal_limit_names_the_setting() -> None:
    with pytest.raises(PredicateLimitError) as e:
        from_json({"op": "eq", "column": "s", "value": "é" * 40_000})  # 80,000 UTF-8 bytes
    assert e.value.limit == "BGIX_MAX_LITERAL_BYTES"
    # 30,000 two-byte characters = 60,000 bytes: under the 65,536 default.
    assert isinstance(bind(from_json({"op": "eq", "column": "s", "value": "é" * 30_000}),
                           {"s": parse_type("string")}), BoundLeaf)
