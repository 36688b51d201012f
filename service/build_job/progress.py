"""Job progress written through the catalog while a build runs (no HTTP back-channel).

Thread-safe and throttled; imports service.catalog only.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable

from service.catalog.catalog import Catalog


class Progress:
    """Counts rows per range as tasks report them; writes {fraction, rows_indexed, ranges_done, ranges_total}."""

    def __init__(self, catalog: Catalog | None, job_id: str, range_rows: list[int], min_interval: float = 0.5,
                 check: Callable[[], None] | None = None) -> None:
        self.catalog = catalog
        self.check = check   # raises to stop the build (a cancel); called where the build's own thread reports
        self.job_id = job_id
        self.range_rows = range_rows
        self.total_rows = sum(range_rows)
        self.done_rows = [0] * len(range_rows)
        self.task_fraction: float | None = None
        self.finished = False
        self._reported = 0.0  # what readers saw last: the bar never moves backwards
        self.min_interval = min_interval
        self._last_write = 0.0
        self._lock = threading.Lock()

    def range_rows_done(self, r: int, rows: int) -> None:
        """A local build's worker report (in the build's thread): also where a cancel stops it."""
        if self.check is not None:
            self.check()
        with self._lock:
            self.done_rows[r] += rows
        self.flush()

    def set_range_totals(self, per_range: dict[int, int]) -> None:
        """Absolute per-range counts (e.g. a Spark accumulator's value)."""
        with self._lock:
            for r, n in per_range.items():
                self.done_rows[r] = n
        self.flush()

    def snapshot(self) -> dict[str, float | int]:
        with self._lock:
            rows = sum(self.done_rows)
            done = sum(1 for d, t in zip(self.done_rows, self.range_rows) if d >= t)
            frac = rows / self.total_rows if self.total_rows else 1.0
            if self.task_fraction is not None:
                frac = max(frac, self.task_fraction) if rows else self.task_fraction
            # Spark runs several jobs and stages per build, so a task ratio can reach 1.0 early and then
            # drop when the next stage starts: keep the fraction monotonic and below 1 until the commit.
            frac = 1.0 if self.finished else min(frac, 0.99)
            self._reported = max(self._reported, frac)
            return {"fraction": round(self._reported, 4), "rows_indexed": rows, "ranges_done": done,
                    "ranges_total": len(self.range_rows)}

    def flush(self, force: bool = False) -> None:
        if self.catalog is None:
            return
        now = time.monotonic()
        if not force and now - self._last_write < self.min_interval:
            return
        self._last_write = now
        self.catalog.write_progress(self.job_id, self.snapshot())
