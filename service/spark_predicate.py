"""A bgix predicate as a pyspark Column with the same SQL three-valued logic, for `DataFrame.filter` (which keeps
only TRUE rows): spark_filter filters an inexact answer's candidate rows with it.

The parsed tree is translated node by node, never handed to Spark as SQL text: bgix's dialect and Spark's differ
(bgix's `\\` makes any character of a LIKE pattern literal, Spark refuses most; `contains` is a function of ours).
Spark's own operators already give SQL's NULL rules (`=`, `<`, `IN` with a NULL literal, BETWEEN, LIKE, NOT, AND,
OR) and Spark SQL's array functions are the meaning bgix's array predicates take (`array_contains`,
`arrays_overlap`; `array_contains_all` is the AND of `array_contains` over its elements). Literals are coerced to
the column's type as the service's bind coerces them and typed as the column (a FLOAT column compares with the
literal rounded to float, as its index does); numbers no value of an integer or decimal column equals are compared
exactly (service.predicate_translation). pyspark is imported here, so only callers that run Spark import this.
"""
from __future__ import annotations

import datetime as dt
import decimal
from collections.abc import Callable
from typing import TYPE_CHECKING

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T

from index_format.predicate.operators import OPERATORS
from index_format.predicate.tree import BoundLeaf, Leaf, Node
from index_format.predicate.visitors import Visitor, visit
from index_format.types import KeyType
from service.predicate_translation import (
    UntranslatablePredicateError, check_like, column_literal, resolve_column, spark_like_pattern,
)

if TYPE_CHECKING:
    from pyspark.sql.types import StructType

__all__ = ["spark_condition"]

ENGINE = "Spark"
_COMPARE: dict[str, Callable[[Column, Column], Column]] = {
    "eq": lambda a, b: a == b, "ne": lambda a, b: a != b, "lt": lambda a, b: a < b, "le": lambda a, b: a <= b,
    "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b,
}


def spark_condition(node: Node, schema: StructType) -> Column:
    """`node` as a Column over a DataFrame with `schema`: TRUE, FALSE or NULL (UNKNOWN) per row, as SQL says.

    Raises:
        UntranslatablePredicateError: a column the schema lacks, a column type bgix has no keys for, a literal the
            column cannot take (each named). Nothing is left out silently.
    """
    return visit(node, _Translator(schema))


class _Translator(Visitor[Column]):
    def __init__(self, schema: StructType) -> None:
        self.fields = {f.name: f.dataType for f in schema.fields}

    def visit_true(self) -> Column:
        return F.lit(True)

    def visit_false(self) -> Column:
        return F.lit(False)

    def visit_unknown(self) -> Column:
        return F.lit(None).cast(T.BooleanType())

    def visit_not(self, child: Column) -> Column:
        return ~child

    def visit_and(self, left: Column, right: Column) -> Column:
        return left & right

    def visit_or(self, left: Column, right: Column) -> Column:
        return left | right

    def visit_bound_leaf(self, leaf: BoundLeaf) -> Column:
        raise TypeError("spark_condition takes the unbound tree the service parses")

    def visit_leaf(self, leaf: Leaf) -> Column:
        name = resolve_column(leaf.column, list(self.fields), ENGINE)
        dtype = self.fields[name]
        col = F.col(f"`{name.replace('`', '``')}`")
        op = leaf.op
        if OPERATORS[op].element_op is not None:
            return _array_leaf(leaf, name, col, dtype)
        if op == "is_null":
            return col.isNull()
        if op == "is_not_null":
            return col.isNotNull()
        kt = _key_type(name, dtype, op)
        if op in _COMPARE:
            return _COMPARE[op](col, _literal(name, kt, dtype, leaf.value))
        if op in ("in", "not_in"):
            # Spark's IN: TRUE on a match, NULL for a null value or, without a match, a NULL in the list (SQL)
            hit = col.isin([_literal(name, kt, dtype, v) for v in leaf.values or ()])
            return hit if op == "in" else ~hit
        if op in ("between", "not_between"):
            inside = col.between(_literal(name, kt, dtype, leaf.low), _literal(name, kt, dtype, leaf.high))
            return inside if op == "between" else ~inside
        return _string_leaf(op, name, col, kt, leaf)


