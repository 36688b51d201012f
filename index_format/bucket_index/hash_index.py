"""Paimon's dynamic-bucket hash index file (`index/HashIndexFile` over `utils/IntFileUtils`).

The file is nothing but the hashes, each a big-endian int32 (`writeInt`: four bytes, high byte first), in
the order they were written: no magic, header, count, checksum or compression. The manifest's
`IndexFileMeta.rowCount` records how many there are, and the file size is 4 × that count.

Java's reader stops at the first incomplete int (a trailing 1-3 bytes read as end of file); here a length
that is not a multiple of 4 is an error instead, since it can only come from a damaged or foreign file.
"""
from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from index_format.errors import CorruptFileError, IndexFormatError, TruncatedFileError

__all__ = ["HASH_INDEX", "describe", "read_hash_index", "write_hash_index"]

HASH_INDEX = "HASH"  # IndexFileMeta.indexType of these files
_BE_I32 = np.dtype(">i4")
_I32_MIN, _I32_MAX = -(1 << 31), (1 << 31) - 1


def read_hash_index(data: bytes | bytearray | memoryview, *, path: str | None = None,
                    count: int | None = None) -> np.ndarray:
    """The hashes as a native int32 array, in file order.

    `count`: the manifest's rowCount, if known; a file holding a different number of hashes is corrupt.

    Raises:
        TruncatedFileError: the length is not a multiple of 4 (a partial hash at the end).
        CorruptFileError: `count` is given and does not match.
    """
    view = memoryview(data).cast("B")
    size = len(view)
    if size % 4:
        raise TruncatedFileError(
            f"length {size} is not a multiple of 4: the last hash has only {size % 4} of its 4 bytes",
            path=path, block="hash list", offset=size - size % 4)
    if count is not None and count * 4 != size:
        raise CorruptFileError(f"holds {size // 4} hashes, the manifest says {count}",
                               path=path, block="hash list")
    return np.frombuffer(view, dtype=_BE_I32).astype(np.int32)


def write_hash_index(hashes: Iterable[int] | np.ndarray) -> bytes:
    """The file bytes for these hashes (Java ints: each must lie in [-2^31, 2^31 - 1]).

    Raises:
        IndexFormatError: a value does not fit a signed 32-bit int.
    """
    arr = np.asarray(hashes if isinstance(hashes, np.ndarray) else list(hashes))
    if arr.size == 0:
        return b""
    if arr.ndim != 1:
        raise IndexFormatError(f"hashes must be a flat list, got an array of shape {arr.shape}",
                               block="hash list")
    if arr.dtype.kind not in "iu":
        if arr.dtype == object and all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in arr):
            bad = next((int(v) for v in arr if not _I32_MIN <= int(v) <= _I32_MAX), None)
            if bad is not None:
                raise IndexFormatError(f"hash {bad} does not fit a signed 32-bit int", block="hash list")
            arr = arr.astype(np.int64)
        else:
            raise IndexFormatError(f"hashes must be integers, got {arr.dtype}", block="hash list")
    if arr.dtype.itemsize > 4 or arr.dtype == np.uint32:
        # compare in int64 / uint64 space so that out-of-range values are reported, not wrapped
        low, high = arr.min(), arr.max()
        if (arr.dtype.kind == "i" and low < _I32_MIN) or high > _I32_MAX:
            bad = int(low) if arr.dtype.kind == "i" and low < _I32_MIN else int(high)
            raise IndexFormatError(f"hash {bad} does not fit a signed 32-bit int", block="hash list")
    return arr.astype(_BE_I32).tobytes()


def describe(data: bytes | bytearray | memoryview, *, path: str | None = None,
             limit: int | None = None) -> dict[str, object]:
    """JSON-ready summary: the count and the hashes (the first `limit` of them if given)."""
    hashes = read_hash_index(data, path=path)
    shown = hashes if limit is None else hashes[:max(limit, 0)]
    out: dict[str, object] = {"index_type": HASH_INDEX, "count": int(hashes.size),
                              "hashes": [int(h) for h in shown]}
    if limit is not None and hashes.size > len(shown):
        out["truncated"] = True
    return out
