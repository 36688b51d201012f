"""The one operator table: JSON name, SQL spelling, operand shape, null rule, budget (spec §4–§6, §8).

The parser, the JSON codec, bind, leaf_rows, answer and docs/predicates.md all read this table.
Imports nothing from the reader or writer.
"""
from __future__ import annotations

from dataclasses import dataclass

# Operand shapes: which fields a leaf of this operator carries (and its JSON keys).
NONE = "none"        # column only                       (is_null)
VALUE = "value"      # column + one literal "value"      (eq, starts_with)
VALUES = "values"    # column + literal list "values"    (in)
RANGE = "range"      # column + "low" and "high"         (between)
PATTERN = "pattern"  # column + LIKE "pattern"           (like)
INTERVALS = "intervals"  # column + "intervals"           (range_set: merged comparisons, bound trees only)

FIELDS: dict[str, tuple[str, ...]] = {
    NONE: (),
    VALUE: ("value",),
    VALUES: ("values",),
    RANGE: ("low", "high"),
    PATTERN: ("pattern",),
    INTERVALS: ("intervals",),
}


@dataclass(frozen=True, slots=True)
class Operator:
    """One predicate operator and everything the pipeline needs to know about it."""

    name: str              # JSON op name, also the leaf's `op`
    sql: str               # SQL spelling (documentation and error messages)
    shape: str             # one of NONE/VALUE/VALUES/RANGE/PATTERN
    negation: str | None   # operator with the same 3VL result as NOT(this), if any
    complement: bool       # answered per range as "range − nulls − positive" (spec §5.4)
    budgeted: bool         # a fallback scan limited by fallback_scan_max_size (spec §6)
    strings_only: bool     # non-string column → UNSUPPORTED (spec §6)
    null_rule: str         # what a NULL literal does (spec §5.5)
    path: str              # how one file answers it (spec §6)
    nulls_unknown: bool = True  # null rows are UNKNOWN (every comparison); IS [NOT] NULL decides them
    # Array operators (spec §8): the scalar operator each array element is looked up with ("eq", "in"); the
    # leaf's column is an ARRAY column and its key type that of the elements. None for every scalar operator.
    element_op: str | None = None

    @property
    def fields(self) -> tuple[str, ...]:
        return FIELDS[self.shape]

    @property
    def positive(self) -> str:
        """The operator whose matches a complement subtracts (`ne` → `eq`, spec §5.4); itself otherwise."""
        return self.negation if self.complement and self.negation is not None else self.name


