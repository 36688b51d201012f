"""Fast stable sorts of writer rows into (logical key, row id) order, and the distinct-key boundaries after.

Shared by the bitmap and btree global index writers. Imports numpy only.
"""
from __future__ import annotations

import numpy as np

__all__ = ["compact", "is_sorted", "key_starts", "stable_order"]


def is_sorted(a: np.ndarray) -> bool:
    return len(a) < 2 or bool(np.all(a[1:] >= a[:-1]))


def stable_order(rep: np.ndarray) -> np.ndarray:
    """Stable argsort; keys spanning < 2^32 values use two 16-bit radix passes (LSD), ~1.6× faster."""
    c = compact(rep)
    if c.dtype == np.int32:
        low = (c & 0xFFFF).astype(np.uint16)
        p1 = np.argsort(low, kind="stable")
        high = (c >> 16).astype(np.uint16)[p1]
        return p1[np.argsort(high, kind="stable")]
    return np.argsort(c, kind="stable")


def compact(rep: np.ndarray) -> np.ndarray:
    """A narrower dtype sorts faster (16-bit sorts are radix sorts); only the order matters."""
    if rep.dtype == np.int64 and len(rep):
        lo, hi = int(rep.min()), int(rep.max())
        if hi - lo < (1 << 16):
            return (rep - lo).astype(np.uint16)
        if hi - lo < (1 << 31):
            return (rep - lo).astype(np.int32)
    return rep


def key_starts(rep: np.ndarray) -> np.ndarray:
    """Positions where a new distinct key begins in logically sorted reps (0 first when non-empty)."""
    if not len(rep):
        return np.zeros(0, dtype=np.int64)
    return np.concatenate(([0], np.flatnonzero(rep[1:] != rep[:-1]) + 1)).astype(np.int64, copy=False)
