"""Paimon's range-bitmap index payload (spec 2) as a library: byte-identical writer and a lazy reader (re-exports only).

range_keys: type support and key encoding · chunked_dictionary: chunked dictionary · bsi: bit slices over
codes · range_bitmap_writer: payload from values or codes · range_bitmap_reader: predicates, top-k and exact
ranges.
"""
from __future__ import annotations

from index_format.range_bitmap.range_bitmap_reader import RangeBitmapReader
from index_format.range_bitmap.range_bitmap_writer import write_from_codes, write_range_bitmap
from index_format.range_bitmap.range_keys import decode_key, default_chunk_size, encode_key, supports

__all__ = ["RangeBitmapReader", "decode_key", "default_chunk_size", "encode_key", "supports",
           "write_from_codes", "write_range_bitmap"]
