"""Row-id bitmaps in Paimon's portable 64-bit Roaring form (spec §1): build, serialize, decode, union.

Imports pyroaring, numpy and index_format.{layout,errors} only.
"""
from __future__ import annotations

from array import array
from collections.abc import Iterable, Sequence

import numpy as np
from pyroaring import BitMap, BitMap64

from index_format.errors import CorruptFileError
from index_format.layout import BITMAP64_ONE_BUCKET_HIGH0


def ids_array(sorted_ids: np.ndarray) -> array:
    """array('Q') of ids without a Python loop (BitMap64's fast construction path)."""
    return array("Q", sorted_ids.astype("<u8", copy=False).tobytes())


def serialize_ids(ids: Sequence[int] | array) -> bytes:
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


def serialize_groups(rid: np.ndarray, bounds: np.ndarray) -> tuple[bytes, np.ndarray]:
    """Every key's run-optimized portable bitmap (spec §1), concatenated, with int64 offsets.

    Java run-optimizes like pyroaring's BitMap64. The 32-bit BitMap builds ~2.6× faster and, for ids
    < 2^32, serializes to the same bytes behind a 12-byte prefix — except that its run_optimize turns
    an array container of cardinality 2·runs + 1 into runs where Java keeps the array. Such keys, keys
    with duplicate ids, ids ≥ 2^32 or containers over 4096 ids use BitMap64 (found vectorized).
    """
    nk = len(bounds) - 1
    n = len(rid)
    if nk == 0:
        return b"", np.zeros(1, dtype=np.int64)
    card = np.diff(bounds)
    need64 = np.zeros(nk, dtype=bool)
    if n > 1:
        step = rid[1:] - rid[:-1]
        inner = np.ones(n - 1, dtype=bool)
        inner[bounds[1:-1] - 1] = False  # steps across key boundaries do not count
        dup_rows = np.flatnonzero((step <= 0) & inner)
        need64[np.searchsorted(bounds, dup_rows, side="right") - 1] = True
        # only keys with two consecutive ids (a run) or > 4096 ids can hit the differing rule
        run_rows = np.flatnonzero((step == 1) & inner)
        cand = np.zeros(nk, dtype=bool)
        cand[np.searchsorted(bounds, run_rows, side="right") - 1] = True
        cand |= card > 4096
        cand &= ~need64
        ck = np.flatnonzero(cand)
        if len(ck):
            lens = card[ck]
            sub_bounds = np.zeros(len(ck) + 1, dtype=np.int64)
            np.cumsum(lens, out=sub_bounds[1:])
            rows = np.repeat(bounds[ck] - sub_bounds[:-1], lens) + np.arange(int(sub_bounds[-1]))
            need64[ck] = _java_differs(rid[rows], sub_bounds)
    if n and int(rid.max()) >= (1 << 32):
        need64[np.searchsorted(bounds, np.flatnonzero(rid >= (1 << 32)), side="right") - 1] = True
    out: list[bytes] = []
    append = out.append
    bl = bounds.tolist()
    ids32 = array("I", rid.astype("<u4").tobytes()) if not bool(need64.all()) else None
    ids64 = array("Q", rid.astype("<u8", copy=False).tobytes()) if bool(need64.any()) else None
    prefix = BITMAP64_ONE_BUCKET_HIGH0
    for g, use64 in enumerate(need64.tolist()):
        if use64:
            bm64 = BitMap64(ids64[bl[g]:bl[g + 1]])  # type: ignore[index]
            bm64.run_optimize()
            append(bm64.serialize())
        else:
            bm = BitMap(ids32[bl[g]:bl[g + 1]])  # type: ignore[index]
            bm.run_optimize()
            append(prefix + bm.serialize())
    offs = np.zeros(nk + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, out), dtype=np.int64, count=nk), out=offs[1:])
    return b"".join(out), offs


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
        return BitMap64.deserialize(data)
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


def shift(bm: BitMap64, offset: int) -> BitMap64:
    """Move local row ids to global ones (spec §5.1)."""
    if offset == 0:
        return bm
    return BitMap64(bm.to_array().astype(np.uint64) + np.uint64(offset)) if len(bm) else BitMap64()


