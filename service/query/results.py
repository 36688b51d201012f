"""Shape a query answer for the wire: opaque cursors (query pages, value look-ups), pages of row ids, runs,
per-data-file matches.

Works on pyroaring bitmaps with rank/slicing (no full materialization for a page). Must not import
fastapi or pyspark.
"""
from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeGuard

import numpy as np
from pyroaring import BitMap64

from service.query.query_errors import InvalidCursorError, SnapshotChangedError
from service.catalog.model import DataFile

# Runs are found on numpy windows of ids; a run longer than the window is extended by a binary search.
_RUN_WINDOW = 1 << 16
# Cursors we encode are ~100 bytes; anything much larger is not ours and is refused before decoding.
_MAX_CURSOR_CHARS = 4096
_MAX_ROW_ID = (1 << 64) - 1
_INT64 = (-(1 << 63), (1 << 63) - 1)


def encode_cursor(fields: dict[str, object]) -> str:
    """The opaque form of a cursor's fields: compact JSON, URL-safe base64 without padding."""
    raw = json.dumps(fields, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(text: str, keys: tuple[str, ...]) -> tuple[object, ...]:
    """The values of `keys` in a cursor `encode_cursor` made. Raises InvalidCursorError when the text is
    oversized, not base64 JSON or lacks a key; the caller checks the values and raises it for bad ones."""
    if not isinstance(text, str) or len(text) > _MAX_CURSOR_CHARS:
        raise InvalidCursorError("invalid cursor")
    try:
        obj = json.loads(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))
        return tuple(obj[k] for k in keys)
    except (ValueError, KeyError, TypeError, binascii.Error, UnicodeDecodeError, RecursionError) as exc:
        raise InvalidCursorError("invalid cursor") from exc


@dataclass(frozen=True)
class Cursor:
    """Where the next page of a query starts: after row id `after`, on the same snapshots, same query."""

    after: int
    snapshots: dict[str, int]
    query: str

    def encode(self) -> str:
        return encode_cursor({"a": self.after, "q": self.query, "s": dict(sorted(self.snapshots.items()))})

    @classmethod
    def decode(cls, text: str) -> Cursor:
        """Raises InvalidCursorError when the text was not produced by `encode`: oversized, not base64 JSON,
        `after` outside [-1, 2^64-1] (row ids are unsigned 64-bit) or snapshot ids outside int64."""
        after, snaps, query = decode_cursor(text, ("a", "s", "q"))
        if not (_is_int(after) and -1 <= after <= _MAX_ROW_ID and isinstance(snaps, dict)
                and isinstance(query, str)
                and all(isinstance(k, str) and _is_int(v) and _INT64[0] <= v <= _INT64[1]
                        for k, v in snaps.items())):
            raise InvalidCursorError("invalid cursor")
        return cls(after=after, snapshots=dict(snaps), query=query)

    def check(self, snapshots: dict[str, int], query: str) -> None:
        """A cursor only continues the query it came from, on the snapshots it was taken on."""
        if self.query != query:
            raise InvalidCursorError("cursor belongs to a different query")
        if self.snapshots != snapshots:
            raise SnapshotChangedError(
                f"index snapshots changed since the first page ({self.snapshots} -> {snapshots}); "
                "restart paging without a cursor")


@dataclass(frozen=True)
class ValuesCursor:
    """Where the next page of a value look-up starts: at `offset`, on the same snapshot, same look-up `key`."""

    offset: int
    snapshot: int
    key: str

    def encode(self) -> str:
        return encode_cursor({"o": self.offset, "s": self.snapshot, "k": self.key})

    @classmethod
    def decode(cls, text: str) -> ValuesCursor:
        """Raises InvalidCursorError when the text was not produced by `encode`: oversized, not base64 JSON,
        `offset` outside [0, 2^63) or the snapshot id outside int64."""
        offset, snap, key = decode_cursor(text, ("o", "s", "k"))
        if not (_is_int(offset) and 0 <= offset <= _INT64[1] and _is_int(snap)
                and _INT64[0] <= snap <= _INT64[1] and isinstance(key, str)):
            raise InvalidCursorError("invalid cursor")
        return cls(offset=offset, snapshot=snap, key=key)


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _rank_after(rows: BitMap64, after: int) -> int:
    """How many ids are <= `after` (0 for after < 0); ids past the uint64 range are all of them."""
    if after < 0:
        return 0
    if after >= _MAX_ROW_ID:
        return len(rows)
    return rows.rank(after)


