"""Bind an unbound tree to column types: resolve columns, coerce literals, apply NULL and LIKE rules.

NULL literals follow spec §5.5, LIKE rewriting spec §6, array operators spec §8. A number an integer or DECIMAL
column cannot hold is compared as SQL compares numbers (`i > 2.5` is `i >= 3`, `si < 40000` on SMALLINT is TRUE
for every non-null row). Imports keys/literals/types/tree only; never the reader.
"""
from __future__ import annotations

from collections.abc import Callable, Collection, Mapping

from index_format import keys, literals
from index_format.errors import BindError, UnknownColumnError
from index_format.literals import Neighbours, like_regex
from index_format.predicate.tree import (
    FALSE, TRUE, UNKNOWN, And, BoundLeaf, Leaf, Node, Not, Or,
)
from index_format.predicate.operators import ARRAY_OPERATORS, OPERATORS
from index_format.types import KeyType

# The operators a scalar column takes (named in the error for an array operator on one).
_SCALAR_OPERATORS = tuple(name for name, op in OPERATORS.items() if op.element_op is None)

_Make = Callable[..., BoundLeaf]


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


def bind_leaf(leaf: Leaf, column: str, kt: KeyType, *, array: bool = False) -> Node:
    """Bind one leaf to `column` of type `kt` (see bind); `array`: the column is an ARRAY of `kt`.

    Mostly one BoundLeaf; a few leaves become a small tree of them (a BETWEEN with a NULL bound, a comparison
    with a number the column cannot hold: see _decided)."""
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
        return _bind_range(leaf, column, kt, make)
    if spec.shape == "pattern":
        if leaf.pattern is None:
            return make("always_unknown")   # `x LIKE NULL` is NULL for every row (spec §5.5)
        if not isinstance(leaf.pattern, str):
            raise BindError(f"column {column!r}: LIKE pattern must be a string, got {literals.show(leaf.pattern)}")
        return _bind_like(leaf.pattern, column, kt, make)
    if leaf.value is None:
        # `x = NULL`, `x < NULL`, `starts_with(x, NULL)`: NULL for every row, also under NOT (spec §5.5)
        return make("always_unknown")
    if spec.strings_only and not isinstance(leaf.value, str):
        raise BindError(f"column {column!r}: {op} needs a string literal, got {literals.show(leaf.value)}")
    value = _coerce_or_near(column, kt, leaf.value)
    if isinstance(value, Neighbours):
        return _compare_near(op, value, make)
    return make(value=value)


def _decided(make: _Make, truth: bool) -> Node:
    """TRUE (`truth`) or FALSE for every non-null row, UNKNOWN for null rows: a comparison whose literal
    decides every value (`si < 40000` on SMALLINT, `i = 2.5` on INT) is still NULL on a NULL row, so that
    `NOT` keeps null rows out. Said with IS [NOT] NULL and the UNKNOWN constant (no evaluator of its own):
    `x IS NOT NULL OR UNKNOWN`, `x IS NULL AND UNKNOWN`."""
    unknown = make("always_unknown")
    return Or(make("is_not_null"), unknown) if truth else And(make("is_null"), unknown)


def _compare_near(op: str, near: Neighbours, make: _Make) -> Node:
    """A comparison with a number the column's type cannot hold, as one with the type's values next to it:
    `x < 2.5` is `x <= 2`, `x > 2.5` is `x >= 3`, `x = 2.5` is FALSE (NULL on null rows); past the type's
    range every value lies on one side."""
    if op == "eq":
        return _decided(make, False)
    if op == "ne":
        return _decided(make, True)
    if op in ("lt", "le"):
        if near.above is None:   # every value of the type is below the literal
            return _decided(make, True)
        return _decided(make, False) if near.below is None else make("le", value=near.below)
    if near.below is None:       # gt, ge: every value of the type is above the literal
        return _decided(make, True)
    return _decided(make, False) if near.above is None else make("ge", value=near.above)


def _bind_range(leaf: Leaf, column: str, kt: KeyType, make: _Make) -> Node:
    """BETWEEN is `x >= low AND x <= high` (NOT BETWEEN its negation): bound as one leaf when the type holds
    both bounds, else as those two comparisons, each bound by the rules of a comparison (a NULL bound is
    UNKNOWN, yet the other side may still make a row FALSE)."""
    low = None if leaf.low is None else _coerce_or_near(column, kt, leaf.low)
    high = None if leaf.high is None else _coerce_or_near(column, kt, leaf.high)
    if low is not None and high is not None and not isinstance(low, Neighbours) \
            and not isinstance(high, Neighbours):
        return make(low=low, high=high)
    inside = And(bind_leaf(Leaf("ge", leaf.column, leaf.low), column, kt),
                 bind_leaf(Leaf("le", leaf.column, leaf.high), column, kt))
    return inside if leaf.op == "between" else ~inside


def _coerce_or_near(column: str, kt: KeyType, value: object) -> object:
    """The literal coerced to `kt`, or for a number the type cannot hold its Neighbours; other literals the
    type cannot hold (a string for an INT column) stay a BindError."""
    try:
        return _coerce(column, kt, value)
    except BindError:
        near = literals.neighbours(kt, value)
        if near is None:
            raise
        return near


