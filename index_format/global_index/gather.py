"""Bitmap gathering: many bitmaps of one file read with few reads, then OR-ed or counted in bulk.

Neighbouring bitmaps are fetched with one read; large batches are decoded vectorized (numpy).
Reads only through FileReads.
"""
from __future__ import annotations

import numpy as np
from pyroaring import BitMap, BitMap64, FrozenBitMap64

from index_format import bitmaps
from index_format.errors import CorruptFileError
from index_format.global_index.block_index import Locs
from index_format.global_index.reads import Decoded, FileReads, decode_piece
from index_format.layout import BITMAP64_ONE_BUCKET_HIGH0

# Bitmaps closer than this are fetched with one read (the gap is usually a dictionary block).
_MERGE_GAP = 64 * 1024
# From this many bitmaps on, decode them vectorized (numpy) instead of one call each.
_BULK_MIN = 64
# Bitmap bytes decoded vectorized at once (bounds the decoder's temporary memory).
_BULK_CHUNK = 32 * 1024 * 1024
_PREFIX = BITMAP64_ONE_BUCKET_HIGH0
# Unions of up to this many bitmaps go through the decoded-bitmap cache (when the reader has one); larger
# ones (wide ranges at high cardinality) decode vectorized and are not kept: the range sidecar answers those.
_CACHED_UNION_MAX = 4096


def gather(reads: FileReads, offs: np.ndarray, lens: np.ndarray) -> tuple[bytes, np.ndarray, np.ndarray, np.ndarray]:
    """Read the byte ranges (offs, lens) with one read per cluster (gaps ≤ _MERGE_GAP).

    Returns (buffer, position of each range in it, offs, lens), the ranges sorted by offset.
    """
    order = np.argsort(offs, kind="stable")
    offs, lens = offs[order], lens[order]
    ends = np.maximum.accumulate(offs + lens)
    cut = np.flatnonzero(offs[1:] - ends[:-1] > _MERGE_GAP) + 1
    s_first = np.concatenate(([0], cut))
    s_last = np.concatenate((cut, [len(offs)])) - 1
    starts, stops = offs[s_first], ends[s_last]
    pieces = [reads.read(int(a), int(b - a), f"bitmaps at offset {int(a)}")
              for a, b in zip(starts.tolist(), stops.tolist())]
    raw = pieces[0] if len(pieces) == 1 else b"".join(pieces)
    base = np.zeros(len(starts), dtype=np.int64)
    np.cumsum((stops - starts)[:-1], out=base[1:])
    span_of = np.repeat(np.arange(len(starts)), s_last - s_first + 1)
    rel = offs - starts[span_of] + base[span_of]
    return raw, rel, offs, lens


def union(reads: FileReads, locs: list[tuple[int, int]] | Locs) -> BitMap64:
    """OR of the bitmaps at `locs` ((offset, length) pairs or two arrays), neighbours read at once."""
    if isinstance(locs, tuple):
        offs, lens = locs
    else:
        if not locs:
            return BitMap64()
        if len(locs) == 1:
            return reads.bitmap_at(*locs[0])
        arr = np.array(locs, dtype=np.int64).reshape(-1, 2)
        offs, lens = arr[:, 0], arr[:, 1]
    if len(offs) == 0:
        return BitMap64()
    if len(offs) == 1:
        return reads.bitmap_at(int(offs[0]), int(lens[0]))
    small: list[BitMap] = []
    large: list[BitMap64] = []
    if reads.cache is not None and len(offs) <= _CACHED_UNION_MAX:
        offs, lens = _from_cache(reads, offs, lens, small, large)
        if len(offs):
            _decode_and_keep(reads, offs, lens, small, large)
        return _merge(small, large)
    reads.stats.bitmaps_read += len(offs)
    order = np.argsort(offs, kind="stable")
    offs, lens = offs[order], lens[order]
    # chunks of ≤ _BULK_CHUNK bytes bound the memory of the vectorized decode
    chunk_of = np.cumsum(lens) // _BULK_CHUNK
    cuts = [0, *(np.flatnonzero(chunk_of[1:] != chunk_of[:-1]) + 1).tolist(), len(offs)]
    for a, b in zip(cuts[:-1], cuts[1:]):
        _union_chunk(reads, offs[a:b], lens[a:b], small, large)
    return _merge(small, large)


