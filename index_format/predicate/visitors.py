"""visit() dispatch over predicate trees, the base visitor, rewrite_not and column collection.

Imports only tree/operators; never the reader or writer.
"""
from __future__ import annotations

from typing import Generic, TypeVar

from index_format.predicate.tree import (
    FALSE, TRUE, UNKNOWN, And, BoundLeaf, Leaf, Node, Not, Or,
)

R = TypeVar("R")


class Visitor(Generic[R]):
    """Post-order visitor: children are visited first and their results passed up."""

    def visit_true(self) -> R:
        raise NotImplementedError

    def visit_false(self) -> R:
        raise NotImplementedError

    def visit_unknown(self) -> R:
        raise NotImplementedError

    def visit_not(self, child: R) -> R:
        raise NotImplementedError

    def visit_and(self, left: R, right: R) -> R:
        raise NotImplementedError

    def visit_or(self, left: R, right: R) -> R:
        raise NotImplementedError

    def visit_leaf(self, leaf: Leaf) -> R:
        raise NotImplementedError

    def visit_bound_leaf(self, leaf: BoundLeaf) -> R:
        raise NotImplementedError


def visit(node: Node, visitor: Visitor[R]) -> R:
    """Apply `visitor` to `node` bottom-up. Trees are balanced (tree._balanced), so recursion depth is small."""
    if node is TRUE:
        return visitor.visit_true()
    if node is FALSE:
        return visitor.visit_false()
    if node is UNKNOWN:
        return visitor.visit_unknown()
    if isinstance(node, Not):
        return visitor.visit_not(visit(node.child, visitor))
    if isinstance(node, And):
        return visitor.visit_and(visit(node.left, visitor), visit(node.right, visitor))
    if isinstance(node, Or):
        return visitor.visit_or(visit(node.left, visitor), visit(node.right, visitor))
    if isinstance(node, BoundLeaf):
        return visitor.visit_bound_leaf(node)
    if isinstance(node, Leaf):
        return visitor.visit_leaf(node)
    raise TypeError(f"not a predicate node: {node!r}")


class _RewriteNot(Visitor[Node]):
    # Each node returns (as-is, negated) lazily: we rebuild bottom-up keeping explicit NOTs only over
    # leaves that have no complementary operator (starts_with, ends_with, contains, like).
    def visit_true(self) -> Node:
        return TRUE

    def visit_false(self) -> Node:
        return FALSE

    def visit_unknown(self) -> Node:
        return UNKNOWN

    def visit_not(self, child: Node) -> Node:
        return ~child

    def visit_and(self, left: Node, right: Node) -> Node:
        return And(left, right)

    def visit_or(self, left: Node, right: Node) -> Node:
        return Or(left, right)

    def visit_leaf(self, leaf: Leaf) -> Node:
        return leaf

    def visit_bound_leaf(self, leaf: BoundLeaf) -> Node:
        return leaf


def rewrite_not(node: Node) -> Node:
    """Push NOT down to the leaves (De Morgan; `NOT x = v` → `x <> v` etc.), same 3VL result.

    After this, a Not node only wraps a leaf without a complementary operator.
    """
    return visit(node, _RewriteNot())


class _Columns(Visitor[frozenset[str]]):
    def visit_true(self) -> frozenset[str]:
        return frozenset()

    visit_false = visit_unknown = visit_true

    def visit_not(self, child: frozenset[str]) -> frozenset[str]:
        return child

    def visit_and(self, left: frozenset[str], right: frozenset[str]) -> frozenset[str]:
        return left | right

    visit_or = visit_and

    def visit_leaf(self, leaf: Leaf) -> frozenset[str]:
        return frozenset((leaf.column,))

    def visit_bound_leaf(self, leaf: BoundLeaf) -> frozenset[str]:
        return frozenset((leaf.column,))


def referenced_columns(node: Node) -> frozenset[str]:
    """Every column named by a leaf of `node`."""
    return visit(node, _Columns())
