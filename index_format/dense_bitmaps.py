"""Every key's portable bitmap (spec §1) when the keys are few (16-bit codes) and the row ids strictly ascend
below 2^32, with rows sorted only inside each 65536-id container, never as a whole.

A bitmap's bytes are its containers, and a container holds one key's ids within one 65536-id block. So the
(key, row id) order a bitmap needs is, per block, one sort of 32-bit words `code << 16 | low 16 bits of the
id`: each run of equal codes in the sorted block is a container, its low bits already in order. Each
container is then written straight to its place in its key's bytes. Blocks are sorted and written in parts
(whole blocks each) on the worker threads; a block's sort stays in cache, which one global sort of millions
of rows does not. Keys whose run-optimized bitmap is not all array containers (spec §1: a container of more
than 4096 ids, or one Java turns into runs) are left to bitmaps.serialize_parts.

Imports numpy and index_format.{bitmaps,parallel} only.
"""
from __future__ import annotations

import sys
from bisect import bisect_right
from dataclasses import dataclass
from typing import Any

import numpy as np

from index_format.bitmaps import COOKIE_NO_RUNS, MAX_ARRAY, serialize_parts, splice_keys
from index_format.parallel import THREADS, map_parts

__all__ = ["KeyBitmaps", "key_bitmaps"]

_CODES = 1 << 16
# a part of the rows (whole blocks) per worker once there are this many rows per part
_PART_ROWS = 1 << 19
# blocks averaging fewer rows than this are sorted all at once (64-bit words led by the block number): a
# Python loop over thousands of tiny blocks would cost more than it saves
_LOOP_ROWS = 1024
_LITTLE = sys.byteorder == "little"
# rows handled at once by the row-level steps (whole blocks; a bigger block alone)
_CHUNK_ROWS = 1 << 16


@dataclass(frozen=True, slots=True)
class KeyBitmaps:
    """The bitmaps of every code that occurs, in code order."""

    codes: np.ndarray       # the distinct codes, ascending (int64)
    first_row: np.ndarray   # for each, the position of one of its rows in the input arrays
    data: np.ndarray        # every bitmap's bytes, concatenated (uint8)
    offsets: np.ndarray     # int64, len(codes) + 1: code i's bitmap is data[offsets[i]:offsets[i + 1]]


@dataclass(slots=True)
class _Part:
    """One part's rows sorted block by block, cut into containers ("segments"), and its per-code tallies."""

    words: np.ndarray       # uint32 code << 16 | low bits, sorted within each block
    seg_start: np.ndarray   # each container's first position in `words`
    seg_len: np.ndarray     # its id count
    seg_block: np.ndarray   # its block (the ids' high 16 bits)
    seg_chunks: list[int]   # the first container of each chunk of rows (see _sort_part), then their count
    order: np.ndarray       # the containers by code, then block (a stable sort of their codes)
    sorted_code: np.ndarray  # each container's code, in that order (int64)
    ncont: np.ndarray       # containers per code (length 65536)
    card: np.ndarray        # ids per code
    slow: np.ndarray        # codes with a container the vectorized encoder must not write
    first_id: np.ndarray    # each present code's smallest id in this part, at its code (0 elsewhere)


