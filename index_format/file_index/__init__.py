"""Paimon's per-data-file indexes ("file index"): the container and the payloads it holds.

values: Java's internal form of a key · result: REMAIN / SKIP / row bitmaps · payload_reader: the reader base
with Java's defaults · java_hash / java_hashmap: hash codes and java.util.HashMap iteration order (byte-exact
entry order) · bitmap_index (+ bitmap_index_meta: the V1/V2 heads): bitmap V1/V2 · bsi_index: bit-sliced index
· bloom: bloom filter · range_bitmap_index: the range-bitmap payload (the one implementation in
index_format.range_bitmap) · formats: index-type name → writer and reader · container: FileIndexFormat ·
data_file_index: Paimon's data-file index writer (table options → container) · schema: column types a
container is read with · file_predicate: the one predicate evaluation over predicate trees · query_text:
predicate + top-N text · detect: what kind of index file some bytes are.

Layering: the format modules import only index_format's shared pieces and range_bitmap; file_predicate and
query_text add index_format.predicate. Dynamic-bucket hash index files are in index_format.bucket_index.
"""
from __future__ import annotations
