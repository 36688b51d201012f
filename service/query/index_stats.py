"""Index statistics stored beside the index: distinct values, null rows and every value's row count, computed
once per set of index files and dead rows, then read back a page at a time.

Layout under the warehouse (bgix and Paimon tables alike):
    tables/<t>/indexes/<col>/stats/<key>.json           counts, sidecar names and sizes, string fences
    tables/<t>/indexes/<col>/stats/<key>.value.parquet  (key bytes, rows) in logical value order
    tables/<t>/indexes/<col>/stats/<key>.count.parquet  (key bytes, rows) by rows desc, then value order
<key> is a blake2b of the key type, the index files (path, size, row range) and the dead row ids inside
them, so a rebuild, a retired data file or a new deletion vector gives a new key. The JSON is written
last: a document whose sidecars cannot be read is recomputed, never an error. A multivalue index's null rows
(rows whose array is NULL) are in no file of it (spec §8): the caller counts them from the table's rows.

Imports index_format, pyarrow and service.catalog only (never service.api).
"""
from __future__ import annotations

import ctypes
import hashlib
import io
import json
import logging
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyroaring import BitMap64

from index_format import ranges
from index_format.errors import IndexFormatError, InvalidOptionError, PathNotAllowedError, StorageUnavailableError
from index_format.global_index.reader import IndexReader
from index_format.keys import deserialize_key, prefix_upper_bound, sort_keys_of_bytes
from index_format.storage import Storage
from index_format.types import KeyType
from service.catalog import warehouse_layout
from index_format.storage import RangeFile

log = logging.getLogger(__name__)

FORMAT = 1
ROW_GROUP = 32768          # sidecar rows per row group: one page reads one or two of them
KEPT_DOCUMENTS = 4        # statistics kept per column (current and a few older keys)
_SMALL_PREFIX = 262144     # count order + prefix: sort in memory up to this many matching values
_BIAS = 1 << 191           # sort keys that may pass int64 are stored as 24 big-endian bytes
_INT64_SORT = {"boolean", "tinyint", "smallint", "int", "bigint", "date", "time", "float", "double"}


@dataclass(frozen=True)
class StatsFile:
    """One index file as statistics need it: identity, row range and an opener (the service's cached reader)."""

    path: str
    size: int
    range_start: int
    range_end: int
    open: Callable[[], IndexReader]


@dataclass
class IndexStats:
    key: str
    distinct_values: int
    null_rows: int | None        # None: not known (rows counted from the table that did not read: not stored)
    value_path: str
    value_size: int
    count_path: str
    count_size: int
    fences: list[bytes] | None   # first key of each value-order row group (strings: prefix search)
    _meta: dict[str, Any] = field(default_factory=dict, repr=False)   # parsed Parquet footers


def dead_in_file(f: StatsFile, dead: BitMap64 | None) -> BitMap64 | None:
    """Dead row ids inside the file's range, as the file's local ids (row id − range_start)."""
    if not dead:
        return None
    inside = dead & ranges.to_bitmap([(f.range_start, f.range_end)])
    return inside.shift(-f.range_start) if inside else None


def stats_key(kt: KeyType, files: Sequence[StatsFile], dead: BitMap64 | None, *,
              nulls_from_rows: bool = False) -> str:
    h = hashlib.blake2b(digest_size=16)
    h.update(f"bgix-stats/{FORMAT}/{kt.spelling}".encode())
    if nulls_from_rows:   # null rows counted from the table's rows, not the files' (documents before did not)
        h.update(b"/nulls-from-rows")
    for f in files:
        h.update(f"\n{f.path}\0{f.size}\0{f.range_start}\0{f.range_end}".encode())
        d = dead_in_file(f, dead)
        if d is not None:
            h.update(d.serialize())
    return h.hexdigest()


# ---- loading and computing -----------------------------------------------------------------------------
def load_or_compute(storage: Storage, table: str, column: str, kt: KeyType, files: Sequence[StatsFile],
                    dead: BitMap64 | None, *, force: bool = False,
                    count_nulls: Callable[[], int | None] | None = None) -> IndexStats:
    """The stored statistics of these files and dead rows; computed and stored when missing or unreadable
    (or with `force`, when a stored one turned out unreadable past its footer).

    `count_nulls`: the live null rows counted from the table's rows, for a family whose files record none (a
    multivalue file's null bitmap is always empty, spec §8); None: the files' null bitmaps tell. When it returns
    None (the rows did not read) the statistics say null_rows None and are not stored: a later call counts again."""
    key = stats_key(kt, files, dead, nulls_from_rows=count_nulls is not None)
    base = f"{warehouse_layout.stats_dir(table, column)}/{key}"
    stats = None if force else _load(storage, base, key)
    if stats is not None:
        return stats
    try:
        return _compute(storage, base, key, kt, files, dead, count_nulls)
    finally:
        _release_memory()


