"""Array predicates (spec §8): SQL and JSON forms, bind rules, and per-file rows over pypaimon-rust's files.

matching_rows of array_contains / arrays_overlap / array_contains_all over multivalue files that pypaimon-rust's
create_global_index wrote is compared with plain Python over the same source arrays.
"""
from __future__ import annotations

import random
from pathlib import Path

import pytest
from pyroaring import BitMap64

from index_format.errors import BindError, ParseError, PredicateLimitError
from index_format.global_index.reader import open_index
from index_format.predicate.bind import bind
from index_format.predicate.json import from_json, to_json
from index_format.predicate.leaf_rows import matching_rows
from index_format.predicate.limits import PredicateLimits
from index_format.predicate.sql import parse_where
from index_format.predicate.tree import And, BoundLeaf, Leaf, Not, Or
from index_format.storage import BytesSource
from index_format.types import KeyType, parse_type
from tests.multivalue_tables import MultivalueTable, Shard

S, BIG, INT = parse_type("string"), parse_type("bigint"), parse_type("int")
COLUMNS: dict[str, KeyType] = {"tags": S, "nums": BIG, "name": S}
ARRAYS = ("tags", "nums")


# ---------------------------------------------------------------------------- parsing

@pytest.mark.parametrize(("text", "expected"), [
    ("array_contains(tags, 'vip')", Leaf("array_contains", "tags", "vip")),
    ("ARRAY_CONTAINS(tags, '')", Leaf("array_contains", "tags", "")),
    ("array_has(tags, 'é🙂')", Leaf("array_contains", "tags", "é🙂")),
    ("array_contains(nums, -5)", Leaf("array_contains", "nums", -5)),
    ("array_contains(tags, NULL)", Leaf("array_contains", "tags", None)),
    ("arrays_overlap(tags, array('a', 'b', NULL))", Leaf("arrays_overlap", "tags", values=("a", "b", None))),
    ("array_has_any(tags, ARRAY['a', 'it''s'])", Leaf("arrays_overlap", "tags", values=("a", "it's"))),
    ("arrays_overlap(tags, array())", Leaf("arrays_overlap", "tags", values=())),
    ("array_contains_all(nums, array(1, -2, 9223372036854775807))",
     Leaf("array_contains_all", "nums", values=(1, -2, 9223372036854775807))),
    ("array_has_all(tags, ARRAY['a'])", Leaf("array_contains_all", "tags", values=("a",))),
    ("array_has_all(tags, ARRAY[])", Leaf("array_contains_all", "tags", values=())),
    ("NOT array_contains(tags, 'x')", Not(Leaf("array_contains", "tags", "x"))),
    ("array_contains(tags, 'x') AND name = 'y' OR arrays_overlap(\"tags\", array('z'))",
     Or(And(Leaf("array_contains", "tags", "x"), Leaf("eq", "name", "y")),
        Leaf("arrays_overlap", "tags", values=("z",)))),
])
def test_sql_forms(text: str, expected: object) -> None:
    assert parse_where(text) == expected


@pytest.mark.parametrize(("text", "message", "fragment"), [
    ("array_contains(array('a'), tags)", "ARRAY column as its first argument", "array_contains("),
    ("array_contains('a', tags)", "ARRAY column as its first argument", "array_contains("),
    ("arrays_overlap(tags, other)", "array literal", "other"),
    ("array_contains_all(tags, 'a')", "array literal", "'a'"),
    ("arrays_overlap(tags, array(other))", "expected a literal, found a column", "other"),
    ("array_contains(tags, array('a'))", "one element literal, not an array", "array('a')"),
    ("array_contains(tags, 'a', 'b')", "takes two arguments", "array_contains("),
    ("array_has_any(tags)", "takes two arguments", "array_has_any("),
    ("array_contains(t.tags, 'a')", "qualified column names", "t.tags"),
])
def test_sql_errors_name_the_problem(text: str, message: str, fragment: str) -> None:
    with pytest.raises(ParseError, match=message) as e:
        parse_where(text)
    assert text[e.value.position:].startswith(fragment)


def test_array_literals_count_against_the_list_limit() -> None:
    limits = PredicateLimits(max_in_values=3)
    assert parse_where("arrays_overlap(tags, array(1, 2, 3))", limits=limits)
    for text in ("arrays_overlap(tags, array(1, 2, 3, 4))", "array_has_all(tags, ARRAY[1, 2, 3, 4])"):
        with pytest.raises(PredicateLimitError):
            parse_where(text, limits=limits)


