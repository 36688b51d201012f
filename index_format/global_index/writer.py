"""Vectorized bitmap-index writer: keys + local row ids → one or more Java-identical files (spec §2.8, §2.9, §5.2).

Imports numpy/pyarrow/pyroaring and index_format format modules; never the reader. Returns bytes
(write_index_bytes) or writes through the Storage port (write_index_files); never opens files itself.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from index_format import codecs
from index_format.bitmaps import serialize_parts, serialize_sorted
from index_format.dense_bitmaps import KeyBitmaps, key_bitmaps
from index_format.global_index.dictionary import encode_entries, encode_entry, varint_lengths
from index_format.global_index.filemeta import build_meta
from index_format.global_index.footer import Footer
from index_format.heap import reuse_freed_pages
from index_format.key_arrays import EncodedKeys, encode_arrow_keys
from index_format.keys import deserialize_key
from index_format.layout import varint
from index_format.parallel import THREADS, map_parts
from index_format.row_order import is_sorted as _is_sorted
from index_format.row_order import compact, file_cuts, key_starts, strictly_ascending
from index_format.row_order import stable_order as _stable_order
from index_format.types import KeyType, parse_type
from index_format.written_files import FileRows, WriterInputError, WrittenFile, build_meta_bytes
from index_format.written_files import check_row_ids

if TYPE_CHECKING:
    from index_format.options import IndexOptions
    from index_format.storage import Storage

__all__ = ["FileRows", "WriterInputError", "WrittenFile", "manifest_meta", "write_index_bytes", "write_index_files"]


def manifest_meta(kt: KeyType, first_key: object | None, last_key: object | None, has_nulls: bool) -> bytes:
    """spec §4 metadata from canonical first/last keys."""
    return build_meta(kt, first_key, last_key, has_nulls)


def writer_settings(options: IndexOptions | Mapping[str, object] | str | None, *,
                    multivalue: bool = False) -> tuple[int, str, int, str]:
    """(dictionary block size, codec, level, key order) a file is written with, from Paimon option keys.

    multivalue: the `multivalue-index.*` options instead of the `bitmap-index.*` ones (spec §8), and always
    logical key order (Java's multivalue writer requires it; no writer ever used another).
    """
    from index_format.options import IndexOptions as _Opts
    from index_format.options import parse_options
    if options is None:
        options = _Opts()
    elif not isinstance(options, _Opts):
        options = parse_options(options)  # Paimon option keys (spec §7.1)
    if multivalue:
        return (int(options.multivalue_dictionary_block_size),
                codecs.check_codec(str(options.multivalue_compression)),
                int(options.multivalue_compression_level), "logical")
    return (int(options.dictionary_block_size), codecs.check_codec(str(options.compression)),
            int(options.compression_level), str(options.key_order))


@dataclass(slots=True)
class SortedPart:
    """The non-null rows of one range of row ids, in file order: by (logical key, row id)."""

    rows: np.ndarray      # index of each row in the writer's input
    rep: np.ndarray       # its logical sort representation
    rid: np.ndarray       # its row id


@dataclass(slots=True)
class SortedRows:
    """Rows in file order: nulls (by row id) first, then the non-null rows of each part.

    Parts hold ascending, disjoint ranges of whole 65536-id containers, so a key's bitmap is its ids in
    part 0, then part 1, …; one part unless the input is large with row ids in order (see sort_rows).
    """

    null_rid: np.ndarray
    parts: list[SortedPart]
    nn_rid: np.ndarray | None   # every non-null row id ascending (None: derive per chunk)


# Inputs with row ids in order and at least twice this many rows are sorted and serialized in parts, one
# per thread: each part's sort stays small enough to run near cache speed, and parts run in parallel.
_PART_ROWS = 1 << 20


def sort_rows(enc: EncodedKeys, rid: np.ndarray, split: bool = True) -> SortedRows:
    """Rows in file order (spec §2.9): null rows apart, the others by (logical key, row id); `split` lets a
    large input with row ids in order be sorted in parts on the thread pool."""
    valid = enc.valid
    rid_sorted = _is_sorted(rid)
    null_rid = np.empty(0, dtype=np.int64) if valid is None else rid[~valid]
    k = min(THREADS, len(rid) // _PART_ROWS)
    if split and rid_sorted and k >= 2 and enc.sort_rep.dtype.kind in "iu":
        parts = map_parts(lambda ab: _sort_part(enc, rid, *ab), _cuts(rid, k))
        return SortedRows(null_rid, parts, rid if valid is None else rid[valid])
    if valid is None:
        idx = None
        rep, r = enc.sort_rep, rid
    else:
        idx = np.flatnonzero(valid)
        rep, r = enc.sort_rep[idx], rid[idx]
        if not rid_sorted:
            null_rid = np.sort(null_rid)
    if rid_sorted:
        order = _stable_order(rep)
    else:
        # bring row ids into order first so one stable key sort yields (key, row id) order
        pre = np.argsort(r, kind="stable")
        order = pre[_stable_order(rep[pre])]
    rows = order if idx is None else idx[order]
    return SortedRows(null_rid, [SortedPart(rows, rep[order], r[order])], r if rid_sorted else r[pre])


def _cuts(rid: np.ndarray, k: int) -> list[tuple[int, int]]:
    """About k ranges of input positions over ascending row ids, cut only where a 65536-id container ends."""
    n = len(rid)
    marks = [0]
    for i in range(1, k):
        cut = int(np.searchsorted(rid, ((int(rid[n * i // k]) >> 16) + 1) << 16))
        if marks[-1] < cut < n:
            marks.append(cut)
    marks.append(n)
    return list(zip(marks[:-1], marks[1:]))


def _sort_part(enc: EncodedKeys, rid: np.ndarray, a: int, b: int) -> SortedPart:
    """Input rows a..b (row ids ascending) by (logical key, row id)."""
    if enc.valid is None:
        rep = enc.sort_rep[a:b]
        order = _stable_order(rep)
        srep = rep[order]
        rows = order
        rows += a   # in place: order is not needed again
    else:
        idx = a + np.flatnonzero(enc.valid[a:b])
        rep = enc.sort_rep[idx]
        order = _stable_order(rep)
        srep = rep[order]
        rows = idx[order]
    return SortedPart(rows, srep, rid[rows])


def _byte_order(kdata: np.ndarray, koffs: np.ndarray) -> np.ndarray:
    """Permutation putting distinct keys in unsigned lexicographic order of their bytes (spec §2.7)."""
    nk = len(koffs) - 1
    widths = np.diff(koffs)
    w = int(widths[0]) if nk else 0
    if nk and w in (1, 2, 4, 8) and bool(np.all(widths == w)):
        # fixed width: the bytes read as one big-endian unsigned number order like the bytes themselves
        return np.argsort(kdata.view(f">u{w}").astype(f"u{w}"), kind="stable")
    return np.array(sorted(range(nk), key=lambda i: kdata[koffs[i]:koffs[i + 1]].tobytes()), dtype=np.int64)


def _to_byte_order(enc: EncodedKeys, first_row: np.ndarray, bounds: np.ndarray, rid: np.ndarray,
                   kdata: np.ndarray, koffs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Regroup logically sorted key groups (one part) into byte order: (bounds, row ids, key bytes, offsets)."""
    perm = _byte_order(kdata, koffs)
    if bool(np.all(perm[1:] > perm[:-1])):
        return bounds, rid, kdata, koffs
    sizes = np.diff(bounds)[perm]
    new_bounds = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
    take = np.repeat(bounds[:-1][perm] - new_bounds[:-1], sizes) + np.arange(len(rid), dtype=np.int64)
    kdata, koffs = enc.buffer(first_row[perm])
    return new_bounds, rid[take], kdata, koffs


def _merge_unique(runs: Sequence[np.ndarray]) -> np.ndarray:
    """The distinct values of ascending, duplicate-free arrays, ascending: a stable sort merges the runs in
    linear time (timsort; np.unique hashes every value first, ~6× slower for a few million keys)."""
    cat = np.concatenate(runs)
    cat.sort(kind="stable")
    if len(cat) < 2:
        return cat
    return cat[np.concatenate(([True], cat[1:] != cat[:-1]))]


def _groups(parts: Sequence[SortedPart]) -> tuple[np.ndarray, list[tuple[np.ndarray, np.ndarray]]]:
    """(one input row of each distinct key in logical order, (row ids, bounds over all keys) per part)."""
    firsts = [key_starts(p.rep) for p in parts]
    reps = [p.rep[f] for p, f in zip(parts, firsts)]
    keys = reps[0] if len(parts) == 1 else _merge_unique(reps)
    nk = len(keys)
    first_row = np.empty(nk, dtype=np.int64)
    groups = []
    for p, f, r in zip(parts, firsts, reps):
        pos = np.searchsorted(keys, r) if len(parts) > 1 else np.arange(nk)
        first_row[pos] = p.rows[f]   # equal reps have equal key bytes: any part's row will do
        card = np.zeros(nk, dtype=np.int64)
        card[pos] = np.diff(np.append(f, len(p.rows)))
        bounds = np.zeros(nk + 1, dtype=np.int64)
        np.cumsum(card, out=bounds[1:])
        groups.append((p.rid, bounds))
    return first_row, groups


def encode_file(kt: KeyType, enc: EncodedKeys, null_rid: np.ndarray, parts: Sequence[SortedPart],
                block_size: int, codec: str, level: int, nn_rid: np.ndarray | None = None,
                key_order: str = "logical", nulls_first: bool = False, zstd_content_size: bool = False,
                run_optimize: bool = True) -> tuple[bytes, bytes | None, bytes | None, int]:
    """Bytes of one file from logically presorted rows; returns (data, first key, last key, value count).

    A row id must appear at most once per key in `parts` (its bitmap holds it once). `null_rid` and `nn_rid`
    are the null-rows and non-null-rows bitmaps' ids, ascending (nn_rid None: every row id of `parts`).
    nulls_first: those two bitmaps open the file (pypaimon's layout) instead of following the dictionary
    (current Java's streaming layout); spec §2.1, both are valid. zstd_content_size: zstd frames carry the
    block's size (pypaimon-rust's frames; Java's streams do not, spec §2.4). run_optimize False: the keys'
    bitmaps keep array and bitset containers, as pypaimon-rust writes them (Java run-optimizes, spec §1).

    key_order "bytes" writes the file's distinct keys in serialized-byte order instead (spec §2.7,
    pypaimon 2.1.0); first/last stay the logical smallest/largest keys, as pypaimon's writer records
    them (spec §4). Strings and booleans: both orders coincide, nothing changes.
    """
    first_row, groups = _groups(parts)
    nk = len(first_row)
    kdata, koffs = enc.buffer(first_row) if nk else (np.zeros(0, np.uint8), np.zeros(1, np.int64))
    # spec §4: the logical smallest and largest keys, whatever order the dictionary uses
    first = kdata[koffs[0]:koffs[1]].tobytes() if nk else None
    last = kdata[koffs[nk - 1]:koffs[nk]].tobytes() if nk else None
    if key_order == "bytes" and nk > 1 and not kt.byte_order_is_logical:
        (rid, bounds), = groups  # write_index_* keep one part for this order
        bounds, rid, kdata, koffs = _to_byte_order(enc, first_row, bounds, rid, kdata, koffs)
        groups = [(rid, bounds)]
    # spec §2.9 step 3: every key's bitmap is written in key order
    allbm, cum = serialize_parts(groups, run_optimize=run_optimize)
    if nn_rid is None:
        rid = groups[0][0] if len(groups) == 1 else np.concatenate([g[0] for g in groups])
        nn_rid = rid if _is_sorted(rid) else np.sort(rid)
    data = assemble_file(kdata, koffs, allbm, cum, null_rid, nn_rid, block_size, codec, level,
                         nulls_first=nulls_first, zstd_content_size=zstd_content_size)
    return data, first, last, nk


def assemble_file(kdata: np.ndarray, koffs: np.ndarray, allbm: bytes | np.ndarray, cum: np.ndarray,
                  null_rid: np.ndarray, nn_rid: np.ndarray, block_size: int, codec: str, level: int, *,
                  nulls_first: bool = False, zstd_content_size: bool = False, nn_distinct: bool = False) -> bytes:
    """A file's bytes from its keys in file order (bytes `kdata`, int64 offsets `koffs`), their bitmaps
    (`allbm`, int64 offsets `cum`) and the ascending null-rows and non-null-rows ids (see encode_file);
    nn_distinct: no non-null row id repeats (the caller knows; saves a pass over them)."""
    nk = len(koffs) - 1
    lengths = np.diff(cum)
    klen = np.diff(koffs)
    kvl = varint_lengths(klen)
    lvl = varint_lengths(lengths)
    window = block_size // 3 + 2  # every entry takes ≥ 3 bytes, so a block never holds more
    null_bytes = serialize_sorted(null_rid)
    nn_bytes = serialize_sorted(nn_rid, distinct=nn_distinct)
    # spec §2.1: pypaimon (and pypaimon-rust) lead with the null-rows and non-null-rows bitmaps
    chunks: list[bytes | np.ndarray] = [null_bytes, nn_bytes] if nulls_first else []   # slices of allbm
    index: list[bytes] = []
    pos = len(null_bytes) + len(nn_bytes) if nulls_first else 0
    pending = b""   # the previous dictionary block, written after the next key's bitmap (spec §2.1)
    s = 0
    while s < nk:
        w = min(nk - s, window)
        off = pos + len(pending) + (cum[s:s + w] - cum[s])
        off[0] = pos
        e = kvl[s:s + w] + klen[s:s + w] + varint_lengths(off) + lvl[s:s + w]
        csum = np.cumsum(e)
        # spec §2.8: entry c (0-based) closes a block of c entries when varint_len(c+1) + Σe[0..c] > size
        c = w
        if w > 1:
            cs = np.arange(1, w, dtype=np.int64)
            over = np.flatnonzero(varint_lengths(cs + 1) + csum[1:] > block_size)
            if len(over):
                c = int(over[0]) + 1
        chunks.append(allbm[cum[s]:cum[s + 1]])
        if pending:
            chunks.append(pending)
        if c > 1:
            chunks.append(allbm[cum[s + 1]:cum[s + c]])
        body = varint(c) + encode_entries(kdata, koffs, klen[s:s + c], kvl[s:s + c], off[:c],
                                          lengths[s:s + c], lvl[s:s + c], s)
        stored, stored_len = codecs.encode_block_with_trailer(body, codec, level,
                                                              zstd_content_size=zstd_content_size)
        end = int(off[c - 1] + lengths[s + c - 1])
        if c == 1:
            end += len(pending)  # a lone entry's bitmap precedes the previous block
        block_pos = end + (int(lengths[s + c]) if s + c < nk else 0)
        first_key = kdata[koffs[s]:koffs[s + 1]].tobytes()
        index.append(encode_entry(first_key, block_pos, stored_len))
        pending = stored
        pos = end
        s += c
    if pending:
        chunks.append(pending)
        pos += len(pending)
    # spec §2.9 step 4: null rows, non-null rows (unless written first), block index, footer
    if nulls_first:
        null_off, index_off = 0, pos
    else:
        null_off, index_off = pos, pos + len(null_bytes) + len(nn_bytes)
        chunks.append(null_bytes)
        chunks.append(nn_bytes)
    non_null_off = null_off + len(null_bytes)
    stored, index_len = codecs.encode_block_with_trailer(varint(len(index)) + b"".join(index), codec, level,
                                                         zstd_content_size=zstd_content_size)
    chunks.append(stored)
    footer = Footer(null_off, len(null_bytes), non_null_off, len(nn_bytes), index_off, index_len, nk)
    chunks.append(footer.to_bytes())
    return b"".join(chunks)  # type: ignore[arg-type]  # numpy's stub: __buffer__ on 3.12+


def written_file(kt: KeyType, path: str, data: bytes, row_count: int, first: bytes | None,
                 last: bytes | None, has_nulls: bool, value_count: int) -> WrittenFile:
    """The WrittenFile of one encoded file (spec §4 metadata from its first/last key bytes)."""
    return WrittenFile(path, len(data), row_count, build_meta_bytes(first, last, has_nulls),
                       None if first is None else deserialize_key(kt, first),
                       None if last is None else deserialize_key(kt, last), has_nulls, value_count)


def _prepare(keys: object, row_ids: object, kt: KeyType) -> tuple[EncodedKeys, np.ndarray]:
    enc = encode_arrow_keys(kt, keys)
    rid = check_row_ids(row_ids, len(enc.sort_rep))
    return enc, rid


def write_index_bytes(keys: pa.Array | np.ndarray | Sequence[object], row_ids: pa.Array | np.ndarray | Sequence[int],
                      kt: KeyType, options: IndexOptions | Mapping[str, object] | None = None
                      ) -> tuple[bytes, WrittenFile]:
    """One file's bytes from keys in any order and their local row ids (nulls → null bitmap)."""
    block_size, codec, level, key_order = writer_settings(options)
    kt = parse_type(kt) if isinstance(kt, str) else kt
    with reuse_freed_pages():
        enc, rid = _prepare(keys, row_ids, kt)
        data, first, last, count, nulls = _one_file(enc, rid, kt, block_size, codec, level, key_order)
    return data, written_file(kt, "", data, len(rid), first, last, nulls, count)


def _one_file(enc: EncodedKeys, rid: np.ndarray, kt: KeyType, block_size: int, codec: str, level: int,
              key_order: str) -> tuple[bytes, bytes | None, bytes | None, int, bool]:
    """All the input as one file: (bytes, first key, last key, distinct keys, has null rows). The dense way
    when the input suits it, else sorted in parts on the thread pool."""
    logical = key_order == "logical" or kt.byte_order_is_logical
    dense = _dense_keys(enc, rid) if logical else None
    if dense is not None:
        kb, null_rid, nn_rid = dense
        first_row = kb.first_row
        count = len(first_row)
        kdata, koffs = enc.buffer(first_row) if count else (np.zeros(0, np.uint8), np.zeros(1, np.int64))
        first = kdata[koffs[0]:koffs[1]].tobytes() if count else None
        last = kdata[koffs[count - 1]:koffs[count]].tobytes() if count else None
        data = assemble_file(kdata, koffs, kb.data, kb.offsets, null_rid, nn_rid, block_size, codec, level,
                             nn_distinct=True)
    else:
        s = sort_rows(enc, rid, split=logical)
        null_rid = s.null_rid
        data, first, last, count = encode_file(kt, enc, s.null_rid, s.parts, block_size, codec, level,
                                               s.nn_rid, key_order)
    return data, first, last, count, len(null_rid) > 0


# Inputs of at least this many rows go the dense way when they can (see _dense_keys)
_DENSE_ROWS = 1 << 16


def _dense_keys(enc: EncodedKeys, rid: np.ndarray) -> tuple[KeyBitmaps, np.ndarray, np.ndarray] | None:
    """(every key's bitmap, null-rows ids, non-null-rows ids) by dense_bitmaps.key_bitmaps, or None when the
    input does not suit it: fewer than _DENSE_ROWS rows, more than 65536 possible keys (a sort
    representation that is not 16-bit), or row ids (of the non-null rows) not strictly ascending below 2^32."""
    rep = enc.sort_rep
    if len(rep) < _DENSE_ROWS or rep.dtype not in (np.uint16, np.int64):
        return None
    valid = enc.valid
    # the null rows' ids must ascend too (their bitmap is built from them in order); without nulls the
    # strict check below covers every id
    if rid[-1] >= (1 << 32) or (valid is not None and not _is_sorted(rid)):
        return None
    idx = None if valid is None else np.flatnonzero(valid)
    nn_rid = rid if idx is None else rid[idx]
    if not strictly_ascending(nn_rid):
        return None
    codes = rep if idx is None else rep[idx]
    if codes.dtype != np.uint16:
        codes = compact(codes)   # only the order of the representation matters
        if codes.dtype != np.uint16:
            return None
    kb = key_bitmaps(codes, nn_rid)
    if idx is not None:
        kb = replace(kb, first_row=idx[kb.first_row])
    null_rid = np.empty(0, dtype=np.int64) if valid is None else rid[~valid]
    return kb, null_rid, nn_rid


def write_index_files(keys: pa.Array | np.ndarray | Sequence[object], row_ids: pa.Array | np.ndarray | Sequence[int],
                      kt: KeyType, options: IndexOptions | Mapping[str, object] | None = None, *,
                      records_per_file: int,
                      new_path: Callable[[], str], storage: Storage,
                      keep_rows: bool = False) -> list[WrittenFile]:
    """Global sort (nulls first, then key, row id) cut into files of `records_per_file` records (spec §5.2).

    `records_per_file` is floor(1.2 × sorted-index.records-per-range); one key may span two files.
    Each file is written with `storage.write_atomic(new_path(), data)`; WrittenFile.path is that path
    as given. To get bytes without storage, use write_index_bytes. keep_rows: also say which input rows
    each file holds (WrittenFile.rows, e.g. to write a range sidecar beside it); otherwise rows is None.
    """
    if records_per_file < 1:
        raise WriterInputError("records_per_file must be ≥ 1")
    block_size, codec, level, key_order = writer_settings(options)
    kt = parse_type(kt) if isinstance(kt, str) else kt
    with reuse_freed_pages():
        return _write_files(keys, row_ids, kt, block_size, codec, level, key_order, records_per_file,
                            new_path, storage, keep_rows)


def _write_files(keys: object, row_ids: object, kt: KeyType, block_size: int, codec: str, level: int,
                 key_order: str, records_per_file: int, new_path: Callable[[], str], storage: Storage,
                 keep_rows: bool) -> list[WrittenFile]:
    enc, rid = _prepare(keys, row_ids, kt)
    if not keep_rows and len(rid) <= records_per_file:   # one file (a build range's usual case): its fastest way
        data, first, last, count, nulls = _one_file(enc, rid, kt, block_size, codec, level, key_order)
        path = new_path()
        storage.write_atomic(path, data)
        return [written_file(kt, path, data, len(rid), first, last, nulls, count)]
    s = sort_rows(enc, rid, split=False)  # one global order, cut into files below
    (whole,) = s.parts
    out: list[WrittenFile] = []
    for null_cut, cut in file_cuts(len(s.null_rid), len(whole.rows), records_per_file):
        null_part = s.null_rid[null_cut]
        part = SortedPart(whole.rows[cut], whole.rep[cut], whole.rid[cut])
        data, first, last, count = encode_file(kt, enc, null_part, [part], block_size, codec, level,
                                           key_order=key_order)
        path = new_path()
        storage.write_atomic(path, data)
        written = written_file(kt, path, data, len(null_part) + len(part.rows), first, last, len(null_part) > 0,
                               count)
        if keep_rows:
            written = replace(written, rows=FileRows(part.rows, part.rid, key_starts(part.rep)))
        out.append(written)
    return out
