"""Service log lines: the JSON formatter (one object per record, a call's `extra` fields as keys) and the job
lines of service.server.job_log (start, end, failure with the job's fields)."""
from __future__ import annotations

import io
import json
import logging

from service.server.job_log import job_fields, log_end, log_start
from service.observability.log_format import JsonFormatter, formatter
from service.catalog.model import JobRecord


def _capture(fmt: logging.Formatter) -> tuple[logging.Logger, io.StringIO]:
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(fmt)
    logger = logging.getLogger("bgix.jobs")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    return logger, out


def test_json_formatter_writes_one_object_with_extra_fields_and_traceback() -> None:
    record = logging.LogRecord("bgix.x", logging.ERROR, __file__, 1, "a %s line", ("formatted",), None)
    record.job_id = "j1"
    record.color_message = "uvicorn's coloured copy"
    d = json.loads(JsonFormatter().format(record))
    assert d["message"] == "a formatted line" and d["level"] == "ERROR" and d["logger"] == "bgix.x"
    assert d["job_id"] == "j1" and "color_message" not in d and d["timestamp"].endswith("+00:00")
    try:
        raise ValueError("boom")
    except ValueError:
        import sys
        record.exc_info = sys.exc_info()
    line = JsonFormatter().format(record)
    assert "\n" not in line and "ValueError: boom" in json.loads(line)["exc_info"]
    assert not isinstance(formatter("text"), JsonFormatter) and isinstance(formatter("json"), JsonFormatter)


def test_job_lines_carry_the_job_fields() -> None:
    logger, out = _capture(JsonFormatter())
    try:
        job = JobRecord(id="j2", table="t", column="a,b", state="succeeded", started_at=100.0, finished_at=102.5,
                        snapshot_id=7, spec={"index_type": "btree"},
                        progress={"fraction": 1.0, "rows_indexed": 42, "ranges_done": 2, "ranges_total": 2})
        log_start(job.with_(state="running", finished_at=None))
        log_end(job)
        log_end(job.with_(state="failed", error="IOError: disk full", snapshot_id=None))
        log_end(job.with_(state="succeeded", progress={"message": "index already up to date: nothing to build"}))
    finally:
        logger.handlers.pop()
    start, end, failure, nothing = (json.loads(ln) for ln in out.getvalue().splitlines())
    assert start["event"] == "job_start" and start["state"] == "running" and start["duration_s"] > 0
    assert (end["event"], end["job_id"], end["table"], end["index_column"], end["family"]) == (
        "job_end", "j2", "t", "a,b", "btree")
    assert (end["rows"], end["ranges"], end["duration_s"], end["snapshot_id"], end["error"]) == (42, 2, 2.5, 7, None)
    assert "succeeded after 2.50 s" in end["message"] and end["level"] == "INFO"
    assert failure["event"] == "job_failure" and failure["level"] == "WARNING"
    assert failure["error"] == "IOError: disk full" and "disk full" in failure["message"]
    assert nothing["job_message"] == "index already up to date: nothing to build"
    assert job_fields(JobRecord(id="q", table="t", column="c"), "job_start")["duration_s"] is None   # queued
