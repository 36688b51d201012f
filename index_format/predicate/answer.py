"""Answer a bound predicate over every index file of the columns it names (spec §4, §5.3–§5.5, §6).

The public entry: `answer_over_files` = query_plan.plan_query (which index per leaf, which files after
pruning, how each range is read, coverage; nothing read) + execute.execute (the reads and three-valued logic).
Re-exports what callers build and get back (IndexFileRef, ColumnIndex, Answer) and file_may_match.
"""
from __future__ import annotations

from collections.abc import Mapping

from pyroaring import BitMap64

from index_format.predicate.column_index import DEFAULT_FALLBACK_SCAN_MAX_SIZE, ColumnIndex, IndexFileRef
from index_format.predicate.execute import Answer, execute
from index_format.predicate.file_pruning import file_may_match, literal_memo
from index_format.predicate.query_plan import QueryPlan, TableRows, plan_query, uncovered_rows
from index_format.predicate.tree import Node

__all__ = ["DEFAULT_FALLBACK_SCAN_MAX_SIZE", "Answer", "ColumnIndex", "IndexFileRef", "QueryPlan", "TableRows",
           "answer_over_files", "file_may_match", "plan_query", "uncovered_rows"]


def answer_over_files(bound: Node, columns: Mapping[str, ColumnIndex], *, explain: bool = False,
                      with_unknown: bool = True, deleted: BitMap64 | None = None,
                      deadline: float | None = None, count_only: bool = False,
                      table_ranges: TableRows | None = None) -> Answer:
    """Evaluate a bound tree (bind.bind) over the indexed columns: plan it, then run the plan.

    NOT is pushed down first, so ANDs are never under a NOT and dropping an unsupported AND child
    gives a superset (spec §5.3 step 5). Rows outside a column's coverage count as UNKNOWN for it.
    `deleted` (global ids, e.g. deletion vectors) is removed from the result. `deadline` is a
    time.monotonic() value checked before each row range and each file is evaluated. `count_only`: the
    caller needs only len(rows); a lone range, `=` or `IN` leaf whose files all have range sidecars is then
    counted without building its rows (Answer.count; not with `explain`, which reports the full evaluation).
    With `explain`, Answer.explain holds the plan (`plan`, QueryPlan.to_json()) beside what was read;
    `table_ranges` (the table's live rows: inclusive ranges, or a bitmap of sparse ids) fills the plan's
    `coverage.uncovered` and Answer.table_uncovered.

    Raises:
        UnknownColumnError: the tree names a column missing from `columns`.
        QueryTimeoutError: `deadline` passed before the answer was complete.
    """
    with literal_memo():   # one sort of each IN list for pruning (plan) and narrowing (execution)
        plan = plan_query(bound, columns, with_unknown=with_unknown, count_only=count_only, explain=explain,
                          deleted=deleted, table_ranges=table_ranges)
        return execute(plan, explain=explain, deleted=deleted, deadline=deadline)
