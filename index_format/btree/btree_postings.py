"""Row-id lists of btree data blocks (an entry's value): decode many at once, and encode version 1.

Version 1 (Paimon Java, pypaimon, pypaimon-rust's default): varint count (> 0), then each local row id as a
varlong, in the order written (ascending from bgix and Paimon's sorted writers). Version 2 (pypaimon-rust's
`btree-index.file-version` 2) starts with a tag byte: 0 one varlong id; 1 varint count (≥ 2), the first id, then
positive varlong deltas; 2 a portable 64-bit roaring bitmap. Imports numpy, pyroaring and index_format.{bitmaps,
btree.btree_varints,errors}.
"""
from __future__ import annotations

import numpy as np

from index_format import bitmaps
from index_format.btree.btree_varints import INT_BYTES, read_varints_at, varint_stream
from index_format.btree.sst_blocks import SstBlock
from index_format.errors import CorruptFileError

__all__ = ["gather_rows"]

_V2_SINGLE, _V2_DELTA, _V2_ROARING = 0, 1, 2
_MAX_ROW_ID = (1 << 63) - 1


def gather_rows(blk: SstBlock, idx: np.ndarray, version: int, *, path: str | None, block: str
                ) -> tuple[np.ndarray, np.ndarray]:
    """(row ids of entries `idx` of `blk` back to back as uint64, row count per entry).

    Raises:
        CorruptFileError: a malformed list (bad count, a list ending inside a varint, trailing bytes).
    """
    if not len(idx):
        return np.zeros(0, dtype=np.uint64), np.zeros(0, dtype=np.int64)
    if version == 1:
        return _gather_v1(blk, idx, path=path, block=block)
    ids: list[np.ndarray] = []
    for i in idx.tolist():
        ids.append(_decode_v2(blk.raw, int(blk.val_start[i]), int(blk.val_len[i]), path=path, block=block))
    counts = np.fromiter((len(a) for a in ids), dtype=np.int64, count=len(ids))
    return np.concatenate(ids), counts


def _gather_v1(blk: SstBlock, idx: np.ndarray, *, path: str | None, block: str) -> tuple[np.ndarray, np.ndarray]:
    vs = blk.val_start[idx]
    vl = blk.val_len[idx]
    if bool((vl < 2).any()):
        raise CorruptFileError("row-id list shorter than 2 bytes", path=path, block=block)
    cnt, cvl = read_varints_at(blk.data, vs, INT_BYTES, path=path, block=block)
    counts = cnt.astype(np.int64)
    start = vs + cvl
    length = vl - cvl
    if bool((counts <= 0).any()):
        raise CorruptFileError("row-id list with a count of 0", path=path, block=block)
    if bool((length < counts).any()) or bool((length > 9 * counts).any()):
        raise CorruptFileError("row-id list length disagrees with its count", path=path, block=block)
    n = len(idx)
    if n == 1:
        s = int(start[0])
        buf = blk.data[s:s + int(length[0])]
        region = np.zeros(1, dtype=np.int64)
    else:
        region = np.zeros(n, dtype=np.int64)
        np.cumsum(length[:-1], out=region[1:])
        if bool((start[1:] - start[:-1] == length[:-1]).all()):   # never: keys sit between lists
            buf = blk.data[int(start[0]):int(start[-1] + length[-1])]
        else:
            gidx = np.arange(int(region[-1] + length[-1]), dtype=np.int64) + np.repeat(start - region, length)
            buf = blk.data[gidx]
    last = buf < 0x80
    if not bool(last[region + length - 1].all()) or bool(
            (np.add.reduceat(last.astype(np.int64), region) != counts).any()):
        raise CorruptFileError("row-id list does not hold exactly its count of varints", path=path, block=block)
    return varint_stream(buf, path=path, block=block), counts


def _decode_v2(raw: bytes, start: int, length: int, *, path: str | None, block: str) -> np.ndarray:
    if length < 2:
        raise CorruptFileError("version-2 row-id list shorter than 2 bytes", path=path, block=block)
    tag = raw[start]
    body = np.frombuffer(raw, dtype=np.uint8, count=length - 1, offset=start + 1)
    if tag == _V2_SINGLE:
        vals = varint_stream(body, path=path, block=block)
        if len(vals) != 1:
            raise CorruptFileError("version-2 single row id has trailing bytes", path=path, block=block)
        return vals
    if tag == _V2_DELTA:
        cnt, cvl = read_varints_at(body, np.zeros(1, dtype=np.int64), INT_BYTES, path=path, block=block)
        vals = varint_stream(body[int(cvl[0]):], path=path, block=block)
        if int(cnt[0]) < 2 or len(vals) != int(cnt[0]):
            raise CorruptFileError("version-2 delta list length disagrees with its count", path=path, block=block)
        if bool((vals[1:] == 0).any()):
            raise CorruptFileError("version-2 delta of 0", path=path, block=block)
        out = np.cumsum(vals, dtype=np.uint64)
        if int(out[-1]) > _MAX_ROW_ID or bool((out[1:] <= out[:-1]).any()):   # a wrap shows as a step down
            raise CorruptFileError("version-2 delta list overflows", path=path, block=block)
        return out
    if tag == _V2_ROARING:
        bm = bitmaps.deserialize(raw[start + 1:start + length], path=path, block=block)
        if not len(bm):
            raise CorruptFileError("version-2 empty roaring row-id list", path=path, block=block)
        return np.frombuffer(bm.to_array(), dtype=np.uint64)
    raise CorruptFileError(f"unknown version-2 row-id list tag {tag}", path=path, block=block)
