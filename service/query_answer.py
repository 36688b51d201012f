"""What the service answered to one query, as the Python client hands it back: the rows or the count together with
whether they are exact and which rows no index covers, and the rows an exact evaluation must still look at.

An answer is exact when the service says `exact: true` and `coverage.complete: true`. Otherwise it is one of:
a superset of the matching rows among the rows the indexes cover (a declined predicate was dropped under an AND),
nothing at all (the indexes declined the whole predicate: `exact: false` and no rows), and in either case it says
nothing about the rows in `coverage.uncovered_ranges`. The client never turns such an answer into a plain count or
id list: the strict calls raise InexactAnswerError, which holds the answer.

Imports numpy, pyroaring and index_format's errors only (the client's import rules).
"""
from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from pyroaring import BitMap64

from index_format.errors import BgixError

__all__ = ["Coverage", "InexactAnswerError", "QueryAnswer", "ids_of_ranges", "row_runs"]


@dataclass(frozen=True, slots=True)
class Coverage:
    """The rows the answer's indexes cover: `complete`, else the inclusive [first, last] row-id ranges they do not."""

    complete: bool
    uncovered_ranges: tuple[tuple[int, int], ...] = ()

    @property
    def uncovered_rows(self) -> int:
        return sum(last - first + 1 for first, last in self.uncovered_ranges)

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> Coverage:
        data = data or {}
        ranges = tuple((int(r[0]), int(r[1])) for r in data.get("uncovered_ranges") or ())
        return cls(bool(data.get("complete", not ranges)), ranges)


@dataclass(frozen=True)
class QueryAnswer:
    """One query's answer with its exactness: what `Client.query()` returns, whatever the result kind.

    `rows`: every matching row id (result "roaring"); `row_ids` / `ranges` / `files`: this page of them (results
    "row_ids", "ranges", "files", with `next_cursor`); `count`: the whole answer's row count (None for a plan).
    `exact` and `coverage` are the service's own words, never dropped. `explain` (with `"explain": true`) and
    `plan` (with `"explain": "plan"`, or inside `explain`) are as the service sent them.

    Used as a set (`len`, `in`, iteration) an answer must be exact, else InexactAnswerError; `.rows` is always
    readable, exact or not.
    """

    table: str
    result: str
    exact: bool
    coverage: Coverage
    count: int | None = None
    rows: BitMap64 | None = None
    row_ids: list[int] | None = None
    ranges: list[list[int]] | None = None
    files: list[dict[str, Any]] | None = None
    order_values: list[Any] | None = None    # with `order_by`: each row's value of the order column
    next_cursor: str | None = None
    snapshots: dict[str, int] = field(default_factory=dict)
    explain: dict[str, Any] | None = None
    plan: dict[str, Any] | None = None
    where: str | None = None
    predicate: Mapping[str, Any] | None = None

    @property
    def is_exact(self) -> bool:
        """The rows are exactly the rows where the predicate is TRUE: `exact` and `coverage.complete`."""
        return self.exact and self.coverage.complete

    @property
    def declined(self) -> bool:
        """The indexes answered nothing (`exact: false` and no rows): every row is a candidate.

        The wire form does not tell a declined predicate from a superset that happens to be empty; both read as
        declined, which costs a scan, never a row."""
        return not self.exact and self.count == 0

    def reasons(self) -> list[str]:
        """Why the answer is not exact, in words (empty when it is)."""
        out = []
        if not self.exact:
            out.append("the indexes declined the whole predicate (no rows answered)" if self.declined else
                       "the indexes declined part of the predicate, dropped under an AND: the rows are a superset")
        if not self.coverage.complete:
            n, first = self.coverage.uncovered_rows, self.coverage.uncovered_ranges[:3]
            shown = ", ".join(f"[{a}, {b}]" for a, b in first)
            more = ", …" if len(self.coverage.uncovered_ranges) > 3 else ""
            out.append(f"{n:,} rows no index covers ({shown}{more}) were not evaluated" if n else
                       "some rows no index covers were not evaluated")
        return out

    def require_exact(self) -> QueryAnswer:
        """This answer if it is exact. Raises InexactAnswerError otherwise."""
        if not self.is_exact:
            raise InexactAnswerError(self)
        return self

    def candidate_ranges(self, table_ranges: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
        """Inclusive row-id ranges holding every row where the predicate may be TRUE, beyond `rows`: the
        uncovered ranges, or (declined) `table_ranges`, every row of the table. Empty when the answer is exact."""
        if self.is_exact:
            return []
        if self.declined:
            return [(int(a), int(b)) for a, b in table_ranges]
        return list(self.coverage.uncovered_ranges)

    def candidates(self, table_ranges: Sequence[tuple[int, int]]) -> BitMap64:
        """Every row id where the predicate may be TRUE: the answer's rows (exact, or a superset of the covered
        matches) plus `candidate_ranges`. Needs `rows` (result "roaring")."""
        if self.rows is None:
            raise ValueError(f"the candidates of a {self.result!r} answer are not known: ask for result 'roaring'")
        out = BitMap64(self.rows)
        out |= ids_of_ranges(self.candidate_ranges(table_ranges))
        return out

    # ---- used as a set: exact answers only --------------------------------------------------------------
    def _exact_rows(self) -> BitMap64:
        self.require_exact()
        if self.rows is None:
            raise TypeError(f"a {self.result!r} answer holds no row set: ask for result 'roaring'")
        return self.rows

    def __len__(self) -> int:
        return len(self._exact_rows())

    def __iter__(self) -> Iterator[int]:
        return iter(self._exact_rows())

    def __contains__(self, row_id: object) -> bool:
        rows = self._exact_rows()
        return isinstance(row_id, int) and row_id in rows

    def __repr__(self) -> str:
        size = f"count={self.count}" if self.count is not None else "plan"
        return (f"QueryAnswer({self.table!r}, result={self.result!r}, {size}, exact={self.exact}, "
                f"coverage_complete={self.coverage.complete})")


class InexactAnswerError(BgixError):
    """The service's answer is not exact (`exact: false` or `coverage.complete: false`) and the call promised exact
    rows. Client-side only (no HTTP status): `answer` holds what the service said; pass `allow_inexact=True` to
    take it anyway, or read the rows exactly with `spark_filter` / `Client.read_arrow`."""

    def __init__(self, answer: QueryAnswer) -> None:
        self.answer = answer
        what = answer.where if answer.where is not None else "the predicate"
        super().__init__(f"the answer to {what!r} on table {answer.table!r} is not exact: "
                         + "; ".join(answer.reasons()))


def ids_of_ranges(runs: Sequence[Sequence[int]]) -> BitMap64:
    """Inclusive [first, last] runs as one BitMap64 (run containers: compact whatever the runs' lengths)."""
    out = BitMap64()
    for first, last in runs:
        out.add_range(int(first), int(last) + 1)
    return out


def row_runs(ids: BitMap64) -> list[tuple[int, int]]:
    """The inclusive [first, last] runs of consecutive ids of `ids`, in order (vectorized)."""
    if not ids:
        return []
    values = np.frombuffer(ids.to_array(), dtype=np.uint64).astype(np.int64)
    breaks = np.flatnonzero(np.diff(values) != 1)
    starts = np.concatenate((values[:1], values[breaks + 1])).tolist()
    ends = np.concatenate((values[breaks], values[-1:])).tolist()
    return list(zip(starts, ends, strict=True))
