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
