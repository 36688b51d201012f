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
from index_format.btree.btree_varints import put_varints, varint_sizes, varint_words
from index_format.btree.sst_blocks import ALIGNED, EMPTY_BLOCK_TAIL, UNALIGNED, block_tail, encode_handle
from index_format.key_arrays import EncodedKeys, encode_arrow_keys
from index_format.keys import deserialize_key
from index_format.layout import BTREE_BLOCK_TAIL, TRAILER_CRC, TRAILER_SIZE, varint
from index_format.murmur_hash import binary_string_hashes_of
from index_format.parallel import map_parts
from index_format.row_order import file_cuts, is_sorted, key_starts, stable_order
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
    rep: np.ndarray       # its key's rank: ascending, equal exactly for equal keys
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
        order, ranks = _key_order(rep)
        # local ids 0..n-1 in input order (the usual case): the sorted ids are the order itself
        dense = len(r) and int(r[0]) == 0 and int(r[-1]) == len(r) - 1 and bool((r[1:] != r[:-1]).all())
        srid = order if dense else r[order]
    else:
        # row ids into order first, so one stable key sort gives (key, row id) order
        pre = np.argsort(r, kind="stable")
        order, ranks = _key_order(rep[pre])
        order = pre[order]
        srid = r[order]
    return _Sorted(null_rid, order if idx is None else idx[order], ranks, srid)


