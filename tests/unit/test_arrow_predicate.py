"""service.arrow_predicate: a bgix predicate over Arrow rows with SQL three-valued logic, judged by the pandas
oracle of tests/api/predicates.py (TRUE and UNKNOWN masks) on random predicates, and by Spark SQL's answers
(tests/translation_cases.py) for LIKE escapes, NaN, the array functions and literals."""
from __future__ import annotations

import random
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pytest

from index_format.predicate.json import from_json
from index_format.predicate.sql import parse_where
from service.arrow_predicate import evaluate, filter_table
from service.predicate_translation import UntranslatablePredicateError, column_literal, spark_like_pattern
from index_format.types import KeyType
from tests.api.predicates import make_frame, oracle, random_predicate, to_sql
from tests.translation_cases import ARRAYS, CASES, NUMBERS, STRINGS

FRAME = make_frame(np.random.default_rng(41), 500)
TABLE = pa.Table.from_pandas(FRAME, preserve_index=False)
PREDICATES = [random_predicate(random.Random(7000 + i), FRAME) for i in range(150)]


def _masks(got: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    values = got.to_pylist()
    return np.array([v is True for v in values]), np.array([v is None for v in values])


@pytest.mark.parametrize("i", range(len(PREDICATES)))
def test_random_predicates_agree_with_the_oracle_row_by_row(i: int) -> None:
    p = PREDICATES[i]
    want_t, want_u = oracle(p, FRAME)
    for node in (from_json(p), parse_where(to_sql(p))):
        got_t, got_u = _masks(evaluate(TABLE, node))
        assert (got_t == want_t).all(), (to_sql(p), np.flatnonzero(got_t != want_t)[:5])
        assert (got_u == want_u).all(), (to_sql(p), np.flatnonzero(got_u != want_u)[:5])
    assert filter_table(TABLE, from_json(p)).num_rows == int(want_t.sum())


@pytest.mark.parametrize("table, where, want", CASES, ids=[c[1] for c in CASES])
def test_sql_answers_row_by_row(table: pa.Table, where: str, want: list[bool | None]) -> None:
    assert evaluate(table, parse_where(where)).to_pylist() == want


def test_like_patterns_in_sparks_grammar() -> None:
    """Spark refuses `\\` before anything but `%`, `_` and `\\`: such characters are written plainly."""
    assert spark_like_pattern("a\\xb") == "axb"
    assert spark_like_pattern("a\\%b\\_c\\\\d%_") == "a\\%b\\_c\\\\d%_"
    with pytest.raises(UntranslatablePredicateError, match="escape"):
        evaluate(STRINGS, parse_where("s LIKE 'ab\\'"))


def test_array_columns_cut_by_slicing_keep_their_rows() -> None:
    sliced = pa.table({"t": ARRAYS.column("t").combine_chunks().slice(2, 3)})   # offsets not starting at 0
    assert evaluate(sliced, parse_where("array_contains(t, 1)")).to_pylist() == [None, True, False]


@pytest.mark.parametrize("where, part", [
    ("nope = 1", "column 'nope'"),
    ("starts_with(i, '1')", "starts_with on column 'i'"),
    ("array_contains(i, 1)", "array_contains on column 'i'"),
    ("Name = 5", "the literal 5"),
])
def test_what_cannot_be_evaluated_is_named(where: str, part: str) -> None:
    with pytest.raises(UntranslatablePredicateError, match=part):
        evaluate(NUMBERS, parse_where(where))


def test_literals_take_the_columns_type_or_stay_exact_numbers() -> None:
    assert column_literal("i", KeyType("int"), Decimal("3"), "x") == (3, True)
    assert column_literal("i", KeyType("int"), Decimal("2.5"), "x") == (Decimal("2.5"), False)
    assert column_literal("t", KeyType("tinyint"), 300, "x") == (Decimal(300), False)
    assert column_literal("d", KeyType("date"), "2024-01-02", "x")[1]
    with pytest.raises(UntranslatablePredicateError):
        column_literal("d", KeyType("date"), "yesterday", "x")


def test_an_empty_table_gives_an_empty_answer() -> None:
    empty = TABLE.slice(0, 0)
    assert evaluate(empty, parse_where("status = 'vip' OR age > 3")).to_pylist() == []
