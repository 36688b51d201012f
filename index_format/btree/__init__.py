"""Paimon's btree global index file format (an SST of key → row ids): lazy reader and Java-identical writer.

btree_footer: the 52-byte footer · sst_blocks: SST block bodies, tails and handles · btree_varints: vectorized
varints · btree_postings: row-id lists · btree_search: logical-order key search · btree_bloom: the optional
bloom filter · btree_reader: open_btree_index · btree_writer: write_btree_files / write_btree_bytes.
"""
from __future__ import annotations
