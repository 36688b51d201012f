"""bind: column resolution, literal coercion errors, NULL rules (spec §5.5) and LIKE rewrites (spec §6)."""
from __future__ import annotations

import datetime as dt
import decimal
import math
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from index_format.errors import BindError, UnknownColumnError
from index_format.predicate.bind import bind, like_regex
from index_format.predicate.operators import OPERATORS
from index_format.predicate.sql import parse_where
from index_format.predicate.tree import And, BoundLeaf, Leaf, Not, Or
from index_format.types import parse_type

COLS = {
    "s": parse_type("string"), "i": parse_type("int"), "t8": parse_type("tinyint"),
    "d": parse_type("double"), "m": parse_type("decimal(10,2)"), "day": parse_type("date"),
    "ts": parse_type("timestamp(6)"), "b": parse_type("boolean"), "Mixed": parse_type("int"),
}


def b(text: str) -> object:
    return bind(parse_where(text), COLS)


def test_literals_are_coerced() -> None:
    assert b("i = 5") == BoundLeaf("eq", "i", COLS["i"], value=5)
    assert b("d > 1.5") == BoundLeaf("gt", "d", COLS["d"], value=1.5)
    assert b("m = 1.5") == BoundLeaf("eq", "m", COLS["m"], value=decimal.Decimal("1.50"))
    assert b("day = DATE '2020-01-02'") == BoundLeaf("eq", "day", COLS["day"], value=dt.date(2020, 1, 2))
    assert b("day = '2020-01-02'") == BoundLeaf("eq", "day", COLS["day"], value=dt.date(2020, 1, 2))
    leaf = b("d = 'NaN'")
    assert isinstance(leaf, BoundLeaf) and math.isnan(leaf.value)  # type: ignore[arg-type]
    assert b("ts >= TIMESTAMP '2020-01-01 00:00:00'").value == dt.datetime(2020, 1, 1)  # type: ignore[union-attr]
    assert b("b").value is True  # type: ignore[union-attr]
    negative_zero = b("d = -0.0").value  # type: ignore[union-attr]
    assert negative_zero == 0.0 and math.copysign(1.0, negative_zero) == -1.0  # distinct key (spec §3)


def test_unknown_column() -> None:
    with pytest.raises(UnknownColumnError) as info:
        b("nope = 1")
    assert info.value.column == "nope" and "s" in info.value.known


def test_case_insensitive_column_when_unambiguous() -> None:
    assert b("mixed = 1").column == "Mixed"  # type: ignore[union-attr]
    assert b("S = 'x'").column == "s"  # type: ignore[union-attr]


@pytest.mark.parametrize("text", ["i = 'abc'", "i = '1.5'", "t8 = '300'", "day = 'tomorrow'", "b = 2",
                                  "i IN (1, 'x')", "i BETWEEN 1 AND 'z'", "starts_with(s, 5)", "i > TRUE"])
def test_literal_that_cannot_fit_names_column_type_and_literal(text: str) -> None:
    with pytest.raises(BindError) as info:
        b(text)
    column = text.split("(")[-1].split()[0].split(",")[0] if text.startswith("starts") else text.split()[0]
    assert repr(column) in str(info.value)


@pytest.mark.parametrize("text", ["d = 1e999", "d = -1e999", "d = '1e999'", "d > 1E+400", "d IN (1, 1e999)"])
def test_a_number_that_overflows_a_double_is_an_error_not_infinity(text: str) -> None:
    # 1e999 is a typo for a finite number, never silently infinity (or NULL, as JSON's Infinity becomes)
    with pytest.raises(BindError, match=r"'d'.*not a finite double.*write 'Infinity'"):
        b(text)


def test_infinity_and_nan_words_keep_java_double_order() -> None:
    # spelled as words they are keys; their order is Java's Double.compare: -inf < finite < +inf < NaN (spec §3)
    from index_format.keys import sort_key
    values = [b(f"d = '{w}'").value for w in ("-Infinity", "-1e308", "0", "1e308", "Infinity", "NaN")]  # type: ignore[union-attr]
    assert math.isinf(values[0]) and values[0] < 0 and values[4] == math.inf and math.isnan(values[5])
    order = [sort_key(COLS["d"], v) for v in values]
    assert order == sorted(order) and len(set(order)) == len(order)


