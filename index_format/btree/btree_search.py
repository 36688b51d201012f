"""Keys of a btree block as a searchable column in Java's logical order (index_format.keys.sort_key's order).

Fixed-width numeric keys become one int64 per key, built with numpy and searched with searchsorted (a warm
look-up is a few microseconds); strings stay bytes (Java compares them as unsigned bytes, as Python does);
other keys (wide decimals, fine timestamps) become keys.sort_key_of_bytes values. A look-up target is turned
into the same representation by the same code, so both sides always agree. Imports numpy and
index_format.{errors,keys,types}.
"""
from __future__ import annotations

import bisect
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from index_format.errors import CorruptFileError
from index_format.keys import NAN32_BITS, NAN64_BITS, sort_key_of_bytes
from index_format.types import KeyType

__all__ = ["Reps", "increasing", "lower_bound", "lower_bounds", "rep_of", "reps_of", "upper_bound"]

# int64 search keys of fixed-width numbers, else sort keys (keys.SortKey) of one kind: Any, as mypy cannot
# compare a bytes | int union though one file never mixes the two
Reps = np.ndarray | list[Any]
_INT_WIDTH = {"tinyint": 1, "smallint": 2, "int": 4, "bigint": 8, "date": 4, "time": 4}


def _numeric(kt: KeyType) -> tuple[int, str] | None:
    """(key width, 'i' signed int | 'f' IEEE float | 'b' boolean) when the keys are fixed-width numbers."""
    name = kt.name
    if name in _INT_WIDTH:
        return _INT_WIDTH[name], "i"
    if name in ("timestamp", "timestamp_ltz") and kt.time_precision <= 3:
        return 8, "i"   # epoch millis (no nanos below millisecond precision)
    if name == "decimal" and kt.decimal_precision <= 18:
        return 8, "i"   # the unscaled long
    if name == "float":
        return 4, "f"
    if name == "double":
        return 8, "f"
    if name == "boolean":
        return 1, "b"
    return None


def reps_of(kt: KeyType, data: npt.NDArray[np.uint8], starts: npt.NDArray[np.int64], lens: npt.NDArray[np.int64],
            keys: Sequence[bytes] | None,
            *, path: str | None, block: str) -> Reps:
    """The search representation of keys data[starts[i]:starts[i] + lens[i]] (`keys`: the same as bytes, when
    at hand; needed for non-numeric types).

    Raises:
        CorruptFileError: a key of the wrong width for its type, or undecodable.
    """
    spec = _numeric(kt)
    if spec is None:
        if keys is None:
            keys = [data[s:s + n].tobytes() for s, n in zip(starts.tolist(), lens.tolist())]
        if kt.is_string:
            return list(keys)
        try:
            return [sort_key_of_bytes(kt, k) for k in keys]
        except CorruptFileError as exc:
            raise CorruptFileError(exc.reason, path=path, block=block) from None
    width, kind = spec
    n = len(starts)
    if n and bool((lens != width).any()):
        bad = int(lens[np.flatnonzero(lens != width)[0]])
        raise CorruptFileError(f"{kt.spelling} key of {bad} bytes (expected {width})", path=path, block=block)
    if width == 1:
        col = data[starts]
    else:
        col = np.ascontiguousarray(data[starts[:, None] + np.arange(width)]).reshape(n * width)
    if kind == "b":
        true: npt.NDArray[np.bool_] = col == 1
        return true.astype(np.int64)
    if kind == "i":
        return col.view(f"<i{width}").astype(np.int64)
    bits = col.view(f"<i{width}").astype(np.int64)
    mask = (1 << (8 * width - 1)) - 1
    exp_all = 0x7F800000 if width == 4 else 0x7FF0000000000000
    nan = (bits & mask) > exp_all
    if nan.any():
        bits = np.where(nan, NAN32_BITS if width == 4 else NAN64_BITS, bits)
    return np.where(bits < 0, -(bits & mask) - 1, bits)


def rep_of(kt: KeyType, key: bytes) -> object:
    """The search representation of one serialized key (a look-up target)."""
    spec = _numeric(kt)
    if spec is None:
        return key if kt.is_string else sort_key_of_bytes(kt, key)
    if spec[1] == "i" and len(key) == spec[0]:
        return int.from_bytes(key, "little", signed=True)   # the common case, without numpy overhead
    reps = reps_of(kt, np.frombuffer(key, dtype=np.uint8), np.zeros(1, dtype=np.int64),
                   np.array([len(key)], dtype=np.int64), None, path=None, block="key")
    return int(reps[0])


def increasing(reps: Reps) -> bool:
    """Are the keys strictly increasing (distinct and in logical order)?"""
    if isinstance(reps, np.ndarray):
        return len(reps) < 2 or bool((reps[1:] > reps[:-1]).all())
    return all(a < b for a, b in zip(reps, reps[1:]))


def lower_bound(reps: Reps, target: object) -> int:
    """First position whose key is ≥ target."""
    if isinstance(reps, np.ndarray):
        return int(np.searchsorted(reps, target, side="left"))  # type: ignore[call-overload]  # an int: numeric reps
    return bisect.bisect_left(reps, target)


def upper_bound(reps: Reps, target: object) -> int:
    """First position whose key is > target."""
    if isinstance(reps, np.ndarray):
        return int(np.searchsorted(reps, target, side="right"))  # type: ignore[call-overload]  # an int: numeric reps
    return bisect.bisect_right(reps, target)


def lower_bounds(reps: Reps, targets: Sequence[object]) -> np.ndarray:
    """lower_bound of each target (int64 array)."""
    if isinstance(reps, np.ndarray):
        return np.searchsorted(reps, np.asarray(targets, dtype=np.int64), side="left").astype(np.int64)
    return np.fromiter((bisect.bisect_left(reps, t) for t in targets), dtype=np.int64, count=len(targets))