def query_fingerprint(table: str, where: str | None, predicate: object, result: str) -> str:
    """Short digest tying a cursor to its query."""
    text = json.dumps([table, where, predicate, result], sort_keys=True, default=str)
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


def page_ids(rows: BitMap64, after: int, limit: int) -> tuple[list[int], int | None]:
    """Up to `limit` ids greater than `after`; the second item is the last id when more remain."""
    start = _rank_after(rows, after)
    page = rows[start:start + limit]
    ids = list(page)
    more = start + limit < len(rows)
    return ids, (ids[-1] if more and ids else None)


def page_runs(rows: BitMap64, after: int, limit: int) -> tuple[list[list[int]], int | None]:
    """Up to `limit` inclusive [first, last] runs of consecutive ids, starting after id `after`."""
    runs: list[list[int]] = []
    pos = _rank_after(rows, after)
    n = len(rows)
    while pos < n and len(runs) < limit:
        window = np.asarray(rows[pos:pos + _RUN_WINDOW].to_array(), dtype=np.uint64)
        breaks = np.flatnonzero(np.diff(window) != 1)
        starts = np.concatenate(([0], breaks + 1))
        ends = np.concatenate((breaks, [len(window) - 1]))
        for s, e in zip(starts.tolist(), ends.tolist(), strict=True):
            if len(runs) >= limit:
                break
            first, last = int(window[s]), int(window[e])
            if e == len(window) - 1:
                last = _extend_run(rows, first, last)
            runs.append([first, last])
            pos = rows.rank(last)
        else:
            continue
        break
    more = pos < n
    return runs, (runs[-1][1] if more and runs else None)


def _extend_run(rows: BitMap64, first: int, last: int) -> int:
    """Largest x ≥ last with every id in [first, x] present (exponential then binary search)."""
    step = 1
    while last + step <= _MAX_ROW_ID and _all_present(rows, first, last + step):
        last += step
        step *= 2
    lo, hi = last, min(last + step, _MAX_ROW_ID + 1)  # [first, lo] present; [first, hi] not (or hi > max)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if _all_present(rows, first, mid):
            lo = mid
        else:
            hi = mid
    return lo


def _all_present(rows: BitMap64, first: int, last: int) -> bool:
    """Every id in [first, last] is in `rows`; contains_range's exclusive end cannot pass 2^64 - 1."""
    if last < _MAX_ROW_ID:
        return bool(rows.contains_range(first, last + 1))
    return last in rows and (first == last or bool(rows.contains_range(first, last)))


def file_matches(files: list[DataFile], page: list[int]) -> list[dict[str, object]]:
    """The data files holding the page's rows, each with its matches on this page and their positions in it: a
    file appears on the pages that hold its rows, so its matches summed over the pages are the answer's rows in it."""
    out: list[dict[str, object]] = []
    page_arr = np.asarray(page, dtype=np.uint64)
    for f in files:
        lo, hi = np.searchsorted(page_arr, [f.first_row_id, f.first_row_id + f.row_count])
        if lo == hi:
            continue
        positions = (page_arr[lo:hi] - np.uint64(f.first_row_id)).tolist()
        out.append({"path": f.path, "partition": dict(f.partition), "first_row_id": f.first_row_id,
                    "row_count": f.row_count, "matches": len(positions), "positions": positions})
    return out


def file_matches_by_value(files: list[DataFile], page: list[int],
                          ids_of: Callable[[DataFile], tuple[np.ndarray, BitMap64]]) -> list[dict[str, object]]:
    """`file_matches` for a table with a row_id_column: ids are values of that column, not positions, so
    each file's ids (in file order, from `ids_of`) tell which of the page's rows it holds and where."""
    out: list[dict[str, object]] = []
    if not page:
        return out
    page_arr = np.asarray(page, dtype=np.int64)
    page_ids = BitMap64(page_arr.astype(np.uint64))
    for f in files:
        ids, id_set = ids_of(f)
        if not page_ids.intersection_cardinality(id_set):
            continue
        positions = np.flatnonzero(np.isin(ids, page_arr)).tolist()
        out.append({"path": f.path, "partition": dict(f.partition), "first_row_id": f.first_row_id,
                    "row_count": f.row_count, "matches": len(positions), "positions": positions})
    return out
