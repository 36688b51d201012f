"""What kind of Paimon index file some bytes are, from the bytes alone.

Signatures, checked in this order: the file-index container's 8-byte magic at the start; the bitmap
global index's "BGIX" magic at the end of its 48-byte footer; the btree global index's magic 0x50425449 as a
little-endian int at the end of its 52-byte footer; the fm global index's container footer (64 bytes: its magic
"FMIX" big-endian in bytes 56–59, then the footer's CRC); a deletion-vector index file (version byte 1,
then a length and the 32-bit vector's big-endian magic or the 64-bit vector's little-endian one). A bare
index payload (bitmap, bsi, bloom-filter, range-bitmap) records neither its kind nor its column type, so
the caller names it. A dynamic-bucket hash index is a bare list of big-endian int32 hashes: it is the
fallback for lengths that are a multiple of 4, and is only a guess.
"""
from __future__ import annotations

from index_format.deletion_vectors.index_file import DV_VERSION, MAGIC_32, MAGIC_64
from index_format.fm.fm_format import CONTAINER_MAGIC as FM_MAGIC
from index_format.fm.fm_format import FOOTER_SIZE as FM_FOOTER_SIZE
from index_format.layout import BTREE_FOOTER_SIZE, BTREE_MAGIC, FOOTER_SIZE, MAGIC

__all__ = ["CONTAINER_MAGIC", "KINDS", "detect_kind"]

CONTAINER_MAGIC = 1493475289347502
KINDS = ("file-index-container", "global-bitmap-index", "global-btree-index", "global-fm-index",
         "deletion-vector-index", "payload", "bucket-hash-index")
_CONTAINER = CONTAINER_MAGIC.to_bytes(8, "big")
_GLOBAL = MAGIC.to_bytes(4, "big")
_BTREE = BTREE_MAGIC.to_bytes(4, "little")
_FM = FM_MAGIC.to_bytes(4, "big")
_DV = (MAGIC_32.to_bytes(4, "big"), MAGIC_64.to_bytes(4, "little"))


def detect_kind(head: bytes, tail: bytes, size: int, *, index_type: str | None = None) -> str | None:
    """One of KINDS, or None when nothing fits. `head`/`tail`: the file's first and last (up to) 64 bytes."""
    if head[:8] == _CONTAINER:
        return "file-index-container"
    if size >= FOOTER_SIZE and tail[-4:] == _GLOBAL:
        return "global-bitmap-index"
    if size >= BTREE_FOOTER_SIZE and tail[-4:] == _BTREE:
        return "global-btree-index"
    if size >= FM_FOOTER_SIZE and tail[-8:-4] == _FM:
        return "global-fm-index"
    if size >= 9 and head[0] == DV_VERSION and head[5:9] in _DV:
        return "deletion-vector-index"
    if index_type is not None:
        return "payload"
    if size % 4 == 0:
        return "bucket-hash-index"
    return None
