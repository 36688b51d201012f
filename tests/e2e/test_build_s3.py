"""Index files and the catalog on S3 (a local moto server): Spark workers write through fsspec."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from index_format.storage import Storage
from service.build_job.main import run_job
from service.catalog import Catalog, Table
from tests.factories import append_file, assert_index_matches, make_parquet_table, oracle_table

pytestmark = [pytest.mark.spark, pytest.mark.s3, pytest.mark.slow]


def test_build_to_s3_warehouse(spark: Any, s3_server: dict[str, Any], s3_bucket: str, tmp_path: Path) -> None:
    gen = make_parquet_table(tmp_path, rows_per_file=(800, 1100))
    warehouse = f"s3://{s3_bucket}/wh"
    opts = s3_server["storage_options"]
    cat = Catalog(Storage(warehouse, [str(tmp_path)], opts))
    cat.put_table(Table("t", str(gen.location)))
    spec = {"job_id": "s3job", "warehouse": warehouse, "storage_options": opts, "allowed_roots": [str(tmp_path)],
            "table": "t", "index_column": "s", "options": {"sorted-index.records-per-range": "1000"}}
    snap = run_job(spec, spark=spark)
    assert len(snap.files) >= 2
    for e in snap.files:
        full = cat.storage.resolve(e.path)
        assert full.startswith(f"s3://{s3_bucket}/wh/tables/t/indexes/s/data/s3job/")
        assert cat.storage.size(e.path) == e.file_size
    assert cat.get_job("s3job").state == "succeeded"
    assert_index_matches(cat, snap, oracle_table(gen.files, ["s"]), "s")
    # incremental on S3 too
    append_file(gen, 9, 300, seed=9)
    second = run_job({**spec, "job_id": "s3job2"}, spark=spark)
    assert second.id == 2 and second.covered_ranges == [[0, 2199]]
    assert_index_matches(cat, second, oracle_table(gen.files, ["s"]), "s")
