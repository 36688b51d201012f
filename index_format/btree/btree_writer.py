"""Vectorized btree-index writer: keys + local row ids → files byte-identical to Paimon Java's BTreeIndexWriter.

One global sort (nulls first by row id, then logical key, then row id) is cut into files of `records_per_file`
records; each file's entries, varints and block cuts are laid out with numpy, never a Python loop per entry.
A file is Paimon's SST: data blocks of key → row-id list (closed as soon as an entry takes the block past
`btree-index.block-size`, as SstFileWriter does), the null bitmap (run-optimized portable roaring + CRC-32),
an optional bloom filter (pypaimon's `btree-index.bloom-filter.enabled`), the index block (last key of each
data block → its handle) and the footer. Returns bytes (write_btree_bytes) or writes through the Storage port
(write_btree_files). Imports numpy/pyarrow and index_format.{btree,codecs,bitmaps,key_arrays,keys,row_order,
written_files,types}.
"""
from __future__ import annotations

import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from index_format import codecs
from index_format.bitmaps import serialize_sorted
from index_format.btree.btree_bloom import build_bloom
from index_format.btree.btree_footer import BTreeFooter
from index_format.btree.btree_varints import put_varints, varint_sizes
from index_format.btree.sst_blocks import EMPTY_BLOCK_TAIL, block_tail, encode_handle
from index_format.heap import reuse_freed_pages
from index_format.key_arrays import EncodedKeys, encode_arrow_keys
from index_format.keys import deserialize_key
from index_format.layout import TRAILER_CRC, TRAILER_SIZE, varint
from index_format.murmur_hash import binary_string_hashes_of
from index_format.row_order import is_sorted, key_starts, stable_order
from index_format.types import KeyType, parse_type
from index_format.written_files import FileRows, WriterInputError, WrittenFile, build_meta_bytes, check_row_ids

if TYPE_CHECKING:
    from index_format.options import IndexOptions
    from index_format.storage import Storage

__all__ = ["write_btree_bytes", "write_btree_files"]


@dataclass(frozen=True, slots=True)
class _Opts:
    block_size: int
    codec: str
    level: int
    bloom: bool


def _options(options: IndexOptions | Mapping[str, object] | str | None) -> _Opts:
    from index_format.options import IndexOptions as _IndexOptions
    from index_format.options import parse_options
    if options is None:
        options = _IndexOptions()
    elif not isinstance(options, _IndexOptions):
        options = parse_options(options)  # Paimon option keys
    return _Opts(int(options.btree_block_size), codecs.check_codec(str(options.btree_compression)),
                 int(options.btree_compression_level), bool(options.btree_bloom_filter))


@dataclass(slots=True)
class _Sorted:
    """Every input row in file order: null rows' ids ascending, then the non-null rows by (key, row id)."""

    null_rid: np.ndarray
    rows: np.ndarray      # index of each non-null row in the input
    rep: np.ndarray       # its logical sort representation
    rid: np.ndarray       # its row id


def _sort(enc: EncodedKeys, rid: np.ndarray) -> _Sorted:
    valid = enc.valid
    rid_sorted = is_sorted(rid)
    if valid is None:
        idx = None
        rep, r = enc.sort_rep, rid
        null_rid = np.zeros(0, dtype=np.int64)
    else:
        idx = np.flatnonzero(valid)
        rep, r = enc.sort_rep[idx], rid[idx]
        null_rid = rid[~valid]
        if not rid_sorted:
            null_rid = np.sort(null_rid)
    if rid_sorted:
        order = stable_order(rep)
    else:
        # row ids into order first, so one stable key sort gives (key, row id) order
        pre = np.argsort(r, kind="stable")
        order = pre[stable_order(rep[pre])]
    return _Sorted(null_rid, order if idx is None else idx[order], rep[order], r[order])


