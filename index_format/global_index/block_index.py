"""Key search in one index file: the block index, the dictionary blocks behind it, and the file's key order.

Loads the block index lazily, detects whether keys are in logical (current Java) or byte
(pypaimon/legacy) order (spec §2.7), and turns keys, ranges and prefixes into bitmap locations
(spec §2.10). Reads only through FileReads; decodes no bitmaps.
"""
from __future__ import annotations

import threading
from bisect import bisect_left, bisect_right
from collections.abc import Iterator
from typing import Any

import numpy as np

from index_format.codecs import decode_block
from index_format.errors import CorruptFileError
from index_format.global_index.dictionary import DecodedBlock, decode_entries
from index_format.global_index.footer import Footer
from index_format.global_index.reads import FileReads
from index_format.keys import prefix_upper_bound, sort_key_of_bytes, sort_keys_of_bytes
from index_format.layout import FOOTER_SIZE, TRAILER_SIZE
from index_format.lru import ByteLRU
from index_format.types import KeyType

# Bitmap locations: offsets and lengths as two int64 arrays of equal length.
Locs = tuple[np.ndarray, np.ndarray]
# (b0, j0, b1, j1): entries from entry j0 of block b0 to before entry j1 of block b1.
Span = tuple[int, int, int, int]
NO_LOCS: Locs = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))


class BlockCache:
    """Bounded LRU of decoded blocks (dictionary blocks; btree data blocks), shareable between readers (keyed
    by file + offset): an index_format.lru.ByteLRU charging each block what it keeps resident
    (`resident_bytes`), within `budget_bytes`; `max_blocks` bounds the count as well."""

    def __init__(self, budget_bytes: int = 64 << 20, *, max_blocks: int | None = None) -> None:
        self.max_blocks = max_blocks
        self._lru: ByteLRU[DecodedBlock] = ByteLRU(budget_bytes, max_entries=max_blocks)

    def get(self, key: tuple[str, int, int]) -> DecodedBlock | None:
        return self._lru.get(key)

    def put(self, key: tuple[str, int, int], blk: DecodedBlock) -> None:
        self._lru.put(key, blk, blk.resident_bytes())

    @property
    def bytes(self) -> int:
        """What the cached blocks are charged (their resident bytes)."""
        return self._lru.bytes

    def discard_prefix(self, prefix: str) -> None:
        """Forget the blocks of files whose path starts with `prefix` (dropped index or table)."""
        self._lru.discard_prefix(prefix)

    def __len__(self) -> int:
        return len(self._lru)


