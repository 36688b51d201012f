"""Vectorized multivalue-index writer: ARRAY rows + local row ids → one bitmap-format index file (spec §8).

The multivalue index keys the bitmap format of spec §2 by the distinct non-null array ELEMENTS: a row id is
added once per distinct element of its array; null arrays, empty arrays and null elements add nothing; the
null-rows and non-null-rows bitmaps are empty and the manifest's has-nulls flag is 0. One call writes one
file (one shard of the build plan), whose row count is the number of source rows, elements or not.

Two byte-level flavors of the same format, both read by every reader (spec §2.1, §2.4, §1):
"pypaimon-rust" (the default; byte-identical to pypaimon-rust's create_global_index, checked by the tests):
null-rows and non-null-rows bitmaps first, bitmaps not run-optimized, zstd frames with the content size;
"java" (Paimon Java's MultiValueBitmapIndexWriter, through the same streaming writer as its bitmap files):
those two bitmaps after the dictionary, run-optimized bitmaps, zstd frames without the content size.
Shares the bitmap writer's sort and encoder (global_index/writer.py); never imports the reader.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, TypedDict

import numpy as np
import pyarrow as pa

from index_format.global_index.writer import (
    FileRows, SortedPart, WriterInputError, WrittenFile, encode_file, sort_rows, writer_settings, written_file,
)
from index_format.heap import reuse_freed_pages
from index_format.key_arrays import arrow_type, encode_arrow_keys
from index_format.row_order import key_starts
from index_format.types import KeyType, parse_type
from index_format.written_files import check_row_ids

if TYPE_CHECKING:
    from index_format.options import IndexOptions
    from index_format.storage import Storage

__all__ = ["FLAVORS", "MULTIVALUE_PREFIX", "write_multivalue_bytes", "write_multivalue_files"]

# Paimon's file name prefix (and IndexFileMeta.index_type) of multivalue files: multivalue-global-index-<uuid>.index
MULTIVALUE_PREFIX = "multivalue"

_NO_IDS = np.zeros(0, dtype=np.int64)

# flavor → encode_file's layout arguments (see the module docstring)
class _Layout(TypedDict):
    """encode_file's layout arguments."""

    nulls_first: bool
    zstd_content_size: bool
    run_optimize: bool


_FLAVOR_ARGS: dict[str, _Layout] = {
    "pypaimon-rust": {"nulls_first": True, "zstd_content_size": True, "run_optimize": False},
    "java": {"nulls_first": False, "zstd_content_size": False, "run_optimize": True},
}
FLAVORS: tuple[str, ...] = tuple(_FLAVOR_ARGS)


def write_multivalue_bytes(lists: pa.Array | pa.ChunkedArray | Sequence[Sequence[object] | None],
                           row_ids: pa.Array | np.ndarray | Sequence[int], kt: KeyType | str,
                           options: IndexOptions | Mapping[str, object] | str | None = None, *,
                           flavor: str = "pypaimon-rust", record_nulls: bool = False) -> tuple[bytes, WrittenFile]:
    """One multivalue file's bytes from the arrays of a shard's rows and their local row ids.

    `lists`: an Arrow list/large-list array, or Python lists (None: a null array); `kt`: the ELEMENT type.
    Options: `multivalue-index.dictionary-block-size`, `-compression`, `-compression-level` (spec §8).
    flavor: "pypaimon-rust" or "java" (module docstring).
    record_nulls: the null-rows bitmap holds the rows where a look-up that misses is UNKNOWN in SQL (a null
    array, or one holding a null element) and the non-null-rows bitmap the others — bgix's in-memory files of
    scanned rows (service.query.row_scan), which answer NOT over an array leaf exactly; Paimon's files keep both
    empty (spec §8), so this is never written to storage.
    Raises:
        WriterInputError: row ids that do not match the rows (count, sign, type); lists that are not lists;
            an unknown flavor.
    """
    kt = parse_type(kt) if isinstance(kt, str) else kt
    with reuse_freed_pages():
        data, written = _write(lists, row_ids, kt, options, "", flavor, record_nulls=record_nulls)
    return data, written


def write_multivalue_files(lists: pa.Array | pa.ChunkedArray | Sequence[Sequence[object] | None],
                           row_ids: pa.Array | np.ndarray | Sequence[int], kt: KeyType | str,
                           options: IndexOptions | Mapping[str, object] | str | None = None, *,
                           records_per_file: int | None = None, new_path: Callable[[], str], storage: Storage,
                           keep_rows: bool = False, flavor: str = "pypaimon-rust") -> list[WrittenFile]:
    """Write one shard's multivalue file through `storage.write_atomic(new_path(), data)` (spec §8).

    Exactly one file, also when no row has an element (it records the shard's coverage), except for a
    shard of no rows at all: no file, like Java. `records_per_file` is accepted for the family signature and
    ignored (Java's multivalue writer never rotates). keep_rows: WrittenFile.rows lists the file's distinct
    (element, row id) entries by element, then row id: `rows` are positions in `lists` (a row once per distinct
    element), `key_starts` where each element begins; otherwise rows is None.
    """
    del records_per_file
    kt = parse_type(kt) if isinstance(kt, str) else kt
    with reuse_freed_pages():
        if _row_count(lists) == 0:
            check_row_ids(row_ids, 0)
            return []
        path = new_path()
        data, written = _write(lists, row_ids, kt, options, path, flavor, keep_rows)
        storage.write_atomic(path, data)
    return [written]


