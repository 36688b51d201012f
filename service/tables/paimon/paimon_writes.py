"""Rows written into Paimon tables by pypaimon: the one plain append (the demo's sample table, tests and benchmarks
use it) and the tiny table of a build runner's warm-up build (service.build_job.warm_up).
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
from pypaimon import CatalogFactory, Schema

if TYPE_CHECKING:
    from pypaimon.table.file_store_table import FileStoreTable

__all__ = ["WARM_UP_COLUMN", "append_arrow", "write_warm_up_table"]

WARM_UP_COLUMN = "s"
_DB, _NAME = "warm", "t"


def write_warm_up_table(warehouse: Path, files: int = 4, rows: int = 512) -> str:
    """Create `warm.t` (s STRING, n INT) under the warehouse directory `warehouse`, `files` commits of `rows`
    rows each, so the warm-up's plan reads Paimon manifests, its tasks take the direct Parquet read on every worker
    slot and its commit writes an index manifest; returns the table's location."""
    catalog = CatalogFactory.create({"warehouse": str(warehouse)})
    catalog.create_database(_DB, True)
    schema = pa.schema([(WARM_UP_COLUMN, pa.string()), ("n", pa.int32())])
    catalog.create_table(f"{_DB}.{_NAME}", Schema.from_pyarrow_schema(schema, options={
        "row-tracking.enabled": "true", "data-evolution.enabled": "true"}), True)
    table = catalog.get_table(f"{_DB}.{_NAME}")
    for k in range(files):
        n = np.arange(k * rows, (k + 1) * rows, dtype=np.int32)
        append_arrow(table, pa.table({WARM_UP_COLUMN: pa.array([f"v{i % 37}" for i in n]), "n": pa.array(n)},
                                     schema=schema))
    return str(warehouse / f"{_DB}.db" / _NAME)


def append_arrow(table: FileStoreTable, data: pa.Table) -> None:
    """Write `data` to the pypaimon `table` and commit it as one new snapshot (a plain batch append)."""
    wb = table.new_batch_write_builder()
    writer, commit = wb.new_write(), wb.new_commit()
    try:
        writer.write_arrow(data)
        commit.commit(writer.prepare_commit())
    finally:
        writer.close()
        commit.close()
