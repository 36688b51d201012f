"""Build progress as the service shows it: never backwards, 1.0 only once the build committed."""
from __future__ import annotations

from service.build_job.progress import Progress


def test_fraction_is_monotonic_and_reaches_one_only_when_finished() -> None:
    p = Progress(None, "job", [100, 100])
    seen = []
    p.task_fraction = 1.0          # a first small Spark job finished all its tasks
    seen.append(p.snapshot()["fraction"])
    p.task_fraction = 0.5          # the next stage starts: its task ratio is lower
    seen.append(p.snapshot()["fraction"])
    p.range_rows_done(0, 100)
    p.range_rows_done(1, 100)
    seen.append(p.snapshot()["fraction"])
    assert seen == sorted(seen), seen
    assert max(seen) < 1.0
    p.finished = True
    snap = p.snapshot()
    assert snap["fraction"] == 1.0 and snap["rows_indexed"] == 200 and snap["ranges_done"] == 2


def test_task_units_count_the_ranges_they_close() -> None:
    # a Paimon-like plan: progress by task, task 0 closes 3 ranges and task 1 closes 1
    p = Progress(None, "job", [300, 100], unit_ranges=[3, 1])
    assert p.snapshot()["ranges_total"] == 4
    p.set_range_totals({1: 100})
    snap = p.snapshot()
    assert (snap["ranges_done"], snap["rows_indexed"], snap["fraction"]) == (1, 100, 0.25)
    p.set_range_totals({1: 40})   # an older, smaller count never takes progress back
    assert p.snapshot()["rows_indexed"] == 100


def test_task_reports_reach_the_driver_while_tasks_run(tmp_path) -> None:
    from index_format.storage import Storage
    from service.build_job.progress import TaskReports
    storage = Storage(str(tmp_path / "wh"), [str(tmp_path)])
    reports = TaskReports(storage.to_config(), "jobs/j.tasks", min_interval=3600.0)
    a, b = reports.writer(0), reports.writer(1)
    a.add(0, 10)            # the first report is written at once
    a.add(0, 5)             # then at most every min_interval …
    b.add(1, 7)
    assert reports.read(storage) == ({0: 10, 1: 7}, 2)
    a.write()               # … and when the task ends
    assert reports.read(storage) == ({0: 15, 1: 7}, 2)
    retry = reports.writer(1)   # a retried Spark task replaces its partition's counts
    retry.add(1, 2)
    assert reports.read(storage) == ({0: 15, 1: 2}, 2)
    reports.remove(storage)
    assert reports.read(storage) == ({}, 0)


def test_a_report_being_replaced_is_counted_once(tmp_path) -> None:
    """A task's next report is written to a temp file beside its last one, fsynced and renamed over it; a read in
    that window lists both, complete (CI: a build's rows_indexed 4,400 of 3,400 rows). Only task files count."""
    from index_format.storage import Storage
    from service.build_job.progress import TaskReports
    storage = Storage(str(tmp_path / "wh"), [str(tmp_path)])
    reports = TaskReports(storage.to_config(), "jobs/j.tasks", min_interval=3600.0)
    reports.writer(0).add(0, 1000)
    reports.writer(1).add(1, 400)
    directory = tmp_path / "wh" / "jobs" / "j.tasks"
    (directory / ".tmp-0123456789abcdef.part").write_text('{"0": 1000}')   # the next report of task 0, unrenamed
    (directory / "notes.txt").write_text("{}")
    assert reports.read(storage) == ({0: 1000, 1: 400}, 2)