def _row_count(lists: object) -> int:
    try:
        return len(lists)  # type: ignore[arg-type]  # no length: TypeError, caught
    except TypeError:
        raise WriterInputError(f"expected a list array or a sequence of lists, got {type(lists).__name__}") from None


def _write(lists: object, row_ids: object, kt: KeyType, options: IndexOptions | Mapping[str, object] | str | None,
           path: str, flavor: str, keep_rows: bool = False, record_nulls: bool = False) -> tuple[bytes, WrittenFile]:
    layout = _FLAVOR_ARGS.get(flavor)
    if layout is None:
        raise WriterInputError(f"unknown multivalue file flavor {flavor!r}; expected one of {', '.join(FLAVORS)}")
    block_size, codec, level, _ = writer_settings(options, multivalue=True)
    arr = _list_array(lists, kt)
    n = len(arr)
    rid = check_row_ids(row_ids, n)
    elements, parent = _explode(arr)
    enc = encode_arrow_keys(kt, elements)
    # null elements go to the sort's null list, which a multivalue file does not keep; keep_rows wants one
    # global (element, row id) order, like the bitmap writer's files
    s = sort_rows(enc, rid[parent], split=not keep_rows)
    parts = [_distinct_pairs(p) for p in s.parts]
    # spec §8: empty null-rows and non-null-rows bitmaps; keys in logical order
    null_rid, nn_rid = _unknown_on_miss(arr, elements, parent, rid) if record_nulls else (_NO_IDS, _NO_IDS)
    data, first, last, count = encode_file(kt, enc, null_rid, parts, block_size, codec, level, nn_rid=nn_rid,
                                           **layout)
    written = written_file(kt, path, data, n, first, last, len(null_rid) > 0, count)
    if keep_rows:
        (part,) = parts
        written = replace(written, rows=FileRows(parent[part.rows], part.rid, key_starts(part.rep)))
    return data, written


def _unknown_on_miss(arr: pa.Array, elements: pa.Array, parent: np.ndarray, rid: np.ndarray
                     ) -> tuple[np.ndarray, np.ndarray]:
    """(row ids of null arrays and arrays holding a null element, row ids of the other rows), each ascending."""
    unknown = ~np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    if elements.null_count:
        null_elements = ~np.asarray(elements.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
        unknown[parent[null_elements]] = True
    ids = np.asarray(rid, dtype=np.int64)
    return np.sort(ids[unknown]), np.sort(ids[~unknown])


def _list_array(lists: object, kt: KeyType) -> pa.Array:
    """`lists` as one Arrow list or large-list array (Python lists are converted to the element type's
    Arrow type)."""
    if isinstance(lists, pa.ChunkedArray):
        lists = lists.combine_chunks() if lists.num_chunks != 1 else lists.chunk(0)
    if not isinstance(lists, pa.Array):
        seq = list(lists)  # type: ignore[call-overload]  # any iterable of lists
        try:
            return pa.array(seq, type=pa.list_(arrow_type(kt)))
        except (pa.ArrowException, TypeError, ValueError) as exc:
            raise WriterInputError(f"rows are not lists of {kt.spelling}: {str(exc)[:200]}") from None
    t = lists.type
    if pa.types.is_fixed_size_list(t):
        lists = lists.cast(pa.list_(t.value_type))
    elif not (pa.types.is_list(t) or pa.types.is_large_list(t)):
        raise WriterInputError(f"a multivalue index needs an ARRAY column (Arrow list), got Arrow type {t}")
    return lists


def _explode(arr: pa.Array) -> tuple[pa.Array, np.ndarray]:
    """(every element of every non-null array, flattened; the position in `arr` of its row).

    Read from the offsets: a null slot may still span elements in the child array, which must not count
    (pyarrow's list_flatten skips them but list_parent_indices does not, so the two cannot be paired).
    """
    n = len(arr)
    offsets = np.frombuffer(arr.buffers()[1], dtype=np.int64 if pa.types.is_large_list(arr.type) else np.int32,
                            count=n + 1, offset=arr.offset * (8 if pa.types.is_large_list(arr.type) else 4))
    offsets = offsets.astype(np.int64)
    lengths = np.diff(offsets)
    start, end = int(offsets[0]), int(offsets[-1])
    values = arr.values.slice(start, end - start)
    if arr.null_count:
        valid = arr.is_valid().to_numpy(zero_copy_only=False)
        if bool(np.any(lengths[~valid])):
            values = values.filter(pa.array(np.repeat(valid, lengths)))
        lengths = np.where(valid, lengths, 0)
    parent = np.repeat(np.arange(n, dtype=np.int64), lengths)
    return values, parent


def _distinct_pairs(part: SortedPart) -> SortedPart:
    """The part without repeated (element, row id) pairs: an element twice in one array adds its row once.
    The part is sorted by (key, row id), so repeats are neighbours."""
    rep, rid = part.rep, part.rid
    if len(rid) < 2:
        return part
    repeat = (rid[1:] == rid[:-1]) & (rep[1:] == rep[:-1])
    if not bool(repeat.any()):
        return part
    keep = np.concatenate(([True], ~repeat))
    return SortedPart(part.rows[keep], rep[keep], rid[keep])
