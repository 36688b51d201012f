"""A bgix predicate evaluated over an Arrow table with SQL three-valued logic: the rows where it is TRUE.

`Client.read_arrow` filters an inexact answer's candidate rows with it. Every leaf gives a boolean array that is
null where SQL says UNKNOWN (a null value, a NULL literal, `x IN (…, NULL)` without a match, an array with null
elements and no match); NOT, AND and OR are Kleene's (pyarrow's `invert`, `and_kleene`, `or_kleene`), and only
TRUE rows are kept. Floating point compares as Spark SQL and Java's `Double.compare` order values: NaN equals NaN
and sorts above every other value (pyarrow alone follows IEEE). Literals are coerced to the column's type as the
service's bind coerces them (service.predicate_translation). Array functions follow Spark SQL's
`array_contains` / `arrays_overlap`; `array_contains_all` is the AND of `array_contains` over its elements.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from index_format.errors import UnsupportedTypeError
from index_format.predicate.operators import OPERATORS
from index_format.predicate.tree import BoundLeaf, Leaf, Node
from index_format.predicate.visitors import Visitor, visit
from index_format.types import KeyType, from_arrow
from service.predicate_translation import UntranslatablePredicateError, check_like, column_literal, resolve_column

__all__ = ["evaluate", "filter_table"]

ENGINE = "pyarrow"


def filter_table(table: pa.Table, node: Node) -> pa.Table:
    """The rows of `table` where `node` is TRUE (UNKNOWN and FALSE rows are dropped)."""
    return table.filter(pc.fill_null(evaluate(table, node), False))


def evaluate(table: pa.Table, node: Node) -> pa.BooleanArray:
    """`node`'s three-valued answer per row of `table`: true, false, or null for UNKNOWN.

    Raises:
        UntranslatablePredicateError: a column the table lacks, a column type without key semantics, a literal
            the column cannot be compared with (each named).
    """
    out = visit(node, _Evaluator(table))
    return out if isinstance(out, pa.BooleanArray) else pa.array(out, pa.bool_())


class _Evaluator(Visitor[pa.Array]):
    def __init__(self, table: pa.Table) -> None:
        self.table = table
        self.n = table.num_rows

    def visit_true(self) -> pa.Array:
        return pa.array(np.ones(self.n, bool))

    def visit_false(self) -> pa.Array:
        return pa.array(np.zeros(self.n, bool))

    def visit_unknown(self) -> pa.Array:
        return pa.nulls(self.n, pa.bool_())

    def visit_not(self, child: pa.Array) -> pa.Array:
        return pc.invert(child)

    def visit_and(self, left: pa.Array, right: pa.Array) -> pa.Array:
        return pc.and_kleene(left, right)

    def visit_or(self, left: pa.Array, right: pa.Array) -> pa.Array:
        return pc.or_kleene(left, right)

    def visit_bound_leaf(self, leaf: BoundLeaf) -> pa.Array:
        raise TypeError("evaluate takes the unbound tree the service parses")

    def visit_leaf(self, leaf: Leaf) -> pa.Array:
        name = resolve_column(leaf.column, self.table.column_names, ENGINE)
        column = self.table.column(name).combine_chunks()
        if isinstance(column, pa.ChunkedArray):   # an empty table has no chunk to combine
            column = pa.array([], column.type)
        op = leaf.op
        if OPERATORS[op].element_op is not None:
            return _ArrayLeaf(name, column, leaf).answer()
        kt = _key_type(name, column.type, op)
        if op == "is_null":
            return pc.is_null(column)
        if op == "is_not_null":
            return pc.is_valid(column)
        if op in _COMPARE:
            return _compare(op, column, kt, name, leaf.value)
        if op in ("in", "not_in"):
            hit = _in(column, kt, name, leaf.values or ())
            return hit if op == "in" else pc.invert(hit)
        if op in ("between", "not_between"):
            inside = pc.and_kleene(_compare("ge", column, kt, name, leaf.low),
                                   _compare("le", column, kt, name, leaf.high))
            return inside if op == "between" else pc.invert(inside)
        return _string_leaf(op, column, kt, name, leaf)


def _key_type(column: str, t: pa.DataType, op: str) -> KeyType:
    try:
        return from_arrow(t)
    except UnsupportedTypeError:
        raise UntranslatablePredicateError(f"{op} on column {column!r}", ENGINE,
                                           f"its type {t} has no key semantics in bgix") from None


_COMPARE: dict[str, Callable[[pa.Array, pa.Scalar], pa.Array]] = {
    "eq": pc.equal, "ne": pc.not_equal, "lt": pc.less, "le": pc.less_equal, "gt": pc.greater,
    "ge": pc.greater_equal,
}


def _scalar(column: str, kt: KeyType, t: pa.DataType, value: object) -> pa.Scalar | None:
    """The literal as an Arrow scalar of the column's type (an exact number when it fits no value of it)."""
    literal, typed = column_literal(column, kt, value, ENGINE)
    if literal is None:
        return None
    return pa.scalar(literal, type=t) if typed else pa.scalar(literal)


