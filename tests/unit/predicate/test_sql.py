"""parse_where compared with hand-built trees; error positions point at the offending fragment."""
from __future__ import annotations

import datetime as dt
import decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from index_format.errors import ParseError
from index_format.predicate.sql import parse_where
from index_format.predicate.tree import FALSE, TRUE, UNKNOWN, And, Leaf, Node, Not, Or


@pytest.mark.parametrize(("text", "expected"), [
    ("a = 1", Leaf("eq", "a", 1)),
    ("WHERE a = 1", Leaf("eq", "a", 1)),
    ("a <> 'x'", Leaf("ne", "a", "x")),
    ("a != 'x'", Leaf("ne", "a", "x")),
    ("a < -5", Leaf("lt", "a", -5)),
    ("a <= 1.25", Leaf("le", "a", decimal.Decimal("1.25"))),
    ("a > 1e3", Leaf("gt", "a", decimal.Decimal("1e3"))),
    ("a >= TRUE", Leaf("ge", "a", True)),
    ("5 < a", Leaf("gt", "a", 5)),
    ("5 >= a", Leaf("le", "a", 5)),
    ("'x' = a", Leaf("eq", "a", "x")),
    ("a = 'it''s'", Leaf("eq", "a", "it's")),
    ("a = 'é🙂'", Leaf("eq", "a", "é🙂")),
    ("a = ''", Leaf("eq", "a", "")),
    ("a = NULL", Leaf("eq", "a", None)),
    ("a IN (1, 2, NULL)", Leaf("in", "a", values=(1, 2, None))),
    ("a NOT IN ('x')", Leaf("not_in", "a", values=("x",))),
    ("NOT a IN (1)", Leaf("not_in", "a", values=(1,))),
    ("a BETWEEN 1 AND 9", Leaf("between", "a", low=1, high=9)),
    ("a NOT BETWEEN 1 AND 9", Leaf("not_between", "a", low=1, high=9)),
    ("a IS NULL", Leaf("is_null", "a")),
    ("a IS NOT NULL", Leaf("is_not_null", "a")),
    ("a LIKE 'x%'", Leaf("like", "a", pattern="x%")),
    ("a NOT LIKE 'x%'", Not(Leaf("like", "a", pattern="x%"))),
    ("a LIKE 'x\\_y' ESCAPE '\\'", Leaf("like", "a", pattern="x\\_y")),
    ("starts_with(a, 'p')", Leaf("starts_with", "a", "p")),
    ("startswith(a, 'p')", Leaf("starts_with", "a", "p")),
    ("ends_with(a, 's')", Leaf("ends_with", "a", "s")),
    ("endswith(a, 's')", Leaf("ends_with", "a", "s")),
    ("contains(a, 'c')", Leaf("contains", "a", "c")),
    ("d = DATE '2024-02-29'", Leaf("eq", "d", dt.date(2024, 2, 29))),
    ("t < TIMESTAMP '2024-01-01 10:00:00.5'", Leaf("lt", "t", dt.datetime(2024, 1, 1, 10, 0, 0, 500000))),
    ("x = CAST('NaN' AS DOUBLE)", Leaf("eq", "x", "NaN")),
    ("`my col` = 1", Leaf("eq", "my col", 1)),
    ('"My Col" = 1', Leaf("eq", "My Col", 1)),
    ("flag", Leaf("eq", "flag", True)),
    ("NOT flag", Not(Leaf("eq", "flag", True))),
    ("TRUE", TRUE),
    ("FALSE", FALSE),
    ("NULL", UNKNOWN),
    ("a = 1 AND b = 2 OR c IS NULL", Or(And(Leaf("eq", "a", 1), Leaf("eq", "b", 2)), Leaf("is_null", "c"))),
    ("a = 1 AND (b = 2 OR c IS NULL)", And(Leaf("eq", "a", 1), Or(Leaf("eq", "b", 2), Leaf("is_null", "c")))),
    ("NOT (a = 1 OR b = 2)", Not(Or(Leaf("eq", "a", 1), Leaf("eq", "b", 2)))),
    ("((a = 1))", Leaf("eq", "a", 1)),
    ("a = -9223372036854775808", Leaf("eq", "a", -9223372036854775808)),
    ("a = -0.0", Leaf("eq", "a", decimal.Decimal("-0.0"))),
])
def test_parse(text: str, expected: object) -> None:
    assert parse_where(text) == expected


@pytest.mark.parametrize(("text", "position", "fragment"), [
    ("a = b", 0, "a = b"),
    ("x = 1 AND a + 1 > 2", 10, "a + 1"),
    ("x = 1 AND a IN (SELECT 1)", 10, "a IN (SELECT 1)"),
    ("t.a = 1", 0, "t.a"),
    ("a = 1 AND b = c", 10, "b = c"),
    ("a ILIKE 'x'", 0, "a ILIKE"),
    ("a IS TRUE", 0, "a IS TRUE"),
    ("a LIKE 'x' ESCAPE '!'", 18, "'!'"),
    ("d = DATE 'nope'", 9, "'nope'"),
    ("count(a) > 1", 0, "count(a)"),
    ("a = 'open", 4, "'open"),
    ("a = 1 )", 6, ")"),
    ("a = ", 2, "="),
    ("SELECT 1", 0, "SELECT"),
    ("where a = b", 6, "a = b"),
])
def test_errors_carry_position_and_fragment(text: str, position: int, fragment: str) -> None:
    with pytest.raises(ParseError) as info:
        parse_where(text)
    assert info.value.position == position
    assert text[position:].startswith(fragment)
    assert fragment.split()[0].lower() in str(info.value).lower()


def test_empty_text() -> None:
    with pytest.raises(ParseError):
        parse_where("   ")
    with pytest.raises(ParseError):
        parse_where(None)  # type: ignore[arg-type]


_TOKENS = ["a", "b", "`x y`", '"q"', "=", "<>", "<", ">=", "AND", "OR", "NOT", "(", ")", "IN", "BETWEEN",
           "IS", "NULL", "LIKE", "ESCAPE", "'s'", "'it''s'", "'", "1", "-2.5", "1e3", ",", "TRUE",
           "starts_with(", "contains(", "DATE", "'2020-01-01'", "SELECT", "+", ";", "--", "/*", "*/", "é", "\\"]


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(max_size=40), st.lists(st.sampled_from(_TOKENS), max_size=12).map(" ".join)))
def test_any_text_parses_or_raises_parse_error(text: str) -> None:
    try:
        node = parse_where(text)
    except ParseError as e:
        assert isinstance(e.position, int) and 0 <= e.position <= len(text)
    else:
        assert isinstance(node, Node)
