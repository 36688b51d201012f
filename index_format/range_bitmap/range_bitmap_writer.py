"""Writes a range-bitmap payload byte-identical to Paimon's `RangeBitmapFileIndex` writer (spec 2.1).

Two entry points: from a column of values (codes computed with numpy: distinct keys in Java order and a
code per row), and from codes that a caller already has (a sidecar derived from a bitmap index file: key
→ rows). Both share the header, dictionary (chunked_dictionary.py) and bit-slice (bsi.py) builders.
"""
from __future__ import annotations


import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from index_format.layout import BE_I32, RANGE_BITMAP_TOP
from index_format.options import parse_size
from index_format.range_bitmap.bsi import build_bsi
from index_format.range_bitmap.chunked_dictionary import build_dictionary
from index_format.range_bitmap.range_keys import (
    KeyColumn, check_supported, default_chunk_size, encode_column, fixed_key_bytes, ints_of_order,
)
from index_format.types import KeyType

VERSION = 1
MAX_ROWS = (1 << 31) - 1


def resolve_chunk_size(kt: KeyType, chunk_size: int | str | None) -> int:
    """Bytes of the `chunk-size` option: None → Paimon's default for the type; '16kb' etc. parsed."""
    if chunk_size is None:
        return default_chunk_size(kt)
    size = parse_size(chunk_size)
    if size > MAX_ROWS:
        raise ValueError(f"chunk-size {chunk_size!r} is above 2^31 - 1 bytes")
    return size


def write_range_bitmap(kt: KeyType, values: object, *, chunk_size: int | str | None = None) -> bytes:
    """Payload for `values` (pyarrow Array/ChunkedArray, numpy array or Python list; None = null), in row order."""
    check_supported(kt)
    size = resolve_chunk_size(kt, chunk_size)
    col = encode_column(kt, values)
    n = len(col.order)
    if n > MAX_ROWS:
        raise ValueError(f"{n} rows: range-bitmap row ids are 32-bit signed")
    present = col.order if col.valid is None else col.order[col.valid]
    uniq, inverse = dense_codes(present)
    if col.valid is None:
        codes = inverse
    else:
        codes = np.full(n, -1, dtype=np.int64)
        codes[col.valid] = inverse
    if col.strings is not None:
        sorted_keys = KeyColumn(uniq, None, None, col.strings)   # ranks are already 0..card-1 in order
    else:
        sorted_keys = KeyColumn(uniq, None, ints_of_order(kt, uniq), None)
    return _assemble(kt, sorted_keys, codes, n, size)


def dense_codes(order: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(sorted distinct values, index of each entry among them) of an int64 array.

    A counting pass when the values span a small range, else a hash encode (pyarrow) and a sort of the
    distinct values only: both avoid sorting every row like np.unique(return_inverse=True) does.
    """
    n = len(order)
    if n == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    lo, hi = int(order.min()), int(order.max())
    if hi - lo < max(4 * n, 1 << 20):
        offsets = order - lo
        seen = np.zeros(hi - lo + 1, dtype=bool)
        seen[offsets] = True
        distinct = np.flatnonzero(seen)
        rank = np.cumsum(seen, dtype=np.int64) - 1
        return distinct + lo, rank[offsets]
    enc = pc.dictionary_encode(pa.array(order, type=pa.int64()))
    dictionary = enc.dictionary.to_numpy()
    sort = np.argsort(dictionary, kind="stable")
    rank = np.empty(len(sort), dtype=np.int64)
    rank[sort] = np.arange(len(sort), dtype=np.int64)
    return dictionary[sort], rank[enc.indices.to_numpy()]


def write_from_codes(kt: KeyType, sorted_keys: object, codes: np.ndarray, row_count: int, *,
                     chunk_size: int | str | None = None) -> bytes:
    """Payload from distinct keys and a code per row.

    `sorted_keys`: the distinct non-null keys in Java key order (strictly increasing), as canonical Python
    values (str, int, float, bool, Decimal, date, time, datetime — what `decode_key` returns), or as a
    pyarrow Array / numpy array of those. `codes`: int array of `row_count` entries, the index into
    `sorted_keys` of each row's key, -1 for null.
    """
    check_supported(kt)
    size = resolve_chunk_size(kt, chunk_size)
    codes = np.asarray(codes)
    if codes.ndim != 1 or len(codes) != row_count:
        raise ValueError(f"codes has shape {codes.shape}, expected ({row_count},)")
    if row_count > MAX_ROWS:
        raise ValueError(f"{row_count} rows: range-bitmap row ids are 32-bit signed")
    if codes.dtype.kind not in "iu":
        raise ValueError(f"codes must be integers, got {codes.dtype}")
    col = encode_column(kt, sorted_keys)
    card = len(col.order)
    if col.valid is not None:
        raise ValueError("sorted_keys contains a null")
    if card > 1:
        if col.strings is not None:
            ok = bool(np.all(col.order == np.arange(card)))
        else:
            ok = bool(np.all(col.order[1:] > col.order[:-1]))
        if not ok:
            raise ValueError("sorted_keys are not strictly increasing in Java key order")
    if row_count:
        lo, hi = int(codes.min()), int(codes.max())
        if lo < -1 or hi >= card:
            raise ValueError(f"codes must lie in -1..{card - 1}, got {lo}..{hi}")
    return _assemble(kt, col, codes, row_count, size)


def _assemble(kt: KeyType, keys: KeyColumn, codes: np.ndarray, row_count: int, chunk_size: int) -> bytes:
    card = len(keys.order)
    dictionary = build_dictionary(kt, keys.ints, keys.strings, chunk_size)
    bsi = build_bsi(codes, card)
    if card:
        if keys.strings is not None:
            lo: bytes = keys.strings[0].as_py()   # binary keys
            hi: bytes = keys.strings[card - 1].as_py()
            minmax = BE_I32.pack(len(lo)) + lo + BE_I32.pack(len(hi)) + hi
        else:
            assert keys.ints is not None
            minmax = fixed_key_bytes(kt, keys.ints[[0, card - 1]])
    else:
        minmax = b""
    header = RANGE_BITMAP_TOP.pack(VERSION, row_count, card) + minmax + BE_I32.pack(len(dictionary))
    return BE_I32.pack(len(header)) + header + dictionary + bsi


__all__ = ["resolve_chunk_size", "write_from_codes", "write_range_bitmap"]