def test_null_literal_rules() -> None:
    kt = COLS["i"]
    assert b("i = NULL") == BoundLeaf("always_unknown", "i", kt)
    assert b("i <> NULL") == BoundLeaf("always_unknown", "i", kt)
    assert b("i IN (NULL)") == BoundLeaf("always_unknown", "i", kt)
    assert b("i NOT IN (NULL, NULL)") == BoundLeaf("always_unknown", "i", kt)
    assert b("i IN (1, NULL, 1)") == BoundLeaf("in", "i", kt, values=(1,), null_in_list=True)
    assert b("i NOT IN (1, NULL)") == BoundLeaf("not_in", "i", kt, values=(1,), null_in_list=True)
    # any comparison with NULL is NULL for every row (spec §5.5), under NOT too
    for text, column in (("i < NULL", "i"), ("i <= NULL", "i"), ("i > NULL", "i"), ("i >= NULL", "i"),
                         ("starts_with(s, NULL)", "s"), ("ends_with(s, NULL)", "s"), ("contains(s, NULL)", "s"),
                         ("s LIKE NULL", "s")):
        assert b(text) == BoundLeaf("always_unknown", column, COLS[column]), text
    # BETWEEN is `x >= low AND x <= high`: a NULL bound makes one side NULL, the other may still be FALSE
    assert b("i BETWEEN NULL AND 1") == And(BoundLeaf("always_unknown", "i", kt), BoundLeaf("le", "i", kt, value=1))
    assert b("i NOT BETWEEN 1 AND NULL") == Or(BoundLeaf("lt", "i", kt, value=1), BoundLeaf("always_unknown", "i", kt))


def test_numbers_the_type_cannot_hold_compare_with_its_nearest_values() -> None:
    # SQL compares the numbers: `i > 2.5` is `i >= 3`; past the range every value is on one side; NULL rows
    # stay UNKNOWN (IS [NOT] NULL with the UNKNOWN constant), so NOT keeps them out
    i, m, t8 = COLS["i"], COLS["m"], COLS["t8"]
    false, true = And(BoundLeaf("is_null", "i", i), BoundLeaf("always_unknown", "i", i)), \
        Or(BoundLeaf("is_not_null", "i", i), BoundLeaf("always_unknown", "i", i))
    assert b("i > 2.5") == b("i >= 2.5") == BoundLeaf("ge", "i", i, value=3)
    assert b("i < 2.5") == b("i <= 2.5") == BoundLeaf("le", "i", i, value=2)
    assert b("i < -2.5") == BoundLeaf("le", "i", i, value=-3)
    assert b("m > 1.255") == BoundLeaf("ge", "m", m, value=decimal.Decimal("1.26"))
    assert b("t8 < 300") == Or(BoundLeaf("is_not_null", "t8", t8), BoundLeaf("always_unknown", "t8", t8))
    assert b("t8 <= -300") == And(BoundLeaf("is_null", "t8", t8), BoundLeaf("always_unknown", "t8", t8))
    assert b("i = 2.5") == b("i > 1e10") == b("i IN (2.5, 1e20)") == false
    assert b("i <> 2.5") == b("i >= -1e10") == b("i NOT IN (0.5)") == true
    assert b("i IN (1, 2.5, 1)") == BoundLeaf("in", "i", i, values=(1,))
    assert b("i IN (2.5, NULL)") == BoundLeaf("always_unknown", "i", i)
    assert b("i BETWEEN 1.5 AND 3.5") == And(BoundLeaf("ge", "i", i, value=2), BoundLeaf("le", "i", i, value=3))
    assert b("i NOT BETWEEN 1.5 AND 3") == Or(BoundLeaf("lt", "i", i, value=2), BoundLeaf("gt", "i", i, value=3))
    assert b("i BETWEEN 1e10 AND 1e11") == And(false, true)
    assert b("i = 2.0") == BoundLeaf("eq", "i", i, value=2)   # held exactly: no rounding


def test_empty_in_lists() -> None:
    assert bind(Leaf("in", "i", values=()), COLS) == BoundLeaf("always_false", "i", COLS["i"])
    assert bind(Leaf("not_in", "i", values=()), COLS) == BoundLeaf("always_true", "i", COLS["i"])


def test_string_operators_on_other_types_are_unsupported() -> None:
    for text in ("starts_with(i, 'x')", "i LIKE 'x%'", "ends_with(d, '1')", "contains(b, 't')"):
        leaf = b(text)
        assert isinstance(leaf, BoundLeaf) and leaf.unsupported and "string" in leaf.unsupported


