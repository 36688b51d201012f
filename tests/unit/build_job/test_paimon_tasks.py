"""Paimon build tasks cut for a parallel engine: cut_tasks (build_plan) and balance_tasks (service.tables.paimon.paimon_source).

The tables are pypaimon's own; the plans are plan_build's. The properties are the documented ones: every row id
of every column in exactly one task, cuts only between groups of files whose row ranges overlap (a data file
and its data-evolution patches stay together), tasks within the size bound unless one file group is bigger,
and ranges never joined beyond records-per-range.
"""
from __future__ import annotations

import random
from collections import Counter
from typing import Any

import pyarrow as pa
import pytest

from service.tables.paimon import paimon_source
from service.tables.paimon.paimon_source import balance_tasks
from service.tables.paimon import PaimonTable, open_paimon_table
from service.tables.paimon.build_plan import PaimonBuildPlan, PaimonBuildTask, cut_tasks, plan_build
from tests.unit.tables.paimon.paimon_tables import DAYS, append, create_table, make_rows, update_rows

COLUMNS = ["status", "flag"]
SIZES = (100, 150, 200, 250, 300, 350)  # rows per commit, one file each: row ids 0…1349 in one split
TOTAL = sum(SIZES)
PATCHED = [5, 150, 420]                 # `flag` rewritten (data evolution) in the first three files


@pytest.fixture(scope="module")
def one_split(tmp_path_factory: pytest.TempPathFactory) -> PaimonTable:
    """Six commits into one partition: one contiguous split, six file groups (three with a patch file)."""
    wh = tmp_path_factory.mktemp("tasks") / "wh"
    location = create_table(wh, "events", commits=0)
    rng = random.Random(3)
    for n in SIZES:
        rows = make_rows(rng, n)
        append(wh, "events", rows.set_column(rows.schema.get_field_index("dt"), "dt", pa.array([DAYS[0]] * n)))
    update_rows(location, "flag", PATCHED, [True, False, True])
    return open_paimon_table(str(location))


@pytest.fixture(scope="module")
def partitioned(tmp_path_factory: pytest.TempPathFactory) -> PaimonTable:
    """Three commits over three partitions: several splits, several tasks."""
    location = create_table(tmp_path_factory.mktemp("tasks_p") / "wh", "events", commits=3, rows=600)
    return open_paimon_table(str(location))


def _file_range(f: Any) -> tuple[int, int]:
    r = f.row_id_range()
    return int(r.from_), int(r.to)


def _span(task: PaimonBuildTask) -> tuple[int, int]:
    """The task's row id span: its files' row ranges."""
    rs = [_file_range(f) for f in task.split.files]
    return min(s for s, _ in rs), max(e for _, e in rs)


def _groups(task: PaimonBuildTask) -> list[tuple[int, int]]:
    """The row spans of the task's groups of files whose row ranges overlap, in order."""
    out: list[tuple[int, int]] = []
    for s, e in sorted(_file_range(f) for f in task.split.files):
        if out and s <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], e))
        else:
            out.append((s, e))
    return out


def _ids(tasks: list[PaimonBuildTask], column: str) -> list[int]:
    return sorted(i for t in tasks for s, e in t.ranges.get(column, ()) for i in range(s, e + 1))


def _size(span: tuple[int, int]) -> int:
    return span[1] - span[0] + 1


def assert_cut(plan: PaimonBuildPlan, cut: PaimonBuildPlan, limit: int, records_per_range: int) -> None:
    """cut_tasks' promises for `cut` = cut_tasks(plan, limit)."""
    assert (cut.table, cut.columns, cut.field_ids, cut.key_types) == (
        plan.table, plan.columns, plan.field_ids, plan.key_types)
    for column in plan.columns:  # every row id once, no more, no less
        ids = _ids(cut.tasks, column)
        assert ids == _ids(plan.tasks, column) and len(ids) == len(set(ids)), column
    # every file of the plan in exactly one task (all of these plans' pieces have work)
    assert Counter(f.file_name for t in cut.tasks for f in t.split.files) == \
        Counter(f.file_name for t in plan.tasks for f in t.split.files)
    pieces: dict[int, list[PaimonBuildTask]] = {}
    for task in cut.tasks:
        origin = next(i for i, t in enumerate(plan.tasks)
                      if {f.file_name for f in task.split.files} <= {f.file_name for f in t.split.files})
        pieces.setdefault(origin, []).append(task)
        orig = plan.tasks[origin]
        assert (task.partition, task.partition_values) == (orig.partition, orig.partition_values)
        span = _span(task)
        assert _size(span) <= limit or len(_groups(task)) == 1 or task is orig, (span, limit)
        assert task.ranges and all(rs for rs in task.ranges.values())
        for rs in task.ranges.values():
            assert all(span[0] <= s <= e <= span[1] for s, e in rs), (span, rs)
            assert all(e - s + 1 <= records_per_range for s, e in rs), rs  # never joined into a bigger range
    for origin, parts in pieces.items():
        orig = plan.tasks[origin]
        if _size(_span(orig)) <= limit:
            assert parts == [orig] and parts[0] is orig  # small enough: left as it was
            continue
        # consecutive pieces tiling the original's span: disjoint spans, so no file group is split by a cut
        spans = [_span(t) for t in parts]
        assert spans[0][0] == _span(orig)[0] and spans[-1][1] == _span(orig)[1]
        assert all(a[1] + 1 == b[0] for a, b in zip(spans, spans[1:])), spans