def test_json_forms_and_round_trip() -> None:
    doc = {"op": "and", "args": [
        {"op": "array_contains", "column": "tags", "value": "vip"},
        {"op": "arrays_overlap", "column": "tags", "values": ["a", None]},
        {"op": "not", "arg": {"op": "array_contains_all", "column": "nums", "values": [1, -2]}},
    ]}
    tree = from_json(doc)
    assert tree == And(Leaf("array_contains", "tags", "vip"), Leaf("arrays_overlap", "tags", values=("a", None)),
                       Not(Leaf("array_contains_all", "nums", values=(1, -2))))
    assert from_json(to_json(tree)) == tree
    assert tree == parse_where("array_contains(tags, 'vip') AND arrays_overlap(tags, array('a', NULL)) "
                               "AND NOT array_contains_all(nums, array(1, -2))")
    bound = bind(tree, COLUMNS, arrays=ARRAYS)
    assert bind(from_json(to_json(bound)), COLUMNS, arrays=ARRAYS) == bound


@pytest.mark.parametrize(("doc", "path"), [
    ({"op": "array_contains", "column": "tags"}, "$.value"),
    ({"op": "arrays_overlap", "column": "tags", "values": "a"}, "$.values"),
    ({"op": "array_contains_all", "column": "tags", "value": "a"}, "$.value"),
    ({"op": "array_contains", "column": "tags", "value": ["a"]}, "$.value"),
])
def test_json_errors(doc: dict[str, object], path: str) -> None:
    with pytest.raises(ParseError) as e:
        from_json(doc)
    assert e.value.position == path


# ---------------------------------------------------------------------------- binding

def _bind(text: str) -> object:
    return bind(parse_where(text), COLUMNS, arrays=ARRAYS)


def test_bind_coerces_literals_to_the_element_type() -> None:
    assert _bind("array_contains(nums, 5)") == BoundLeaf("array_contains", "nums", BIG, value=5)
    assert _bind("arrays_overlap(nums, array(3, 1, 3, NULL))") == \
        BoundLeaf("arrays_overlap", "nums", BIG, values=(3, 1), null_in_list=True)
    assert _bind("array_contains_all(tags, array('b', 'a', 'b'))") == \
        BoundLeaf("array_contains_all", "tags", S, values=("b", "a"))
    with pytest.raises(BindError, match="'nums'"):
        _bind("array_contains(nums, 'x')")
    with pytest.raises(BindError, match="'nums'"):
        _bind("arrays_overlap(nums, array(1, 'x'))")


@pytest.mark.parametrize(("text", "expected"), [
    # is NULL an element? NULL for every row, null arrays too (Paimon: empty)
    ("array_contains(tags, NULL)", BoundLeaf("always_unknown", "tags", S)),
    # never TRUE, yet NULL (not FALSE) for a null array, which the index cannot tell from an empty one: an overlap
    # with nothing, whose NOT is declined like NOT over any array leaf (not FALSE, whose NOT would be TRUE)
    ("arrays_overlap(tags, array(NULL))", BoundLeaf("arrays_overlap", "tags", S, values=(), null_in_list=True)),
    ("arrays_overlap(tags, array())", BoundLeaf("arrays_overlap", "tags", S, values=())),
    ("array_contains_all(tags, array('a', NULL))", BoundLeaf("arrays_overlap", "tags", S, values=())),
    ("array_contains(nums, 2.5)", BoundLeaf("arrays_overlap", "nums", BIG, values=())),   # no element equals 2.5
    ("array_contains_all(nums, array(1, 1e30))", BoundLeaf("arrays_overlap", "nums", BIG, values=())),
    ("arrays_overlap(nums, array(1, 2.5))", BoundLeaf("arrays_overlap", "nums", BIG, values=(1,))),
])
def test_bind_null_and_empty_lists(text: str, expected: BoundLeaf) -> None:
    assert _bind(text) == expected


def test_array_contains_all_of_nothing_is_unsupported() -> None:
    got = _bind("array_contains_all(tags, array())")
    assert isinstance(got, BoundLeaf) and got.unsupported and "empty list" in got.unsupported


@pytest.mark.parametrize("text", ["tags = 'a'", "tags IN ('a')", "tags IS NULL", "tags IS NOT NULL",
                                  "tags LIKE 'a%'", "nums < 3", "starts_with(tags, 'a')", "tags <> 'a'"])
def test_scalar_operators_on_an_array_column_are_bind_errors(text: str) -> None:
    with pytest.raises(BindError) as e:
        _bind(text)
    message = str(e.value)
    assert "ARRAY" in message and "array_contains, arrays_overlap, array_contains_all" in message


@pytest.mark.parametrize("text", ["array_contains(name, 'a')", "arrays_overlap(name, array('a'))",
                                  "array_contains_all(name, array('a'))"])
