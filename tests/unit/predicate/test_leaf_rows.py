"""One bound leaf on one file, expected rows from plain Python sets.

`matching_rows` (the per-file evaluator) gives the positive form's local rows; the leaf's full answer
(complement and null rules from the operator table) is checked through answer_over_files on a column made
of that one file, whose row range is exactly the file's rows.
"""
from __future__ import annotations

import pytest
from pyroaring import BitMap64

from index_format.global_index.filemeta import parse_meta
from index_format.global_index.reader import IndexReader, open_index
from index_format.global_index.writer import write_index_bytes
from index_format.predicate.answer import ColumnIndex, IndexFileRef, answer_over_files
from index_format.predicate.bind import bind
from index_format.predicate.leaf_rows import UNSUPPORTED, matching_rows
from index_format.predicate.sql import parse_where
from index_format.predicate.tree import BoundLeaf
from index_format.storage import BytesSource
from index_format.types import parse_type

S = parse_type("string")
INT = parse_type("int")
WORDS = ["apple", None, "banana", "", "apricot", "apple", None, "cherry", "a%b", "a_b", "é🙂"]
NUMS = [5, None, -3, 5, 0, 2147483647, -2147483648, None, 7]


def reader_of(values: list[object], kt: object) -> IndexReader:
    data, _ = write_index_bytes(values, list(range(len(values))), kt)  # type: ignore[arg-type]
    return open_index(BytesSource(data), kt)  # type: ignore[arg-type]


def answer(node: BoundLeaf, values: list[object]) -> tuple[BitMap64, BitMap64] | object:
    """(TRUE rows, UNKNOWN rows) of `node` over one file holding `values` at ids 0…n−1, or UNSUPPORTED."""
    data, written = write_index_bytes(values, list(range(len(values))), node.kt)
    ref = IndexFileRef("f", 0, len(values) - 1, parse_meta(node.kt, written.meta), len(data),
                       lambda: open_index(BytesSource(data), node.kt))
    got = answer_over_files(node, {node.column: ColumnIndex(node.column, node.kt, [ref])})
    return (got.rows, got.unknown) if got.supported else UNSUPPORTED


def leaf(text: str, column: str, kt: object) -> BoundLeaf:
    node = bind(parse_where(text), {column: kt})  # type: ignore[dict-item]
    assert isinstance(node, BoundLeaf)
    return node


def rows(values: list[object], test: object) -> BitMap64:
    return BitMap64(i for i, v in enumerate(values) if v is not None and test(v))  # type: ignore[operator]


NULLS_S = BitMap64(i for i, v in enumerate(WORDS) if v is None)


@pytest.mark.parametrize(("text", "test"), [
    ("s = 'apple'", lambda v: v == "apple"),
    ("s = ''", lambda v: v == ""),
    ("s <> 'apple'", lambda v: v != "apple"),
    ("s IN ('apple', 'cherry', 'zzz')", lambda v: v in ("apple", "cherry")),
    ("s NOT IN ('apple', 'zzz')", lambda v: v != "apple"),
    ("s < 'b'", lambda v: v < "b"),
    ("s >= 'banana'", lambda v: v >= "banana"),
    ("s BETWEEN 'apple' AND 'banana'", lambda v: "apple" <= v <= "banana"),
    ("s NOT BETWEEN 'apple' AND 'banana'", lambda v: not "apple" <= v <= "banana"),
    ("s BETWEEN 'z' AND 'a'", lambda v: False),
    ("starts_with(s, 'ap')", lambda v: v.startswith("ap")),
    ("starts_with(s, '')", lambda v: True),
    ("ends_with(s, 'e')", lambda v: v.endswith("e")),
    ("ends_with(s, '')", lambda v: True),
    ("contains(s, 'an')", lambda v: "an" in v),
    ("contains(s, '🙂')", lambda v: "🙂" in v),
    ("s LIKE 'a\\%b'", lambda v: v == "a%b"),
    ("s LIKE 'a_b'", lambda v: len(v) == 3 and v[0] == "a" and v[2] == "b"),
    ("s LIKE '%p%e'", lambda v: "p" in v and v.endswith("e") and v.index("p") < len(v) - 1),
    ("s LIKE '_'", lambda v: len(v) == 1),
    ("s LIKE ''", lambda v: v == ""),
])
def test_string_leaves(text: str, test: object) -> None:
    assert answer(leaf(text, "s", S), WORDS) == (rows(WORDS, test), NULLS_S)


@pytest.mark.parametrize(("text", "positive"), [
    ("s = 'apple'", lambda v: v == "apple"),
    ("s <> 'apple'", lambda v: v == "apple"),
    ("s NOT IN ('apple', 'zzz')", lambda v: v == "apple"),
    ("s IS NOT NULL", None),
    ("s LIKE 'a_b'", lambda v: len(v) == 3 and v[0] == "a" and v[2] == "b"),
])
def test_matching_rows_answers_the_positive_form(text: str, positive: object) -> None:
    expected = NULLS_S if positive is None else rows(WORDS, positive)
    assert matching_rows(leaf(text, "s", S), reader_of(WORDS, S)) == expected


def test_is_null() -> None:
    assert answer(leaf("s IS NULL", "s", S), WORDS) == (NULLS_S, BitMap64())
    non_null = BitMap64(i for i, v in enumerate(WORDS) if v is not None)
    assert answer(leaf("s IS NOT NULL", "s", S), WORDS) == (non_null, BitMap64())


@pytest.mark.parametrize(("text", "test"), [
    ("n = 5", lambda v: v == 5),
    ("n > -3", lambda v: v > -3),
    ("n <= 0", lambda v: v <= 0),
    ("n BETWEEN -2147483648 AND 0", lambda v: v <= 0),
    ("n NOT BETWEEN 0 AND 5", lambda v: v < 0 or v > 5),
    ("n <> 5", lambda v: v != 5),
    ("n NOT IN (5, 7)", lambda v: v not in (5, 7)),
])
def test_int_leaves(text: str, test: object) -> None:
    nulls = BitMap64(i for i, v in enumerate(NUMS) if v is None)
    assert answer(leaf(text, "n", INT), NUMS) == (rows(NUMS, test), nulls)


def test_null_in_list_makes_non_matches_unknown() -> None:
    everything = BitMap64(range(len(NUMS)))
    fives = rows(NUMS, lambda v: v == 5)
    assert answer(leaf("n IN (5, NULL)", "n", INT), NUMS) == (fives, everything - fives)
    assert answer(leaf("n NOT IN (5, NULL)", "n", INT), NUMS) == (BitMap64(), everything - fives)


def test_constants_and_unsupported() -> None:
    everything = BitMap64(range(len(NUMS)))
    assert answer(leaf("n = NULL", "n", INT), NUMS) == (BitMap64(), everything)
    assert answer(leaf("n < NULL", "n", INT), NUMS) == (BitMap64(), everything)
    assert answer(leaf("starts_with(n, '1')", "n", INT), NUMS) is UNSUPPORTED
    assert repr(UNSUPPORTED) == "UNSUPPORTED"
    with pytest.raises(ValueError, match="no per-file evaluation"):
        matching_rows(leaf("n = NULL", "n", INT), reader_of(NUMS, INT))


def test_in_list_narrowed_to_given_values() -> None:
    r = reader_of(NUMS, INT)
    assert matching_rows(leaf("n IN (5, 7)", "n", INT), r, values=(7,)) == rows(NUMS, lambda v: v == 7)
