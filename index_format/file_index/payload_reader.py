"""The payload reader base: one method per predicate, each answering REMAIN unless a format overrides it.

Mirrors Java's FileIndexReader defaults, quirks included: IN is the OR of `=` over the literals and NOT IN
the OR of `!=` (so a format that answers only `=`, like the bloom filter, answers IN and leaves NOT IN to
REMAIN). Literals are canonical values of the column's KeyType (literals.coerce_literal), or None for a
NULL literal, which Java passes to the reader as is.
"""
from __future__ import annotations

from collections.abc import Sequence

from index_format.file_index.result import REMAIN, FileIndexResult
from index_format.types import KeyType


class PayloadReader:
    """One index payload of one column. Subclasses set `kt`, `index_type` and override what they answer."""

    index_type = ""
    kt: KeyType

    def eq(self, value: object) -> FileIndexResult:
        return REMAIN

    def ne(self, value: object) -> FileIndexResult:
        return REMAIN

    def lt(self, value: object) -> FileIndexResult:
        return REMAIN

    def le(self, value: object) -> FileIndexResult:
        return REMAIN

    def gt(self, value: object) -> FileIndexResult:
        return REMAIN

    def ge(self, value: object) -> FileIndexResult:
        return REMAIN

    def between(self, low: object, high: object) -> FileIndexResult:
        return REMAIN

    def is_null(self) -> FileIndexResult:
        return REMAIN

    def is_not_null(self) -> FileIndexResult:
        return REMAIN

    def isin(self, values: Sequence[object]) -> FileIndexResult:
        out: FileIndexResult | None = None
        for v in values:
            r = self.eq(v)
            out = r if out is None else out.or_(r)
        return REMAIN if out is None else out

    def not_in(self, values: Sequence[object]) -> FileIndexResult:
        out: FileIndexResult | None = None
        for v in values:
            r = self.ne(v)
            out = r if out is None else out.or_(r)
        return REMAIN if out is None else out

    def top_n(self, k: int, *, descending: bool, nulls_first: bool, strict: bool,
              found: FileIndexResult = REMAIN) -> FileIndexResult:
        """Java's visitTopN: `found` is the result so far (a Rows narrows the candidates)."""
        return REMAIN

    def describe(self) -> dict[str, object]:
        """What `bgix file inspect` prints about this payload (JSON-ready)."""
        return {"index_type": self.index_type, "type": self.kt.spelling.upper()}


class EmptyReader(PayloadReader):
    """A container entry with start = -1: the writer produced nothing, the index cannot prune."""

    def __init__(self, index_type: str, kt: KeyType) -> None:
        self.index_type = index_type
        self.kt = kt

    def describe(self) -> dict[str, object]:
        return {**super().describe(), "empty": True}