def test_array_operators_on_a_scalar_column_are_bind_errors(text: str) -> None:
    with pytest.raises(BindError) as e:
        _bind(text)
    assert "not an ARRAY column" in str(e.value) and "eq" in str(e.value) and "'name'" in str(e.value)
    with pytest.raises(BindError):
        bind(parse_where("array_contains(tags, 'a')"), COLUMNS)   # no `arrays`: every column is scalar


def test_negating_an_array_leaf_keeps_an_explicit_not() -> None:
    leaf = _bind("array_contains(tags, 'a')")
    assert ~leaf == Not(leaf)   # type: ignore[operator]


# ---------------------------------------------------------------------------- rows over pypaimon-rust files

_WORDS = ["", "a", "b", "é", "🙂", "vip", "it's", "z" * 30]
_LONGS = [0, 1, -1, -5, 256, (1 << 63) - 1, -(1 << 63), 1 << 40]


def _rows(rnd: random.Random, n: int, pool: list[object]) -> list[list[object] | None]:
    out: list[list[object] | None] = []
    for _ in range(n):
        if rnd.random() < 0.1:
            out.append(None)
        else:
            out.append([None if rnd.random() < 0.1 else rnd.choice(pool) for _ in range(rnd.randint(0, 4))])
    return out


@pytest.fixture(scope="module")
def shards(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Shard]]:
    """Two row ranges per column type (a build, more rows, a second build)."""
    rnd = random.Random(20)
    out = {}
    for name, sql_type, pool in (("tags", "STRING", _WORDS), ("nums", "BIGINT", _LONGS)):
        table = MultivalueTable(Path(tmp_path_factory.mktemp(name)), sql_type)
        table.insert(_rows(rnd, 150, pool))
        table.index()
        table.insert(_rows(rnd, 60, pool))
        out[name] = table.index()
        assert len(out[name]) == 2
    return out


def _expected(op: str, values: list[object], rows: list[list[object] | None]) -> BitMap64:
    """Rows where the predicate is TRUE, in plain Python (NULL literals never match, spec §8)."""
    out = BitMap64()
    wanted = [v for v in values if v is not None]
    for i, a in enumerate(rows):
        held = {v for v in a or () if v is not None}
        if op == "array_contains" and wanted[0] in held:
            out.add(i)
        if op == "arrays_overlap" and held & set(wanted):
            out.add(i)
        if op == "array_contains_all" and set(wanted) <= held:
            out.add(i)
    return out


@pytest.mark.parametrize("column", ["tags", "nums"])
def test_matching_rows_over_pypaimon_rust_files(shards: dict[str, list[Shard]], column: str) -> None:
    rnd = random.Random(column)
    pool = (_WORDS + ["missing"]) if column == "tags" else (_LONGS + [12345])
    kt = COLUMNS[column]
    checked = 0
    for shard in shards[column]:
        reader = open_index(BytesSource(shard.data), kt)
        for _ in range(120):
            op = rnd.choice(["array_contains", "arrays_overlap", "array_contains_all"])
            values = [rnd.choice(pool) for _ in range(rnd.randint(1, 3))]
            if op == "array_contains":
                leaf = Leaf(op, column, values[0])
            else:
                values += [None] if op == "arrays_overlap" and rnd.random() < 0.2 else []
                leaf = Leaf(op, column, values=tuple(values))
            bound = bind(leaf, COLUMNS, arrays=ARRAYS)
            assert isinstance(bound, BoundLeaf) and bound.op == op
            assert matching_rows(bound, reader) == _expected(op, values, shard.rows), (leaf, shard.range_start)
            checked += 1
    assert checked == 240


def test_array_contains_all_with_values_narrowed_to_the_file(shards: dict[str, list[Shard]]) -> None:
    shard = shards["tags"][0]
    reader = open_index(BytesSource(shard.data), S)
    leaf = bind(Leaf("array_contains_all", "tags", values=("a", "b")), COLUMNS, arrays=ARRAYS)
    assert isinstance(leaf, BoundLeaf)
    both = _expected("array_contains_all", ["a", "b"], shard.rows)
    assert both and matching_rows(leaf, reader, ("a", "b")) == both
    # an element outside the file's key bounds: no row of the file holds every element
    assert matching_rows(leaf, reader, ("a",)) == BitMap64()
    overlap = bind(Leaf("arrays_overlap", "tags", values=("a", "b")), COLUMNS, arrays=ARRAYS)
    assert isinstance(overlap, BoundLeaf)
    assert matching_rows(overlap, reader, ("a",)) == _expected("arrays_overlap", ["a"], shard.rows)
