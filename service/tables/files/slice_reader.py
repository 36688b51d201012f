"""A plain table's build task read with pyarrow: its file slices as `rid` plus the task's indexed columns.

Runs in the build's workers (a Spark task gets the reader pickled). Imports index_format.storage,
service.catalog and this kind's scan only.
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from index_format.storage import Storage
from service.catalog.catalog_errors import DataFileError, RowIdError
from service.tables.files.scan import read_slice
from service.tables.build_tasks import BATCH_ROWS, ROW_ID

__all__ = ["FileSlice", "FileTaskReader"]


@dataclass(frozen=True)
class FileSlice:
    """Rows [start, stop) (positions in the file) of one data file; row id = first_row_id + position (or,
    with a row_id_column, its value). The plan cuts them (plan.FilePlan.tasks)."""

    path: str
    size: int
    first_row_id: int
    start: int
    stop: int




@dataclass(frozen=True)
class FileTaskReader:
    """Reads task i's file slices: the indexed `columns[i]` and the row id of every row."""

    storage_config: dict[str, object]
    table_format: str
    row_id_column: str | None
    tasks: tuple[tuple[FileSlice, ...], ...]
    columns: tuple[tuple[str, ...], ...]

    def read(self, task: int) -> Iterator[pa.RecordBatch]:
        """Batches of at most BATCH_ROWS rows.

        Raises:
            RowIdError: a file is shorter than the row-id map says (it changed after planning).
            DataFileError: a file cannot be read (junk, corrupt column chunk, removed since planning); it
                names the file, so the job record's error does.
        """
        storage = Storage.from_config(self.storage_config)
        rid = self.row_id_column
        keys = list(self.columns[task])
        cols = keys + ([rid] if rid and rid not in keys else [])
        for sl in self.tasks[task]:
            try:
                t = read_slice(storage, sl.path, self.table_format, cols, sl.start, sl.stop, sl.size)
            except FileNotFoundError as exc:
                raise DataFileError(sl.path, "removed since the build was planned") from exc
            if t.num_rows != sl.stop - sl.start:
                raise RowIdError(f"data file {sl.path!r} has fewer rows than the row-id map says; "
                                 "it changed during the build")
            if rid:
                ids = t.column(rid).combine_chunks()
            else:
                ids = pa.array(np.arange(sl.first_row_id + sl.start, sl.first_row_id + sl.stop, dtype=np.int64))
            batch = pa.RecordBatch.from_arrays([ids, *(t.column(c).combine_chunks() for c in keys)],
                                               names=[ROW_ID, *keys])
            for start in range(0, batch.num_rows, BATCH_ROWS):
                yield batch.slice(start, BATCH_ROWS)
