"""A range sidecar (Paimon's range-bitmap payload) derived from a bitmap global index file.

The bitmap file maps each key to its rows; the sidecar maps rows to dense codes in key order, so a range
of keys is answered with about log2(distinct) bitmap operations instead of one bitmap per key inside it.
Both hold the same rows with the same local ids (relative to the file's row-range start), so their answers
agree. Imports the global index reader and the range-bitmap writer; nothing else of the package.
"""
from __future__ import annotations

import numpy as np

from index_format import range_bitmap
from index_format.errors import CorruptFileError
from index_format.global_index.reader import IndexReader
from index_format.keys import deserialize_key

# Range-bitmap row ids are 32-bit signed (Java int).
MAX_ROWS = 2**31 - 1


def sidecar_supported(reader: IndexReader, row_count: int) -> bool:
    """Can the rows of this file live in a range-bitmap (its type, and ids below 2^31)?"""
    return range_bitmap.supports(reader.kt) and 0 <= row_count <= MAX_ROWS


def derive_sidecar(reader: IndexReader, row_count: int, *, chunk_size: int | str | None = None) -> bytes | None:
    """The range-bitmap payload holding the same rows as the bitmap index `reader` (None if unsupported).

    `row_count`: rows of the file's row range (range_end - range_start + 1); local ids lie below it.
    Raises:
        CorruptFileError: the bitmap file is corrupt, or holds a row id outside [0, row_count).
    """
    if not sidecar_supported(reader, row_count):
        return None
    kt = reader.kt
    codes = np.full(row_count, -1, dtype=np.int32)
    keys: list[object] = []
    for code, (key, rows) in enumerate(reader.key_rows()):
        if len(rows) and int(rows[-1]) >= row_count:
            raise CorruptFileError(f"row id {int(rows[-1])} lies outside the file's {row_count} rows",
                                   path=reader.path, block="bitmaps")
        codes[rows] = code
        keys.append(deserialize_key(kt, key))
    return range_bitmap.write_from_codes(kt, keys, codes, row_count, chunk_size=chunk_size)