def _load(storage: Storage, base: str, key: str) -> IndexStats | None:
    try:
        doc = json.loads(storage.read_bytes(f"{base}.json"))
        if doc.get("format") != FORMAT or doc.get("key") != key:
            raise ValueError("stats document of another format or key")
        stats = IndexStats(
            key=key, distinct_values=int(doc["distinct_values"]), null_rows=int(doc["null_rows"]),
            value_path=storage.resolve(f"{base}.value.parquet"), value_size=int(doc["value_size"]),
            count_path=storage.resolve(f"{base}.count.parquet"), count_size=int(doc["count_size"]),
            fences=None if doc.get("fences") is None else [bytes.fromhex(x) for x in doc["fences"]])
        for path, size in ((stats.value_path, stats.value_size), (stats.count_path, stats.count_size)):
            md = _metadata(storage, stats, path, size)
            if md.num_rows != stats.distinct_values:
                raise ValueError("sidecar row count differs from the document")
        return stats
    except FileNotFoundError:
        return None
    except (ValueError, KeyError, TypeError, OSError, pa.ArrowException, IndexFormatError) as exc:
        log.warning("recomputing index statistics %s: %s", base, exc)
        return None


def _binary(keys: list[bytes] | tuple[np.ndarray, np.ndarray]) -> pa.Array:
    """Keys as an Arrow binary array: from a list, or straight from (bytes buffer, start offsets)."""
    if isinstance(keys, list):
        return pa.array(keys, type=pa.binary())
    kbuf, koffs = keys
    if len(kbuf) < (1 << 31) - 1:
        return pa.Array.from_buffers(pa.binary(), len(koffs) - 1,
                                     [None, pa.py_buffer(koffs.astype(np.int32)), pa.py_buffer(kbuf)])
    return pa.Array.from_buffers(pa.large_binary(), len(koffs) - 1,
                                 [None, pa.py_buffer(koffs), pa.py_buffer(kbuf)]).cast(pa.binary())


def _sort_column(kt: KeyType, keys: list[bytes]) -> pa.Array:
    """A column whose order is the keys' Java logical order (spec §3)."""
    sk = sort_keys_of_bytes(kt, keys)
    if kt.name in _INT64_SORT or (kt.name == "decimal" and kt.decimal_precision <= 18):
        return pa.array(np.asarray(sk, dtype=np.int64))
    # the other numeric types (wide decimals): int sort keys, biased to unsigned
    return pa.array([(cast(int, k) + _BIAS).to_bytes(24, "big") for k in sk], type=pa.binary())