@pytest.mark.parametrize(("pattern", "op", "value"), [
    ("abc", "eq", "abc"),
    ("abc%", "starts_with", "abc"),
    ("%abc", "ends_with", "abc"),
    ("%abc%", "contains", "abc"),
    ("é🙂%", "starts_with", "é🙂"),
    ("", "eq", ""),                     # equals the empty string
    ("%", "starts_with", ""),           # every non-null row
    ("%%", "starts_with", ""),
    ("a\\%", "eq", "a%"),             # escapes resolved: no wildcard left
    ("a\\_b", "eq", "a_b"),
    ("a\\_b%%", "starts_with", "a_b"),
    ("%\\%", "ends_with", "%"),
    ("%%a\\\\%%", "contains", "a\\"),
    ("ab%%", "starts_with", "ab"),
])
def test_like_rewrites(pattern: str, op: str, value: str) -> None:
    assert bind(Leaf("like", "s", pattern=pattern), COLS) == BoundLeaf("eq" if op == "eq" else op, "s",
                                                                       COLS["s"], value=value)


@pytest.mark.parametrize("pattern", ["a%b", "a_c", "%a%b%", "_", "%_", "a\\\\_", "a%\\%"])
def test_general_like_keeps_a_matcher(pattern: str) -> None:
    leaf = bind(Leaf("like", "s", pattern=pattern), COLS)
    assert isinstance(leaf, BoundLeaf) and leaf.op == "like" and leaf.regex is not None


@pytest.mark.parametrize(("pattern", "text", "hit"), [
    ("a_c", "abc", True), ("a_c", "ac", False), ("a_c", "a\nc", True), ("a%c", "ac", True),
    ("a%c", "abbbc", True), ("a%c", "abcd", False), ("a\\%", "a%", True), ("a\\%", "ab", False),
    ("a\\_", "a_", True), ("a\\_", "ab", False), ("a\\\\", "a\\", True), ("", "", True), ("", "x", False),
    ("%", "", True), ("_", "🙂", True), ("x.*", "x.*", True), ("x.*", "xyz", False), ("(a)", "(a)", True),
])
def test_like_regex_semantics(pattern: str, text: str, hit: bool) -> None:
    assert (re.compile(like_regex(pattern)).match(text) is not None) is hit


def test_like_trailing_escape_is_an_error() -> None:
    with pytest.raises(BindError):
        bind(Leaf("like", "s", pattern="ab\\"), COLS)


def test_structure_is_kept() -> None:
    tree = b("i = 1 AND NOT s LIKE '%x'")
    assert tree == And(BoundLeaf("eq", "i", COLS["i"], value=1),
                       Not(BoundLeaf("ends_with", "s", COLS["s"], value="x")))


_literals = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(), st.text(max_size=6),
    st.decimals(allow_nan=True, places=None), st.dates(), st.datetimes(),
    st.sampled_from(["NaN", "-Infinity", "2020-01-01", "2020-01-01T10:00:00Z", "12:30:00", "1.50", "true", ""]),
)
_ALL_TYPES = ["string", "boolean", "tinyint", "smallint", "int", "bigint", "float", "double", "decimal(5,2)",
              "date", "time(3)", "timestamp(3)", "timestamp(9)", "timestamp_ltz(6)"]


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(_ALL_TYPES), st.sampled_from(sorted(OPERATORS)), _literals, _literals,
       st.lists(_literals, max_size=3), st.booleans())
def test_any_literal_binds_or_raises_bind_error(type_name: str, op: str, a: object, b: object,
                                                 many: list[object], array: bool) -> None:
    shape = OPERATORS[op].shape
    leaf = {"none": Leaf(op, "c"), "value": Leaf(op, "c", a), "values": Leaf(op, "c", values=tuple(many)),
            "range": Leaf(op, "c", low=a, high=b), "pattern": Leaf(op, "c", pattern=a)}[shape]
    try:
        bound = bind(leaf, {"c": parse_type(type_name)}, arrays=("c",) if array else ())
    except BindError as e:
        assert "'c'" in str(e)
    else:
        # One bound leaf, or a few (a BETWEEN with a NULL bound, a number the type cannot hold): all usable as
        # they are, negating them must not raise.
        assert all(isinstance(leaf, BoundLeaf) for leaf in _leaves(bound)), bound
        ~bound  # noqa: B018


def _leaves(node: object) -> list[object]:
    if isinstance(node, (And, Or)):
        return _leaves(node.left) + _leaves(node.right)
    return _leaves(node.child) if isinstance(node, Not) else [node]
