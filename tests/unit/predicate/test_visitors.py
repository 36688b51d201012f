"""rewrite_not keeps three-valued results while pushing NOT to the leaves; column collection; visit()."""
from __future__ import annotations

import pytest

from index_format.predicate.sql import parse_where
from index_format.predicate.tree import FALSE, TRUE, UNKNOWN, And, Leaf, Not, Or
from index_format.predicate.visitors import Visitor, referenced_columns, rewrite_not, visit


@pytest.mark.parametrize(("text", "expected"), [
    ("NOT a = 1", Leaf("ne", "a", 1)),
    ("NOT a < 1", Leaf("ge", "a", 1)),
    ("NOT NOT a = 1", Leaf("eq", "a", 1)),
    ("NOT (a = 1 AND b IS NULL)", Or(Leaf("ne", "a", 1), Leaf("is_not_null", "b"))),
    ("NOT (a IN (1, NULL) OR b BETWEEN 1 AND 2)",
     And(Leaf("not_in", "a", values=(1, None)), Leaf("not_between", "b", low=1, high=2))),
    ("NOT (a LIKE 'x%' OR starts_with(b, 'y'))",
     And(Not(Leaf("like", "a", pattern="x%")), Not(Leaf("starts_with", "b", "y")))),
    ("NOT (TRUE AND a = 1)", Leaf("ne", "a", 1)),
    ("NOT NULL", UNKNOWN),
])
def test_rewrite_not(text: str, expected: object) -> None:
    assert rewrite_not(parse_where(text)) == expected


def test_referenced_columns() -> None:
    assert referenced_columns(parse_where("a = 1 AND (NOT b LIKE 'x' OR c IS NULL OR a > 2)")) == {"a", "b", "c"}
    assert referenced_columns(TRUE) == frozenset()


class _Count(Visitor[int]):
    def visit_true(self) -> int:
        return 0

    visit_false = visit_unknown = visit_true

    def visit_not(self, child: int) -> int:
        return child

    def visit_and(self, left: int, right: int) -> int:
        return left + right

    visit_or = visit_and

    def visit_leaf(self, leaf: Leaf) -> int:
        return 1


def test_visit_handles_deep_balanced_chains() -> None:
    node = Or(*[Leaf("eq", "x", i) for i in range(20_000)])
    assert visit(node, _Count()) == 20_000
    assert visit(And(FALSE, Leaf("eq", "x", 1)), _Count()) == 0
    with pytest.raises(TypeError):
        visit("a = 1", _Count())  # type: ignore[arg-type]