def _compute(storage: Storage, base: str, key: str, kt: KeyType, files: Sequence[StatsFile],
             dead: BitMap64 | None, count_nulls: Callable[[], int | None] | None = None) -> IndexStats:
    """One pass over every dictionary block; (key, rows) gathered as Arrow arrays, never Python tuples."""
    string = kt.is_string
    parts: list[pa.Table] = []
    counted = None if count_nulls is None else count_nulls()   # from the table, before the key pass
    nulls = 0
    sorted_already = len(files) == 1
    for f in files:
        reader = f.open()
        d = dead_in_file(f, dead)
        if count_nulls is None:   # the files record their null rows
            null_rows = reader.null_rows()
            nulls += null_rows.difference_cardinality(d) if d is not None else len(null_rows)
        if reader.value_count and reader.key_order != "logical":
            sorted_already = False
        for keys, counts in reader.key_counts(d):
            karr = _binary(keys)
            keep = counts > 0
            cols = {"key": karr, "rows": pa.array(counts)}
            if not string:
                cols["sk"] = _sort_column(kt, keys if isinstance(keys, list) else karr.to_pylist())
            t = pa.table(cols)
            parts.append(t if keep.all() else t.filter(pa.array(keep)))
    if parts:
        tbl = pa.concat_tables(parts)
    else:
        empty = {"key": pa.array([], pa.binary()), "rows": pa.array([], pa.int64())}
        tbl = pa.table(empty if string else {**empty, "sk": _sort_column(kt, [])})
    del parts
    unknown = count_nulls is not None and counted is None
    sk = "key" if string else "sk"
    if not sorted_already and len(tbl) > 1:
        # Files of one build hold consecutive key ranges: their concatenation is usually in order already
        # (a key cut between two files appears twice, side by side). Sort only when it is not.
        col = tbl.column(sk).combine_chunks()
        if pc.any(pc.less(col[1:], col[:-1])).as_py():
            tbl = tbl.take(pc.sort_indices(col))   # Arrow's sort is stable
        del col
    if len(files) > 1 and len(tbl) > 1:
        # the same key in several files (row ranges) is one value: sum the rows of equal neighbours
        col = tbl.column(sk).combine_chunks()
        same = pc.equal(col[1:], col[:-1]).to_numpy(zero_copy_only=False)
        del col
        if same.any():
            starts = np.flatnonzero(np.concatenate(([True], ~same)))
            rows = np.add.reduceat(tbl.column("rows").to_numpy(), starts)
            tbl = pa.table({"key": tbl.column("key").take(pa.array(starts)), "rows": pa.array(rows)})
    tbl = tbl.select(["key", "rows"])
    fences = None
    if string:
        keys_col = tbl.column("key")
        fences = [keys_col[i].as_py() for i in range(0, len(tbl), ROW_GROUP)]
    distinct = len(tbl)
    held: dict[str, Any] = {}
    stored = True

    def put(suffix: str, t: pa.Table) -> tuple[str, int]:
        # each sidecar is written (and its bytes dropped) before the next is built: one at a time in memory
        nonlocal stored
        data = _parquet_bytes(t)
        path = storage.resolve(f"{base}{suffix}")
        if stored:
            try:
                storage.write_atomic(path, data)
            except (OSError, StorageUnavailableError, PathNotAllowedError) as exc:
                log.warning("cannot store index statistics %s: %s", base, exc)
                stored = False
        if not stored:   # a read-only warehouse still answers, from the bytes just computed
            held[path] = data
        return path, len(data)

    value_path, value_size = put(".value.parquet", tbl)
    order = np.argsort(-tbl.column("rows").to_numpy(), kind="stable")   # stable: ties stay in value order
    count_path, count_size = put(".count.parquet", tbl.take(pa.array(order)))
    del tbl, order
    null_count = None if unknown else int(nulls if counted is None else counted)
    stats = IndexStats(key=key, distinct_values=distinct, null_rows=null_count, value_path=value_path,
                       value_size=value_size, count_path=count_path, count_size=count_size, fences=fences)
    if held:
        stats._meta["bytes"] = held
        if len(held) == 2:
            return stats
    doc = {"format": FORMAT, "key": key, "key_type": kt.spelling, "distinct_values": distinct,
           "null_rows": stats.null_rows, "value_size": value_size, "count_size": count_size,
           "row_group_rows": ROW_GROUP, "fences": None if fences is None else [x.hex() for x in fences]}
    if not held and not unknown:   # written last: a document names only sidecars that are complete
        try:
            storage.write_atomic(f"{base}.json", json.dumps(doc, separators=(",", ":")).encode())
            _prune(storage, base.rsplit("/", 1)[0], key)
        except (OSError, StorageUnavailableError, PathNotAllowedError) as exc:
            log.warning("cannot store index statistics %s: %s", base, exc)
    return stats


def _prune(storage: Storage, directory: str, current: str) -> None:
    """Keep the newest KEPT_DOCUMENTS statistics (older snapshots and retired sets); a reader that still
    uses a deleted one recomputes (see QueryService.value_page)."""
    by_key: dict[str, list[str]] = {}
    for path in storage.list(directory):
        name = path.rsplit("/", 1)[-1]
        if not name.startswith("."):
            by_key.setdefault(name.split(".", 1)[0], []).append(path)
    if len(by_key) <= KEPT_DOCUMENTS:
        return
    def age(k: str) -> float:
        try:
            return max(storage.stat(p)[1] for p in by_key[k])
        except FileNotFoundError:
            return 0.0
    old = sorted((k for k in by_key if k != current), key=age)[:len(by_key) - KEPT_DOCUMENTS]
    for k in old:
        for path in sorted(by_key[k], key=lambda p: not p.endswith(".json")):   # the document first
            storage.delete(path)


def _parquet_bytes(tbl: pa.Table) -> Any:
    """The table as Parquet, in an Arrow buffer (bytes-like; no copy on the way out)."""
    sink = pa.BufferOutputStream()
    pq.write_table(tbl, sink, row_group_size=ROW_GROUP, use_dictionary=False, compression="zstd")
    return memoryview(sink.getvalue())


def _release_memory() -> None:
    """Hand the computation's freed arrays back to the OS: Arrow's pool and glibc keep freed pages, and a
    server's RSS would otherwise stay at the computation's peak."""
    pa.default_memory_pool().release_unused()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):   # not glibc
        pass