class BlockIndex:
    """The block index of one file and its dictionary blocks, searched in the order the file uses."""

    def __init__(self, reads: FileReads, kt: KeyType, footer: Footer, cache: BlockCache) -> None:
        self.reads = reads
        self.kt = kt
        self.footer = footer
        self.path = reads.path
        self._cache = cache
        self._cache_id = (reads.path, reads.size)
        self._lock = threading.RLock()  # lazy initialisation only; lookups run lock-free
        self._index: DecodedBlock | None = None
        self._pending: DecodedBlock | None = None
        self.index_sort_keys: list[Any] | None = None
        # "logical", "bytes" or "unknown" once the block index is loaded (spec §2.7)
        self.order: str | None = None
        self._search_logical = False
        self._search_bytes = False
        self._all: dict[bytes, tuple[int, int]] | None = None

    # ------------------------------------------------------------ loading

    def decoded(self) -> DecodedBlock:
        """The block index: first key, stored offset and length of every dictionary block."""
        idx = self._index
        if idx is None:
            with self._lock:
                if self._index is None:
                    self._load()
            idx = self._index
            assert idx is not None
        return idx

    def _load(self) -> None:
        f, size, path = self.footer, self.reads.size, self.path
        raw = self.reads.read(f.index_offset, f.index_length + TRAILER_SIZE, "block index")
        body = decode_block(raw, path=path, block="block index", offset=f.index_offset)
        idx = decode_entries(body, file_size=size - FOOTER_SIZE, path=path,
                             block="block index", allow_empty=True, trailer=TRAILER_SIZE)
        if (len(idx) == 0) != (f.value_count == 0) or len(idx) > max(f.value_count, 0):
            raise CorruptFileError(f"{len(idx)} dictionary blocks for {f.value_count} keys",
                                   path=path, block="block index")
        self.index_sort_keys = sort_keys_of_bytes(self.kt, idx.keys)
        self._pending = idx
        try:
            self._detect_order()
        finally:
            self._pending = None
        self._index = idx  # published only once the search flags are set

    def _detect_order(self) -> None:
        # spec §2.7: decide which binary searches are valid for this file
        idx = self._pending
        assert idx is not None and self.index_sort_keys is not None
        log_ok = _ascending(self.index_sort_keys)
        byte_ok = _ascending(idx.keys)
        if self.kt.byte_order_is_logical:
            byte_ok = log_ok = log_ok and byte_ok
        elif log_ok and byte_ok and len(idx):
            # ambiguous block index: the first block's own entries tell the writer's order
            blk = self.block(0)
            blog, bbyte = _ascending(self.sort_keys(blk)), _ascending(blk.keys)
            if blog != bbyte:
                log_ok, byte_ok = blog, bbyte
        self._search_logical = log_ok
        self._search_bytes = byte_ok
        if log_ok and not byte_ok:
            self.order = "logical"
        elif byte_ok and not log_ok:
            self.order = "bytes"
        elif log_ok and byte_ok and self.kt.byte_order_is_logical:
            self.order = "logical"
        else:
            self.order = "unknown"

    def block(self, i: int) -> DecodedBlock:
        """Dictionary block i, decoded (through the shared cache)."""
        idx = self._index
        if idx is None:
            idx = self._pending if self._pending is not None else self.decoded()
        off = idx.offsets[i]
        key = (self._cache_id[0], self._cache_id[1], off)
        blk = self._cache.get(key)
        if blk is None:
            blk = self._decode_block(i, off, idx.lengths[i], idx.keys[i])
            self._cache.put(key, blk)
        return blk

    def _decode_block(self, i: int, off: int, length: int, first_key: bytes) -> DecodedBlock:
        name = f"dictionary block {i}"
        raw = self.reads.read(off, length + TRAILER_SIZE, name)
        body = decode_block(raw, path=self.path, block=name, offset=off)
        blk = decode_entries(body, file_size=self.reads.size - FOOTER_SIZE, path=self.path, block=name)
        if blk.keys[0] != first_key:
            raise CorruptFileError("first key differs from the block index", path=self.path, block=name)
        blk.lookup = dict(zip(blk.keys, range(len(blk.keys))))
        if len(blk.lookup) != len(blk.keys):
            raise CorruptFileError("duplicate key in a dictionary block", path=self.path, block=name)
        self.reads.stats.blocks_decoded += 1
        return blk

    def sort_keys(self, blk: DecodedBlock) -> list[Any]:
        """Logical sort keys of a block's entries (computed once, kept with the block)."""
        if blk.sort_keys is None:
            blk.sort_keys = sort_keys_of_bytes(self.kt, blk.keys)
        return blk.sort_keys

    def iter_blocks(self) -> Iterator[DecodedBlock]:
        """Every dictionary block in file order."""
        for b in range(len(self.decoded())):
            yield self.block(b)

    def scan_entries(self, batch: int = 256) -> Iterator[tuple[list[bytes] | None, np.ndarray, np.ndarray,
                                                             np.ndarray, np.ndarray]]:
        """Every entry in file order, `batch` dictionary blocks at a time, for full scans (statistics):
        (None, key bytes buffer, key start offsets (n + 1, into the buffer), bitmap offsets, bitmap lengths).

        The blocks of a batch are parsed in lockstep with numpy (entry j of every block at once), so no
        per-entry Python objects are made, and they bypass the shared cache (a scan would evict the hot
        blocks). A batch that does not parse cleanly is decoded the checked way, which raises the typed error.
        """
        idx = self.decoded()
        for b0 in range(0, len(idx), batch):
            b1 = min(b0 + batch, len(idx))
            bodies = []
            for b in range(b0, b1):
                name = f"dictionary block {b}"
                raw = self.reads.read(idx.offsets[b], idx.lengths[b] + TRAILER_SIZE, name)
                bodies.append(decode_block(raw, path=self.path, block=name, offset=idx.offsets[b]))
            got = _parse_lockstep(bodies, self.reads.size - FOOTER_SIZE, idx.keys[b0:b1])
            if got is None:
                for b in range(b0, b1):
                    blk = self._decode_block(b, idx.offsets[b], idx.lengths[b], idx.keys[b])
                    yield blk.keys, np.zeros(0, np.uint8), np.zeros(0, np.int64), *self.block_arrays(blk)
                continue
            self.reads.stats.blocks_decoded += b1 - b0
            yield (None, *got)

    def block_arrays(self, blk: DecodedBlock) -> Locs:
        """The block's bitmap offsets and lengths as int64 arrays (cached with the block)."""
        arrs = blk.extra.get("np")
        if arrs is None:
            arrs = (np.array(blk.offsets, dtype=np.int64), np.array(blk.lengths, dtype=np.int64))
            blk.extra["np"] = arrs
        return arrs

    # ------------------------------------------------------------ point lookups

    def _all_entries(self) -> dict[bytes, tuple[int, int]]:
        """Exact-match map over every entry (files whose order cannot be trusted)."""
        if self._all is None:
            out: dict[bytes, tuple[int, int]] = {}
            for blk in self.iter_blocks():
                for k, o, n in zip(blk.keys, blk.offsets, blk.lengths):
                    out[k] = (o, n)
            self._all = out
        return self._all

    def locate(self, kb: bytes) -> tuple[int, int] | None:
        """(offset, length) of a key's bitmap, or None (spec §2.10 point lookup)."""
        idx = self._index if self._index is not None else self.decoded()
        if not idx.keys:
            return None
        tried = -1
        if self._search_logical:
            assert self.index_sort_keys is not None
            b = bisect_right(self.index_sort_keys, sort_key_of_bytes(self.kt, kb)) - 1
            if b >= 0:
                blk = self.block(b)
                j = blk.lookup.get(kb)  # type: ignore[union-attr]  # block() fills lookup
                if j is not None:
                    return blk.offsets[j], blk.lengths[j]
                tried = b
        if self._search_bytes:
            b = bisect_right(idx.keys, kb) - 1
            if b >= 0 and b != tried:
                blk = self.block(b)
                j = blk.lookup.get(kb)  # type: ignore[union-attr]  # block() fills lookup
                if j is not None:
                    return blk.offsets[j], blk.lengths[j]
        if not self._search_logical and not self._search_bytes:
            return self._all_entries().get(kb)
        return None

    # ------------------------------------------------------------ ranges and prefixes

    def range_span(self, lo: object, hi: object, low_inclusive: bool, high_inclusive: bool) -> Span | None:
        """Span of the keys whose sort keys lie in [lo, hi] (None = unbounded); logical-order files
        only, binary-searched (spec §2.10); None when empty."""
        sk = self.index_sort_keys
        assert sk is not None
        b0 = 0 if lo is None else max(bisect_right(sk, lo) - 1, 0)
        b1 = len(sk) - 1 if hi is None else bisect_right(sk, hi) - 1
        if b1 < b0:
            return None
        j0 = 0
        if lo is not None:
            bsk = self.sort_keys(self.block(b0))
            j0 = bisect_left(bsk, lo) if low_inclusive else bisect_right(bsk, lo)
        if hi is None:
            j1 = len(self.block(b1))
        else:
            bsk = self.sort_keys(self.block(b1))
            j1 = bisect_right(bsk, hi) if high_inclusive else bisect_left(bsk, hi)
        return _nonempty(b0, j0, b1, j1, len(self.block(b0)))

    def prefix_span(self, p: bytes) -> Span | None:
        """Like range_span for keys starting with `p` (byte order = logical order for strings)."""
        keys = self.decoded().keys
        upper = prefix_upper_bound(p)
        b0 = max(bisect_right(keys, p) - 1, 0)
        b1 = len(keys) - 1 if upper is None else bisect_left(keys, upper) - 1
        if b1 < b0:
            return None
        j0 = bisect_left(self.block(b0).keys, p)
        blk1 = self.block(b1)
        j1 = len(blk1) if upper is None else bisect_left(blk1.keys, upper)
        return _nonempty(b0, j0, b1, j1, len(self.block(b0)))

    def span_locs(self, b0: int, j0: int, b1: int, j1: int) -> Locs:
        """Bitmap offsets and lengths of the entries from (b0, j0) to before (b1, j1)."""
        parts: list[Locs] = []
        for b in range(b0, b1 + 1):
            o, ln = self.block_arrays(self.block(b))
            lo = j0 if b == b0 else 0
            hi = j1 if b == b1 else len(o)
            if lo < hi:
                parts.append((o[lo:hi], ln[lo:hi]))
        return concat_locs(parts)

    def outside_span_locs(self, span: Span) -> Locs:
        """Bitmap locations of every entry outside `span`."""
        b0, j0, b1, j1 = span
        last = len(self.decoded()) - 1
        parts: list[Locs] = []
        if b0 > 0 or j0 > 0:
            parts.append(self.span_locs(0, 0, b0, j0))
        n1 = len(self.block(b1))
        if b1 < last or j1 < n1:
            nl = len(self.block(last))
            parts.append(self.span_locs(b1, j1, last, nl) if j1 < n1 else self.span_locs(b1 + 1, 0, last, nl))
        return concat_locs(parts)

    def scan_range_locs(self, lo: object, hi: object, low_inclusive: bool, high_inclusive: bool) -> Locs:
        """Bitmap locations of the keys with sort keys in [lo, hi], checking every entry (any order)."""
        locs: list[tuple[int, int]] = []
        for blk in self.iter_blocks():
            for s, o, n in zip(self.sort_keys(blk), blk.offsets, blk.lengths):
                if lo is not None and (s < lo or (s == lo and not low_inclusive)):
                    continue
                if hi is not None and (s > hi or (s == hi and not high_inclusive)):
                    continue
                locs.append((o, n))
        return locs_array(locs)

    def prefix_locs(self, p: bytes) -> Locs:
        """Bitmap locations of the keys starting with the bytes `p`."""
        if not self.decoded().keys:
            return NO_LOCS
        if self.order == "logical":
            span = self.prefix_span(p)
            return NO_LOCS if span is None else self.span_locs(*span)
        locs: list[tuple[int, int]] = []
        for blk in self.iter_blocks():
            locs.extend((o, n) for k, o, n in zip(blk.keys, blk.offsets, blk.lengths) if k.startswith(p))
        return locs_array(locs)


