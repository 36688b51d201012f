"""Paimon's `GlobalIndexResultSerializer` wire form: the row ids of a global index answer as Paimon Java's scans take
them (`withGlobalIndexResult`) and its Spark and Flink reads ship them to tasks; encode version 2 unscored, decode
versions 1 and 2, scored or not.

Version 2, big-endian like Java's DataOutput: int version (2) · byte kind (0 unscored, 1 scored) · int length ·
that many bytes of the row ids as a portable 64-bit Roaring bitmap (run-optimized, spec §1) · int score count
(0 when unscored, else the id count) · one float per row id in ascending id order. Version 1 is the same without
the kind byte (a result with no scores is unscored). docs/format-notes.md has the Paimon sources.

Imports numpy, pyroaring and index_format.{bitmaps,errors,layout} only.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np
from pyroaring import BitMap64

from index_format import bitmaps
from index_format.errors import CorruptFileError, UnsupportedVersionError
from index_format.layout import BE_I32, GLOBAL_INDEX_RESULT_HEAD, GLOBAL_INDEX_RESULT_V1_HEAD

VERSION_1 = 1
VERSION_2 = 2
UNSCORED = 0
SCORED = 1
_BLOCK = "global index result"


@dataclass(frozen=True, slots=True)
class GlobalIndexResult:
    """A decoded result: the row ids and, for a scored result, one float32 score per id in ascending id order
    (the order Java writes them in); `scores` is None for an unscored one."""

    row_ids: BitMap64
    scores: np.ndarray | None = None


def encode(row_ids: BitMap64) -> bytes:
    """Version 2 bytes of an unscored result: what Paimon Java's serializer writes for the same ids held in the
    same containers (it run-optimizes its bitmap first; so does this, on a copy: `row_ids` is left as it is)."""
    body = bitmaps.serialize(row_ids)
    return b"".join((GLOBAL_INDEX_RESULT_HEAD.pack(VERSION_2, UNSCORED, len(body)), body, BE_I32.pack(0)))


def decode(data: bytes | memoryview) -> GlobalIndexResult:
    """A result Paimon Java's serializer wrote (version 1 or 2, scored or not). Bytes after the result, a bad
    kind, a length past the end, a score count that is not the id count → CorruptFileError; another version →
    UnsupportedVersionError. (Java's reader ignores trailing bytes of a stream; a whole body here must end.)"""
    view = memoryview(data).cast("B")
    if len(view) < BE_I32.size:
        raise CorruptFileError(f"{len(view)} bytes are shorter than the 4-byte version", block=_BLOCK)
    version = BE_I32.unpack_from(view)[0]
    if version == VERSION_2:
        _, kind, size = _unpack(GLOBAL_INDEX_RESULT_HEAD, view)
        if kind not in (UNSCORED, SCORED):
            raise CorruptFileError(f"result kind {kind} is neither 0 (unscored) nor 1 (scored)", block=_BLOCK,
                                   offset=4)
        at = GLOBAL_INDEX_RESULT_HEAD.size
    elif version == VERSION_1:
        _, size = _unpack(GLOBAL_INDEX_RESULT_V1_HEAD, view)
        kind = None   # version 1 tells the kind by the score count
        at = GLOBAL_INDEX_RESULT_V1_HEAD.size
    else:
        raise UnsupportedVersionError(f"version {version}: only 1 and 2 are known", block=_BLOCK, offset=0)
    if size < 0 or at + size + BE_I32.size > len(view):
        raise CorruptFileError(f"a bitmap of {size} bytes does not fit in {len(view)} bytes", block=_BLOCK,
                               offset=at - 4)
    row_ids = bitmaps.deserialize(view[at:at + size], block=f"{_BLOCK} row ids", offset=at)
    at += size
    count = BE_I32.unpack_from(view, at)[0]
    at += BE_I32.size
    if kind == UNSCORED or (kind is None and count == 0):
        if count != 0:
            raise CorruptFileError(f"an unscored result has {count} scores", block=_BLOCK, offset=at - 4)
        scores = None
    else:
        if count != len(row_ids):
            raise CorruptFileError(f"{count} scores for {len(row_ids)} row ids", block=_BLOCK, offset=at - 4)
        if at + 4 * count > len(view):
            raise CorruptFileError(f"{count} scores do not fit in {len(view) - at} bytes", block=_BLOCK, offset=at)
        scores = np.frombuffer(view, dtype=">f4", count=count, offset=at).astype(np.float32)
        at += 4 * count
    if at != len(view):
        raise CorruptFileError(f"{len(view) - at} bytes after the result", block=_BLOCK, offset=at)
    return GlobalIndexResult(row_ids, scores)


def _unpack(head: struct.Struct, view: memoryview) -> tuple[int, ...]:
    if len(view) < head.size:
        raise CorruptFileError(f"{len(view)} bytes are shorter than the {head.size}-byte head", block=_BLOCK)
    return head.unpack_from(view)
