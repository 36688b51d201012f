"""Tree construction: constant folding, balanced chains, negation, immutability, pickling."""
from __future__ import annotations

import pickle

import pytest

from index_format.predicate.tree import FALSE, TRUE, UNKNOWN, And, BoundLeaf, Leaf, Not, Or
from index_format.types import KeyType

A = Leaf("eq", "a", 1)
B = Leaf("lt", "b", 2)
C = Leaf("like", "c", pattern="x_%")


def test_and_or_fold_constants() -> None:
    assert And(A, TRUE) == A
    assert And(A, FALSE) is FALSE
    assert Or(A, TRUE) is TRUE
    assert Or(A, FALSE) == A
    assert And() is TRUE and Or() is FALSE
    assert And(A, UNKNOWN) != A  # UNKNOWN is not neutral


def test_not_folds_constants_and_double_negation() -> None:
    assert Not(TRUE) is FALSE and Not(FALSE) is TRUE and Not(UNKNOWN) is UNKNOWN
    assert Not(Not(A)) == A
    assert Not(A) == Not(Leaf("eq", "a", 1))
    assert Not(A) != A


def test_invert_uses_complementary_operator_and_de_morgan() -> None:
    assert ~A == Leaf("ne", "a", 1)
    assert ~B == Leaf("ge", "b", 2)
    assert ~Leaf("in", "a", values=(1, None)) == Leaf("not_in", "a", values=(1, None))
    assert ~Leaf("between", "a", low=1, high=2) == Leaf("not_between", "a", low=1, high=2)
    assert ~Leaf("is_null", "a") == Leaf("is_not_null", "a")
    assert ~C == Not(C)  # LIKE has no complementary operator
    assert ~And(A, B) == Or(Leaf("ne", "a", 1), Leaf("ge", "b", 2))
    assert ~Or(A, C) == And(Leaf("ne", "a", 1), Not(C))


def test_long_chains_are_balanced() -> None:
    leaves = [Leaf("eq", "x", i) for i in range(50_000)]
    node = Or(*leaves)
    depth = 0
    while isinstance(node, Or):
        node = node.right
        depth += 1
    assert depth <= 17


def test_leaf_validation_and_immutability() -> None:
    with pytest.raises(ValueError):
        Leaf("nope", "a", 1)
    assert Leaf("in", "a", values=[1, 2]).values == (1, 2)
    with pytest.raises(AttributeError):
        A.op = "ne"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        And(A, B).left = A  # type: ignore[misc]
    with pytest.raises(TypeError):
        And(A, 1)  # type: ignore[arg-type]


def test_pickle_round_trip_keeps_singletons() -> None:
    tree = And(A, Or(B, Not(C)), Leaf("is_null", "d"))
    assert pickle.loads(pickle.dumps(tree)) == tree
    assert pickle.loads(pickle.dumps(TRUE)) is TRUE
    assert pickle.loads(pickle.dumps(UNKNOWN)) is UNKNOWN


def test_bound_leaf_negation() -> None:
    kt = KeyType("int")
    leaf = BoundLeaf("lt", "a", kt, value=3)
    assert ~leaf == BoundLeaf("ge", "a", kt, value=3)
    assert ~BoundLeaf("always_true", "a", kt) == BoundLeaf("always_false", "a", kt)
    assert ~BoundLeaf("always_unknown", "a", kt) == BoundLeaf("always_unknown", "a", kt)
    broken = BoundLeaf("lt", "a", kt, unsupported="why")
    assert ~broken == Not(broken)