def _merge(small: list[BitMap], large: list[BitMap64]) -> BitMap64:
    """One multi-way union of the 32-bit maps, converted once, then one of the 64-bit ones."""
    if small:
        merged = BitMap().union(*small)  # a mutable result even when the first map is a frozen cached one
        merged.run_optimize()
        large.append(BitMap64.deserialize(_PREFIX + merged.serialize()) if len(merged) else BitMap64())
    return bitmaps.union(large)


def _from_cache(reads: FileReads, offs: np.ndarray, lens: np.ndarray, small: list[BitMap],
                large: list[BitMap64]) -> tuple[np.ndarray, np.ndarray]:
    """Put the cached bitmaps of (offs, lens) in small/large; return the ones not cached."""
    missing: list[int] = []
    for i, off in enumerate(offs.tolist()):
        hit = reads.cached(off)
        if hit is None:
            missing.append(i)
        elif isinstance(hit, FrozenBitMap64):
            large.append(hit)  # type: ignore[arg-type]  # frozen: the same read API
        else:
            small.append(hit)  # type: ignore[arg-type]  # frozen: the same read API
    return offs[missing], lens[missing]


def _decode_and_keep(reads: FileReads, offs: np.ndarray, lens: np.ndarray, small: list[BitMap],
                     large: list[BitMap64]) -> None:
    """Read (neighbours at once) and decode the bitmaps one by one, keeping each in the cache."""
    reads.stats.bitmaps_read += len(offs)
    raw, rel, s_offs, s_lens = gather(reads, offs, lens)
    mv = memoryview(raw)
    for p, n, o in zip(rel.tolist(), s_lens.tolist(), s_offs.tolist()):
        bm = decode_piece(reads, mv[p:p + n], o)
        reads.keep(o, bm, n)
        (large if isinstance(bm, FrozenBitMap64) else small).append(bm)  # type: ignore[arg-type]  # frozen: same API


def _union_chunk(reads: FileReads, offs: np.ndarray, lens: np.ndarray, small: list[BitMap],
                 large: list[BitMap64]) -> None:
    """Decode the bitmaps (offs, lens): ids < 2^32 into `small` (32-bit), others into `large`."""
    raw, rel, offs, lens = gather(reads, offs, lens)
    if len(offs) >= _BULK_MIN:
        ids, rejected = bitmaps.decode_array_bitmaps(np.frombuffer(raw, dtype=np.uint8), rel, lens)
        if len(ids):
            small.append(bitmaps.bitmap_of_ids(ids))
        todo: list[int] | range = np.flatnonzero(rejected).tolist()
    else:
        todo = range(len(offs))
    if not len(todo):
        return
    mv = memoryview(raw)
    rel_l, len_l, off_l = rel.tolist(), lens.tolist(), offs.tolist()
    for k in todo:
        p, length, off = rel_l[k], len_l[k], off_l[k]
        piece = mv[p:p + length]
        if length > 12 and piece[:12] == _PREFIX:
            # ids < 2^32: the 32-bit map behind the 12-byte prefix unions faster (perf notes)
            try:
                small.append(BitMap.deserialize(piece[12:]))  # type: ignore[arg-type]  # pyroaring reads any buffer
            except Exception:
                raise CorruptFileError("malformed roaring bitmap", path=reads.path,
                                       block=f"bitmap at offset {off}", offset=off) from None
        else:
            large.append(bitmaps.deserialize(piece, path=reads.path, block=f"bitmap at offset {off}",
                                             offset=off))