def _coerce(column: str, kt: KeyType, value: object) -> object:
    try:
        return literals.coerce_literal(kt, value)
    except BindError as e:
        raise BindError(f"column {column!r} ({kt.spelling}): {e}") from None
    except (ValueError, TypeError, ArithmeticError) as e:
        # Odd Python inputs (Decimal('sNaN'), huge numbers) must still surface as a BindError.
        raise BindError(f"column {column!r} ({kt.spelling}): literal {literals.show(value)} does not fit: "
                        f"{str(e)[:200]}") from None


def _distinct(column: str, kt: KeyType, raw: tuple[object, ...]) -> tuple[tuple[object, ...], bool, bool]:
    """(the non-null literals coerced to `kt`, de-duplicated by logical value (NaN == NaN); was NULL among
    them; was a number `kt` cannot hold among them (left out: no value of the column equals it))."""
    has_null = dropped = False
    seen: dict[object, object] = {}
    for v in raw:
        if v is None:
            has_null = True
            continue
        c = _coerce_or_near(column, kt, v)
        if isinstance(c, Neighbours):
            dropped = True
        else:
            seen.setdefault(keys.sort_key(kt, c), c)
    return tuple(seen.values()), has_null, dropped


def _bind_array(leaf: Leaf, column: str, kt: KeyType, array: bool, make: _Make) -> BoundLeaf:
    """spec §8: an array operator on an ARRAY column whose elements are `kt`; anything else is a BindError.

    A leaf no row can make TRUE (an empty list, only NULLs, a number no element can equal) is bound as an
    overlap with nothing, not as FALSE: for a null array it is NULL, which a multivalue index cannot tell from
    an empty array, so NOT over it is declined (query_plan) like NOT over any array leaf."""
    op = leaf.op
    if not array:
        raise BindError(f"column {column!r} ({kt.spelling}) is not an ARRAY column: {op} needs one; "
                        f"{column!r} takes {', '.join(_SCALAR_OPERATORS)}")
    if OPERATORS[op].element_op is None:
        raise BindError(f"column {column!r} is an ARRAY<{kt.spelling}> column: it takes only "
                        f"{', '.join(ARRAY_OPERATORS)} (spec §8), not {op} ({OPERATORS[op].sql})")
    never = make("arrays_overlap", values=())
    if op == "array_contains":
        if leaf.value is None:
            return make("always_unknown")  # is NULL an element? NULL for every row, null arrays too (Paimon: empty)
        value = _coerce_or_near(column, kt, leaf.value)
        return never if isinstance(value, Neighbours) else make(value=value)
    values, has_null, dropped = _distinct(column, kt, leaf.values or ())
    if op == "arrays_overlap":
        # NULLs and numbers no element equals match nothing; a NULL leaves rows without a match UNKNOWN
        return make(values=values, null_in_list=has_null)
    # array_contains_all
    if not values and not has_null and not dropped:
        return make(unsupported="array_contains_all with an empty list (spec §8)")   # TRUE for non-null arrays
    if has_null or dropped:
        return never  # an element no array is known to hold: never TRUE (Paimon: empty)
    return make(values=values)


def _bind_list(leaf: Leaf, column: str, kt: KeyType, make: _Make) -> Node:
    values, has_null, dropped = _distinct(column, kt, leaf.values or ())
    if not values:
        if has_null:
            return make("always_unknown")
        if dropped:   # only numbers the column cannot hold: FALSE (NOT IN: TRUE) for every value, NULL for nulls
            return _decided(make, leaf.op == "not_in")
        # An empty list: IN () is FALSE for every row, NOT IN () TRUE.
        return make("always_false" if leaf.op == "in" else "always_true")
    return make(values=values, null_in_list=has_null)


def _bind_like(pattern: str, column: str, kt: KeyType, make: _Make) -> BoundLeaf:
    try:
        pattern.encode("utf-8")
    except UnicodeEncodeError as e:
        raise BindError(f"column {column!r}: LIKE pattern is not valid Unicode (lone surrogate at character "
                        f"{e.start})") from None
    # spec §6: one literal part between optional runs of `%` (escapes resolved) is an equality or a prefix,
    # suffix or substring test, which every index answers as its own operator (a btree seeks `=` and prefixes)
    simple = _simple_like(pattern)
    if simple is not None:
        lead, text, trail = simple
        if not lead and not trail:
            return make("eq", value=text)              # 'abc', '', 'a\_b'
        if not lead or not text:
            return make("starts_with", value=text)     # 'abc%'; '%' (every non-null row)
        return make("contains" if trail else "ends_with", value=text)
    try:
        regex = like_regex(pattern)
    except ValueError as e:
        raise BindError(f"column {column!r}: {e}") from None
    return make(pattern=pattern, regex=regex)


def _simple_like(pattern: str) -> tuple[bool, str, bool] | None:
    """(a leading `%`, the literal text with its escapes resolved, a trailing `%`) of a pattern made of one
    literal part between optional runs of `%`; None for any other (`_`, `%` inside the text, a lone trailing
    escape, which like_regex refuses)."""
    i, n = 0, len(pattern)
    while i < n and pattern[i] == "%":
        i += 1
    lead = i > 0
    text: list[str] = []
    while i < n:
        ch = pattern[i]
        if ch == "\\":
            if i + 1 == n:
                return None
            text.append(pattern[i + 1])
            i += 2
        elif ch == "_":
            return None
        elif ch == "%":
            if pattern[i:].strip("%"):
                return None
            return lead, "".join(text), True
        else:
            text.append(ch)
            i += 1
    return lead, "".join(text), False
