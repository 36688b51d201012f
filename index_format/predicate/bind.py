"""Bind an unbound tree to column types: resolve columns, coerce literals, apply NULL and LIKE rules.

NULL literals follow spec §5.5, LIKE rewriting spec §6. Imports keys/literals/types/tree only; never the reader.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from index_format import keys, literals
from index_format.errors import BindError, UnknownColumnError
from index_format.predicate.tree import (
    FALSE, TRUE, UNKNOWN, And, BoundLeaf, Leaf, Node, Not, Or,
)
from index_format.predicate.operators import OPERATORS
from index_format.types import KeyType


def bind(node: Node, columns: Mapping[str, KeyType]) -> Node:
    """Bind `node` against the indexed columns and their key types.

    Column names match exactly, else case-insensitively when that is unambiguous.
    Leaves the index cannot answer (NULL bounds, string operators on non-string columns) become
    BoundLeaf(unsupported=reason); they are values, not errors (spec §5.5, §6).

    Raises:
        UnknownColumnError: a column that is not in `columns`.
        BindError: a literal that cannot be converted to the column type (names column, type, literal).
    """
    if node is TRUE or node is FALSE or node is UNKNOWN:
        return node
    if isinstance(node, Not):
        return Not(bind(node.child, columns))
    if isinstance(node, And):
        return And(bind(node.left, columns), bind(node.right, columns))
    if isinstance(node, Or):
        return Or(bind(node.left, columns), bind(node.right, columns))
    if isinstance(node, BoundLeaf):
        return node
    if isinstance(node, Leaf):
        column = resolve_column(node.column, columns)
        return bind_leaf(node, column, columns[column])
    raise TypeError(f"not a predicate node: {node!r}")


def resolve_column(name: str, columns: Mapping[str, KeyType]) -> str:
    """The key of `columns` that `name` refers to. Raises UnknownColumnError."""
    if name in columns:
        return name
    folded = [c for c in columns if c.lower() == name.lower()]
    if len(folded) == 1:
        return folded[0]
    raise UnknownColumnError(name, list(columns))


def bind_leaf(leaf: Leaf, column: str, kt: KeyType) -> BoundLeaf:
    """Bind one leaf to `column` of type `kt` (see bind)."""
    op = leaf.op
    spec = OPERATORS[op]

    def make(op_: str = op, **kw: object) -> BoundLeaf:
        return BoundLeaf(op_, column, kt, source=leaf, **kw)  # type: ignore[arg-type]  # fields vary by shape

    def unsupported(reason: str) -> BoundLeaf:
        return make(unsupported=reason)

    if spec.strings_only and not kt.is_string:
        return unsupported(f"{op} needs a string column; {column!r} is {kt.spelling} (spec §6)")
    if spec.shape == "none":
        return make()
    if spec.shape == "values":
        return _bind_list(leaf, column, kt, make)
    if spec.shape == "range":
        if leaf.low is None or leaf.high is None:
            return unsupported(f"{op} with a NULL bound (spec §5.5)")
        return make(low=_coerce(column, kt, leaf.low), high=_coerce(column, kt, leaf.high))
    if spec.shape == "pattern":
        if leaf.pattern is None:
            return unsupported("LIKE NULL (spec §5.5)")
        if not isinstance(leaf.pattern, str):
            raise BindError(f"column {column!r}: LIKE pattern must be a string, got {literals.show(leaf.pattern)}")
        return _bind_like(leaf.pattern, column, kt, make)
    if leaf.value is None:
        if op in ("eq", "ne"):
            return make("always_unknown")  # `x = NULL`, `x <> NULL`: UNKNOWN for every row → empty
        return unsupported(f"{op} with a NULL literal (spec §5.5)")
    if spec.strings_only and not isinstance(leaf.value, str):
        raise BindError(f"column {column!r}: {op} needs a string literal, got {literals.show(leaf.value)}")
    return make(value=_coerce(column, kt, leaf.value))


def _coerce(column: str, kt: KeyType, value: object) -> object:
    try:
        return literals.coerce_literal(kt, value)
    except BindError as e:
        raise BindError(f"column {column!r} ({kt.spelling}): {e}") from None
    except (ValueError, TypeError, ArithmeticError) as e:
        # Odd Python inputs (Decimal('sNaN'), huge numbers) must still surface as a BindError.
        raise BindError(f"column {column!r} ({kt.spelling}): literal {literals.show(value)} does not fit: "
                        f"{str(e)[:200]}") from None


def _bind_list(leaf: Leaf, column: str, kt: KeyType, make: Callable[..., BoundLeaf]) -> BoundLeaf:
    raw = leaf.values or ()
    has_null = any(v is None for v in raw)
    seen: dict[object, object] = {}
    for v in raw:
        if v is not None:
            c = _coerce(column, kt, v)
            seen.setdefault(keys.sort_key(kt, c), c)  # de-duplicate by logical value (NaN == NaN)
    values = tuple(seen.values())
    if not values:
        if has_null:
            return make("always_unknown")
        # An empty list: IN () is FALSE for every row, NOT IN () TRUE.
        return make("always_false" if leaf.op == "in" else "always_true")
    return make(values=values, null_in_list=has_null)


def _bind_like(pattern: str, column: str, kt: KeyType, make: Callable[..., BoundLeaf]) -> BoundLeaf:
    try:
        pattern.encode("utf-8")
    except UnicodeEncodeError as e:
        raise BindError(f"column {column!r}: LIKE pattern is not valid Unicode (lone surrogate at character "
                        f"{e.start})") from None
    # spec §6: simple patterns (no `_`, no `\`) with one non-empty literal part are rewritten.
    if "_" not in pattern and "\\" not in pattern:
        core = pattern.strip("%")
        if core and "%" not in core:
            lead, trail = pattern.startswith("%"), pattern.endswith("%")
            if pattern == core:
                return make("eq", value=core)
            if pattern == core + "%":
                return make("starts_with", value=core)
            if pattern == "%" + core:
                return make("ends_with", value=core)
            if lead and trail and pattern == "%" + core + "%":
                return make("contains", value=core)
    try:
        regex = like_regex(pattern)
    except ValueError as e:
        raise BindError(f"column {column!r}: {e}") from None
    return make(pattern=pattern, regex=regex)


def like_regex(pattern: str) -> str:
    """SQL LIKE → an anchored regex source: `%` any run, `_` one character, `\\` escapes the next one.

    Raises ValueError for a pattern ending in a lone backslash.
    """
    out: list[str] = []
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            if i + 1 == len(pattern):
                raise ValueError(f"LIKE pattern {pattern!r} ends with an escape character")
            out.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        out.append(".*" if ch == "%" else "." if ch == "_" else re.escape(ch))
        i += 1
    return "(?s:" + "".join(out) + r")\Z"