def row_arrays(reads: FileReads, offs: np.ndarray, lens: np.ndarray) -> list[np.ndarray]:
    """The ids of each bitmap at (offs, lens) as uint64 arrays, in input order (neighbours read at once)."""
    order = np.argsort(offs, kind="stable")
    raw, rel, s_offs, s_lens = gather(reads, offs, lens)
    mv = memoryview(raw)
    out: list[np.ndarray] = [np.zeros(0, np.uint64)] * len(offs)
    for j, (p, n, o) in enumerate(zip(rel.tolist(), s_lens.tolist(), s_offs.tolist())):
        piece = mv[p:p + n]
        bm = decode_piece(reads, piece, o)
        ids = np.frombuffer(bm.to_array(), dtype=np.uint32 if not isinstance(bm, FrozenBitMap64) else np.uint64)
        out[int(order[j])] = ids.astype(np.uint64, copy=False)
    return out


def cardinalities(reads: FileReads, offs: np.ndarray, lens: np.ndarray) -> np.ndarray:
    """Row count of each bitmap at (offs, lens), in input order, from the container headers of all
    bitmaps at once (no decoding); bitmaps whose headers cannot be summed are decoded."""
    order = np.argsort(offs, kind="stable")
    raw, rel, s_offs, s_lens = gather(reads, offs, lens)
    cards, rejected = bitmaps.header_cardinalities(np.frombuffer(raw, dtype=np.uint8), rel, s_lens)
    if bool(rejected.any()):
        mv = memoryview(raw)
        for j in np.flatnonzero(rejected).tolist():
            p, n, o = int(rel[j]), int(s_lens[j]), int(s_offs[j])
            cards[j] = len(bitmaps.deserialize(mv[p:p + n], path=reads.path,
                                               block=f"bitmap at offset {o}", offset=o))
    counts = np.empty(len(offs), dtype=np.int64)
    counts[order] = cards
    return counts


def cardinalities_without(reads: FileReads, offs: np.ndarray, lens: np.ndarray, dead: BitMap64) -> np.ndarray:
    """Like cardinalities, but rows in `dead` (the file's local ids) are not counted: every bitmap is
    decoded (neighbours read at once)."""
    order = np.argsort(offs, kind="stable")
    raw, rel, s_offs, s_lens = gather(reads, offs, lens)
    cards = np.empty(len(s_offs), dtype=np.int64)
    mv = memoryview(raw)
    lo, hi = dead.min(), dead.max()
    for j, (p, n, o) in enumerate(zip(rel.tolist(), s_lens.tolist(), s_offs.tolist())):
        bm = bitmaps.deserialize(mv[p:p + n], path=reads.path, block=f"bitmap at offset {o}", offset=o)
        # most bitmaps lie wholly outside the dead ids' span: no set operation needed
        cards[j] = len(bm) if not bm or bm.max() < lo or bm.min() > hi else bm.difference_cardinality(dead)
    counts = np.empty(len(offs), dtype=np.int64)
    counts[order] = cards
    return counts


def decoded(reads: FileReads, offs: np.ndarray, lens: np.ndarray) -> list[Decoded]:
    """Each bitmap at (offs, lens) as the decoded-bitmap cache keeps it (32-bit when its ids fit), in input order:
    cached ones from the cache, the rest read (neighbours at once), decoded and kept."""
    out: list[Decoded | None] = [reads.cached(o) for o in offs.tolist()]
    missing = np.array([i for i, d in enumerate(out) if d is None], dtype=np.int64)
    if len(missing):
        m_offs, m_lens = offs[missing], lens[missing]
        order = np.argsort(m_offs, kind="stable")
        raw, rel, s_offs, s_lens = gather(reads, m_offs, m_lens)
        reads.stats.bitmaps_read += len(missing)
        mv = memoryview(raw)
        for j, (p, n, o) in enumerate(zip(rel.tolist(), s_lens.tolist(), s_offs.tolist())):
            d = decode_piece(reads, mv[p:p + n], o)
            reads.keep(o, d, n)
            out[int(missing[int(order[j])])] = d
    return [d for d in out if d is not None]