def _entries(enc: EncodedKeys, rows: np.ndarray, rep: np.ndarray, rid: np.ndarray
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(entries back to back as uint8, size of each entry, key bytes, key offsets) of sorted non-null rows:
    per distinct key: varint key length, key, varint value length, value = varint count, varlong row ids."""
    starts = key_starts(rep)
    nk = len(starts)
    counts = np.diff(np.append(starts, len(rows)))
    kdata, koffs = enc.buffer(rows[starts])
    klen = np.diff(koffs)
    kvl = varint_sizes(klen)
    rvl = varint_sizes(rid)
    vlen = varint_sizes(counts) + np.add.reduceat(rvl, starts)
    vvl = varint_sizes(vlen)
    e = kvl + klen + vvl + vlen
    pos = np.zeros(nk + 1, dtype=np.int64)
    np.cumsum(e, out=pos[1:])
    out = np.empty(int(pos[-1]), dtype=np.uint8)
    at = pos[:-1]
    put_varints(out, at, klen, kvl)
    at = at + kvl
    width = int(klen[0])
    if bool((klen == width).all()):
        out[at[:, None] + np.arange(width)] = kdata.reshape(nk, width)
    else:
        out[np.arange(len(kdata), dtype=np.int64) + np.repeat(at - koffs[:-1], klen)] = kdata
    at += klen
    put_varints(out, at, vlen, vvl)
    at += vvl
    cvl = varint_sizes(counts)
    put_varints(out, at, counts, cvl)
    at += cvl
    del vvl, vlen, kvl
    # row r of key k sits at (k's first id position) + (sizes of k's earlier ids)
    before = np.zeros(len(rid), dtype=np.int64)
    np.cumsum(rvl[:-1], out=before[1:])
    before += np.repeat(at - before[starts], counts)
    put_varints(out, before, rid, rvl)
    return out, e, kdata, koffs


def _block_ends(e: np.ndarray, block_size: int) -> list[int]:
    """End (exclusive) of each data block over entries of sizes `e`, as Paimon's SstFileWriter closes them: after
    the first entry that takes the block's memory (entries + 5, + 4 per entry once sizes differ) past block_size."""
    n = len(e)
    total = np.cumsum(e)
    total4 = total + 4 * np.arange(1, n + 1, dtype=np.int64)
    change = np.flatnonzero(e[1:] != e[:-1]) + 1
    ends: list[int] = []
    s = 0
    while s < n:
        base = int(total[s - 1]) if s else 0
        k = int(np.searchsorted(change, s, side="right"))
        d = int(change[k]) if k < len(change) else n    # entries s..d-1 have the same size (aligned)
        j = max(int(np.searchsorted(total, block_size - 5 + base, side="right")), s)
        if j >= d:
            j = max(int(np.searchsorted(total4, block_size - 5 + base + 4 * s, side="right")), d)
        end = min(j + 1, n)
        ends.append(end)
        s = end
    return ends


def _encode(kt: KeyType, enc: EncodedKeys, null_rid: np.ndarray, rows: np.ndarray, rep: np.ndarray,
            rid: np.ndarray, opts: _Opts) -> tuple[bytes, bytes | None, bytes | None, int]:
    """One file's bytes from sorted rows; returns (data, first key bytes, last key bytes, distinct keys)."""
    chunks: list[bytes] = []
    pos = 0
    index: list[bytes] = []
    index_sizes: list[int] = []
    first = last = None
    nk = 0
    bloom = None
    if len(rows):
        out, e, kdata, koffs = _entries(enc, rows, rep, rid)
        nk = len(e)
        first = kdata[koffs[0]:koffs[1]].tobytes()
        last = kdata[koffs[nk - 1]:koffs[nk]].tobytes()
        starts = np.zeros(nk + 1, dtype=np.int64)
        np.cumsum(e, out=starts[1:])
        s = 0
        for end in _block_ends(e, opts.block_size):
            body = out[starts[s]:starts[end]].tobytes() + block_tail(e[s:end])
            stored, type_id = codecs.encode_block(body, opts.codec, opts.level)
            chunks.append(stored)
            chunks.append(codecs.trailer(stored, type_id))
            key = kdata[koffs[end - 1]:koffs[end]].tobytes()
            handle = encode_handle(pos, len(stored))
            entry = varint(len(key)) + key + varint(len(handle)) + handle
            index.append(entry)
            index_sizes.append(len(entry))
            pos += len(stored) + TRAILER_SIZE
            s = end
        if opts.bloom:
            bloom = build_bloom(hashes=binary_string_hashes_of(kdata, koffs))
        del out
    null_off = null_len = 0
    if len(null_rid):
        nb = serialize_sorted(null_rid)
        null_off, null_len = pos, len(nb)
        chunks += [nb, TRAILER_CRC.pack(zlib.crc32(nb))]
        pos += len(nb) + 4
    bloom_off = bloom_len = bloom_n = 0
    if bloom is not None:
        bloom_off, bloom_len, bloom_n = pos, len(bloom[0]), bloom[1]
        chunks.append(bloom[0])
        pos += bloom_len
    tail = block_tail(np.array(index_sizes, dtype=np.int64)) if index else EMPTY_BLOCK_TAIL
    stored, type_id = codecs.encode_block(b"".join(index) + tail, opts.codec, opts.level)
    chunks += [stored, codecs.trailer(stored, type_id)]
    footer = BTreeFooter(bloom_off, bloom_len, bloom_n, pos, len(stored), null_off, null_len)
    chunks.append(footer.to_bytes())
    return b"".join(chunks), first, last, nk


def _written(kt: KeyType, path: str, data: bytes, row_count: int, first: bytes | None, last: bytes | None,
             has_nulls: bool, value_count: int) -> WrittenFile:
    return WrittenFile(path, len(data), row_count, build_meta_bytes(first, last, has_nulls),
                       None if first is None else deserialize_key(kt, first),
                       None if last is None else deserialize_key(kt, last), has_nulls, value_count)


def write_btree_bytes(keys: pa.Array | np.ndarray | Sequence[object], row_ids: pa.Array | np.ndarray | Sequence[int],
                      kt: KeyType | str, options: IndexOptions | Mapping[str, object] | str | None = None
                      ) -> tuple[bytes, WrittenFile]:
    """One btree file's bytes from keys in any order and their local row ids (nulls → the null bitmap).

    Raises:
        WriterInputError: bad row ids. InvalidOptionError: bad options. UnsupportedTypeError: a key type
            the index cannot hold.
    """
    opts = _options(options)
    kt = parse_type(kt) if isinstance(kt, str) else kt
    with reuse_freed_pages():
        enc = encode_arrow_keys(kt, keys)
        rid = check_row_ids(row_ids, len(enc.sort_rep))
        s = _sort(enc, rid)
        if not len(rid):
            raise WriterInputError("a btree file needs at least one row (Paimon never writes an empty one)")
        data, first, last, count = _encode(kt, enc, s.null_rid, s.rows, s.rep, s.rid, opts)
    return data, _written(kt, "", data, len(rid), first, last, len(s.null_rid) > 0, count)


def write_btree_files(keys: pa.Array | np.ndarray | Sequence[object], row_ids: pa.Array | np.ndarray | Sequence[int],
                      kt: KeyType | str, options: IndexOptions | Mapping[str, object] | str | None = None, *,
                      records_per_file: int, new_path: Callable[[], str], storage: Storage,
                      keep_rows: bool = False) -> list[WrittenFile]:
    """Global sort (nulls first, then key, row id) cut into files of `records_per_file` records.

    One key may span two files. Each file is written with `storage.write_atomic(new_path(), data)`;
    WrittenFile.path is that path as given. keep_rows: also say which input rows each file holds
    (WrittenFile.rows), as the bitmap writer does; otherwise rows is None. No rows → no files.
    """
    if records_per_file < 1:
        raise WriterInputError("records_per_file must be ≥ 1")
    opts = _options(options)
    kt = parse_type(kt) if isinstance(kt, str) else kt
    with reuse_freed_pages():
        enc = encode_arrow_keys(kt, keys)
        rid = check_row_ids(row_ids, len(enc.sort_rep))
        s = _sort(enc, rid)
        n_null = len(s.null_rid)
        total = n_null + len(s.rows)
        out: list[WrittenFile] = []
        for start in range(0, total, records_per_file):
            end = min(start + records_per_file, total)
            nulls = s.null_rid[start:min(end, n_null)] if start < n_null else s.null_rid[:0]
            a, b = max(start - n_null, 0), max(end - n_null, 0)
            data, first, last, count = _encode(kt, enc, nulls, s.rows[a:b], s.rep[a:b], s.rid[a:b], opts)
            path = new_path()
            storage.write_atomic(path, data)
            written = _written(kt, path, data, end - start, first, last, len(nulls) > 0, count)
            if keep_rows:
                written = replace(written, rows=FileRows(s.rows[a:b], s.rid[a:b], key_starts(s.rep[a:b])))
            out.append(written)
        return out
