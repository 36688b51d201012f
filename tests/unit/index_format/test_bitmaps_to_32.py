"""bitmaps.to_32: a 64-bit map's 32-bit copy, the same ids whatever the containers (arrays, bitsets, runs), and
none for ids past 2^32 - 1."""
from __future__ import annotations

import numpy as np
import pytest
from pyroaring import BitMap, BitMap64

from index_format import bitmaps


@pytest.mark.parametrize("ids", [
    [],
    [0],
    [(1 << 32) - 1],
    list(range(70_000)),                                                        # a run across two containers
    np.unique(np.random.default_rng(7).integers(0, 5_000_000, 200_000)).tolist(),  # bitsets
    np.unique(np.random.default_rng(8).integers(0, 1 << 32, 3_000)).tolist(),      # arrays far apart
])
def test_to_32_holds_the_same_ids(ids: list[int]) -> None:
    bm = BitMap64(ids)
    bm.run_optimize()
    got = bitmaps.to_32(bm)
    assert isinstance(got, BitMap) and list(got) == ids


def test_ids_past_32_bits_have_no_32_bit_copy() -> None:
    assert bitmaps.to_32(BitMap64([5, 1 << 32])) is None
