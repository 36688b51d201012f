"""The one predicate evaluation for file indexes: a predicate tree (index_format.predicate) over the readers
of each column, answered the way Paimon's FileIndexPredicate does when it prunes a data file.

- A leaf goes to every index of its column; their answers are ANDed left to right and the first answer
  that does not remain ends it (Java's FileIndexPredicateTest). A column without an index: REMAIN.
- AND / OR chains are flattened and folded left to right with Java's FileIndexResult algebra (AND stops at
  the first non-remaining answer), so results match Java's, representation included.
- NOT is pushed down to the leaves first (`NOT a = 1` → `a <> 1`); a NOT left over a leaf without a
  complement (LIKE and friends) cannot prune: REMAIN, as Java's readers answer LIKE.
- Literals are coerced to the column type; a NULL literal reaches the reader as None (Java passes it on).
- Top-N (`ORDER BY v DESC LIMIT k`) follows FileIndexPredicate.evaluateTopN.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from index_format.errors import UnknownColumnError
from index_format.file_index.payload_reader import PayloadReader
from index_format.file_index.result import REMAIN, SKIP, FileIndexResult, Rows
from index_format.literals import coerce_literal
from index_format.predicate.tree import FALSE, TRUE, UNKNOWN, And, BoundLeaf, Leaf, Node, Not, Or, flatten
from index_format.predicate.visitors import Visitor, rewrite_not, visit
from index_format.types import KeyType

__all__ = ["TopN", "check_literals", "evaluate", "evaluate_top_n", "readers_by_column"]

# column name → its readers (empty: the column has no index); raises UnknownColumnError for other names
ReadersOf = Callable[[str], Sequence[PayloadReader]]


@dataclass(frozen=True)
class TopN:
    """ORDER BY column [ASC|DESC] [NULLS FIRST|LAST] [, more keys] LIMIT k (`strict`: one sort key)."""

    column: str
    k: int
    descending: bool
    nulls_first: bool
    strict: bool = True


def _coerce(reader: PayloadReader, value: object) -> object:
    return None if value is None else coerce_literal(reader.kt, value)


def _apply(reader: PayloadReader, op: str, leaf: Leaf | BoundLeaf) -> FileIndexResult:
    """One leaf on one index (Java: `predicate.function().visit(reader, fieldRef, literals)`)."""
    if isinstance(leaf, BoundLeaf):  # literals are already canonical for the column type
        def lit(v: object) -> object:
            return v
    else:
        def lit(v: object) -> object:
            return _coerce(reader, v)
    if op in ("eq", "ne", "lt", "le", "gt", "ge"):
        compare: Callable[[object], FileIndexResult] = getattr(reader, op)   # PayloadReader.eq … .ge
        return compare(lit(leaf.value))
    if op in ("in", "not_in"):
        assert leaf.values is not None   # a leaf of a values operator has them (Leaf.__post_init__)
        literals = [lit(v) for v in leaf.values]
        return reader.isin(literals) if op == "in" else reader.not_in(literals)
    if op == "between":
        return reader.between(lit(leaf.low), lit(leaf.high))
    if op == "is_null":
        return reader.is_null()
    if op == "is_not_null":
        return reader.is_not_null()
    # NOT BETWEEN, LIKE, starts_with, ends_with, contains: no Paimon file index answers them
    return REMAIN


class _Evaluator(Visitor[FileIndexResult]):
    def __init__(self, readers_of: ReadersOf) -> None:
        self.readers_of = readers_of

    def visit_true(self) -> FileIndexResult:
        return REMAIN

    def visit_false(self) -> FileIndexResult:
        return SKIP

    def visit_unknown(self) -> FileIndexResult:
        return SKIP  # a WHERE clause that is UNKNOWN for every row keeps none

    def visit_not(self, child: FileIndexResult) -> FileIndexResult:
        return REMAIN  # only left over leaves nothing can negate; an index cannot answer the complement

    def visit_leaf(self, leaf: Leaf) -> FileIndexResult:
        return self._leaf(leaf)

    def visit_bound_leaf(self, leaf: BoundLeaf) -> FileIndexResult:
        if leaf.unsupported is not None or leaf.op == "always_unknown" or leaf.op == "range_set":
            return REMAIN
        if leaf.op == "always_true":
            return REMAIN
        if leaf.op == "always_false":
            return SKIP
        return self._leaf(leaf)

    def _leaf(self, leaf: Leaf | BoundLeaf) -> FileIndexResult:
        out = REMAIN
        for reader in self.readers_of(leaf.column):
            out = out.and_(_apply(reader, leaf.op, leaf))
            if not out.remain():
                break
        return out

    def run(self, node: Node) -> FileIndexResult:
        if isinstance(node, (And, Or)):
            kind = type(node)
            out: FileIndexResult | None = None
            for child in flatten(node, kind):
                r = self.run(child)
                if out is None:
                    out = r
                else:
                    out = out.and_(r) if kind is And else out.or_(r)
                if kind is And and not out.remain():
                    break
            return REMAIN if out is None else out
        if isinstance(node, Not):
            return REMAIN if isinstance(node.child, (Leaf, BoundLeaf)) else self.visit_not(self.run(node.child))
        if node is TRUE or node is FALSE or node is UNKNOWN or isinstance(node, (Leaf, BoundLeaf)):
            return visit(node, self)
        raise TypeError(f"not a predicate node: {node!r}")


def evaluate(node: Node, readers_of: ReadersOf) -> FileIndexResult:
    """Paimon's pruning answer of the predicate `node` (NOT pushed down first) over the file's indexes."""
    return _Evaluator(readers_of).run(rewrite_not(node))


def evaluate_top_n(top: TopN, readers_of: ReadersOf, result: FileIndexResult = REMAIN) -> FileIndexResult:
    """FileIndexPredicate.evaluateTopN: narrow `result` (the predicate's answer) to the top k rows."""
    if not result.remain():
        return result
    if isinstance(result, Rows) and len(result.bitmap) <= top.k:
        return result
    for reader in readers_of(top.column):
        r = reader.top_n(top.k, descending=top.descending, nulls_first=top.nulls_first, strict=top.strict,
                         found=result)
        if r is not REMAIN:
            return r
    return result


def readers_by_column(readers: Mapping[str, Sequence[PayloadReader]], known: Sequence[str]) -> ReadersOf:
    """A ReadersOf over a fixed mapping; names outside `known` are an UnknownColumnError."""
    def readers_of(column: str) -> Sequence[PayloadReader]:
        if column not in known:
            raise UnknownColumnError(column, list(known))
        return readers.get(column, ())
    return readers_of


def check_literals(node: Node, types: Mapping[str, KeyType]) -> None:
    """Coerce every literal once up front so that a bad literal is a BindError naming it, whatever the
    indexes are (Java would fail the same way when it builds the predicate)."""
    class _Check(Visitor[None]):
        def visit_true(self) -> None:
            return None

        visit_false = visit_unknown = visit_true

        def visit_not(self, child: None) -> None:
            return None

        def visit_and(self, left: None, right: None) -> None:
            return None

        visit_or = visit_and

        def visit_leaf(self, leaf: Leaf) -> None:
            kt = types.get(leaf.column)
            if kt is None:
                raise UnknownColumnError(leaf.column, list(types))
            for v in (leaf.value, leaf.low, leaf.high, *(leaf.values or ())):
                if v is not None:
                    coerce_literal(kt, v)

        def visit_bound_leaf(self, leaf: BoundLeaf) -> None:
            return None

    visit(node, _Check())