def _compare(op: str, column: pa.Array, kt: KeyType, name: str, value: object) -> pa.Array:
    lit = _scalar(name, kt, column.type, value)
    if lit is None:   # a comparison with NULL is UNKNOWN for every row
        return pa.nulls(len(column), pa.bool_())
    out = _COMPARE[op](column, lit)
    if kt.name not in ("float", "double"):
        return out
    # Spark SQL and Java order NaN above every value and equal to itself; IEEE (pyarrow) makes it unordered.
    nan_rows = pc.is_nan(column)   # null where the value is null
    if _is_nan(lit):   # a NaN literal: only NaN equals it, nothing is above it, everything else below
        nothing = pc.if_else(pc.is_null(column), pa.nulls(len(column), pa.bool_()), False)
        return {"eq": nan_rows, "ne": pc.invert(nan_rows), "lt": pc.invert(nan_rows),
                "le": pc.or_kleene(nan_rows, pc.invert(nan_rows)),
                "gt": nothing, "ge": nan_rows}[op]
    if op in ("gt", "ge"):   # a NaN value is above every other value
        return pc.or_kleene(out, nan_rows)
    return out


def _in(column: pa.Array, kt: KeyType, name: str, values: tuple[object, ...]) -> pa.Array:
    """`column IN (values)`: TRUE on a match; else UNKNOWN when the value or a literal is NULL, FALSE otherwise."""
    literals = [_scalar(name, kt, column.type, v) for v in values]
    known = [s for s in literals if s is not None]
    has_null = len(known) != len(literals)
    hit = pa.array(np.zeros(len(column), bool))
    typed = [s for s in known if s.type == column.type]
    if typed:
        hit = pc.is_in(column, value_set=pa.array([s.as_py() for s in typed], column.type))   # NaN matches NaN
    for s in known:   # exact numbers outside the column's type: compared one by one
        if s.type != column.type:
            hit = pc.or_(hit, pc.fill_null(pc.equal(column, s), False))
    miss = pa.nulls(len(column), pa.bool_()) if has_null else pa.array(np.zeros(len(column), bool))
    return pc.if_else(pc.is_null(column), pa.nulls(len(column), pa.bool_()), pc.if_else(hit, True, miss))


