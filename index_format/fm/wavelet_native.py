"""The fm writer's per-symbol loops compiled by numba (nogil, cached beside this file): the BWT with its suffix
array samples, the quad wavelet levels (one stable counting sort per level) and the packing of a level's 2-bit
digits into words with per-word digit counts. The same values as fm_writer's numpy path, in about a fifth of its
time (numpy needs a pass per digit and per operation). Imported only by fm_writer, and only where numba is
installed (ImportError otherwise).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from index_format.fm.lz4_native import nogil_jit

__all__ = ["bwt_samples", "quad_words", "wavelet_digits"]


@nogil_jit
def bwt_samples(dense: Any, sa: Any, rate: int) -> Any:
    """(bwt, sampled, samples): bwt[i] = dense[sa[i] - 1] (the last symbol for sa[i] = 0), sampled[i] when sa[i]
    is a multiple of `rate` (a power of two), samples = those sa[i] in order."""
    n = sa.shape[0]
    bwt = np.empty(n, dense.dtype)
    sampled = np.zeros(n, np.bool_)
    mask = rate - 1
    k = 0
    for i in range(n):
        s = sa[i]
        bwt[i] = dense[s - 1] if s > 0 else dense[n - 1]
        if (s & mask) == 0:
            sampled[i] = True
            k += 1
    samples = np.empty(k, sa.dtype)
    k = 0
    for i in range(n):
        if sampled[i]:
            samples[k] = sa[i]
            k += 1
    return bwt, sampled, samples


@nogil_jit
def wavelet_digits(bwt: Any, levels: int) -> Any:
    """(digits uint8[levels, n], counts int64[levels, 4]): level l holds the 2-bit digit at shift
    2 * (levels - l - 1) of each symbol, the symbols ordered stably by the digits of the levels before."""
    n = bwt.shape[0]
    digits = np.empty((levels, n), np.uint8)
    counts = np.zeros((levels, 4), np.int64)
    cur = bwt.copy()
    nxt = np.empty_like(cur)
    pos = np.zeros(4, np.int64)
    for level in range(levels):
        shift = (levels - level - 1) * 2
        for i in range(n):
            d = (cur[i] >> shift) & 3
            digits[level, i] = d
            counts[level, d] += 1
        if level + 1 < levels:
            pos[0] = 0
            pos[1] = counts[level, 0]
            pos[2] = pos[1] + counts[level, 1]
            pos[3] = pos[2] + counts[level, 2]
            for i in range(n):
                d = digits[level, i]
                nxt[pos[d]] = cur[i]
                pos[d] += 1
            cur, nxt = nxt, cur
    return digits, counts


@nogil_jit
def quad_words(digits: Any) -> Any:
    """(words uint64[ceil(n / 32)], per_word int64[words, 4]): 32 digits per word, digit j of a word in bits
    2j..2j+1; per_word counts each digit's values in the word (the zero padding of the last word not counted)."""
    n = digits.shape[0]
    nwords = (n + 31) // 32
    words = np.zeros(nwords, np.uint64)
    per_word = np.zeros((nwords, 4), np.int64)
    for w in range(nwords):
        word = np.uint64(0)
        base = w * 32
        top = min(32, n - base)
        for j in range(top):
            d = digits[base + j]
            word |= np.uint64(d) << np.uint64(2 * j)
            per_word[w, d] += 1
        words[w] = word
    return words, per_word
