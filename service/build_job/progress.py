"""Job progress written through the catalog while a build runs (no HTTP back-channel).

Progress counts rows per progress unit (a range, or with BuildPlan.progress_by_task a plan task, which completes
the ranges it closes) and writes {fraction, rows_indexed, ranges_done, ranges_total} to the job record.
TaskReports carries what running Spark tasks did so far: a Spark accumulator only reaches the driver when its
task ends (and a task may run many plan tasks), so each Spark task also writes its counts so far, throttled, as
a small file under the job's `jobs/<id>.tasks/` directory of the warehouse, which the driver sums.
Thread-safe and throttled; imports service.catalog and index_format.storage only.
"""
from __future__ import annotations

import json
import posixpath
import re
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from index_format.storage import Storage
from service.catalog import warehouse_layout
from service.catalog.catalog import Catalog

if TYPE_CHECKING:
    from service.tables.build_tasks import BuildPlan


class Progress:
    """Counts rows per unit as tasks report them; writes {fraction, rows_indexed, ranges_done, ranges_total}.

    `unit_ranges[u]`: ranges unit u completes (None: every unit is one range)."""

    def __init__(self, catalog: Catalog | None, job_id: str, range_rows: list[int], min_interval: float = 0.5,
                 check: Callable[[], None] | None = None, unit_ranges: Sequence[int] | None = None) -> None:
        self.catalog = catalog
        self.check = check   # raises to stop the build (a cancel); called where the build's own thread reports
        self.job_id = job_id
        self.range_rows = range_rows
        self.unit_ranges = list(unit_ranges) if unit_ranges is not None else [1] * len(range_rows)
        self.total_rows = sum(range_rows)
        self.done_rows = [0] * len(range_rows)
        self.task_fraction: float | None = None
        self.finished = False
        self._reported = 0.0  # what readers saw last: the bar never moves backwards
        self.min_interval = min_interval
        self._last_write = 0.0
        self._lock = threading.Lock()

    @classmethod
    def for_plan(cls, catalog: Catalog | None, job_id: str, plan: BuildPlan,
                 check: Callable[[], None] | None = None) -> Progress:
        """Units as the plan reports them: its ranges, or its tasks (each completing the ranges it closes)."""
        by_task = plan.progress_by_task and len(plan.task_closes) == plan.tasks
        return cls(catalog, job_id, plan.progress_rows, check=check,
                   unit_ranges=[len(c) for c in plan.task_closes] if by_task else None)

    def range_rows_done(self, r: int, rows: int) -> None:
        """A local build's worker report (in the build's thread): also where a cancel stops it."""
        if self.check is not None:
            self.check()
        with self._lock:
            self.done_rows[r] += rows
        self.flush()

    def set_range_totals(self, per_range: dict[int, int]) -> None:
        """Absolute per-unit counts (e.g. a Spark accumulator's value); a unit never goes backwards."""
        with self._lock:
            for r, n in per_range.items():
                if 0 <= r < len(self.done_rows):
                    self.done_rows[r] = max(self.done_rows[r], n)
        self.flush()

    def snapshot(self) -> dict[str, float | int]:
        with self._lock:
            rows = sum(self.done_rows)
            done = sum(k for d, t, k in zip(self.done_rows, self.range_rows, self.unit_ranges) if d >= t)
            frac = rows / self.total_rows if self.total_rows else 1.0
            if self.task_fraction is not None:
                frac = max(frac, self.task_fraction) if rows else self.task_fraction
            # Spark runs several jobs and stages per build, so a task ratio can reach 1.0 early and then
            # drop when the next stage starts: keep the fraction monotonic and below 1 until the commit.
            frac = 1.0 if self.finished else min(frac, 0.99)
            self._reported = max(self._reported, frac)
            return {"fraction": round(self._reported, 4), "rows_indexed": rows, "ranges_done": done,
                    "ranges_total": sum(self.unit_ranges)}

    def flush(self, force: bool = False) -> None:
        if self.catalog is None:
            return
        now = time.monotonic()
        if not force and now - self._last_write < self.min_interval:
            return
        self._last_write = now
        self.catalog.write_progress(self.job_id, self.snapshot())


def planned(catalog: Catalog, job_id: str, plan: BuildPlan) -> None:
    """Tell readers the size of the build as soon as it is planned (before any Spark session starts)."""
    catalog.write_progress(job_id, Progress.for_plan(None, job_id, plan).snapshot())


_REPORT_NAME = re.compile(r"\d+\.json")   # TaskReportWriter's `<partition>.json`


@dataclass(frozen=True)
class TaskReports:
    """Where a build's Spark tasks leave their counts so far (picklable: it travels with the tasks)."""

    storage_config: dict[str, Any]
    directory: str
    min_interval: float = 0.5

    @classmethod
    def for_job(cls, catalog: Catalog, job_id: str) -> TaskReports:
        return cls(catalog.storage.to_config(), warehouse_layout.job_task_reports(job_id))

    def writer(self, task: int) -> TaskReportWriter:
        """In a Spark task: the writer of Spark partition `task` (a retry starts its counts again)."""
        return TaskReportWriter(self, task)

    def read(self, storage: Storage) -> tuple[dict[int, int], int]:
        """The driver: every task's counts so far, summed per unit (a file being replaced is skipped), and how
        many task files it read."""
        out: dict[int, int] = {}
        # only the tasks' own files: a report being replaced also lists as its complete temp file beside the last
        # one until the rename (index_format.storage), and counting both counted that task twice
        paths = [p for p in storage.list(self.directory) if _REPORT_NAME.fullmatch(posixpath.basename(p))]
        for path in paths:
            try:
                counts = json.loads(storage.read_bytes(path))
            except (OSError, ValueError):
                continue
            for unit, rows in counts.items():
                out[int(unit)] = out.get(int(unit), 0) + int(rows)
        return out, len(paths)

    def remove(self, storage: Storage) -> None:
        storage.delete(self.directory, recursive=True)


class TaskReportWriter:
    """One Spark task's counts per unit, written at most every `min_interval` seconds and when it ends."""

    def __init__(self, reports: TaskReports, task: int) -> None:
        self.reports = reports
        self.path = f"{reports.directory}/{int(task)}.json"
        self.counts: dict[int, int] = {}
        self._storage: Storage | None = None
        self._last: float | None = None   # never written: the first report goes out at once

    def add(self, unit: int, rows: int) -> None:
        self.counts[unit] = self.counts.get(unit, 0) + rows
        if self._last is None or time.monotonic() - self._last >= self.reports.min_interval:
            self.write()

    def write(self) -> None:
        """Best effort: progress must never fail a build."""
        self._last = time.monotonic()
        try:
            if self._storage is None:
                self._storage = Storage.from_config(self.reports.storage_config)
            self._storage.write_atomic(self.path, json.dumps(self.counts).encode())
        except Exception:
            pass
