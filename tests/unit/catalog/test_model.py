"""Catalog documents survive a JSON round trip and ignore fields a newer version added."""
from __future__ import annotations

import json

from service.catalog import DataFile, IndexFileEntry, JobRecord, Snapshot, SourceFile, Table


def test_documents_round_trip_through_json() -> None:
    t = Table("t", "/data/t", "parquet", ["dt"], "rid", 1.5)
    assert Table.from_dict(json.loads(json.dumps(t.to_dict()))) == t
    f = DataFile("/data/t/dt=1/a.parquet", 10, 2.5, 7, 100, {"dt": "1"})
    assert DataFile.from_dict(json.loads(json.dumps(f.to_dict()))) == f and f.end_row_id == 107
    s = Snapshot(id=3, table="t", column="c", key_type="decimal(10,2)",
                 files=[IndexFileEntry("p", 0, 9, 10, 123, "00", {"dt": "1"})], options={"k": "v"},
                 covered_ranges=[[0, 9]], source_files=[SourceFile.of(f)], stale=True,
                 stale_files=[{"path": "x", "reason": "removed"}], job_id="j", parent_id=2, row_count=7)
    assert Snapshot.from_dict(json.loads(json.dumps(s.to_dict()))) == s
    assert s.summary()["stale_files"] == ["x"] and s.summary()["index_bytes"] == 123
    j = JobRecord(id="j", table="t", column="c", state="running", spec={"a": 1})
    assert JobRecord.from_dict(json.loads(json.dumps(j.to_dict()))) == j and j.active
    assert JobRecord.from_dict({**j.to_dict(), "new_field": 1}) == j


def test_job_duration_is_null_while_queued_elapsed_while_running_and_fixed_once_over() -> None:
    from service.catalog.model import JobRecord
    queued = JobRecord(id="j", table="t", column="c", created_at=10.0)
    assert queued.duration_s(at=50.0) is None
    running = queued.with_(state="running", started_at=12.0)
    assert running.duration_s(at=15.5) == 3.5
    done = running.with_(state="succeeded", finished_at=20.25)
    assert done.duration_s(at=99.0) == 8.25
    assert queued.with_(state="cancelled", finished_at=11.0).duration_s() is None   # cancelled before it started
