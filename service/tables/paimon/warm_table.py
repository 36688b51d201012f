"""A tiny Paimon table, written by pypaimon, for a build runner's warm-up build (service.build_job.warm_up).

A few data files of a row-tracking, data-evolution table: enough that the warm-up's plan reads Paimon manifests,
its tasks take the direct Parquet read on every worker slot, and its commit writes an index manifest.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
from pypaimon import CatalogFactory, Schema

__all__ = ["WARM_UP_COLUMN", "write_warm_up_table"]

WARM_UP_COLUMN = "s"
_DB, _NAME = "warm", "t"


def write_warm_up_table(warehouse: Path, files: int = 4, rows: int = 512) -> str:
    """Create `warm.t` (s STRING, n INT) under the warehouse directory `warehouse`, `files` commits of `rows`
    rows each; returns the table's location."""
    catalog = CatalogFactory.create({"warehouse": str(warehouse)})
    catalog.create_database(_DB, True)
    schema = pa.schema([(WARM_UP_COLUMN, pa.string()), ("n", pa.int32())])
    catalog.create_table(f"{_DB}.{_NAME}", Schema.from_pyarrow_schema(schema, options={
        "row-tracking.enabled": "true", "data-evolution.enabled": "true"}), True)
    table = catalog.get_table(f"{_DB}.{_NAME}")
    for k in range(files):
        n = np.arange(k * rows, (k + 1) * rows, dtype=np.int32)
        data = pa.table({WARM_UP_COLUMN: pa.array([f"v{i % 37}" for i in n]), "n": pa.array(n)}, schema=schema)
        wb = table.new_batch_write_builder()
        writer, commit = wb.new_write(), wb.new_commit()
        try:
            writer.write_arrow(data)
            commit.commit(writer.prepare_commit())
        finally:
            writer.close()
            commit.close()
    return str(warehouse / f"{_DB}.db" / _NAME)