_OPS = (
    Operator("eq", "=", VALUE, "ne", False, False, False,
             "`x = NULL` → empty (UNKNOWN for every row)", "dictionary lookup"),
    Operator("ne", "<> / !=", VALUE, "eq", True, False, False,
             "`x <> NULL` → empty (UNKNOWN for every row); null rows never match",
             "dictionary lookup + complement"),
    Operator("lt", "<", VALUE, "ge", False, True, False,
             "NULL literal → empty (UNKNOWN for every row)", "logical scan of every key"),
    Operator("le", "<=", VALUE, "gt", False, True, False,
             "NULL literal → empty (UNKNOWN for every row)", "logical scan of every key"),
    Operator("gt", ">", VALUE, "le", False, True, False,
             "NULL literal → empty (UNKNOWN for every row)", "logical scan of every key"),
    Operator("ge", ">=", VALUE, "lt", False, True, False,
             "NULL literal → empty (UNKNOWN for every row)", "logical scan of every key"),
    Operator("in", "IN (…)", VALUES, "not_in", False, False, False,
             "NULL literals ignored for matches (other rows UNKNOWN); `IN (NULL)` → empty",
             "one dictionary lookup per distinct literal"),
    Operator("not_in", "NOT IN (…)", VALUES, "in", True, False, False,
             "any NULL in the list → empty", "dictionary lookups + complement"),
    Operator("between", "BETWEEN … AND …", RANGE, "not_between", False, True, False,
             "a NULL bound makes its side UNKNOWN (`x >= NULL AND x <= high`); low > high → empty",
             "logical scan of every key"),
    Operator("not_between", "NOT BETWEEN … AND …", RANGE, "between", False, True, False,
             "a NULL bound makes its side UNKNOWN (`x < NULL OR x > high`); null rows excluded",
             "logical scan of every key"),
    Operator("is_null", "IS NULL", NONE, "is_not_null", False, False, False,
             "—", "null bitmap", nulls_unknown=False),
    Operator("is_not_null", "IS NOT NULL", NONE, "is_null", True, False, False,
             "—", "range minus null bitmap", nulls_unknown=False),
    Operator("starts_with", "starts_with(x, 'p') / LIKE 'p%'", VALUE, None, False, False, True,
             "NULL literal → empty (UNKNOWN for every row); '' → all non-null rows", "block-index prefix search"),
    Operator("ends_with", "ends_with(x, 's') / LIKE '%s'", VALUE, None, False, True, True,
             "NULL literal → empty (UNKNOWN for every row); '' → all non-null rows", "byte scan of every key"),
    Operator("contains", "contains(x, 's') / LIKE '%s%'", VALUE, None, False, True, True,
             "NULL literal → empty (UNKNOWN for every row); '' → all non-null rows", "byte scan of every key"),
    Operator("like", "LIKE 'pattern'", PATTERN, None, False, True, True,
             "NULL pattern → empty (UNKNOWN for every row); simple patterns rewritten (see below)",
             "SQL LIKE matcher over every key"),
    # spec §8: ARRAY columns (multivalue index); every other operator on such a column is a bind error.
    Operator("array_contains", "array_contains(x, v) / array_has(x, v)", VALUE, None, False, False, False,
             "`array_contains(x, NULL)` → empty (UNKNOWN for every row)",
             "dictionary lookup of the element", element_op="eq"),
    Operator("arrays_overlap", "arrays_overlap(x, array(…)) / array_has_any(x, ARRAY[…])", VALUES, None,
             False, False, False,
             "NULL elements ignored for matches (other rows UNKNOWN); `array()` → empty (NOT declined: NULL for "
             "a null array)",
             "one dictionary lookup per distinct element", element_op="in"),
    Operator("array_contains_all", "array_contains_all(x, array(…)) / array_has_all(x, ARRAY[…])", VALUES,
             None, False, False, False,
             "any NULL element → empty (NOT declined); `array()` → unsupported",
             "intersection of one dictionary lookup per distinct element", element_op="in"),
)

OPERATORS: dict[str, Operator] = {op.name: op for op in _OPS}

# Operators that only appear in bound trees, never on the wire: comparisons, IN lists and their complements
# on one column merged into one set of key intervals (predicate/merge.py). Budgeted like a range: without a
# range sidecar the keys inside the intervals are read.
INTERNAL_OPERATORS: dict[str, Operator] = {
    "range_set": Operator("range_set", "merged comparisons on one column", INTERVALS, None, False, True, False,
                          "—", "range sidecar (range-bitmap), else the keys inside each interval"),
}


# The operators of ARRAY columns (spec §8), in table order.
ARRAY_OPERATORS: tuple[str, ...] = tuple(op.name for op in _OPS if op.element_op is not None)


def spec_of(name: str) -> Operator:
    """The operator called `name`, internal ones included. Raises KeyError if unknown."""
    op = OPERATORS.get(name)
    return op if op is not None else INTERNAL_OPERATORS[name]


# Comparison operators with the literal on the left are flipped: `5 < x` ≡ `x > 5`.
FLIPPED: dict[str, str] = {"eq": "eq", "ne": "ne", "lt": "gt", "le": "ge", "gt": "lt", "ge": "le"}


def operator_table_markdown() -> str:
    """The operator table of docs/predicates.md, generated from OPERATORS (a test keeps them in sync)."""
    lines = [
        "| JSON op | SQL | operands | path (spec §6) | budgeted | strings only | NULL literal (spec §5.5) |",
        "|---|---|---|---|---|---|---|",
    ]
    for op in _OPS:
        operands = ", ".join(("column" if op.element_op is None else "ARRAY column",) + op.fields)
        sql = " / ".join(f"`{part}`" for part in op.sql.split(" / "))
        lines.append(
            f"| `{op.name}` | {sql} | {operands} | {op.path} | {'yes' if op.budgeted else 'no'} "
            f"| {'yes' if op.strings_only else 'no'} | {op.null_rule} |"
        )
    return "\n".join(lines)
