"""Job logs beside job records: bounded to their last MiB at a line start, read back as text."""
from __future__ import annotations

from pathlib import Path

from index_format.storage import Storage
from service.jobs.job_logs import MAX_BYTES, bounded, has_job_log, read_job_log, write_job_log


def test_a_job_log_keeps_its_tail_within_the_bound(tmp_path: Path) -> None:
    storage = Storage(str(tmp_path / "wh"), [str(tmp_path)])
    assert read_job_log(storage, "j1") is None and not has_job_log(storage, "j1")
    lines = [f"line {i:07d} é\n" for i in range(120_000)]   # ~1.9 MB
    write_job_log(storage, "j1", "".join(lines))
    text = read_job_log(storage, "j1")
    assert text is not None and has_job_log(storage, "j1")
    data = text.encode()
    assert len(data) <= MAX_BYTES
    first, *kept = text.splitlines(keepends=True)
    assert "earlier lines left out" in first
    assert kept == lines[-len(kept):] and len(kept) > 60_000   # whole lines, the last ones
    assert (tmp_path / "wh" / "jobs" / "j1.log").is_file()
    assert bounded("short\n") == b"short\n"
