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


def test_a_plain_build_moves_inside_its_one_range(tmp_path, monkeypatch) -> None:
    """Issue 33: a plain table built as one range (its rows under records-per-range) showed 0% until its commit, then
    100%. Its rows count as the build reads them (every report seen through the job's own progress, no timing): some
    reading lies strictly between none and all rows while the range is not done, and the range is done only once
    written."""
    from index_format.storage import Storage
    from service.build_job.main import run_job
    from service.catalog import Catalog, Table
    from service.tables.files import slice_reader
    from tests.factories import make_parquet_table

    monkeypatch.setattr(slice_reader, "BATCH_ROWS", 100)   # 10 batches over the table's 1000 rows
    seen: list[dict[str, float | int]] = []
    reported = Progress.range_rows_done

    def record(self: Progress, r: int, rows: int) -> None:
        reported(self, r, rows)
        seen.append(self.snapshot())

    monkeypatch.setattr(Progress, "range_rows_done", record)
    gen = make_parquet_table(tmp_path, rows_per_file=(600, 400), row_group_size=200)
    (tmp_path / "wh").mkdir()
    catalog = Catalog(Storage(str(tmp_path / "wh"), [str(tmp_path)]))
    catalog.put_table(Table("t", str(gen.location)))
    snap = run_job({"job_id": "j", "warehouse": str(tmp_path / "wh"), "allowed_roots": [str(tmp_path)], "table": "t",
                    "index_column": "s", "engine": "local"})
    assert snap is not None and snap.row_count == 1000 and len(snap.covered_ranges) == 1
    inside = [p for p in seen if 0 < p["rows_indexed"] < 1000]
    assert len(inside) >= 5 and all(p["ranges_done"] == 0 and 0 < p["fraction"] < 1 for p in inside), seen
    assert [p["rows_indexed"] for p in seen] == sorted(p["rows_indexed"] for p in seen), seen
    assert seen[-1]["rows_indexed"] == 1000 and seen[-1]["ranges_done"] == seen[-1]["ranges_total"] == 1, seen
    assert catalog.get_job("j").progress["fraction"] == 1.0
