"""Row-id bitmaps in Paimon's portable 64-bit Roaring form (spec §1): build, serialize, decode, union.

Imports pyroaring, numpy and index_format.{layout,errors} only.
"""
from __future__ import annotations

from array import array
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from pyroaring import AbstractBitMap64, BitMap, BitMap64

from index_format.errors import CorruptFileError
from index_format.layout import BITMAP64_ONE_BUCKET_HIGH0
from index_format.parallel import map_parts


def ids_array(sorted_ids: np.ndarray) -> array[int]:
    """array('Q') of ids without a Python loop (BitMap64's fast construction path)."""
    return array("Q", sorted_ids.astype("<u8", copy=False).tobytes())


def serialize_sorted(ids: np.ndarray, *, distinct: bool = False) -> bytes:
    """serialize_ids of an ascending int64 array; one add_range when the ids are contiguous. distinct: no id
    repeats (the caller knows), so the first and last id alone tell whether they are contiguous."""
    n = len(ids)
    if n > 1 and int(ids[-1]) - int(ids[0]) + 1 == n and (distinct or _consecutive(ids)):
        bm64 = BitMap64()
        bm64.add_range(int(ids[0]), int(ids[-1]) + 1)
        bm64.run_optimize()
        return bm64.serialize()
    return serialize_ids(ids_array(ids))


_STRIDE = 1 << 16


def _consecutive(ids: np.ndarray) -> bool:
    """Does every id follow the one before by exactly 1? Checked a cache-sized slice at a time: one pass over
    a whole 3M-row array would allocate and fault in a 24 MB difference array."""
    for a in range(0, len(ids) - 1, _STRIDE):
        piece = ids[a:a + _STRIDE + 1]
        if not bool(np.all(piece[1:] - piece[:-1] == 1)):
            return False
    return True


def serialize_ids(ids: Sequence[int] | array[int]) -> bytes:
    """Portable 64-bit bytes of a sorted id run, run-optimized like Java (spec §1).

    Always through BitMap64: its run_optimize matches Java's, the 32-bit BitMap's does not
    (a 3-id run stays an array container in Java).
    """
    bm64 = BitMap64(ids)
    bm64.run_optimize()
    return bm64.serialize()