def _varints(buf: np.ndarray, pos: np.ndarray, max_bytes: int) -> tuple[np.ndarray, np.ndarray, bool]:
    """LEB128 varints at every `pos` at once: (values, positions after them, all ended within max_bytes)."""
    val = np.zeros(len(pos), dtype=np.uint64)
    p = pos.copy()
    going = np.ones(len(pos), dtype=bool)
    for j in range(max_bytes):
        byte = buf[p]
        val |= np.where(going, (byte & 0x7F).astype(np.uint64) << np.uint64(7 * j), np.uint64(0))
        p += going
        going &= (byte & 0x80) != 0
        if not going.any():
            return val, p, True
    return val, p, False


def _parse_lockstep(bodies: list[bytes], limit: int, first_keys: list[bytes]
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
    """Entries of several dictionary block bodies (spec §2.5) parsed with numpy, entry j of every block in
    one step; None when anything does not check out (the caller then decodes the checked way)."""
    nb = len(bodies)
    lens = np.array([len(b) for b in bodies], dtype=np.int64)
    starts = np.zeros(nb, dtype=np.int64)
    np.cumsum(lens[:-1], out=starts[1:])
    ends = starts + lens
    # zero padding: a runaway varint reads zeros (it ends) and fails the length checks below
    buf = np.frombuffer(b"".join(bodies) + bytes(32), dtype=np.uint8)
    count, pos, ok = _varints(buf, starts, 5)
    count = count.astype(np.int64)
    if not ok or (count <= 0).any() or (count * 3 > ends - pos).any():
        return None
    steps = int(count.max())
    kstart = np.zeros((steps, nb), dtype=np.int64)
    klen = np.zeros((steps, nb), dtype=np.int64)
    boff = np.zeros((steps, nb), dtype=np.int64)
    blen = np.zeros((steps, nb), dtype=np.int64)
    live = np.arange(nb)
    p = pos
    endpos = np.zeros(nb, dtype=np.int64)
    for j in range(steps):
        if j:
            keep = count[live] > j
            if not keep.all():
                live, p = live[keep], p[keep]
        kl, p, ok1 = _varints(buf, p, 5)
        kl = kl.astype(np.int64)
        kstart[j, live] = p
        klen[j, live] = kl
        p = p + kl
        if (p > ends[live]).any():
            return None
        o, p, ok2 = _varints(buf, p, 10)
        n, p, ok3 = _varints(buf, p, 5)
        if not (ok1 and ok2 and ok3):
            return None
        boff[j, live] = o.astype(np.int64)
        blen[j, live] = n.astype(np.int64)
        endpos[live] = p
    if (endpos != ends).any():   # each block's entries must end exactly at its body's end
        return None
    valid = (np.arange(steps)[:, None] < count[None, :]).T.ravel()   # block-major = file order
    ks, kl, bo, bl = (a.T.ravel()[valid] for a in (kstart, klen, boff, blen))
    if (bo < 0).any() or (bo + bl > limit).any():
        return None
    ends_blk = np.cumsum(count)
    koffs = np.zeros(len(kl) + 1, dtype=np.int64)
    np.cumsum(kl, out=koffs[1:])
    # keys lie in the buffer in file order: mark their bytes (+1 at a start, -1 past an end) and take them,
    # one byte of scratch per body byte instead of an int64 index per key byte
    edge = np.zeros(len(buf) + 1, dtype=np.int8)
    np.add.at(edge, ks, 1)
    np.add.at(edge, ks + kl, -1)
    kbuf = buf[np.cumsum(edge[:-1], dtype=np.int8).view(np.bool_)]
    if len(kbuf) != koffs[-1]:
        return None
    firsts = ends_blk - count
    for b, i in enumerate(firsts.tolist()):
        if kbuf[koffs[i]:koffs[i + 1]].tobytes() != first_keys[b]:
            return None
    return kbuf, koffs, bo, bl


def concat_locs(parts: list[Locs]) -> Locs:
    """One Locs from several (no copy for zero or one part)."""
    if not parts:
        return NO_LOCS
    if len(parts) == 1:
        return parts[0]
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


def locs_array(locs: list[tuple[int, int]]) -> Locs:
    """(offset, length) pairs as Locs."""
    if not locs:
        return NO_LOCS
    arr = np.array(locs, dtype=np.int64).reshape(-1, 2)
    return arr[:, 0], arr[:, 1]


def _ascending(seq: list[Any]) -> bool:
    return all(seq[i] < seq[i + 1] for i in range(len(seq) - 1))


def _nonempty(b0: int, j0: int, b1: int, j1: int, n0: int) -> Span | None:
    """Normalize a span (j0 may equal the length n0 of block b0) or None if it holds no entry."""
    if j0 >= n0 and b0 < b1:
        b0, j0 = b0 + 1, 0
    if b0 > b1 or (b0 == b1 and j0 >= j1):
        return None
    return b0, j0, b1, j1