def _key_type(column: str, dtype: T.DataType, op: str) -> KeyType:
    kt = _KEY_TYPES.get(type(dtype))
    if isinstance(dtype, T.DecimalType):
        return KeyType("decimal", dtype.precision, dtype.scale)
    if kt is None:
        raise UntranslatablePredicateError(f"{op} on column {column!r}", ENGINE,
                                           f"its type {dtype.simpleString()} has no key semantics in bgix")
    return kt


_KEY_TYPES: dict[type[T.DataType], KeyType] = {
    T.StringType: KeyType("string"), T.VarcharType: KeyType("string"), T.CharType: KeyType("string"),
    T.BooleanType: KeyType("boolean"), T.ByteType: KeyType("tinyint"), T.ShortType: KeyType("smallint"),
    T.IntegerType: KeyType("int"), T.LongType: KeyType("bigint"), T.FloatType: KeyType("float"),
    T.DoubleType: KeyType("double"), T.DateType: KeyType("date"),
    T.TimestampType: KeyType("timestamp_ltz", 6), T.TimestampNTZType: KeyType("timestamp", 6),
}


def _literal(column: str, kt: KeyType, dtype: T.DataType, value: object) -> Column:
    """The literal as a Column of the column's type (NULL stays a typed NULL); see the module docstring."""
    literal, typed = column_literal(column, kt, value, ENGINE)
    if literal is None:
        return F.lit(None).cast(dtype)
    if not typed:   # an exact number outside the column's type: Spark widens both sides to compare
        assert isinstance(literal, decimal.Decimal)
        return F.lit(literal)
    if isinstance(dtype, T.TimestampNTZType):
        assert isinstance(literal, dt.datetime)
        return F.expr(f"TIMESTAMP_NTZ '{literal.isoformat(sep=' ')}'")   # no session time zone involved
    if isinstance(dtype, T.TimestampType):
        assert isinstance(literal, dt.datetime)   # coerce_literal gives it in UTC
        return F.expr(f"TIMESTAMP '{literal.isoformat(sep=' ')}'")
    return F.lit(literal).cast(dtype)


def _string_leaf(op: str, name: str, col: Column, kt: KeyType, leaf: Leaf) -> Column:
    """starts_with, ends_with, contains and LIKE: on string columns only (the service declines them elsewhere)."""
    if not kt.is_string:
        raise UntranslatablePredicateError(f"{op} on column {name!r}", ENGINE,
                                           f"it takes a string column; {name!r} is {kt.spelling}")
    operand = leaf.pattern if op == "like" else leaf.value
    if operand is None:
        return F.lit(None).cast(T.BooleanType())
    if not isinstance(operand, str):
        raise UntranslatablePredicateError(f"{op}({name}, {operand!r})", ENGINE, "the operand is not a string")
    if op == "starts_with":
        return col.startswith(F.lit(operand))
    if op == "ends_with":
        return col.endswith(F.lit(operand))
    if op == "contains":
        return col.contains(F.lit(operand))
    check_like(name, operand, ENGINE)
    return col.like(spark_like_pattern(operand))


def _array_leaf(leaf: Leaf, name: str, col: Column, dtype: T.DataType) -> Column:
    if not isinstance(dtype, T.ArrayType):
        raise UntranslatablePredicateError(f"{leaf.op} on column {name!r}", ENGINE,
                                           f"it takes an ARRAY column; {name!r} is {dtype.simpleString()}")
    element = dtype.elementType
    kt = _key_type(name, element, leaf.op)
    if leaf.op == "array_contains":
        return F.array_contains(col, _literal(name, kt, element, leaf.value))
    items = [_literal(name, kt, element, v) for v in leaf.values or ()]
    if leaf.op == "arrays_overlap":
        return F.arrays_overlap(col, F.array(*items).cast(T.ArrayType(element)))
    # array_contains_all: every element contained; an empty list holds for every non-null array
    out = F.when(col.isNotNull(), F.lit(True))
    for item in items:
        out = out & F.array_contains(col, item)
    return out
