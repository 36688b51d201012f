"""Range sidecars: Paimon's range-bitmap payload beside a bitmap global index file, holding the same rows.

A bgix build writes one beside each index file it builds (`<index file>` + SIDECAR_SUFFIX, row ids local to
the file's row range, like the file's); for other files one is derived from the bitmap file (derive.py).
"""
from __future__ import annotations

SIDECAR_SUFFIX = ".range-bitmap"

__all__ = ["SIDECAR_SUFFIX"]
