"""Paimon's per-data-file indexes ("file index"): the container and the payloads it holds.

values: Java's internal form of a key · result: REMAIN / SKIP / row bitmaps · reader: the reader base with
Java's defaults · java_hash / java_hashmap: hash codes and java.util.HashMap iteration order (byte-exact
entry order) · bitmap: bitmap V1/V2 · bsi: bit-sliced index · bloom: bloom filter · range_bitmap: the
range-bitmap payload (the one implementation in index_format.range_bitmap) · container: FileIndexFormat
and Paimon's data-file index writer · formats: index-type name → writer and reader · evaluate: the one
predicate evaluation over bound predicate trees · detect: what kind of file some bytes are.
"""
from __future__ import annotations