def key_bitmaps(codes: np.ndarray, rid: np.ndarray) -> KeyBitmaps:
    """The bitmap of every code in `codes` (uint16, one per row) over the rows' ids `rid` (int64, strictly
    ascending, every id < 2^32: the caller checks); bytes as BitMap64(ids).run_optimize().serialize()."""
    n = len(rid)
    if n == 0:
        return KeyBitmaps(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.uint8),
                          np.zeros(1, np.int64))
    top = int(rid[-1]) >> 16
    edges = np.searchsorted(rid, np.arange(top + 2, dtype=np.int64) << 16)
    blocks = np.flatnonzero(edges[1:] > edges[:-1])   # the blocks that hold rows
    starts = edges[blocks]
    k = min(THREADS, max(1, n // _PART_ROWS))
    cuts = sorted({0, len(blocks)} | {int(np.searchsorted(starts, n * i // k)) for i in range(1, k)})
    ranges = [(a, b) for a, b in zip(cuts[:-1], cuts[1:]) if b > a]

    def sort_part(ab: tuple[int, int]) -> _Part:
        a, b = ab
        return _sort_part(codes, rid, int(starts[a]), int(starts[b]) if b < len(blocks) else n,
                          blocks[a:b], starts[a:b])

    parts = map_parts(sort_part, ranges)
    ncont = np.add.reduce([p.ncont for p in parts])
    card = np.add.reduce([p.card for p in parts])
    present = np.flatnonzero(ncont)
    nk = len(present)
    words_per = 10 + 4 * ncont[present] + card[present]   # (20 + 8·containers + 2·ids) bytes
    base = np.zeros(nk + 1, dtype=np.int64)
    np.cumsum(words_per, out=base[1:])
    total = int(base[-1])
    it = np.int32 if total < (1 << 31) - 1 else np.int64   # narrower positions: less memory traffic
    w = np.empty(total, dtype="<u2")
    b = base[:-1]
    # 12-byte prefix (one bucket, high 0), the 32-bit cookie without runs, the container count
    for j, v in enumerate((1, 0, 0, 0, 0, 0, COOKIE_NO_RUNS, 0)):
        w[b + j] = v
    w[b + 8] = ncont[present] & 0xFFFF
    w[b + 9] = ncont[present] >> 16
    head = np.zeros(_CODES, dtype=np.int64)   # per code: the word after its 10-word header
    head[present] = b + 10
    cprev = np.cumsum([np.zeros(_CODES, np.int64)] + [p.ncont for p in parts[:-1]], axis=0)
    vprev = np.cumsum([np.zeros(_CODES, np.int64)] + [p.card for p in parts[:-1]], axis=0)
    map_parts(lambda i: _fill_part(w, parts[i], head, ncont, cprev[i], vprev[i], it), range(len(parts)))
    first_id = np.zeros(_CODES, dtype=np.int64)
    for p in reversed(parts):   # the earliest part holding a code has its smallest id
        first_id[np.flatnonzero(p.ncont)] = p.first_id[p.ncont > 0]
    first_row = np.searchsorted(rid, first_id[present])
    sizes = 2 * words_per
    data = w.view(np.uint8)
    slow_code = np.logical_or.reduce([p.slow for p in parts])
    slow = np.flatnonzero(slow_code[present])
    if len(slow):
        slow_bytes, slow_offs = serialize_parts([_slow_ids(p, slow_code, present[slow]) for p in parts])
        view, at = memoryview(slow_bytes), slow_offs.tolist()
        joined, sizes = splice_keys(data, sizes, slow, [view[at[j]:at[j + 1]] for j in range(len(slow))])
        data = np.frombuffer(joined, dtype=np.uint8)
    offsets = np.zeros(nk + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    return KeyBitmaps(present, first_row, data, offsets)


def _sort_part(codes: np.ndarray, rid: np.ndarray, lo: int, hi: int, blocks: np.ndarray,
               starts: np.ndarray) -> _Part:
    """Rows lo..hi (whole blocks: `blocks`, first rows `starts`) sorted per block and cut into containers.

    Row-level work runs a chunk of whole blocks (about _CHUNK_ROWS rows) at a time, so its temporaries stay
    small, in cache and in the same few pages instead of part-sized arrays each faulted in afresh.
    """
    n = hi - lo
    words = codes[lo:hi].astype(np.uint32)
    words <<= 16
    words |= rid[lo:hi].astype(np.uint16)   # the cast keeps an id's low 16 bits
    rel = (starts - lo).tolist() + [n]
    chunks = _chunks(rel)
    seg_starts, pair_list = [], []
    for i, j in chunks:
        a, b = rel[i], rel[j]
        piece = words[a:b]
        if (j - i) * _LOOP_ROWS <= b - a:
            for x, y in zip(rel[i:j], rel[i + 1:j + 1]):
                words[x:y].sort()
        else:   # many small blocks: one sort, of 64-bit words led by the block
            led = np.repeat(np.arange(j - i, dtype=np.uint64), np.diff(rel[i:j + 1]))
            led <<= 32
            led |= piece
            led.sort()
            piece[:] = led   # keeps the low 32 bits
        # each word's high half: a view of its upper two bytes where they come second (little-endian)
        code = piece.view(np.uint16)[1::2] if _LITTLE else (piece >> 16).astype(np.uint16)
        change = np.empty(b - a, dtype=bool)
        change[0] = True
        np.not_equal(code[1:], code[:-1], out=change[1:])
        change[np.array(rel[i:j]) - a] = True
        seg_starts.append(np.flatnonzero(change) + a)
        # two ids of one container side by side (a word one above the one before, same code): Java keeps an
        # array container of c ids in r runs only while c <= 2r + 1 (spec §1), like BitMap64
        near = np.flatnonzero((piece[1:] - piece[:-1]) == 1)
        if len(near):
            pair_list.append(near[~change[near + 1]] + a)
    seg_start = np.concatenate(seg_starts)
    seg_len = np.diff(seg_start, append=n)
    seg_code = words.view(np.uint16)[1::2][seg_start] if _LITTLE else (words[seg_start] >> 16).astype(np.uint16)
    seg_block = np.repeat(blocks.astype(np.uint16), np.diff(np.searchsorted(seg_start, rel)))
    # segment index where each chunk's rows begin (chunks start at a block, so at a container)
    seg_chunks = np.searchsorted(seg_start, [rel[i] for i, _ in chunks] + [n]).tolist()
    bad = seg_len > MAX_ARRAY
    pairs = np.concatenate(pair_list) if pair_list else np.zeros(0, np.int64)
    if len(pairs):   # few: only their containers are looked at
        seg, count = np.unique(np.searchsorted(seg_start, pairs, side="right") - 1, return_counts=True)
        bad[seg] |= 2 * count > seg_len[seg] + 1
    slow = np.zeros(_CODES, dtype=bool)
    slow[seg_code[bad]] = True
    ncont = np.bincount(seg_code, minlength=_CODES)
    card = np.bincount(seg_code, weights=seg_len, minlength=_CODES).astype(np.int64)
    order = np.argsort(seg_code, kind="stable")
    sorted_code = seg_code[order].astype(np.int64)
    # each code's first container in this part: its smallest ids
    first_seg = order[(np.cumsum(ncont) - ncont)[ncont > 0]]
    first_id = np.zeros(_CODES, dtype=np.int64)
    first_id[ncont > 0] = (seg_block[first_seg].astype(np.int64) << 16) | (words[seg_start[first_seg]] & 0xFFFF)
    return _Part(words, seg_start, seg_len, seg_block, seg_chunks, order, sorted_code, ncont, card, slow,
                 first_id)


def _chunks(rel: list[int]) -> list[tuple[int, int]]:
    """Runs of whole blocks (block indices i..j) of about _CHUNK_ROWS rows; `rel`: block starts, then the end."""
    out, i = [], 0
    nb = len(rel) - 1
    while i < nb:
        j = max(i + 1, bisect_right(rel, rel[i] + _CHUNK_ROWS, i + 1, nb + 1) - 1)
        out.append((i, j))
        i = j
    return out


def _fill_part(w: np.ndarray, p: _Part, head: np.ndarray, ncont: np.ndarray, cprev: np.ndarray,
               vprev: np.ndarray, it: type[np.signedinteger[Any]]) -> None:
    """Write one part's container headers, offsets and low 16 bits into every key's words; cprev / vprev:
    per code, its containers / ids in the parts before."""
    o, sc = p.order, p.sorted_code
    sl = p.seg_len[o]
    before = np.cumsum(sl)
    before -= sl                        # ids of the earlier containers in this part
    # per code: where its containers' headers start (after the earlier parts'), and its ids before this part
    # less this part's earlier codes' (so that `before` + it counts the key's own ids before a container)
    head_at = head + 2 * (cprev - (np.cumsum(p.ncont) - p.ncont))
    ids_at = vprev - (np.cumsum(p.card) - p.card)
    hw = head_at[sc]
    hw += np.arange(0, 2 * len(o), 2, dtype=np.int64)   # (block, ids - 1) header words
    w[hw] = p.seg_block[o]
    w[hw + 1] = sl - 1
    hw += (2 * ncont)[sc]               # u32 offset words: 8 + 8·containers + 2·(the key's ids before) bytes
    off = (8 + 8 * ncont + 2 * ids_at)[sc]
    off += 2 * before
    w[hw] = off & 0xFFFF
    w[hw + 1] = off >> 16
    # every id's low 16 bits, at its container's first value word plus its place in the container
    first = (head + 4 * ncont + ids_at)[sc]
    first += before
    first -= p.seg_start[o]
    shift = np.empty(len(o), dtype=it)
    shift[o] = first
    for a, b in zip(p.seg_chunks[:-1], p.seg_chunks[1:]):   # chunk by chunk: small temporaries (see _sort_part)
        e0 = int(p.seg_start[a])
        e1 = int(p.seg_start[b]) if b < len(o) else len(p.words)
        # destination of row e: e + its container's shift, as a running sum of steps (1 inside a container;
        # at a container's first row, also the change of shift): several times faster than np.repeat
        dst = np.ones(e1 - e0, dtype=it)
        dst[p.seg_start[a + 1:b] - e0] += np.diff(shift[a:b])
        dst[0] = e0 + shift[a]
        np.cumsum(dst, out=dst)
        w[dst] = p.words[e0:e1]   # the assignment keeps each word's low 16 bits


def _slow_ids(p: _Part, slow_code: np.ndarray, slow_codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(ids, bounds) of the slow codes' containers in this part, code by code (serialize_parts' part form)."""
    sel = np.flatnonzero(slow_code[p.sorted_code])
    segs = p.order[sel]
    lens = p.seg_len[segs]
    start = np.zeros(len(segs) + 1, dtype=np.int64)
    np.cumsum(lens, out=start[1:])
    pos = np.repeat(p.seg_start[segs] - start[:-1], lens) + np.arange(int(start[-1]), dtype=np.int64)
    ids = (np.repeat(p.seg_block[segs].astype(np.int64), lens) << 16) | (p.words[pos] & 0xFFFF)
    bounds = np.zeros(len(slow_codes) + 1, dtype=np.int64)
    np.cumsum(p.card[slow_codes], out=bounds[1:])
    return ids, bounds