def _key_order(rep: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(stable argsort of `rep`, the keys' ranks in that order: ascending, equal exactly for equal keys).

    Keys spanning < 2^32 values (most columns) are packed with their position into one uint64 and sorted by
    value, several times faster than an argsort; wider ones take numpy's fast unstable argsort, then equal keys
    are put back in position order by one more packed sort. In-place arithmetic: a 10M-row sort touches as
    little fresh memory as it can."""
    n = len(rep)
    if n < 2 or n >= 1 << 32 or rep.dtype.kind not in "iu":
        order = stable_order(rep)
        return order, rep[order]
    lo, hi = int(rep.min()), int(rep.max())
    if hi - lo < 1 << 32:
        packed = rep.astype(np.uint64)
        packed -= np.uint64(lo % (1 << 64))    # modulo 2^64: the offset from the smallest key
        packed <<= np.uint64(32)
        _or_positions(packed)
    else:
        order = np.argsort(rep)
        ranked = rep[order]
        packed = np.zeros(n, dtype=np.uint64)   # the rank of each key among the distinct keys
        np.cumsum(ranked[1:] != ranked[:-1], out=packed[1:])
        del ranked
        packed <<= np.uint64(32)
        packed |= order.view(np.uint64)
        del order
    packed.sort()
    ranks = packed >> np.uint64(32)
    packed &= np.uint64(0xFFFFFFFF)
    return packed.view(np.int64), ranks


def _or_positions(packed: np.ndarray) -> None:
    """packed[i] |= i, a bounded slice at a time (no n-sized temporary)."""
    step = 1 << 20
    for a in range(0, len(packed), step):
        b = min(a + step, len(packed))
        packed[a:b] |= np.arange(a, b, dtype=np.uint64)


# Entries are laid out a part of about this many rows at a time (whole blocks): the temporaries stay small and
# warm in cache, and a 10M-row file never touches gigabytes of fresh memory.
_PART_ROWS = 1 << 19


Sizes = np.ndarray | int   # per key or per row, or one value for all


@dataclass(slots=True)
class _Layout:
    """Sizes of every entry's parts: per distinct key (k) and per row (r), sorted. A value is `count` then
    the row ids; `counts` is None when every key has one row. Sizes shared by every key are plain ints."""

    kdata: np.ndarray       # distinct keys' bytes back to back
    koffs: np.ndarray       # their nk + 1 offsets
    starts: np.ndarray | None   # first row of each key (None: one row per key, key k is row k)
    counts: np.ndarray | None
    rid: np.ndarray         # row ids (r)
    rvl: np.ndarray         # varint size of each row id (r, uint8)
    klen: Sizes             # key lengths (k)
    kvl: Sizes              # their varint sizes
    vlen: np.ndarray        # value lengths (k)
    vvl: Sizes              # their varint sizes
    cvl: Sizes              # varint sizes of the counts
    e: np.ndarray           # entry sizes (k, int32)
    width: int              # the keys' common width, 0 when they differ


def _one(sizes: np.ndarray) -> Sizes:
    """`sizes`, or its single value when all are equal."""
    first = int(sizes[0])
    return first if bool((sizes == first).all()) else sizes


def _at(x: Sizes, a: int, b: int) -> Sizes:
    return x[a:b] if isinstance(x, np.ndarray) else x


def _top(x: Sizes) -> int:
    return int(x.max()) if isinstance(x, np.ndarray) else x


def _layout(kdata: np.ndarray, koffs: np.ndarray, starts: np.ndarray | None, rid: np.ndarray) -> _Layout:
    n = len(rid)
    counts = None if starts is None else np.diff(np.append(starts, n))
    rvl = varint_sizes(rid, np.uint8)
    rsum = rvl.astype(np.int32) if starts is None else np.add.reduceat(rvl, starts, dtype=np.int64)
    cvl = 1 if counts is None else _one(varint_sizes(counts, np.uint8))
    klen = _one(np.diff(koffs))
    width = klen if isinstance(klen, int) else 0
    kvl = varint_sizes(np.array([klen]))[0].item() if isinstance(klen, int) else _one(varint_sizes(klen, np.uint8))
    vlen = rsum + cvl
    vvl = _one(varint_sizes(vlen, np.uint8))
    e = (vlen + (kvl + vvl) + klen).astype(np.int32)
    return _Layout(kdata, koffs, starts, counts, rid, rvl, klen, kvl, vlen, vvl, cvl, e, width)


def _write_entries(lay: _Layout, opts: _Opts, chunks: list[bytes | memoryview]) -> tuple[int, list[bytes]]:
    """Append every data block (stored body, trailer) to `chunks`; returns (bytes written, index block entries).

    Entries are laid out, checksummed and compressed a part of whole blocks at a time, parts in parallel
    (numpy, zlib and zstandard release the GIL); handles and the index block follow in order."""
    n, nk = len(lay.rid), len(lay.e)
    cuts = _block_ends(lay.e, opts.block_size)
    records = (0 < lay.width <= 8 and 4 * nk >= n and _top(lay.vvl) <= 8
               and 1 + lay.width + _top(lay.vvl) + _top(lay.cvl) + int(lay.rvl.max()) <= 32)
    groups: list[tuple[int, int]] = []   # (first block, last block + 1) of each part
    first_block = 0
    while first_block < len(cuts):
        r0 = _row_of(lay, cuts[first_block - 1][0] if first_block else 0)
        last_block = first_block
        while last_block + 1 < len(cuts) and _row_of(lay, cuts[last_block][0]) - r0 < _PART_ROWS:
            last_block += 1
        groups.append((first_block, last_block + 1))
        first_block = last_block + 1

    def part_blocks(group: tuple[int, int]) -> list[tuple[list[bytes | memoryview], int]]:
        g0, g1 = group
        k0, k1 = cuts[g0 - 1][0] if g0 else 0, cuts[g1 - 1][0]
        part = _records(lay, k0, k1) if records else _scattered(lay, k0, k1)
        return _stored_blocks(lay, part, k0, cuts[g0:g1], opts)

    index: list[bytes] = []
    pos = 0
    kdata, koffs = lay.kdata, lay.koffs
    for (g0, _g1), blocks in zip(groups, map_parts(part_blocks, groups)):
        for (end, _aligned), (pieces, stored_len) in zip(cuts[g0:], blocks):
            chunks += pieces
            key = kdata[koffs[end - 1]:koffs[end]].tobytes()
            handle = encode_handle(pos, stored_len)
            index.append(varint(len(key)) + key + varint(len(handle)) + handle)
            pos += stored_len + TRAILER_SIZE
    return pos, index


def _row_of(lay: _Layout, k: int) -> int:
    """First row of key k (n for k = nk)."""
    if lay.starts is None:
        return k
    return int(lay.starts[k]) if k < len(lay.starts) else len(lay.rid)


def _scattered(lay: _Layout, k0: int, k1: int) -> np.ndarray:
    """Entries of keys k0..k1-1 written field by field at computed positions (any key widths)."""
    r0, r1 = _row_of(lay, k0), _row_of(lay, k1)
    e = lay.e[k0:k1]
    nk = k1 - k0
    pos = np.zeros(nk + 1, dtype=np.int64)
    np.cumsum(e, out=pos[1:])
    out = np.empty(int(pos[-1]), dtype=np.uint8)
    klen = np.broadcast_to(_at(lay.klen, k0, k1), (nk,)).astype(np.int64)
    kvl = np.broadcast_to(_at(lay.kvl, k0, k1), (nk,)).astype(np.int64)
    vvl = np.broadcast_to(_at(lay.vvl, k0, k1), (nk,)).astype(np.int64)
    cvl = np.broadcast_to(_at(lay.cvl, k0, k1), (nk,)).astype(np.int64)
    at = pos[:-1]
    put_varints(out, at, klen, kvl)
    at = at + kvl
    kb0, kb1 = int(lay.koffs[k0]), int(lay.koffs[k1])
    kdata = lay.kdata[kb0:kb1]
    if lay.width:
        out[at[:, None] + np.arange(lay.width)] = kdata.reshape(nk, lay.width)
    else:
        out[np.arange(len(kdata), dtype=np.int64) + np.repeat(at - (lay.koffs[k0:k1] - kb0), klen)] = kdata
    at += klen
    put_varints(out, at, lay.vlen[k0:k1], vvl)
    at += vvl
    counts = np.ones(nk, dtype=np.int64) if lay.counts is None else lay.counts[k0:k1]
    put_varints(out, at, counts, cvl)
    at += cvl
    # row r of key k sits at (k's first id position) + (sizes of k's earlier ids)
    rvl = lay.rvl[r0:r1].astype(np.int64)
    before = np.zeros(r1 - r0, dtype=np.int64)
    np.cumsum(rvl[:-1], out=before[1:])
    first = np.arange(nk) if lay.starts is None else lay.starts[k0:k1] - r0
    before += np.repeat(at - before[first], counts)
    put_varints(out, before, lay.rid[r0:r1], rvl)
    return out


# A byte pattern of n ones (0x01 per byte) for n = 0..8: the valid bytes of a field, viewed as numpy bools.
_ONES = np.array([sum(1 << (8 * j) for j in range(n)) for n in range(9)], dtype=np.uint64)
_Field = tuple[np.ndarray | int, np.ndarray | int, int]   # (value bytes as a LE uint64, valid bytes, slot width)


def _records(lay: _Layout, k0: int, k1: int) -> np.ndarray:
    """Entries of keys k0..k1-1 (one width ≤ 8 bytes, mostly few rows per key) without scattered writes: one
    fixed-size record per row — key length, key, value length and count on a key's first row, then the row
    id's varint — assembled in uint64 words, then squeezed to each field's valid bytes in row order, which is
    exactly the entries' layout."""
    r0, r1 = _row_of(lay, k0), _row_of(lay, k1)
    n, nk, width = r1 - r0, k1 - k0, lay.width
    rvl = lay.rvl[r0:r1]
    vvl, cvl = _at(lay.vvl, k0, k1), _at(lay.cvl, k0, k1)
    vvl_top, cvl_top, rvl_top = _top(vvl), _top(cvl), int(rvl.max())
    slots = [1, width, vvl_top, cvl_top, rvl_top]
    kwords = np.zeros((nk, 8), dtype=np.uint8)
    kwords[:, :width] = lay.kdata[k0 * width:k1 * width].reshape(nk, width)
    counts = 1 if lay.counts is None else lay.counts[k0:k1]
    fields: list[_Field] = [
        (width, 1, 1),                                              # key length (< 128: one byte)
        (kwords.view("<u8").ravel(), width, width),                 # key
        (varint_words(lay.vlen[k0:k1], vvl), vvl, vvl_top),
        (1, 1, 1) if lay.counts is None else (varint_words(lay.counts[k0:k1], cvl), cvl, cvl_top),
    ]
    del kwords
    if lay.starts is not None:   # header fields live on each key's first row only (counts too, then)
        first = lay.starts[k0:k1] - r0

        def per_row(v: np.ndarray | int) -> np.ndarray:
            full = np.zeros(n, dtype=np.uint64)
            full[first] = v
            return full
        fields = [(per_row(v), per_row(z), slot) for v, z, slot in fields]
    fields.append((varint_words(lay.rid[r0:r1], rvl), rvl, rvl_top))
    total = sum(slots)
    nwords = (total + 7) // 8
    rec = np.zeros((n, nwords), dtype=np.uint64)
    prefix = all(isinstance(z, int) and z == slot for _, z, slot in fields[:-1])
    valid = None if prefix else np.zeros((n, nwords), dtype=np.uint64)
    offset = 0
    for value, size, slot in fields:
        i, shift = divmod(offset, 8)
        spill = shift and shift + slot > 8    # the field runs into the next word
        v = np.uint64(value) if isinstance(value, int) else value
        rec[:, i] |= v << np.uint64(8 * shift)
        if spill:
            rec[:, i + 1] |= v >> np.uint64(64 - 8 * shift)
        if valid is not None:
            pattern = _ONES[size]
            valid[:, i] |= pattern << np.uint64(8 * shift)
            if spill:
                valid[:, i + 1] |= pattern >> np.uint64(64 - 8 * shift)
        offset += slot
    fields.clear()
    data = rec.view(np.uint8)
    if valid is None:   # fixed-size header, varint last: each record's first bytes are its entry
        keep = np.arange(8 * nwords, dtype=np.uint8)[None, :] < (total - rvl_top + rvl)[:, None]
    else:
        keep = valid.view(np.bool_)
    return data[keep]


def _stored_blocks(lay: _Layout, part: np.ndarray, k0: int, cuts: list[tuple[int, bool]], opts: _Opts
                   ) -> list[tuple[list[bytes | memoryview], int]]:
    """(pieces: stored body and trailer, stored body length) of the blocks `cuts` (ends as key numbers) over the
    entries `part` of keys from k0."""
    e = lay.e[k0:cuts[-1][0]]
    at = np.zeros(len(e) + 1, dtype=np.int64)
    np.cumsum(e, out=at[1:])
    view = memoryview(part)  # type: ignore[arg-type]  # numpy's stub has ndarray.__buffer__ on Python 3.12+ only
    out: list[tuple[list[bytes | memoryview], int]] = []
    s = k0
    for end, aligned in cuts:
        a, b = int(at[s - k0]), int(at[end - k0])
        if aligned:
            tail = BTREE_BLOCK_TAIL.pack(int(lay.e[s]), ALIGNED)
        else:   # each entry's start in the block, then the count
            tail = (at[s - k0:end - k0] - a).astype("<i4").tobytes() + BTREE_BLOCK_TAIL.pack(end - s, UNALIGNED)
        if opts.codec == "none":
            crc = zlib.crc32(b"\0", zlib.crc32(tail, zlib.crc32(view[a:b])))
            out.append(([view[a:b], tail, b"\0" + TRAILER_CRC.pack(crc)], b - a + len(tail)))
        else:
            stored, type_id = codecs.encode_block(view[a:b].tobytes() + tail, opts.codec, opts.level)
            out.append(([stored, codecs.trailer(stored, type_id)], len(stored)))
        s = end
    return out


def _block_ends(e: np.ndarray, block_size: int) -> list[tuple[int, bool]]:
    """(end, aligned) of each data block over entries of sizes `e`, as Paimon's SstFileWriter closes them: after
    the first entry that takes the block's memory (entries + 5, + 4 per entry once sizes differ) past block_size.
    `aligned`: every entry of the block has the same size. Works through `e` a window at a time."""
    n = len(e)
    ends: list[tuple[int, bool]] = []
    s = 0
    while s < n:
        # a window from the current block's start, at least one full block long (an entry takes ≥ 4 bytes)
        stop = min(n, s + max(_CUT_WINDOW, block_size // 4 + 2))
        total = np.cumsum(e[s:stop], dtype=np.int64)
        change = np.flatnonzero(e[s + 1:stop] != e[s:stop - 1])   # i: entry s+i+1 differs from entry s+i
        change += 1
        while s < stop:
            w0 = s - (stop - len(total))                     # s's place in the window
            base = int(total[w0 - 1]) if w0 else 0
            k = int(np.searchsorted(change, w0, side="right"))
            d = int(change[k]) if k < len(change) else len(total)   # entries w0..d-1 have the same size
            j = max(int(np.searchsorted(total, block_size - 5 + base, side="right")), w0)
            if j >= d:
                # unaligned from d on: + 4 per entry; the crossing lies between d and the aligned crossing j
                top = min(j + 1, len(total))
                w = total[d:top] + 4 * np.arange(d - w0 + 1, top - w0 + 1, dtype=np.int64)
                j = d + int(np.searchsorted(w, block_size - 5 + base, side="right"))
            if j >= len(total) and stop < n:
                break                                        # the block runs past the window: next window
            end = min(s + (j - w0) + 1, n)
            ends.append((end, end - s <= d - w0))
            s = end
    return ends


_CUT_WINDOW = 1 << 20   # entries per window of the block cutter


def _encode(kt: KeyType, enc: EncodedKeys, null_rid: np.ndarray, rows: np.ndarray, rep: np.ndarray,
            rid: np.ndarray, opts: _Opts) -> tuple[bytes, bytes | None, bytes | None, int]:
    """One file's bytes from sorted rows; returns (data, first key bytes, last key bytes, distinct keys)."""
    chunks: list[bytes | memoryview] = []
    pos = 0
    index: list[bytes] = []
    first = last = None
    nk = 0
    bloom = None
    if len(rows):
        # one row per key (distinct keys) needs no table of key starts
        starts = None if not bool((rep[1:] == rep[:-1]).any()) else key_starts(rep)
        nk = len(rows) if starts is None else len(starts)
        kdata, koffs = enc.buffer(rows if starts is None else rows[starts])
        first = kdata[koffs[0]:koffs[1]].tobytes()
        last = kdata[koffs[nk - 1]:koffs[nk]].tobytes()
        pos, index = _write_entries(_layout(kdata, koffs, starts, rid), opts, chunks)
        if opts.bloom:
            bloom = build_bloom(hashes=binary_string_hashes_of(kdata, koffs))
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
    if index:
        tail = block_tail(np.fromiter(map(len, index), dtype=np.int64, count=len(index)))
    else:
        tail = EMPTY_BLOCK_TAIL
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
    enc = encode_arrow_keys(kt, keys)
    rid = check_row_ids(row_ids, len(enc.sort_rep))
    if not len(rid):
        raise WriterInputError("a btree file needs at least one row (Paimon never writes an empty one)")
    s = _sort(enc, rid)
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
    enc = encode_arrow_keys(kt, keys)
    rid = check_row_ids(row_ids, len(enc.sort_rep))
    s = _sort(enc, rid)
    out: list[WrittenFile] = []
    for null_cut, cut in file_cuts(len(s.null_rid), len(s.rows), records_per_file):
        nulls = s.null_rid[null_cut]
        data, first, last, count = _encode(kt, enc, nulls, s.rows[cut], s.rep[cut], s.rid[cut], opts)
        path = new_path()
        storage.write_atomic(path, data)
        written = _written(kt, path, data, len(nulls) + len(s.rows[cut]), first, last, len(nulls) > 0, count)
        if keep_rows:
            written = replace(written, rows=FileRows(s.rows[cut], s.rid[cut], key_starts(s.rep[cut])))
        out.append(written)
    return out
