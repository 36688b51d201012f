"""Dense word planes (range_bitmap/planes.py) and the BSI sweeps over them.

The conversions are checked against pyroaring on bitmaps with every container kind (array, bitset, run);
the sweeps against numpy on the codes, in each of the reader's three modes: roaring slices only, planes with
every result converted from words (also sparse ones), and the default choice.
"""
from __future__ import annotations

import numpy as np
import pytest
from pyroaring import BitMap64

from index_format.range_bitmap import RangeBitmapReader, planes, write_from_codes
from index_format.range_bitmap import bsi as bsi_mod
from index_format.types import parse_type

KT = parse_type("bigint")


def _bitmaps() -> list[BitMap64]:
    rng = np.random.default_rng(4)
    dense = BitMap64(np.flatnonzero(rng.random(300_000) < 0.5).tolist())
    sparse = BitMap64(np.unique(rng.integers(0, 300_000, 3_000)).tolist())
    runs = BitMap64(range(5, 140_000)) | BitMap64(range(200_000, 200_003))
    runs.run_optimize()
    edges = BitMap64([0, 63, 64, 65_535, 65_536, 4096 * 16 - 1, 262_143])
    exactly = BitMap64(range(65_536, 65_536 + 2 * 4096, 2))   # 4096 values: an array container
    over = BitMap64(range(131_072, 131_072 + 2 * 4097, 2))     # 4097 values: a bitset container
    mixed = dense - BitMap64(range(0, 150_000)) | sparse | runs | exactly | over
    return [BitMap64(), dense, sparse, runs, edges, exactly, over, mixed]


@pytest.mark.parametrize("index", range(8))
def test_words_round_trip_every_container_kind(index: int) -> None:
    bm = _bitmaps()[index]
    nwords = planes.word_count(300_000)
    words = planes.words_from_bitmap(bm, nwords)
    ids = np.flatnonzero(np.unpackbits(words.view(np.uint8), bitorder="little"))
    assert ids.tolist() == list(bm)
    assert planes.count(words) == len(bm)
    back = planes.bitmap_from_words(words)
    assert type(back) is BitMap64
    assert back == bm


def test_rows_past_the_planes_are_refused() -> None:
    with pytest.raises(ValueError, match="past"):
        planes.words_from_bitmap(BitMap64([planes.WORDS * 64]), planes.WORDS)


def _codes(rows: int, card: int, null_rate: float, order: str, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, card, rows, dtype=np.int64)
    codes[:card] = np.arange(card)
    if order == "random":
        rng.shuffle(codes)
    else:
        codes.sort()                               # clustered: run containers in every slice
    if null_rate:
        codes[rng.random(rows) < null_rate] = -1
    return codes


# (PLANES_MIN_FILL, DENSE_RESULT, PARALLEL_MIN_WORDS, code counts): roaring only; planes with every result
# converted from words, swept in parallel word ranges (2+ threads even on one core); counts from the
# cumulative code counts; the defaults without code counts (so counts come from sweeps)
MODES = {"roaring": (2.0, bsi_mod.DENSE_RESULT, bsi_mod.PARALLEL_MIN_WORDS, False),
         "planes-parallel-always-convert": (0.0, 1 << 62, planes.WORDS, False),
         "planes-code-counts": (0.0, bsi_mod.DENSE_RESULT, bsi_mod.PARALLEL_MIN_WORDS, True),
         "default": (bsi_mod.PLANES_MIN_FILL, bsi_mod.DENSE_RESULT, bsi_mod.PARALLEL_MIN_WORDS, False)}


@pytest.mark.parametrize("mode", sorted(MODES))
@pytest.mark.parametrize("order", ["random", "sorted"])
@pytest.mark.parametrize("null_rate", [0.0, 0.25])
def test_sweeps_match_numpy_in_every_mode(mode: str, order: str, null_rate: float,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    fill, dense_result, parallel, code_counts = MODES[mode]
    if code_counts:
        monkeypatch.setattr(bsi_mod, "COUNTS_IN_BACKGROUND", False)
    else:
        monkeypatch.setattr(bsi_mod.BitSliceIndex, "code_counts", lambda self: None)
    monkeypatch.setattr(bsi_mod, "PLANES_MIN_FILL", fill)
    monkeypatch.setattr(bsi_mod, "DENSE_RESULT", dense_result)
    monkeypatch.setattr(bsi_mod, "PARALLEL_MIN_WORDS", parallel)
    monkeypatch.setattr(bsi_mod, "THREADS", max(2, bsi_mod.THREADS))
    rows, card = 150_000, 700
    codes = _codes(rows, card, null_rate, order, seed=card + len(order))
    keys = np.arange(card, dtype=np.int64) * 3 - 1000
    r = RangeBitmapReader(write_from_codes(KT, keys, codes, rows), KT)
    bsi = r._slices()
    if code_counts:
        cum = bsi.code_counts()
        assert cum is not None
        assert np.diff(cum).tolist() == np.bincount(codes[codes >= 0], minlength=card).tolist()
    if mode != "default":
        assert (bsi.planes() is not None) == (mode != "roaring")
    elif not null_rate:   # sorted codes: run containers, far smaller than planes
        assert (bsi.planes() is not None) == (order == "random")
    rng = np.random.default_rng(1)
    pairs = [(0, 0), (0, card - 1), (card - 1, card - 1), (1, 1), (0, 5), (card - 3, card - 1)]
    pairs += [tuple(sorted(int(x) for x in rng.integers(0, card, 2))) for _ in range(25)]
    for first, last in pairs:
        mask = (codes >= first) & (codes <= last)
        got = bsi.between(first, last)
        assert type(got) is BitMap64
        assert got == BitMap64(np.flatnonzero(mask).tolist()), (first, last)
        assert bsi.between_count(first, last) == int(mask.sum())
        above = codes > last
        assert bsi.gt(last) == BitMap64(np.flatnonzero(above).tolist()), last
        assert bsi.gt_count(last) == int(above.sum())
        # a caller may change what it gets back; the next answer must not see it
        got |= BitMap64(range(0, rows, 7))
        assert bsi.between(first, last) == BitMap64(np.flatnonzero(mask).tolist())
    assert bsi.gt(-1) == BitMap64(np.flatnonzero(codes >= 0).tolist())


def test_planes_can_be_switched_off_and_bound_the_memory() -> None:
    codes = _codes(150_000, 300, 0.0, "random", seed=2)
    data = write_from_codes(KT, np.arange(300, dtype=np.int64), codes, len(codes))
    on, off = RangeBitmapReader(data, KT), RangeBitmapReader(data, KT, planes=False)
    assert on._slices().planes() is not None and off._slices().planes() is None
    assert on._slices().between_count(10, 200) == off._slices().between_count(10, 200) == int(
        ((codes >= 10) & (codes <= 200)).sum())
    assert on.memory_bound(planes=True) > on.memory_bound(planes=False) > len(data)
    assert on.nbytes_cached <= on.memory_bound(planes=True)