_COOKIE_NO_RUNS = 12346   # portable 32-bit format without run containers (spec §1)
_MAX_ARRAY = 4096         # larger containers are bitmap containers


def _u16(buf: np.ndarray, pos: np.ndarray) -> np.ndarray:
    return buf[pos].astype(np.int64) | (buf[pos + 1].astype(np.int64) << 8)


def _u32(buf: np.ndarray, pos: np.ndarray) -> np.ndarray:
    return _u16(buf, pos) | (_u16(buf, pos + 2) << 16)


def decode_array_bitmaps(buf: np.ndarray, offs: np.ndarray, lens: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Ids (uint32, unsorted) of many portable bitmaps at once, decoded with numpy (no per-bitmap call).

    Handles the common shape: ids < 2^32 (one bucket, high 0), no run containers, only array containers,
    layout exactly as written by Java/CRoaring. Returns (ids of every accepted bitmap, mask of bitmaps
    it did not accept); the caller decodes those one by one (which also reports malformed bytes).
    """
    nb = len(offs)
    rejected = np.ones(nb, dtype=bool)
    if nb == 0:
        return np.zeros(0, np.uint32), rejected
    offs = offs.astype(np.int64, copy=False)
    lens = lens.astype(np.int64, copy=False)
    ok = (lens >= 28) & (offs >= 0) & (offs + lens <= len(buf))
    cand = np.flatnonzero(ok)
    o = offs[cand]
    # 12-byte prefix: bucket count 1 (u64) and high key 0 (u32); then the 32-bit cookie and count
    good = ((_u32(buf, o) == 1) & (_u32(buf, o + 4) == 0) & (_u32(buf, o + 8) == 0)
            & (_u32(buf, o + 12) == _COOKIE_NO_RUNS))
    cand, o = cand[good], o[good]
    n = _u32(buf, o + 16)
    ln = lens[cand]
    good = (n >= 1) & (n <= 65536) & (20 + 8 * n <= ln)
    cand, o, n, ln = cand[good], o[good], n[good], ln[good]
    if len(cand) == 0:
        return np.zeros(0, np.uint32), rejected
    # per container: key, cardinality, data offset
    cstart = np.zeros(len(n) + 1, dtype=np.int64)
    np.cumsum(n, out=cstart[1:])
    total_c = int(cstart[-1])
    grp = np.repeat(np.arange(len(n)), n)
    i = np.arange(total_c, dtype=np.int64) - cstart[grp]
    hpos = o[grp] + 20 + 4 * i
    key = _u16(buf, hpos)
    card = _u16(buf, hpos + 2) + 1
    coff = _u32(buf, hpos + 4 * n[grp])
    # exact layout: data of container i follows the headers and the previous containers' values
    ccum = np.cumsum(card)
    before = ccum - card - (ccum - card)[cstart[grp]]
    bad_c = (card > _MAX_ARRAY) | (coff != 8 + 8 * n[grp] + 2 * before)
    if len(n) > 1:
        bad_c[1:] |= (key[1:] <= key[:-1]) & (grp[1:] == grp[:-1])  # keys strictly ascending
    tot_card = np.add.reduceat(card, cstart[:-1])
    bad_b = (np.add.reduceat(bad_c.astype(np.int64), cstart[:-1]) > 0) | (20 + 8 * n + 2 * tot_card != ln)
    keep_b = ~bad_b
    rejected[cand[keep_b]] = False
    keep_c = keep_b[grp]
    key, card = key[keep_c], card[keep_c]
    dpos = (o[grp] + 12 + coff)[keep_c]
    nv = int(card.sum())
    vstart = np.zeros(len(card), dtype=np.int64)
    np.cumsum(card[:-1], out=vstart[1:])
    vpos = np.repeat(dpos - 2 * vstart, card) + 2 * np.arange(nv, dtype=np.int64)
    ids = buf[vpos].astype(np.uint32) | (buf[vpos + 1].astype(np.uint32) << 8)
    ids |= np.repeat(key.astype(np.uint32) << 16, card)
    return ids, rejected
