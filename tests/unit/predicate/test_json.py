"""JSON wire form: decoding to hand-built trees, error paths, and the inverse encoder."""
from __future__ import annotations

import datetime as dt
import decimal
import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from index_format.errors import ParseError
from index_format.predicate.json import from_json, to_json
from index_format.predicate.sql import parse_where
from index_format.predicate.tree import FALSE, TRUE, UNKNOWN, And, Leaf, Node, Not, Or


def test_decode_every_shape() -> None:
    doc = {"op": "and", "args": [
        {"op": "eq", "column": "a", "value": 1},
        {"op": "or", "args": [
            {"op": "in", "column": "b", "values": ["x", None]},
            {"op": "not", "arg": {"op": "like", "column": "c", "pattern": "a_%"}},
        ]},
        {"op": "between", "column": "d", "low": 1.5, "high": 2},
        {"op": "is_not_null", "column": "e"},
        {"op": "starts_with", "column": "f", "value": ""},
    ]}
    expected = And(
        Leaf("eq", "a", 1),
        Or(Leaf("in", "b", values=("x", None)), Not(Leaf("like", "c", pattern="a_%"))),
        Leaf("between", "d", low=1.5, high=2),
        Leaf("is_not_null", "e"),
        Leaf("starts_with", "f", ""),
    )
    assert from_json(doc) == expected
    assert from_json(json.dumps(doc)) == expected


def test_constants_and_case_insensitive_op() -> None:
    assert from_json({"op": "true"}) is TRUE
    assert from_json({"op": "false"}) is FALSE
    assert from_json({"op": "unknown"}) is UNKNOWN
    assert from_json({"op": "EQ", "column": "a", "value": None}) == Leaf("eq", "a", None)
    assert from_json({"op": "and", "args": []}) is TRUE


@pytest.mark.parametrize(("doc", "path"), [
    ([1], "$"),
    ({"column": "a"}, "$.op"),
    ({"op": "equals", "column": "a", "value": 1}, "$.op"),
    ({"op": "and", "args": {"op": "true"}}, "$.args"),
    ({"op": "and", "args": [{"op": "true"}, {"op": "eq", "column": "a", "value": [1]}]}, "$.args[1].value"),
    ({"op": "or", "args": [{"op": "in", "column": "a", "values": [1, {"x": 1}]}]}, "$.args[0].values[1]"),
    ({"op": "in", "column": "a", "values": 1}, "$.values"),
    ({"op": "eq", "column": "", "value": 1}, "$.column"),
    ({"op": "eq", "column": "a"}, "$.value"),
    ({"op": "eq", "column": "a", "value": 1, "vaule": 2}, "$.vaule"),
    ({"op": "not"}, "$.arg"),
    ({"op": "not", "arg": {"op": "between", "column": "a", "low": 1}}, "$.arg.high"),
    ("{not json", "$"),
])
def test_errors_name_the_json_path(doc: object, path: str) -> None:
    with pytest.raises(ParseError) as info:
        from_json(doc)
    assert info.value.position == path


@pytest.mark.parametrize("text", [
    "a = 1 AND (b <> 'x' OR c IS NULL) AND NOT d LIKE 'q_%'",
    "a IN (1, 2, NULL) OR a NOT IN ('z') OR a BETWEEN -1 AND 1 OR a NOT BETWEEN 0 AND 2",
    "starts_with(s, 'p') AND ends_with(s, 'q') AND contains(s, '') AND s IS NOT NULL",
    "a < 1 OR a <= 2 OR a > 3 OR a >= 4 OR a = NULL",
    "TRUE AND NOT flag",
])
def test_round_trip_through_wire_form(text: str) -> None:
    tree = parse_where(text)
    wire = json.loads(json.dumps(to_json(tree)))  # must be plain JSON
    assert from_json(wire) == tree


def test_literal_encoding() -> None:
    def value_of(v: object) -> object:
        return to_json(Leaf("eq", "a", v))["value"]

    assert value_of(math.nan) == "NaN"
    assert value_of(math.inf) == "Infinity" and value_of(-math.inf) == "-Infinity"
    assert value_of(decimal.Decimal("1.5")) == 1.5
    assert value_of(decimal.Decimal("0.1000000000000000000001")) == "0.1000000000000000000001"
    assert value_of(dt.date(2020, 1, 2)) == "2020-01-02"
    assert value_of(dt.datetime(2020, 1, 2, 3, 4, 5)) == "2020-01-02T03:04:05"
    assert to_json(Leaf("is_null", "a")) == {"op": "is_null", "column": "a"}


_json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=5),
              st.sampled_from(["eq", "in", "and", "not", "like", "between", "is_null", "column", "value"])),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.sampled_from(["op", "column", "value", "values", "low", "high", "pattern",
                                         "args", "arg", "x"]), inner, max_size=4),
    ),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(_json_values)
def test_any_json_decodes_or_raises_parse_error(doc: object) -> None:
    try:
        node = from_json(doc)
    except ParseError as e:
        assert isinstance(e.position, str) and e.position.startswith("$")
    else:
        assert isinstance(node, Node)


@pytest.mark.parametrize("text", ['{"op": "eq", "column": "d", "value": 1e999}',
                                  '{"op": "in", "column": "d", "values": [1, -1e999]}',
                                  '{"op": "eq", "column": "d", "value": NaN}'])
def test_a_number_that_is_not_finite_on_the_wire_is_a_parse_error(text: str) -> None:
    # JSON numbers are finite: 1e999 overflowed (json.loads makes it inf) and is never silently infinity
    with pytest.raises(ParseError, match="not finite") as info:
        from_json(json.loads(text))
    assert info.value.position.startswith("$.value") or info.value.position.startswith("$.values")
    # spelled as strings, as to_json writes them, they are literals
    leaf = from_json({"op": "eq", "column": "d", "value": "Infinity"})
    assert isinstance(leaf, Leaf) and leaf.value == "Infinity"
