"""A build task's rows read straight from its Parquet data files with pyarrow, where pypaimon's reader would
add nothing but its per-batch cost: `[columns…, _ROW_ID]`, exactly what pypaimon returns for such files.

pypaimon's reader spends about a second of Python per 2M rows on row-id assignment, projection and checks; a
Parquet read of the same column is a tenth of that, and a string column read as its Parquet dictionary is a
twentieth (the bitmap writer sorts the dictionary, not the rows). The direct read is taken only when a task's
files need none of pypaimon's work; everything else goes through pypaimon (service.tables.paimon.rows):
  - no deletion vectors in the split (deleted rows would have to be dropped);
  - no data-evolution patches: no two files share row ids (their columns would have to be merged);
  - every file is Parquet, row-tracked (`first_row_id`), holds every requested column (by field id) with the
    Arrow type pypaimon reads, stores no `_ROW_ID` of its own, and has as many rows as its metadata says.
A row's `_ROW_ID` is then its file's `first_row_id` plus its position, as Paimon assigns it.
"""
from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
from pypaimon.schema.data_types import PyarrowFieldParser

from service.tables.paimon.broken_files import reading_data_file
from service.tables.paimon.rows import ROW_ID
from service.tables.paimon.table import PaimonTable

if TYPE_CHECKING:
    from pypaimon.read.split import Split

__all__ = ["direct_batches"]

_FIELD_ID = b"PARQUET:field_id"


def direct_batches(table: PaimonTable, split: Split, columns: Sequence[str],
                   dictionary: Sequence[str] = ()) -> Iterator[pa.RecordBatch] | None:
    """The split's rows as record batches of `columns` + `_ROW_ID` (one per row group), or None when the split
    needs pypaimon's reader. `dictionary`: string columns to hand over dictionary-encoded (same values).

    Decides from the split's metadata and each file's Parquet footer before it yields a row, so a None never
    follows a partial read.
    """
    if getattr(split, "data_deletion_files", None) and any(split.data_deletion_files):
        return None
    files = list(split.files)
    if not files or not _disjoint(files):
        return None
    fields = {f.name: f for f in table.table.fields}
    if any(c not in fields for c in columns):
        return None   # pypaimon names the missing column
    want = {c: PyarrowFieldParser.from_paimon_field(fields[c]) for c in columns}
    ids = {c: fields[c].id for c in columns}
    schema_id = table.table.table_schema.id
    file_io = table.table.file_io
    plans = []
    for meta in files:
        plan = _file_plan(file_io, meta, want, ids, schema_id, set(dictionary))
        if plan is None:
            return None
        plans.append(plan)
    out = pa.schema([*(pa.field(c, pa.dictionary(pa.int32(), f.type) if c in plans[0][2] else f.type, f.nullable)
                       for c, f in want.items()), pa.field(ROW_ID, pa.int64(), nullable=False)])
    return _read(plans, out)


def _disjoint(files: Sequence[Any]) -> bool:
    """Every file is row-tracked and no two share a row id (no data-evolution patches to merge)."""
    spans = []
    for f in files:
        if f.first_row_id is None or not str(f.file_name).endswith(".parquet") or f.write_cols is not None:
            return False
        spans.append((int(f.first_row_id), int(f.first_row_id) + int(f.row_count) - 1))
    spans.sort()
    return all(prev[1] < nxt[0] for prev, nxt in zip(spans, spans[1:]))


def _file_plan(file_io: Any, meta: Any, want: dict[str, pa.Field], ids: dict[str, int], schema_id: int,
               dictionary: set[str]) -> tuple[Any, list[str], set[str], int, Any] | None:
    """(the opened Parquet file, its column names for `want`'s columns, which columns come as dictionaries, first
    row id, `meta`), or None when the file does not qualify. Columns are matched by Paimon field id where the file
    records ids (pypaimon-rust, Java), else by name when the file was written with the table's current schema."""
    import pyarrow.parquet as pq

    path = file_io.to_filesystem_path(meta.external_path or meta.file_path)
    with reading_data_file(meta):   # a file that is not Parquet: DataFileError naming it
        source = file_io.filesystem.open_input_file(path)
        footer = pq.ParquetFile(source)
    schema = footer.schema_arrow
    if ROW_ID in schema.names:
        return None   # it stores its own row ids (a rewritten file): pypaimon reads them
    by_id = {int(fid): f for f in schema if (fid := (f.metadata or {}).get(_FIELD_ID)) is not None}
    if not by_id and int(meta.schema_id) != schema_id:
        return None   # no ids, and names may have changed since
    names, as_dict, dict_columns = [], [], set()
    for column, expected in want.items():
        f = by_id.get(ids[column]) if by_id else (schema.field(column) if column in schema.names else None)
        if f is None or f.type != expected.type:
            return None   # added after the file was written, or stored as another type: pypaimon converts
        names.append(f.name)
        if column in dictionary and pa.types.is_string(f.type):
            as_dict.append(f.name)
            dict_columns.add(column)
    pf = pq.ParquetFile(source, metadata=footer.metadata, read_dictionary=as_dict) if as_dict else footer
    if pf.metadata.num_rows != int(meta.row_count):
        return None
    return pf, names, dict_columns, int(meta.first_row_id), meta


def _read(plans: list[tuple[Any, list[str], set[str], int, Any]], schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    for pf, names, dict_columns, first, meta in plans:
        offset = first
        for g in range(pf.metadata.num_row_groups):
            with reading_data_file(meta):   # a corrupt column chunk: DataFileError naming the file
                t = pf.read_row_group(g, columns=names)
                n = t.num_rows
                arrays = [t.column(i).combine_chunks() for i in range(len(names))]
                arrays = [a if pa.types.is_dictionary(a.type) == pa.types.is_dictionary(f.type) else
                          a.dictionary_encode() if pa.types.is_dictionary(f.type) else a.dictionary_decode()
                          for a, f in zip(arrays, schema, strict=False)]   # a file may differ from the first
                for a in arrays:   # indices read as they are stored: a corrupt one would only fail in the writer
                    if pa.types.is_dictionary(a.type):
                        a.validate(full=True)
            arrays.append(pa.array(np.arange(offset, offset + n, dtype=np.int64)))
            offset += n
            yield pa.RecordBatch.from_arrays(arrays, schema=schema)