def _string_leaf(op: str, column: pa.Array, kt: KeyType, name: str, leaf: Leaf) -> pa.Array:
    """starts_with, ends_with, contains and LIKE: on string columns only (the service declines them elsewhere)."""
    if not kt.is_string:
        raise UntranslatablePredicateError(f"{op} on column {name!r}", ENGINE,
                                           f"it takes a string column; {name!r} is {kt.spelling}")
    operand = leaf.pattern if op == "like" else leaf.value
    if operand is None:   # a NULL pattern or prefix: UNKNOWN for every row
        return pa.nulls(len(column), pa.bool_())
    if not isinstance(operand, str):
        raise UntranslatablePredicateError(f"{op}({name}, {operand!r})", ENGINE, "the operand is not a string")
    if op == "starts_with":
        return pc.starts_with(column, operand)
    if op == "ends_with":
        return pc.ends_with(column, operand)
    if op == "contains":
        return pc.match_substring(column, operand)
    check_like(name, operand, ENGINE)
    # pyarrow's LIKE reads `%`, `_` (one code point, newlines included) and `\` (the next character is literal)
    # as bgix does (tests compare them).
    return pc.match_like(column, operand)


class _ArrayLeaf:
    """An array predicate over a list column, with Spark SQL's NULL rules (see the module docstring)."""

    def __init__(self, name: str, column: pa.Array, leaf: Leaf) -> None:
        if not (pa.types.is_list(column.type) or pa.types.is_large_list(column.type)):
            raise UntranslatablePredicateError(f"{leaf.op} on column {name!r}", ENGINE,
                                               f"it takes an ARRAY column; {name!r} is {column.type}")
        self.name, self.column, self.leaf = name, column, leaf
        self.kt = _key_type(name, column.type.value_type, leaf.op)
        offsets = np.asarray(column.offsets, dtype=np.int64)
        self.n = len(column)
        # each element's row, from the offsets (pyarrow's list_parent_indices counts null lists' values too)
        self.parents = np.repeat(np.arange(self.n), np.diff(offsets))
        self.values = column.values.slice(int(offsets[0]), int(offsets[-1] - offsets[0]))

    def _rows_where(self, mask: pa.Array) -> np.ndarray:
        """Rows with at least one element where `mask` (per element) is true."""
        hits = np.asarray(pc.fill_null(mask, False), dtype=bool)
        return np.bincount(self.parents[hits], minlength=self.n) > 0

    def contains(self, value: object) -> np.ndarray:
        """Rows holding the non-null `value` (NaN holds NaN, as in Spark)."""
        lit = _scalar(self.name, self.kt, self.values.type, value)
        assert lit is not None
        return self._rows_where(pc.is_nan(self.values) if _is_nan(lit) else pc.equal(self.values, lit))

    def answer(self) -> pa.Array:
        op, leaf = self.leaf.op, self.leaf
        null_element = self._rows_where(pc.is_null(self.values))
        nonempty = np.diff(np.asarray(self.column.offsets, dtype=np.int64)) > 0
        if op == "array_contains":
            if leaf.value is None:
                return pa.nulls(self.n, pa.bool_())
            result = _three(self.contains(leaf.value), null_element)
        elif op == "arrays_overlap":
            values = leaf.values or ()
            known = [v for v in values if v is not None]
            found = np.zeros(self.n, bool)
            for v in known:
                found |= self.contains(v)
            # no common element: NULL when both arrays are non-empty and either holds a null
            unknown = nonempty & bool(values) & (null_element | (len(known) != len(values)))
            result = _three(found, unknown)
        else:   # array_contains_all: every element contained (an empty list: every non-null array)
            result = pa.array(np.ones(self.n, bool))
            for v in leaf.values or ():
                part = pa.nulls(self.n, pa.bool_()) if v is None else _three(self.contains(v), null_element)
                result = pc.and_kleene(result, part)
        return pc.if_else(pc.is_null(self.column), pa.nulls(self.n, pa.bool_()), result)


def _is_nan(s: pa.Scalar) -> bool:
    value = s.as_py()
    return isinstance(value, float) and value != value


def _three(true: np.ndarray, unknown: np.ndarray) -> pa.Array:
    """TRUE where `true`, else NULL where `unknown`, else FALSE."""
    return pa.array(np.where(true, True, False), pa.bool_(), mask=~true & unknown)
