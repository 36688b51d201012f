"""A range sidecar built together with its bitmap index file (the fast path of a bgix build).

The global index writer says which input rows went into each file it wrote (FileRows: input positions and
local row ids, ordered by key, with the positions where a new key starts). The sidecar is then built from
codes: only the file's distinct keys are encoded (Java order, spec 2.2), each row takes its key's code, and
every row of the range the file does not hold (other files' rows, null keys) stays null. Nothing is sorted
or hashed per row. Imports the range-bitmap writer and key encoding; never the bitmap reader.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from index_format import range_bitmap
from index_format.global_index.writer import FileRows
from index_format.key_arrays import to_arrow_array
from index_format.range_bitmap.range_bitmap_writer import dense_codes
from index_format.range_bitmap.range_keys import encode_column
from index_format.types import KeyType

# Range-bitmap row ids are 32-bit signed (Java int).
MAX_ROWS = 2**31 - 1


def sidecar_possible(kt: KeyType, row_count: int) -> bool:
    """Can a range of `row_count` rows of this type have a sidecar (its type, and ids below 2^31)?"""
    return range_bitmap.supports(kt) and 0 <= row_count <= MAX_ROWS


def build_sidecar(kt: KeyType, keys: object, rows: FileRows, row_count: int, *,
                  chunk_size: int | str | None = None) -> bytes | None:
    """The range-bitmap payload holding the rows of one written index file (None if the type or size cannot).

    keys: the writer's input keys (the array `rows.rows` indexes); row_count: rows of the file's row range
    (range_end - range_start + 1), every local id lies below it.
    Raises ValueError when a row id lies outside [0, row_count).
    """
    if not sidecar_possible(kt, row_count):
        return None
    n = len(rows.rows)
    codes = np.full(row_count, -1, dtype=np.int32)
    if n == 0:
        return range_bitmap.write_from_codes(kt, [], codes, row_count, chunk_size=chunk_size)
    rids = rows.row_ids
    if int(rids.min()) < 0 or int(rids.max()) >= row_count:
        raise ValueError(f"row ids {int(rids.min())}..{int(rids.max())} lie outside the range's {row_count} rows")
    starts = np.asarray(rows.key_starts, dtype=np.int64)
    # one value per distinct key of the file (logical order), encoded as the range-bitmap orders keys
    distinct = to_arrow_array(kt, keys).take(pa.array(rows.rows[starts]))
    order = encode_column(kt, distinct).order
    # Java order of those keys; keys the range-bitmap cannot tell apart (beyond its precision) share a code
    _, code_of_key = dense_codes(order)
    sizes = np.diff(np.append(starts, n))
    codes[rids] = np.repeat(code_of_key.astype(np.int32), sizes)
    first_of_code = np.empty(int(code_of_key.max()) + 1, dtype=np.int64)
    first_of_code[code_of_key[::-1]] = np.arange(len(code_of_key) - 1, -1, -1, dtype=np.int64)
    sorted_keys = distinct.take(pa.array(first_of_code))
    return range_bitmap.write_from_codes(kt, sorted_keys, codes, row_count, chunk_size=chunk_size)


__all__ = ["MAX_ROWS", "build_sidecar", "sidecar_possible"]
