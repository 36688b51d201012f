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
