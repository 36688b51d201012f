"""Immutable predicate nodes: unbound Leaf, BoundLeaf, And/Or/Not with constant folding, TRUE/FALSE/UNKNOWN.

`~node` negates (De Morgan on And/Or, complementary operator on leaves); `Not(node)` keeps an explicit NOT.
Imports only the operator table, the interval algebra and KeyType; never the reader or writer.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

from index_format.predicate.operators import OPERATORS, spec_of
from index_format.types import KeyType

if TYPE_CHECKING:
    from index_format.predicate.intervals import Interval


class Node:
    """Base of every predicate node. Nodes are immutable and compare structurally."""

    __slots__ = ()

    def __invert__(self) -> Node:
        return Not(self)

    def __and__(self, other: Node) -> Node:
        return And(self, other)

    def __or__(self, other: Node) -> Node:
        return Or(self, other)


class _Constant(Node):
    __slots__ = ()
    _instance: ClassVar[_Constant | None] = None
    _name: ClassVar[str] = ""

    def __new__(cls) -> _Constant:
        # One instance per constant so `node is TRUE` works (and survives copy/pickle via __reduce__).
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return self._name

    def __reduce__(self) -> tuple[type, tuple[()]]:
        return (type(self), ())


class AlwaysTrue(_Constant):
    """TRUE for every row."""

    __slots__ = ()
    _name = "TRUE"

    def __invert__(self) -> Node:
        return FALSE


class AlwaysFalse(_Constant):
    """FALSE for every row."""

    __slots__ = ()
    _name = "FALSE"

    def __invert__(self) -> Node:
        return TRUE


class AlwaysUnknown(_Constant):
    """UNKNOWN (SQL NULL) for every row, e.g. `x = NULL` (spec §5.5); NOT keeps it UNKNOWN."""

    __slots__ = ()
    _name = "UNKNOWN"

    def __invert__(self) -> Node:
        return UNKNOWN


TRUE: Node = AlwaysTrue()
FALSE: Node = AlwaysFalse()
UNKNOWN: Node = AlwaysUnknown()


@dataclass(frozen=True, slots=True)
class Leaf(Node):
    """Unbound leaf: an operator from OPERATORS, a column name and untyped literal(s) (None = SQL NULL)."""

    op: str
    column: str
    value: object = None
    values: tuple[object, ...] | None = None
    low: object = None
    high: object = None
    pattern: object = None

    def __post_init__(self) -> None:
        if self.op not in OPERATORS:
            raise ValueError(f"unknown predicate operator {self.op!r}")
        if self.values is not None and not isinstance(self.values, tuple):
            object.__setattr__(self, "values", tuple(self.values))
        if OPERATORS[self.op].shape == "values" and self.values is None:
            object.__setattr__(self, "values", ())

    def __invert__(self) -> Node:
        neg = OPERATORS[self.op].negation
        if neg is None:
            return Not(self)
        return Leaf(neg, self.column, self.value, self.values, self.low, self.high, self.pattern)

    def __repr__(self) -> str:
        parts = [f"{name}={getattr(self, name)!r}" for name in OPERATORS[self.op].fields]
        return f"Leaf({self.op!r}, {self.column!r}{''.join(', ' + p for p in parts)})"


# Internal operators a bound leaf may carry besides OPERATORS (results of bind-time folding that still
# depend on the column's coverage: TRUE/FALSE/UNKNOWN for the rows of that column).
BOUND_CONSTANT_OPS = ("always_true", "always_false", "always_unknown")
_BOUND_CONSTANT_NEGATION = {"always_true": "always_false", "always_false": "always_true",
                            "always_unknown": "always_unknown"}


@dataclass(frozen=True, slots=True)
class BoundLeaf(Node):
    """A leaf bound to a column type: literals are canonical values of `kt` (literals.coerce_literal).

    `null_in_list`: an IN/NOT IN list contained NULL (rows not matching are UNKNOWN, spec §5.5).
    `unsupported`: the reason the index cannot answer this leaf (spec §5.5/§6); evaluation yields UNSUPPORTED.
    `regex`: for a general LIKE, the compiled matcher source (see literals.like_regex).
    """

    op: str
    column: str
    kt: KeyType
    value: object = None
    values: tuple[object, ...] = ()
    low: object = None
    high: object = None
    pattern: str | None = None
    regex: str | None = None
    null_in_list: bool = False
    unsupported: str | None = None
    source: Leaf | None = field(default=None, compare=False)
    intervals: tuple[Interval, ...] = ()   # range_set only: sorted, disjoint key intervals

    def __invert__(self) -> Node:
        if self.unsupported is not None:
            return Not(self)
        if self.op in _BOUND_CONSTANT_NEGATION:
            return _replace_op(self, _BOUND_CONSTANT_NEGATION[self.op])
        neg = spec_of(self.op).negation
        return Not(self) if neg is None else _replace_op(self, neg)

    def __repr__(self) -> str:
        if self.op in BOUND_CONSTANT_OPS:
            return f"BoundLeaf({self.op!r}, {self.column!r})"
        parts = [f"{name}={getattr(self, name)!r}" for name in spec_of(self.op).fields]
        extra = ", null_in_list=True" if self.null_in_list else ""
        extra += f", unsupported={self.unsupported!r}" if self.unsupported else ""
        return f"BoundLeaf({self.op!r}, {self.column!r}, {self.kt.spelling}{''.join(', ' + p for p in parts)}{extra})"


def _replace_op(leaf: BoundLeaf, op: str) -> BoundLeaf:
    return BoundLeaf(op, leaf.column, leaf.kt, leaf.value, leaf.values, leaf.low, leaf.high,
                     leaf.pattern, leaf.regex, leaf.null_in_list, leaf.unsupported, leaf.source, leaf.intervals)


class _Binary(Node):
    __slots__ = ("left", "right")
    left: Node
    right: Node
    _absorbing: ClassVar[Node]
    _neutral: ClassVar[Node]

    def __new__(cls, *children: Node) -> Node:  # type: ignore[misc]  # returns the folded node, of any class
        flat: list[Node] = []
        for child in children:
            if not isinstance(child, Node):
                raise TypeError(f"{cls.__name__} takes predicate nodes, got {child!r}")
            if child is cls._absorbing:
                return cls._absorbing
            if child is not cls._neutral:
                flat.append(child)
        if not flat:
            return cls._neutral
        return _balanced(cls, flat)

    def __init__(self, *children: Node) -> None:
        pass  # fields are set in _balanced

    @property
    def children(self) -> tuple[Node, Node]:
        return (self.left, self.right)

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and isinstance(other, _Binary) and self.left == other.left \
            and self.right == other.right

    def __hash__(self) -> int:
        return hash((type(self).__name__, self.left, self.right))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.left!r}, {self.right!r})"

    def __reduce__(self) -> tuple[type, tuple[Node, Node]]:
        return (type(self), (self.left, self.right))


def _balanced(cls: type[_Binary], nodes: Sequence[Node]) -> Node:
    # Balanced so that a long chain (a big OR of equalities) stays O(log n) deep: no recursion limit.
    if len(nodes) == 1:
        return nodes[0]
    mid = len(nodes) // 2
    node = object.__new__(cls)
    object.__setattr__(node, "left", _balanced(cls, nodes[:mid]))
    object.__setattr__(node, "right", _balanced(cls, nodes[mid:]))
    return node


class And(_Binary):
    """Conjunction; `And(a, b, c, …)` folds TRUE/FALSE and builds a balanced tree."""

    __slots__ = ()
    _absorbing = FALSE
    _neutral = TRUE

    def __invert__(self) -> Node:
        return Or(~self.left, ~self.right)


class Or(_Binary):
    """Disjunction; `Or(a, b, c, …)` folds TRUE/FALSE and builds a balanced tree."""

    __slots__ = ()
    _absorbing = TRUE
    _neutral = FALSE

    def __invert__(self) -> Node:
        return And(~self.left, ~self.right)


def flatten(node: Node, kind: type[And] | type[Or]) -> list[Node]:
    """The operands of the chain of one connective `kind` rooted at `node`, left to right: every And (Or)
    below an And (Or) is opened, anything else is one operand (`node` itself when it is not a `kind`).
    Iterative: trees are balanced, but a chain can have millions of operands."""
    out: list[Node] = []
    stack = [node]
    while stack:
        n = stack.pop()
        if type(n) is kind:
            stack.append(n.right)   # type: ignore[attr-defined]  # a `kind` is a _Binary
            stack.append(n.left)    # type: ignore[attr-defined]  # a `kind` is a _Binary
        else:
            out.append(n)
    return out


class Not(Node):
    """Negation; folds constants and double negation (both valid in three-valued logic)."""

    __slots__ = ("child",)
    child: Node

    def __new__(cls, child: Node) -> Node:  # type: ignore[misc]  # returns the folded node, of any class
        if not isinstance(child, Node):
            raise TypeError(f"Not takes a predicate node, got {child!r}")
        if isinstance(child, _Constant):
            return ~child
        if isinstance(child, Not):
            return child.child
        node = object.__new__(cls)
        object.__setattr__(node, "child", child)
        return node

    def __init__(self, child: Node) -> None:
        pass

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("predicate nodes are immutable")

    def __invert__(self) -> Node:
        return self.child

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Not) and self.child == other.child

    def __hash__(self) -> int:
        return hash(("Not", self.child))

    def __repr__(self) -> str:
        return f"Not({self.child!r})"

    def __reduce__(self) -> tuple[type, tuple[Node]]:
        return (Not, (self.child,))


def _frozen_setattr(self: _Binary, name: str, value: object) -> None:
    raise AttributeError("predicate nodes are immutable")


_Binary.__setattr__ = _frozen_setattr  # type: ignore[method-assign,assignment]  # frozen nodes: writes raise
