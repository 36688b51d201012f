"""Bit-slice operations of the range-bitmap reader: result types, immutable caches, one-sweep ranges.

The reader keeps the EBM and slices decoded as FrozenBitMap64 and answers two-sided ranges with one sweep
over the slices (`BitSliceIndex.between`); these tests pin that every public bitmap result is a fresh,
mutable BitMap64, that queries never change the cached bitmaps, and that the one-sweep range and the
skipped final EBM intersection agree with a numpy evaluation, also on files whose slices hold rows the
EBM does not (Java ANDs with the EBM; so must we).
"""
from __future__ import annotations

import struct

import numpy as np
import pytest
from pyroaring import BitMap64, FrozenBitMap64

from index_format.layout import RANGE_BSI_HEAD
from index_format.range_bitmap import RangeBitmapReader, write_from_codes
from index_format.range_bitmap import bsi as bsi_mod
from index_format.types import parse_type

KT = parse_type("bigint")


def _payload(rows: int, card: int, null_rate: float, seed: int) -> tuple[bytes, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    keys = np.cumsum(rng.integers(1, 50, card, dtype=np.int64)) - 10 * card
    codes = rng.integers(0, card, rows, dtype=np.int64)
    codes[:card] = rng.permutation(card)
    rng.shuffle(codes)
    if null_rate:
        codes[rng.random(rows) < null_rate] = -1
    return write_from_codes(KT, keys, codes, rows), keys, codes


def _rows(mask: np.ndarray) -> BitMap64:
    return BitMap64(np.flatnonzero(mask).tolist())


def _cache_bytes(r: RangeBitmapReader) -> list[bytes]:
    b = r._slices()
    return [b.ebm().serialize()] + [sl.serialize() for sl in b.slices(0, b.slice_count)]


def _queries(r: RangeBitmapReader, keys: np.ndarray) -> list[BitMap64]:
    k = [int(x) for x in keys]
    lo, mid, hi = k[len(k) // 5], k[len(k) // 2], k[(4 * len(k)) // 5]
    return [
        r.eq(mid), r.not_eq(mid), r.isin([lo, hi]), r.not_in([lo, hi]),
        r.lt(mid), r.le(mid), r.gt(mid), r.ge(mid), r.between(lo, hi),
        r.range(lo, hi), r.range(lo, None), r.range(None, hi), r.range(None, None),
        r.range(lo, hi, low_inclusive=False, high_inclusive=False), r.range(k[0], k[-1]),
        r.is_null(), r.is_not_null(),
        r.topk(7, nulls_first=False, strict=True), r.bottomk(7, nulls_first=True, strict=False),
        r.topk(5, nulls_first=False, strict=True, found=BitMap64(range(0, 4000, 3))),
    ]


@pytest.mark.parametrize("null_rate", [0.0, 0.2])
def test_results_are_fresh_bitmap64_and_caches_never_change(null_rate: float) -> None:
    data, keys, _ = _payload(5000, 300, null_rate, seed=3)
    r = RangeBitmapReader(data, KT)
    first = _queries(r, keys)
    assert all(type(x) is BitMap64 for x in first), [type(x).__name__ for x in first]
    bsi = r._slices()
    assert type(bsi.ebm()) is FrozenBitMap64
    assert all(type(sl) is FrozenBitMap64 for sl in bsi.slices(0, bsi.slice_count))
    snapshot = _cache_bytes(r)
    expected = [BitMap64(x) for x in first]
    for x in first:          # callers may mutate what they get back
        x |= BitMap64(range(0, 6000, 2))
        x.add(10 ** 6)
    second = _queries(r, keys)
    assert second == expected
    assert _cache_bytes(r) == snapshot
    assert all(type(x) is BitMap64 for x in second)


@pytest.mark.parametrize("null_rate", [0.0, 0.3])
@pytest.mark.parametrize("card", [1, 2, 3, 17, 256, 1000, 4097])
def test_one_sweep_ranges_match_numpy(card: int, null_rate: float) -> None:
    rows = 20_000
    data, keys, codes = _payload(rows, card, null_rate, seed=card)
    r = RangeBitmapReader(data, KT)
    rng = np.random.default_rng(card + 1)
    pairs = [(0, 0), (0, card - 1), (card - 1, card - 1), (0, card // 2), (card // 2, card - 1)]
    pairs += [tuple(sorted(int(x) for x in rng.integers(0, card, 2))) for _ in range(40)]
    for first in rng.integers(0, card, 20):     # narrow ranges: low and high share their high bits
        pairs.append((int(first), min(card - 1, int(first) + int(rng.integers(0, 5)))))
    for first, last in pairs:
        want_mask = (codes >= first) & (codes <= last)
        want = _rows(want_mask)
        got = r.range(int(keys[first]), int(keys[last]))
        assert type(got) is BitMap64
        assert got == want, (first, last)
        assert r.count_range(int(keys[first]), int(keys[last])) == int(want_mask.sum()), (first, last)
        bsi = r._slices()
        assert bsi.between(first, last) == want
        assert bsi.between_count(first, last) == int(want_mask.sum())
        assert bsi.gt(first - 1) == _rows(codes > first - 1 if first else codes >= 0)
        assert bsi.gt_count(last) == int((codes > last).sum())
        assert bsi.eq(first) == _rows(codes == first)


def _bsi_bytes(ebm_rows: list[int], slice_rows: list[list[int]]) -> bytes:
    """A bit-slice index with arbitrary EBM and slices (same layout as build_bsi)."""
    ebm = bsi_mod._bitmap_bytes(np.array(sorted(ebm_rows), dtype=np.uint32))
    slices = [bsi_mod._bitmap_bytes(np.array(sorted(x), dtype=np.uint32)) for x in slice_rows]
    index = b"".join(struct.pack(">ii", sum(map(len, slices[:i])), len(sl)) for i, sl in enumerate(slices))
    header = RANGE_BSI_HEAD.pack(bsi_mod.VERSION, len(slices), len(ebm), 8 * len(slices)) + index
    return struct.pack(">i", len(header)) + header + ebm + b"".join(slices)


@pytest.mark.parametrize("stray", ["null-row", "past-last-row"])
def test_slice_bits_outside_the_ebm_are_ignored(stray: str) -> None:
    """Java ANDs every `gt` with the EBM; the reader skips that AND only when it is provably a no-op."""
    rows, card = 64, 16
    rng = np.random.default_rng(9)
    keys = np.arange(card, dtype=np.int64) * 10
    codes = rng.integers(0, card, rows, dtype=np.int64)
    codes[:card] = np.arange(card)
    if stray == "null-row":
        codes[40:44] = -1
    data = write_from_codes(KT, keys, codes, rows)
    hl = struct.unpack_from(">i", data, 0)[0]
    dict_len = struct.unpack_from(">i", data, hl)[0]
    bsi_at = 4 + hl + dict_len
    valid = np.flatnonzero(codes >= 0).tolist()
    extra = [40, 41, 42, 43] if stray == "null-row" else [rows + 3, rows + 100]
    slices = [[i for i in valid if (codes[i] >> b) & 1] + extra for b in range(4)]   # strays look like code 15
    r = RangeBitmapReader(data[:bsi_at] + _bsi_bytes(valid, slices), KT)
    for first in range(card):
        for last in range(first, card):
            want_mask = (codes >= first) & (codes <= last)
            assert r.range(int(keys[first]), int(keys[last])) == _rows(want_mask), (first, last)
            assert r.count_range(int(keys[first]), int(keys[last])) == int(want_mask.sum()), (first, last)
        assert r.gt(int(keys[first])) == _rows(codes > first)
        assert r.eq(int(keys[first])) == _rows(codes == first)