def _java_differs(rid: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """Per key: does it have a container where 32-bit run_optimize differs from Java's (spec §1)?

    That is an array container of cardinality 2·runs + 1 (CRoaring: runs, Java: array), or more
    than 4096 ids (bitmap containers: left to BitMap64 to be safe).
    """
    nk = len(bounds) - 1
    n = len(rid)
    gstart = np.zeros(n, dtype=bool)
    gstart[bounds[:-1]] = True
    step = np.empty(n, dtype=np.int64)
    step[0] = 0
    np.subtract(rid[1:], rid[:-1], out=step[1:])
    cstart = gstart.copy()
    high = rid >> 16
    cstart[1:] |= high[1:] != high[:-1]
    c_idx = np.flatnonzero(cstart)
    c_card = np.diff(np.append(c_idx, n))
    cs_run = np.cumsum(cstart | (step != 1))
    c_nruns = cs_run[c_idx + c_card - 1] - cs_run[c_idx] + 1
    odd = (c_card == 2 * c_nruns + 1) | (c_card > 4096)
    out = np.zeros(nk, dtype=bool)
    out[np.searchsorted(bounds, c_idx[odd], side="right") - 1] = True
    return out


def _group_of(bounds: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """The group holding each position (empty groups allowed: bounds may repeat)."""
    return np.searchsorted(bounds, positions, side="right") - 1


def _part_flags(part: tuple[np.ndarray, np.ndarray], run_optimize: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """(keys this part's ids send to BitMap64, keys this part keeps off the vectorized encoder).

    BitMap64: duplicate ids or ids ≥ 2^32, or a container whose 32-bit run_optimize differs from Java's.
    Off the vectorized encoder also: keys with a run of consecutive ids (only when run-optimizing) or over
    4096 ids (they may become run or bitmap containers). Every rule is per container, and no container spans
    two parts.
    """
    rid, bounds = part
    nk, n = len(bounds) - 1, len(rid)
    card = np.diff(bounds)
    need64 = np.zeros(nk, dtype=bool)
    cand = card > 4096
    if n > 1:
        step = rid[1:] - rid[:-1]
        inner = np.ones(n - 1, dtype=bool)
        ends = bounds[1:-1]
        inner[ends[(ends > 0) & (ends < n)] - 1] = False  # steps across key boundaries do not count
        need64[_group_of(bounds, np.flatnonzero((step <= 0) & inner))] = True
        if run_optimize:
            cand[_group_of(bounds, np.flatnonzero((step == 1) & inner))] = True
    if n and int(rid.max()) >= (1 << 32):
        need64[_group_of(bounds, np.flatnonzero(rid >= (1 << 32)))] = True
    slow = need64 | cand
    ck = np.flatnonzero(cand & ~need64)
    if len(ck) and run_optimize:
        lens = card[ck]
        sub_bounds = np.zeros(len(ck) + 1, dtype=np.int64)
        np.cumsum(lens, out=sub_bounds[1:])
        rows = np.repeat(bounds[ck] - sub_bounds[:-1], lens) + np.arange(int(sub_bounds[-1]))
        need64[ck] = _java_differs(rid[rows], sub_bounds)
    return need64, slow


@dataclass(slots=True)
class _Containers:
    """One part's containers: start of each in the part's ids, and count per key."""

    c_row: np.ndarray
    ncont: np.ndarray


def _containers(part: tuple[np.ndarray, np.ndarray]) -> _Containers:
    rid, bounds = part
    n = len(rid)
    if n == 0:
        return _Containers(np.zeros(0, dtype=np.int64), np.zeros(len(bounds) - 1, dtype=np.int64))
    high = (rid >> 16).astype(np.uint16)  # truncated above 2^32: such keys are BitMap64's (_part_flags)
    cst = np.empty(n, dtype=bool)
    cst[0] = True
    np.not_equal(high[1:], high[:-1], out=cst[1:])
    starts = bounds[:-1]
    cst[starts[starts < n]] = True
    c_row = np.flatnonzero(cst)
    return _Containers(c_row, np.diff(np.searchsorted(c_row, bounds)))


def _fill_part(w: np.ndarray, part: tuple[np.ndarray, np.ndarray], cont: _Containers, b: np.ndarray,
               ncont: np.ndarray, cprev: np.ndarray, vprev: np.ndarray, it: type[np.signedinteger[Any]]) -> None:
    """Write one part's container headers, offsets and low 16 bits into every key's words (see
    _array_only_bytes); cprev / vprev: the key's containers / ids in earlier parts."""
    rid, bounds = part
    n = len(rid)
    if n == 0:
        return
    first = bounds[:-1]
    c_row, pn = cont.c_row, cont.ncont
    cfirst = np.zeros(len(pn), dtype=np.int64)
    np.cumsum(pn[:-1], out=cfirst[1:])
    # container i of key g: header words at b + 10 + 2i, offset words 2·ncont further on
    hw = np.repeat((b + 10 + 2 * (cprev - cfirst)).astype(it), pn)
    hw += np.arange(0, 2 * len(c_row), 2, dtype=it)
    w[hw] = (rid[c_row] >> 16).astype(np.uint16)
    c_card = np.diff(c_row, append=n)
    w[hw + 1] = c_card - 1
    hw += np.repeat((2 * ncont).astype(it), pn)
    # byte offset inside the 32-bit part: 8 + 8·ncont + 2·(ids of the key before this container)
    coff = np.repeat((8 + 8 * ncont + 2 * (vprev - first)).astype(it), pn)
    coff += 2 * c_row.astype(it, copy=False)
    w[hw] = coff & 0xFFFF
    w[hw + 1] = coff >> 16
    vw = np.repeat((b + 10 + 4 * ncont + vprev - first).astype(it), np.diff(bounds))
    vw += np.arange(n, dtype=it)
    w[vw] = rid.astype(np.uint16)  # the low 16 bits


def _array_only_bytes(parts: Sequence[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """Portable bytes (spec §1) of every key as if its ids were < 2^32, strictly ascending, with no two
    consecutive ids and at most 4096 ids: one bucket (high 0) holding only array containers, so Java's
    run_optimize keeps every container an array. All keys are encoded at once, as u16 words: prefix,
    cookie 12346, container count, (key, card - 1) headers, u32 offsets, then the low 16 bits; each part
    fills its own containers (on the thread pool). Returns (bytes as uint8, size of each key's bitmap).
    """
    conts = map_parts(_containers, parts)
    pn = np.stack([c.ncont for c in conts])                      # parts × keys
    pc = np.stack([np.diff(bounds) for _, bounds in parts])
    ncont, card = pn.sum(axis=0), pc.sum(axis=0)
    cprev, vprev = np.cumsum(pn, axis=0) - pn, np.cumsum(pc, axis=0) - pc
    nk = len(card)
    words_per = 10 + 4 * ncont + card          # (20 + 8n + 2·card) bytes
    base = np.zeros(nk + 1, dtype=np.int64)
    np.cumsum(words_per, out=base[1:])
    total = int(base[-1])
    # narrower index arrays: less memory traffic
    it = np.int32 if max(total, 2 * int(card.sum())) < (1 << 31) - 1 else np.int64
    w = np.empty(total, dtype="<u2")
    b = base[:-1]
    for k, v in enumerate((1, 0, 0, 0, 0, 0, COOKIE_NO_RUNS, 0)):
        w[b + k] = v
    w[b + 8] = ncont & 0xFFFF
    w[b + 9] = ncont >> 16
    map_parts(lambda i: _fill_part(w, parts[i], conts[i], b, ncont, cprev[i], vprev[i], it), range(len(parts)))
    return w.view(np.uint8), 2 * words_per


def serialize_groups(rid: np.ndarray, bounds: np.ndarray) -> tuple[bytes, np.ndarray]:
    """Every key's run-optimized portable bitmap (spec §1), concatenated, with int64 offsets; key g's ids
    are rid[bounds[g]:bounds[g + 1]], ascending."""
    return serialize_parts([(rid, bounds)])


def serialize_parts(parts: Sequence[tuple[np.ndarray, np.ndarray]], *,
                    run_optimize: bool = True) -> tuple[bytes, np.ndarray]:
    """serialize_groups of ids held in parts: [(rid, bounds)], every bounds over the same nk keys (a key may
    have no ids in some parts, but has some in one). Key g's ids are its ids in part 0, then part 1, …;
    parts hold ascending, disjoint ranges of whole containers (65536-aligned), so no container spans two
    parts. Parts are checked and encoded on the thread pool.

    Keys whose containers are all arrays without any run (the usual case) are encoded vectorized
    (`_array_only_bytes`). Java run-optimizes like pyroaring's BitMap64. The 32-bit BitMap builds ~2.6×
    faster and, for ids < 2^32, serializes to the same bytes behind a 12-byte prefix — except that its
    run_optimize turns an array container of cardinality 2·runs + 1 into runs where Java keeps the
    array. Such keys, keys with duplicate ids, ids ≥ 2^32 or containers over 4096 ids use BitMap64.
    run_optimize False: containers stay arrays (≤ 4096 ids) or bitsets, never runs, as pypaimon and
    pypaimon-rust write them (spec §10).
    """
    nk = len(parts[0][1]) - 1
    if nk == 0:
        return b"", np.zeros(1, dtype=np.int64)
    flags = map_parts(lambda part: _part_flags(part, run_optimize), parts)
    need64 = np.logical_or.reduce([f[0] for f in flags])
    fast = ~np.logical_or.reduce([f[1] for f in flags])
    sizes = np.zeros(nk, dtype=np.int64)
    fast_bytes = None
    if bool(fast.any()):
        # every key is encoded (no copy of the fast keys' rows); the other keys' bytes are skipped below
        fast_bytes, vec_sizes = _array_only_bytes(parts)
        sizes[fast] = vec_sizes[fast]
    slow = np.flatnonzero(~fast)
    slow_bytes: list[bytes] = []
    if len(slow):
        slow_bytes = _slow_bytes(parts, slow, need64, run_optimize)
        sizes[slow] = np.fromiter(map(len, slow_bytes), dtype=np.int64, count=len(slow))
    offs = np.zeros(nk + 1, dtype=np.int64)
    np.cumsum(sizes, out=offs[1:])
    if fast_bytes is None:
        return b"".join(slow_bytes), offs
    if not len(slow):
        return fast_bytes.tobytes(), offs
    return splice_keys(fast_bytes, vec_sizes, slow, slow_bytes)[0], offs


def splice_keys(fast: np.ndarray, fast_sizes: np.ndarray, slow: np.ndarray,
                slow_bytes: Sequence[bytes | memoryview]) -> tuple[bytes, np.ndarray]:
    """Keys' bytes back to back, with some keys' bytes replaced: `fast` (uint8) holds every key's bytes,
    fast_sizes[g] each; key slow[j] (ascending) gets slow_bytes[j] instead. Returns (bytes, sizes)."""
    nk = len(fast_sizes)
    # runs of consecutive kept keys are contiguous in fast
    fmv = memoryview(fast)  # type: ignore[arg-type]  # numpy's stub has ndarray.__buffer__ on Python 3.12+ only
    vpos = np.zeros(nk + 1, dtype=np.int64)
    np.cumsum(fast_sizes, out=vpos[1:])
    vpos_l = vpos.tolist()
    pieces: list[bytes | memoryview] = []
    prev = 0  # first key not yet emitted
    for j, g in enumerate(slow.tolist()):
        if g > prev:
            pieces.append(fmv[vpos_l[prev]:vpos_l[g]])
        pieces.append(slow_bytes[j])
        prev = g + 1
    if prev < nk:
        pieces.append(fmv[vpos_l[prev]:vpos_l[nk]])
    sizes = np.array(fast_sizes, dtype=np.int64)
    sizes[slow] = np.fromiter(map(len, slow_bytes), dtype=np.int64, count=len(slow))
    return b"".join(pieces), sizes


def _slow_bytes(parts: Sequence[tuple[np.ndarray, np.ndarray]], slow: np.ndarray,
                need64: np.ndarray, run_optimize: bool = True) -> list[bytes]:
    """Bytes of the keys off the vectorized encoder, one pyroaring bitmap each (ids of all parts)."""
    use32 = not bool(need64[slow].all())
    use64 = bool(need64[slow].any())
    held: list[tuple[list[int], array[int] | None, array[int] | None]] = []
    for rid, bounds in parts:
        # only the slow keys' ids are converted for pyroaring
        lens = np.diff(bounds)[slow]
        sub = np.zeros(len(slow) + 1, dtype=np.int64)
        np.cumsum(lens, out=sub[1:])
        ids = rid[np.repeat(bounds[slow] - sub[:-1], lens) + np.arange(int(sub[-1]))]
        held.append((sub.tolist(),
                     array("I", ids.astype("<u4").tobytes()) if use32 else None,
                     array("Q", ids.astype("<u8", copy=False).tobytes()) if use64 else None))
    prefix = BITMAP64_ONE_BUCKET_HIGH0
    out: list[bytes] = []
    for j, g in enumerate(slow.tolist()):
        wide = bool(need64[g])
        pieces: list[array[int]] = []
        for sl, ids32, ids64 in held:
            if sl[j + 1] > sl[j]:
                held_ids = ids64 if wide else ids32
                assert held_ids is not None   # use64 when any slow key is wide, use32 when any is not
                pieces.append(held_ids[sl[j]:sl[j + 1]])
        key_ids = pieces[0] if len(pieces) == 1 else array("Q" if wide else "I", b"".join(p.tobytes() for p in pieces))
        # pyroaring's constructors run-optimize unless told not to (optimize=False)
        if wide:
            bm64 = BitMap64(key_ids, optimize=run_optimize)
            if run_optimize:
                bm64.run_optimize()
            out.append(bm64.serialize())
        else:
            bm = BitMap(key_ids, optimize=run_optimize)
            if run_optimize:
                bm.run_optimize()
            out.append(prefix + bm.serialize())
    return out


def serialize(bm: BitMap64 | Iterable[int]) -> bytes:
    """Portable 64-bit bytes of any id set, run-optimized."""
    if not isinstance(bm, BitMap64):
        bm = BitMap64(bm)
    else:
        bm = bm.copy()
    bm.run_optimize()
    return bm.serialize()


def deserialize(data: bytes | memoryview, *, path: str | None = None, block: str | None = None,
                offset: int | None = None) -> BitMap64:
    """Decode a portable 64-bit bitmap; malformed bytes → CorruptFileError."""
    if len(data) < 8:
        raise CorruptFileError(f"bitmap of {len(data)} bytes is shorter than its 8-byte header",
                               path=path, block=block, offset=offset)
    try:
        return BitMap64.deserialize(data)  # type: ignore[arg-type]  # pyroaring's stub says bytes; any buffer does
    except Exception as exc:  # pyroaring raises ValueError (or others) on malformed input
        raise CorruptFileError(f"malformed roaring bitmap: {exc}", path=path, block=block,
                               offset=offset) from None


def union(maps: Sequence[BitMap64]) -> BitMap64:
    """OR of many bitmaps in one call (never a quadratic chain of copies)."""
    if not maps:
        return BitMap64()
    if len(maps) == 1:
        return maps[0]
    return BitMap64.union(*maps)


COOKIE_NO_RUNS = 12346   # portable 32-bit format without run containers (spec §1)
MAX_ARRAY = 4096         # larger containers are bitmap containers


class _Words:
    """Little-endian u16 reads at any byte position of a buffer, one gather each.

    Holds the buffer as u16 words twice (from byte 0 and from byte 1), so position p is word p >> 1
    of the view with p's parity.
    """

    def __init__(self, buf: np.ndarray) -> None:
        n = len(buf)
        even = np.frombuffer(buf[: n - n % 2], dtype="<u2") if n >= 2 else np.zeros(0, "<u2")
        odd = np.frombuffer(buf[1: 1 + (n - 1) - (n - 1) % 2], dtype="<u2") if n >= 3 else np.zeros(0, "<u2")
        self.words = np.concatenate((even, odd, np.zeros(2, "<u2")))
        self.half = len(even)

    def u16(self, pos: np.ndarray) -> np.ndarray:
        return self.words[(pos >> 1) + (pos & 1) * self.half]

    def u16i(self, pos: np.ndarray) -> npt.NDArray[np.int64]:
        return self.u16(pos).astype(np.int64)


def decode_array_bitmaps(buf: np.ndarray, offs: np.ndarray, lens: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Ids (uint32, unsorted) of many portable bitmaps at once, decoded with numpy (no per-bitmap call).

    Handles the common shape: ids < 2^32 (one bucket, high 0), no run containers, only array containers,
    sizes exactly as written by Java/CRoaring (containers follow the headers in order; like CRoaring's
    portable reader the offset headers are not consulted). Returns (ids of every accepted bitmap, mask
    of bitmaps it did not accept); the caller decodes those one by one (and reports malformed bytes).
    """
    nb = len(offs)
    rejected = np.ones(nb, dtype=bool)
    if nb == 0:
        return np.zeros(0, np.uint32), rejected
    offs = offs.astype(np.int64, copy=False)
    lens = lens.astype(np.int64, copy=False)
    w = _Words(buf)
    words = w.words
    ok = (lens >= 28) & (offs >= 0) & (offs + lens <= len(buf))
    cand = np.flatnonzero(ok)
    o = offs[cand]
    wb = (o >> 1) + (o & 1) * w.half    # word index of each bitmap's first byte
    # 12-byte prefix: bucket count 1 (u64) and high key 0 (u32); then the 32-bit cookie and count
    good = ((words[wb] == 1) & (words[wb + 1] == 0) & (words[wb + 2] == 0) & (words[wb + 3] == 0)
            & (words[wb + 4] == 0) & (words[wb + 5] == 0) & (words[wb + 6] == COOKIE_NO_RUNS)
            & (words[wb + 7] == 0) & (words[wb + 9] == 0))
    cand, wb = cand[good], wb[good]
    n = words[wb + 8].astype(np.int64)
    ln = lens[cand]
    good = (n >= 1) & (20 + 8 * n <= ln)
    cand, wb, n, ln = cand[good], wb[good], n[good], ln[good]
    if len(cand) == 0:
        return np.zeros(0, np.uint32), rejected
    # headers (key, card - 1) of every container: word 10 + 2i of its bitmap
    cstart = np.zeros(len(n) + 1, dtype=np.int64)
    np.cumsum(n, out=cstart[1:])
    hw = np.repeat(wb + 10 - 2 * cstart[:-1], n) + 2 * np.arange(int(cstart[-1]), dtype=np.int64)
    key = words[hw]
    card = words[hw + 1].astype(np.int64) + 1
    tot = np.add.reduceat(card, cstart[:-1])
    keep = (np.maximum.reduceat(card, cstart[:-1]) <= MAX_ARRAY) & (20 + 8 * n + 2 * tot == ln)
    if not bool(keep.all()):
        kc = np.repeat(keep, n)
        key, card = key[kc], card[kc]
        cand, wb, n, tot = cand[keep], wb[keep], n[keep], tot[keep]
    rejected[cand] = False
    # values: each bitmap's containers hold tot u16 values starting at word 10 + 4n
    vstart = np.zeros(len(tot) + 1, dtype=np.int64)
    np.cumsum(tot, out=vstart[1:])
    vw = np.repeat(wb + 10 + 4 * n - vstart[:-1], tot) + np.arange(int(vstart[-1]), dtype=np.int64)
    ids = words[vw].astype(np.uint32)
    ids |= np.repeat(key.astype(np.uint32) << 16, card)
    return ids, rejected


def header_cardinalities(buf: np.ndarray, offs: np.ndarray, lens: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Row counts of many portable bitmaps from their container headers, without decoding (spec §1).

    Covers one-bucket, high-0 bitmaps with either cookie; returns (counts, mask of bitmaps not
    covered — their counts are 0 and the caller decodes them).
    """
    nb = len(offs)
    cards = np.zeros(nb, dtype=np.int64)
    rejected = np.ones(nb, dtype=bool)
    if nb == 0:
        return cards, rejected
    offs = offs.astype(np.int64, copy=False)
    lens = lens.astype(np.int64, copy=False)
    w = _Words(buf)
    words = w.words
    cand = np.flatnonzero((lens >= 20) & (offs >= 0) & (offs + lens <= len(buf)))
    o = offs[cand]
    wb = (o >> 1) + (o & 1) * w.half
    good = ((words[wb] == 1) & (words[wb + 1] == 0) & (words[wb + 2] == 0) & (words[wb + 3] == 0)
            & (words[wb + 4] == 0) & (words[wb + 5] == 0))
    cand, wb = cand[good], wb[good]
    cookie = words[wb + 6].astype(np.int64)
    hi = words[wb + 7].astype(np.int64)
    no_runs = (cookie == COOKIE_NO_RUNS) & (hi == 0)
    runs = cookie == COOKIE_NO_RUNS + 1
    n = np.where(no_runs, words[wb + 8].astype(np.int64) | (words[wb + 9].astype(np.int64) << 16), hi + 1)
    # header start in bytes from the bitmap start: 20 (no runs) or 16 + run-flag bytes
    hstart = np.where(no_runs, 20, 16 + (n + 7) // 8)
    ok = (no_runs | runs) & (n >= 1) & (hstart + 4 * n <= lens[cand])
    cand, n, hstart = cand[ok], n[ok], hstart[ok]
    if len(cand) == 0:
        return cards, rejected
    cstart = np.zeros(len(n) + 1, dtype=np.int64)
    np.cumsum(n, out=cstart[1:])
    # byte position of each container's (card - 1) field: header start + 4i + 2
    cpos = np.repeat(offs[cand] + hstart + 2 - 4 * cstart[:-1], n) + 4 * np.arange(int(cstart[-1]), dtype=np.int64)
    cards[cand] = np.add.reduceat(w.u16i(cpos), cstart[:-1]) + n
    rejected[cand] = False
    return cards, rejected


def bitmap_of_ids(ids: np.ndarray) -> BitMap:
    """32-bit BitMap of unsorted, possibly repeated uint32 ids (dense sets via a mask, else a sort)."""
    if len(ids) == 0:
        return BitMap()
    top = int(ids.max())
    if top < 16 * len(ids) + (1 << 20):
        mask = np.zeros(top + 1, dtype=bool)
        mask[ids] = True
        ids = np.flatnonzero(mask).astype(np.uint32)
    else:
        ids = np.sort(ids)
    return BitMap(array("I", ids.tobytes()))


def to_32(bm: AbstractBitMap64) -> BitMap | None:
    """A 32-bit copy of `bm` when all its ids fit (it meets 32-bit maps without a conversion each), else None.
    Its portable bytes are one bucket of high key 0 followed by that 32-bit map (spec §1): copied container by
    container, never id by id (a filter of every row of a 10M-row file: 0.1 ms, not 120)."""
    if not bm:
        return BitMap()
    if bm.max() >= 1 << 32:
        return None
    data = bm.serialize()
    if not data.startswith(BITMAP64_ONE_BUCKET_HIGH0):   # not the portable form: convert id by id
        return BitMap(array("I", np.frombuffer(bm.to_array(), dtype=np.uint64).astype(np.uint32).tobytes()))
    return BitMap.deserialize(data[len(BITMAP64_ONE_BUCKET_HIGH0):])
