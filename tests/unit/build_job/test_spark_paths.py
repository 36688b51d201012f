"""Spark's spellings of data file paths back to the catalog's (the Spark-scan engine joins on them)."""
from __future__ import annotations

from service.build_job.engines import from_spark_path


def test_spark_spellings() -> None:
    assert from_spark_path("file:/tmp/a%20b/x.parquet") == "/tmp/a b/x.parquet"
    assert from_spark_path("file:///tmp/x.parquet") == "/tmp/x.parquet"
    assert from_spark_path("s3a://bucket/k.parquet") == "s3://bucket/k.parquet"
