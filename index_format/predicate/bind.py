"""Bind an unbound tree to column types: resolve columns, coerce literals, apply NULL and LIKE rules.

NULL literals follow spec §5.5, LIKE rewriting spec §6, array operators spec §8. Imports keys/literals/types/tree
only; never the reader.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping

from index_format import keys, literals
from index_format.errors import BindError, UnknownColumnError
from index_format.predicate.tree import (
    FALSE, TRUE, UNKNOWN, And, BoundLeaf, Leaf, Node, Not, Or,
)
from index_format.predicate.operators import ARRAY_OPERATORS, OPERATORS
from index_format.types import KeyType

# The operators a scalar column takes (named in the error for an array operator on one).
_SCALAR_OPERATORS = tuple(name for name, op in OPERATORS.items() if op.element_op is None)


def bind(node: Node, columns: Mapping[str, KeyType], *, arrays: Collection[str] = ()) -> Node:
    """Bind `node` against the indexed columns and their key types.

    Column names match exactly, else case-insensitively when that is unambiguous. `arrays` names the
    columns (keys of `columns`) that are ARRAY columns (multivalue index, spec §8): their KeyType in `columns`
    is the ELEMENT type, and only the array operators (operators.ARRAY_OPERATORS) apply to them.
    Leaves the index cannot answer (NULL bounds, string operators on non-string columns) become
    BoundLeaf(unsupported=reason); they are values, not errors (spec §5.5, §6).

    Raises:
        UnknownColumnError: a column that is not in `columns`.
        BindError: a literal that cannot be converted to the column type (names column, type, literal); an
            array operator on a non-array column or a scalar operator on an array column (names the
            operators the column takes).
    """
    return _bind(node, columns, frozenset(arrays))


def _bind(node: Node, columns: Mapping[str, KeyType], arrays: frozenset[str]) -> Node:
    if node is TRUE or node is FALSE or node is UNKNOWN:
        return node
    if isinstance(node, Not):
        return Not(_bind(node.child, columns, arrays))
    if isinstance(node, And):
        return And(_bind(node.left, columns, arrays), _bind(node.right, columns, arrays))
    if isinstance(node, Or):
        return Or(_bind(node.left, columns, arrays), _bind(node.right, columns, arrays))
    if isinstance(node, BoundLeaf):
        return node
    if isinstance(node, Leaf):
        column = resolve_column(node.column, columns)
        return bind_leaf(node, column, columns[column], array=column in arrays)
    raise TypeError(f"not a predicate node: {node!r}")


def resolve_column(name: str, columns: Mapping[str, KeyType]) -> str:
    """The key of `columns` that `name` refers to. Raises UnknownColumnError."""
    if name in columns:
        return name
    folded = [c for c in columns if c.lower() == name.lower()]
    if len(folded) == 1:
        return folded[0]
    raise UnknownColumnError(name, list(columns))


def bind_leaf(leaf: Leaf, column: str, kt: KeyType, *, array: bool = False) -> BoundLeaf:
    """Bind one leaf to `column` of type `kt` (see bind); `array`: the column is an ARRAY of `kt`."""
    op = leaf.op
    spec = OPERATORS[op]

    def make(op_: str = op, **kw: object) -> BoundLeaf:
        return BoundLeaf(op_, column, kt, source=leaf, **kw)  # type: ignore[arg-type]  # fields vary by shape

    def unsupported(reason: str) -> BoundLeaf:
        return make(unsupported=reason)

    if array or spec.element_op is not None:
        return _bind_array(leaf, column, kt, array, make)
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


def _distinct(column: str, kt: KeyType, raw: tuple[object, ...]) -> tuple[tuple[object, ...], bool]:
    """(the non-null literals coerced to `kt`, de-duplicated by logical value (NaN == NaN); was NULL among them)."""
    has_null = False
    seen: dict[object, object] = {}
    for v in raw:
        if v is None:
            has_null = True
        else:
            c = _coerce(column, kt, v)
            seen.setdefault(keys.sort_key(kt, c), c)
    return tuple(seen.values()), has_null


def _bind_array(leaf: Leaf, column: str, kt: KeyType, array: bool, make: Callable[..., BoundLeaf]) -> BoundLeaf:
    """spec §8: an array operator on an ARRAY column whose elements are `kt`; anything else is a BindError."""
    op = leaf.op
    if not array:
        raise BindError(f"column {column!r} ({kt.spelling}) is not an ARRAY column: {op} needs one; "
                        f"{column!r} takes {', '.join(_SCALAR_OPERATORS)}")
    if OPERATORS[op].element_op is None:
        raise BindError(f"column {column!r} is an ARRAY<{kt.spelling}> column: it takes only "
                        f"{', '.join(ARRAY_OPERATORS)} (spec §8), not {op} ({OPERATORS[op].sql})")
    if op == "array_contains":
        if leaf.value is None:
            return make("always_unknown")  # is NULL an element? UNKNOWN for every row (Paimon: empty)
        return make(value=_coerce(column, kt, leaf.value))
    values, has_null = _distinct(column, kt, leaf.values or ())
    if op == "arrays_overlap":
        if not values:
            # only NULLs: no row can be TRUE (Paimon: empty); an empty list overlaps nothing
            return make("always_unknown" if has_null else "always_false")
        return make(values=values, null_in_list=has_null)
    # array_contains_all
    if not values and not has_null:
        return make(unsupported="array_contains_all with an empty list (spec §8)")
    if has_null:
        return make("always_unknown")  # a NULL element is never known to be contained (Paimon: empty)
    return make(values=values)


def _bind_list(leaf: Leaf, column: str, kt: KeyType, make: Callable[..., BoundLeaf]) -> BoundLeaf:
    values, has_null = _distinct(column, kt, leaf.values or ())
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
