"""The fm writer's numba-compiled loops (wavelet_native) against its numpy path, which fm files from
pypaimon-rust already judge (test_fm_golden): same values on inputs of every alphabet width, same file bytes."""
from __future__ import annotations

import random

import numpy as np
import pytest

from index_format.fm import fm_writer
from index_format.fm.fm_writer import write_fm_bytes

numba = pytest.importorskip("numba")


def test_the_compiled_loops_are_in_use() -> None:
    assert fm_writer._native() is not None


def _both(fn, *args):   # type: ignore[no-untyped-def]
    native = fn(*args)
    saved = fm_writer._NATIVE[:]
    fm_writer._NATIVE[:] = [None]
    try:
        return native, fn(*args)
    finally:
        fm_writer._NATIVE[:] = saved


@pytest.mark.parametrize("alphabet", [1, 2, 4, 5, 17, 60, 258])
@pytest.mark.parametrize("n", [1, 31, 32, 33, 1000, 70_001])
def test_same_values_either_way(alphabet: int, n: int) -> None:
    rng = np.random.default_rng(alphabet * 1000 + n)
    dense = rng.integers(0, alphabet, n).astype(np.uint16)
    sa = rng.permutation(n).astype(np.int32)
    levels = fm_writer.levels_for(alphabet)
    for rate in (1, 4, 64):
        (b1, s1, x1), (b2, s2, x2) = _both(fm_writer._bwt_samples, dense, sa, rate)
        assert np.array_equal(b1, b2) and np.array_equal(s1, s2) and np.array_equal(x1, x2)
    (d1, c1), (d2, c2) = _both(fm_writer._wavelet_digits, dense, levels)
    assert np.array_equal(d1, d2) and np.array_equal(c1, c2)
    assert c1.sum(axis=1).tolist() == [n] * levels
    for level in range(levels):
        (w1, p1), (w2, p2) = _both(fm_writer._quad_words, np.ascontiguousarray(d1[level]))
        assert np.array_equal(w1, w2) and np.array_equal(p1, p2)
        assert int(p1.sum()) == n


def test_an_fm_file_is_the_same_bytes_either_way(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(5)
    rows = [None if rng.random() < 0.05 else "".join(rng.choice(["vip", "user_12", "ab%", "é", "\x00", "ÿ"])
                                                      for _ in range(rng.randint(0, 5))) for _ in range(5000)]
    opts = {"fm-index.partition-row-count": "900", "fm-index.sa-sample-rate": "2"}
    native = write_fm_bytes(rows, 9, opts)
    monkeypatch.setattr(fm_writer, "_NATIVE", [None])
    assert write_fm_bytes(rows, 9, opts) == native