@pytest.mark.parametrize("records_per_range", [170, 10_000])
@pytest.mark.parametrize("limit", [1, 120, 300, 450, 700, TOTAL - 1, TOTAL, 100_000])
def test_cut_one_split(one_split: PaimonTable, limit: int, records_per_range: int) -> None:
    plan = plan_build(one_split, COLUMNS, records_per_range=records_per_range)
    assert len(plan.tasks) == 1 and _span(plan.tasks[0]) == (0, TOTAL - 1)
    cut = cut_tasks(plan, limit)
    assert_cut(plan, cut, limit, records_per_range)
    if limit < min(SIZES):  # every file group its own task, a data file with its patch file
        assert [_span(t) for t in cut.tasks] == [(s, s + n - 1) for s, n in zip(
            [sum(SIZES[:i]) for i in range(len(SIZES))], SIZES)]
        assert [len(t.split.files) for t in cut.tasks] == [2, 2, 2, 1, 1, 1]
    if limit >= TOTAL:
        assert cut.tasks == plan.tasks


@pytest.mark.parametrize("limit", [1, 150, 400, 100_000])
def test_cut_partitioned(partitioned: PaimonTable, limit: int) -> None:
    plan = plan_build(partitioned, COLUMNS, records_per_range=160)
    assert len(plan.tasks) > 1
    assert_cut(plan, cut_tasks(plan, limit), limit, 160)


@pytest.mark.parametrize("limit", [1, 120, 450])
def test_a_cut_never_splits_an_aligned_shard(one_split: PaimonTable, limit: int) -> None:
    """fm shards (`_ROW_ID DIV R`; multivalue's too, the same family flag) are one file each in pypaimon-rust's
    builds: a task may be cut between shards, never inside one, even past the size bound."""
    column = "status"
    # file groups start at 0, 100, 250, 450, 700, 1000: shard edges meet them at 250 and 1000 only
    plan = plan_build(one_split, [column, "flag"], records_per_range=250, families={column: "fm"})
    shards = list(plan.tasks[0].ranges[column])
    assert shards == [(s, min(s + 249, TOTAL - 1)) for s in range(0, TOTAL, 250)]
    cut = cut_tasks(plan, limit)
    assert [r for t in cut.tasks for r in t.ranges.get(column, ())] == shards   # each shard whole, in one task
    for task in cut.tasks:   # a task's span starts and ends on shard edges
        span = _span(task)
        assert not any(s < span[0] <= e or s <= span[1] < e for s, e in shards), (span, shards)
    assert _ids(cut.tasks, "flag") == list(range(TOTAL))
    if limit < 250:
        assert [_span(t) for t in cut.tasks] == [(0, 249), (250, 999), (1000, TOTAL - 1)]


def test_cut_drops_pieces_without_work(one_split: PaimonTable) -> None:
    """A task whose split holds more files than its ranges need: pieces with nothing to build are dropped."""
    plan = plan_build(one_split, COLUMNS, records_per_range=10_000)
    narrow = PaimonBuildPlan(plan.table, plan.columns, plan.field_ids, plan.key_types,
                             [PaimonBuildTask(plan.tasks[0].split, plan.tasks[0].partition,
                                              plan.tasks[0].partition_values, {"status": ((500, 699),)})])
    cut = cut_tasks(narrow, 300)
    assert [(_span(t), t.ranges) for t in cut.tasks] == [((450, 699), {"status": ((500, 699),)})]


def test_balance_does_not_cut_below_the_minimum(one_split: PaimonTable) -> None:
    """A plan smaller than _MIN_TASK_ROWS stays as it is, whatever the parallelism (also when records-per-range
    is smaller: the floor wins, and each range still keeps to records-per-range)."""
    plan = plan_build(one_split, COLUMNS, records_per_range=170)
    assert TOTAL < paimon_source._MIN_TASK_ROWS
    for parallelism in (1, 4, 64):
        assert balance_tasks(plan, parallelism, 170).tasks == plan.tasks


@pytest.mark.parametrize("parallelism", [-1, 0, 1, 2, 3, 4, 16])
@pytest.mark.parametrize("floor", [1, 400])
def test_balance_about_two_tasks_per_slot(one_split: PaimonTable, monkeypatch: pytest.MonkeyPatch,
                                          parallelism: int, floor: int) -> None:
    monkeypatch.setattr(paimon_source, "_MIN_TASK_ROWS", floor)
    plan = plan_build(one_split, COLUMNS, records_per_range=10_000)
    slots = max(1, parallelism) * paimon_source._TASKS_PER_SLOT
    limit = max(floor, -(-TOTAL // slots))
    balanced = balance_tasks(plan, parallelism, 10_000)
    assert_cut(plan, balanced, limit, 10_000)
    # a cut only where keeping the next file group would exceed the bound (so never below the floor)
    for a, b in zip(balanced.tasks, balanced.tasks[1:]):
        assert _groups(b)[0][1] - _span(a)[0] + 1 > limit, (_span(a), _span(b), limit)


@pytest.mark.parametrize("max_rows", [170, 260, 600])
def test_balance_keeps_tasks_within_records_per_range(one_split: PaimonTable, monkeypatch: pytest.MonkeyPatch,
                                                      max_rows: int) -> None:
    """One slot would take everything in two tasks; max_rows (records-per-range) bounds them first."""
    monkeypatch.setattr(paimon_source, "_MIN_TASK_ROWS", 1)
    plan = plan_build(one_split, COLUMNS, records_per_range=max_rows)
    balanced = balance_tasks(plan, 1, max_rows)
    assert_cut(plan, balanced, max_rows, max_rows)
    assert all(_size(_span(t)) <= max_rows or len(_groups(t)) == 1 for t in balanced.tasks)


def test_fixture_layout(one_split: PaimonTable) -> None:
    """The table the tests rely on: six file groups in one split, patches inside the first three."""
    (task,) = plan_build(one_split, COLUMNS, records_per_range=10_000).tasks
    assert len(_groups(task)) == len(SIZES) and len(task.split.files) == len(SIZES) + 3