# ---- paging ---------------------------------------------------------------------------------------------
def _file(storage: Storage, stats: IndexStats, path: str, size: int) -> Any:
    held = stats._meta.get("bytes", {}).get(path)
    return pa.BufferReader(held) if held is not None else io.BufferedReader(RangeFile(storage, path, size),
                                                                             buffer_size=1 << 16)


def _metadata(storage: Storage, stats: IndexStats, path: str, size: int) -> pq.FileMetaData:
    md = stats._meta.get(path)
    if md is None:
        with _file(storage, stats, path, size) as fh:
            md = pq.ParquetFile(fh).metadata
        stats._meta[path] = md
    return md


def _rows(storage: Storage, stats: IndexStats, order: str, start: int, stop: int) -> pa.Table:
    """Rows [start, stop) of a sidecar, reading only the row groups that hold them."""
    path, size = ((stats.count_path, stats.count_size) if order == "count"
                  else (stats.value_path, stats.value_size))
    md = _metadata(storage, stats, path, size)
    stop = min(stop, md.num_rows)
    if start >= stop:
        return pa.table({"key": pa.array([], pa.binary()), "rows": pa.array([], pa.int64())})
    g0, g1 = start // ROW_GROUP, (stop - 1) // ROW_GROUP
    # closed here and read on this thread: left to the GC, Arrow readers over Python file objects made
    # the process abort at exit ("terminate called without an active exception")
    with _file(storage, stats, path, size) as fh:
        pf = pq.ParquetFile(fh, metadata=md)
        part = pf.read_row_groups(list(range(g0, g1 + 1)), columns=["key", "rows"], use_threads=False)
        pf.close()
    return part.slice(start - g0 * ROW_GROUP, stop - start)


def _position(storage: Storage, stats: IndexStats, key: bytes) -> int:
    """Index of the first value-order row whose key is ≥ `key` (strings: byte order = value order)."""
    fences = stats.fences or []
    g = max(bisect_right(fences, key) - 1, 0)
    if not fences:
        return 0
    keys = _rows(storage, stats, "value", g * ROW_GROUP, (g + 1) * ROW_GROUP).column("key").to_pylist()
    return g * ROW_GROUP + bisect_left(keys, key)


def page(storage: Storage, stats: IndexStats, kt: KeyType, order: str, prefix: str | None, offset: int,
         limit: int) -> list[tuple[object, int]]:
    """(value, rows) at positions [offset, offset + limit) of the look-up, reading only what those need.

    order 'value' is logical value order, 'count' rows descending then value order; `prefix` (strings)
    keeps the values that start with it.
    """
    if prefix:
        p = prefix.encode("utf-8")
        lo = _position(storage, stats, p)
        up = prefix_upper_bound(p)
        hi = stats.distinct_values if up is None else _position(storage, stats, up)
        if order == "value":
            tbl = _rows(storage, stats, "value", lo + offset, min(hi, lo + offset + limit))
        elif hi - lo <= _SMALL_PREFIX:
            part = _rows(storage, stats, "value", lo, hi)
            idx = np.argsort(-part.column("rows").to_numpy(), kind="stable")[offset:offset + limit]
            tbl = part.take(pa.array(idx))
        else:
            tbl = _scan_prefix(storage, stats, p, up, offset, limit)
    else:
        tbl = _rows(storage, stats, order, offset, offset + limit)
    keys, counts = tbl.column("key").to_pylist(), tbl.column("rows").to_pylist()
    return [(deserialize_key(kt, k), int(n)) for k, n in zip(keys, counts)]


def _scan_prefix(storage: Storage, stats: IndexStats, p: bytes, up: bytes | None, offset: int,
                 limit: int) -> pa.Table:
    """Count order of a broad prefix: the ranking streamed a row group at a time, matches skipped to `offset`."""
    out: list[pa.Table] = []
    want = offset + limit
    seen = 0
    for start in range(0, stats.distinct_values, ROW_GROUP):
        part = _rows(storage, stats, "count", start, start + ROW_GROUP)
        mask = pc.greater_equal(part.column("key"), pa.scalar(p, pa.binary()))
        if up is not None:
            mask = pc.and_(mask, pc.less(part.column("key"), pa.scalar(up, pa.binary())))
        hit = part.filter(mask)
        a, b = max(offset - seen, 0), min(want - seen, len(hit))
        if a < b:
            out.append(hit.slice(a, b - a))
        seen += len(hit)
        if seen >= want:
            break
    if not out:
        return pa.table({"key": pa.array([], pa.binary()), "rows": pa.array([], pa.int64())})
    return pa.concat_tables(out)
