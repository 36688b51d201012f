"""What every translation of a bgix predicate into another engine's row filter shares (Spark Columns in
service.spark_predicate, pyarrow arrays in service.arrow_predicate): the tree the service itself parses, columns
resolved as bind resolves them, literals coerced to the column's type as bind coerces them, LIKE patterns read with
bgix's escape rule, and the one error for what cannot be translated.

Both translations give each row SQL's three-valued answer (NULL where SQL says UNKNOWN, Kleene's NOT/AND/OR) and
keep only TRUE rows, so they decide the rows an index left open (declined leaves, uncovered rows) with the meaning
the service gives the rows it indexed. Where an engine cannot evaluate a part with that meaning it raises
UntranslatablePredicateError naming the part: a filter never silently keeps a superset.
"""
from __future__ import annotations

import decimal
from collections.abc import Mapping, Sequence
from typing import Any

from index_format.errors import BindError, PredicateError
from index_format.literals import coerce_literal
from index_format.literals import like_regex
from index_format.predicate.json import from_json
from index_format.predicate.sql import parse_where
from index_format.predicate.tree import Node
from index_format.types import INTEGER_NAMES, KeyType

__all__ = ["UntranslatablePredicateError", "column_literal", "parse_predicate", "resolve_column",
           "spark_like_pattern"]


class UntranslatablePredicateError(PredicateError):
    """Part of a predicate (named in the message and in `part`) has no evaluation with bgix's meaning in `engine`;
    nothing was filtered."""

    def __init__(self, part: str, engine: str, why: str) -> None:
        self.part = part
        self.engine = engine
        super().__init__(f"cannot evaluate {part} in {engine}: {why}")


def parse_predicate(where: str | None, predicate: Node | Mapping[str, Any] | None) -> Node:
    """The unbound tree of a query's `where` (SQL) or `predicate` (JSON or a tree), read by the service's parsers."""
    if (where is None) == (predicate is None):
        raise ValueError("give exactly one of where or predicate")
    if where is not None:
        return parse_where(where)
    if isinstance(predicate, Node):
        return predicate
    return from_json(dict(predicate or {}))


def resolve_column(name: str, columns: Sequence[str], engine: str) -> str:
    """The column of `columns` that `name` means: the same name, else the one column equal ignoring case (bind's
    rule). Raises UntranslatablePredicateError when there is none or more than one."""
    if name in columns:
        return name
    folded = [c for c in columns if c.lower() == name.lower()]
    if len(folded) == 1:
        return folded[0]
    why = "it matches several columns ignoring case" if folded else f"the rows read have no such column {list(columns)}"
    raise UntranslatablePredicateError(f"column {name!r}", engine, why)


def column_literal(column: str, kt: KeyType, value: object, engine: str) -> tuple[object, bool]:
    """(value, typed) for comparing `column` (of key type `kt`) with the literal `value`, None staying None.

    typed: `value` is the column type's own value (coerce_literal, as bind makes it), so the engine may give the
    literal the column's type. A number no value of an integer or decimal column can equal (2.5 for INT, 1.255 for
    DECIMAL(10,2), 300 for TINYINT) comes back exact and untyped, to be compared numerically: SQL's meaning.
    """
    if value is None:
        return None, True
    try:
        return coerce_literal(kt, value), True
    except BindError as exc:
        number = _exact_number(value)
        if number is not None and (kt.name in INTEGER_NAMES or kt.name == "decimal"):
            return number, False
        raise UntranslatablePredicateError(f"the literal {value!r} for column {column!r} ({kt.spelling})", engine,
                                           str(exc)) from None


def _exact_number(value: object) -> decimal.Decimal | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, decimal.Decimal)):
        number = decimal.Decimal(value)
        return number if number.is_finite() else None
    if isinstance(value, float):
        return decimal.Decimal(value) if value == value and abs(value) != float("inf") else None
    return None


def check_like(column: str, pattern: str, engine: str) -> None:
    """Raises UntranslatablePredicateError for a pattern bind refuses (a lone trailing backslash)."""
    try:
        like_regex(pattern)
    except ValueError as exc:
        raise UntranslatablePredicateError(f"{column} LIKE {pattern!r}", engine, str(exc)) from None


def spark_like_pattern(pattern: str) -> str:
    """A bgix LIKE pattern in Spark's LIKE grammar. Both read `%`, `_` and `\\` escapes the same way, but bgix lets
    `\\` make any character literal while Spark accepts it only before `%`, `_` and `\\`: other escaped characters
    are written plainly. The caller checked the pattern (check_like)."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            nxt = pattern[i + 1]
            out.append("\\" + nxt if nxt in "%_\\" else nxt)
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)
