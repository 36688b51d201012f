"""Lazy btree-index reader: footer first, then the index block, then only the data blocks a question needs.

Implements index_format.index_reader.IndexReader (pyroaring BitMap64 of LOCAL row ids), so the query side
calls every family's reader alike. Keys are searched in Java's logical order by binary search
inside each decoded block (btree_search); decoded blocks live in a byte-budgeted LRU of the reader. Every read
goes through the RangeSource, is bounds-checked and counted in `stats`; corrupt bytes raise IndexFormatError
subclasses naming the file and the part ("footer", "index block", "data block at <offset>", "null bitmap",
"bloom filter"). Imports numpy/pyroaring and index_format.{btree,codecs,bitmaps,keys,lru,storage,types,errors}.
"""
from __future__ import annotations

import threading
import zlib
from array import array
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
from pyroaring import AbstractBitMap64, BitMap64

from index_format import bitmaps, codecs
from index_format.btree.btree_bloom import BTreeBloom
from index_format.btree.btree_footer import NULL_CRC_SIZE, BTreeFooter, parse_btree_footer
from index_format.btree.btree_postings import gather_rows
from index_format.btree.btree_search import (
    Reps, increasing, lower_bound, lower_bounds, rep_of, reps_of, upper_bound,
)
from index_format.btree.btree_varints import INT_BYTES, read_varints_at
from index_format.btree.sst_blocks import SstBlock, decode_block_body, decode_handles
from index_format.errors import ChecksumError, CorruptFileError, TruncatedFileError, UnsupportedTypeError
from index_format.keys import deserialize_key, prefix_upper_bound, serialize_key
from index_format.layout import BTREE_FOOTER_SIZE, TRAILER_SIZE
from index_format.lru import ByteLRU
from index_format.storage import RangeSource, Storage, as_source
from index_format.storage.sources import read_exact
from index_format.types import KeyType, parse_type

__all__ = ["BTreeIndexReader", "BTreeReadStats", "open_btree_index"]

DEFAULT_BLOCK_BUDGET = 16 << 20   # decoded data blocks one reader keeps (bytes)
_RUN_BYTES = 8 << 20              # a scan reads consecutive uncached blocks this many bytes at a time
_KEEP_BLOCKS = 32                 # a walk over at most this many blocks keeps them in the LRU; longer walks don't


@dataclass
class BTreeReadStats:
    """What a reader has fetched and decoded so far: the bitmap reader's ReadStats counters plus btree ones."""

    bytes_read: int = 0
    reads: int = 0
    blocks_decoded: int = 0
    bitmaps_read: int = 0      # roaring bitmaps deserialized (the null bitmap, version-2 bitmap lists)
    postings_read: int = 0     # row-id lists decoded
    block_hits: int = 0        # data blocks served from the reader's LRU
    bloom_skips: int = 0       # look-ups the bloom filter answered "absent" without reading a block


@dataclass(frozen=True, slots=True)
class _Index:
    """The decoded index block: each data block's last key, its search form and its handle."""

    keys: list[bytes]
    reps: Reps
    offsets: np.ndarray
    sizes: np.ndarray

    def __len__(self) -> int:
        return len(self.keys)


def open_btree_index(source: RangeSource | str, kt: KeyType | str, *, storage: Storage | None = None,
                     size: int | None = None, cache: object | None = None,
                     bitmap_cache: object | None = None) -> BTreeIndexReader:
    """Open a btree file by reading only its footer; `size` should come from the manifest.

    Same call shape as index_format.global_index.reader.open_index. `source` is a RangeSource or a path
    (resolved by `storage` when given, else a local file). `cache`: a shared block cache (the bitmap family's
    BlockCache, or anything with get(key) / put(key, block)) keeping decoded data blocks under (path, size,
    offset) across readers; without it each reader keeps its own byte-budgeted LRU. `bitmap_cache` is not
    used (a btree file has no per-key bitmaps).
    Raises:
        FileNotFoundError: a path that does not exist. IndexFormatError: a bad footer.
        PathNotAllowedError: a path outside the storage roots.
    """
    src = as_source(source, storage=storage, size=size)
    return BTreeIndexReader(src, parse_type(kt) if isinstance(kt, str) else kt, shared_blocks=cache)


class _OwnBlocks:
    """Decoded data blocks of one reader, in a byte-budgeted LRU keyed by offset."""

    def __init__(self, budget: int) -> None:
        self._lru: ByteLRU[SstBlock] = ByteLRU(budget)

    def get(self, offset: int) -> SstBlock | None:
        return self._lru.get((offset,))

    def put(self, offset: int, blk: SstBlock) -> None:
        self._lru.put((offset,), blk, blk.nbytes)


class _SharedBlocks:
    """Decoded data blocks in a cache shared by readers, keyed by (path, size, offset)."""

    def __init__(self, cache: Any, path: str, size: int) -> None:
        self._cache = cache
        self._id = (path, size)

    def get(self, offset: int) -> SstBlock | None:
        hit = self._cache.get((*self._id, offset))
        return hit if isinstance(hit, SstBlock) else None

    def put(self, offset: int, blk: SstBlock) -> None:
        self._cache.put((*self._id, offset), blk)


class BTreeIndexReader:
    """Read-only view of one btree index file (keys in Java logical order, row ids local to its range)."""

    key_order = "logical"

    def __init__(self, source: RangeSource, kt: KeyType, *, block_budget: int = DEFAULT_BLOCK_BUDGET,
                 shared_blocks: Any = None) -> None:
        self.source = source
        self.path: str = source.name
        self.kt = kt
        self.size = source.size
        self.stats = BTreeReadStats()
        if self.size < BTREE_FOOTER_SIZE:
            raise TruncatedFileError(f"file of {self.size} bytes is shorter than the {BTREE_FOOTER_SIZE}-byte "
                                     "footer", path=self.path, block="footer")
        self.footer: BTreeFooter = parse_btree_footer(
            self._read(self.size - BTREE_FOOTER_SIZE, BTREE_FOOTER_SIZE, "footer"), self.size, path=self.path)
        # with a shared cache the reader itself holds no decoded data blocks
        self.block_budget = 0 if shared_blocks is not None else block_budget
        self._blocks: _OwnBlocks | _SharedBlocks = (
            _SharedBlocks(shared_blocks, self.path, self.size) if shared_blocks is not None
            else _OwnBlocks(block_budget))
        self._lock = threading.Lock()
        self._index: _Index | None = None
        self._bloom: BTreeBloom | None = None
        self._null: BitMap64 | None = None
        self._non_null: BitMap64 | None = None
        self._non_null_count: int | None = None
        self._totals: np.ndarray | None = None   # rows per data block, -1 until counted (_block_total)
        self._value_count: int | None = None

    # ------------------------------------------------------------ file structure

    @property
    def version(self) -> int:
        return self.footer.version

    @property
    def has_bloom_filter(self) -> bool:
        return self.footer.has_bloom

    @property
    def block_count(self) -> int:
        """Data blocks (entries of the index block)."""
        return len(self.index())

    @property
    def value_count(self) -> int:
        """Distinct keys. The file does not record it: the first call reads every data block."""
        if self._value_count is None:
            self._value_count = sum(len(blk) for _, blk in self._walk(0, len(self.index())))
        return self._value_count

    def cache_cost(self) -> int:
        """Bytes a cached reader may hold at most: its decoded index block (about 12× the stored body), the null
        bitmap and bloom filter, and its own block LRU's budget (0 when blocks go to a shared cache)."""
        f = self.footer
        return 4096 + 12 * f.index_length + f.null_length + f.bloom_length + self.block_budget

    def block_info(self) -> list[tuple[bytes, int, int]]:
        """(last key bytes, offset, stored size) per data block."""
        idx = self.index()
        return list(zip(idx.keys, idx.offsets.tolist(), idx.sizes.tolist()))

    def block_codec(self, i: int) -> int:
        """Compression byte of data block i's trailer."""
        idx = self.index()
        return self._read(int(idx.offsets[i] + idx.sizes[i]), 1, f"data block at {int(idx.offsets[i])}")[0]

    def index_codec(self) -> int:
        """Compression byte of the index block's trailer."""
        f = self.footer
        return self._read(f.index_offset + f.index_length, 1, "index block")[0]

    def first_key(self) -> object | None:
        """The smallest key (None when the file holds only nulls)."""
        idx = self.index()
        return None if not len(idx) else deserialize_key(self.kt, self._block(0).key(0))

    def last_key(self) -> object | None:
        idx = self.index()
        return None if not len(idx) else deserialize_key(self.kt, idx.keys[-1])

    # ------------------------------------------------------------ answers

    def null_rows(self) -> BitMap64:
        if self._null is None:
            f = self.footer
            if not f.has_nulls:
                self._null = BitMap64()
            else:
                data = self._read(f.null_offset, f.null_length + NULL_CRC_SIZE, "null bitmap")
                body = data[:f.null_length]
                stored = int.from_bytes(data[f.null_length:], "little")
                crc = zlib.crc32(body)
                if crc != stored:
                    raise ChecksumError(f"CRC-32 mismatch: stored {stored:08x}, computed {crc:08x}",
                                        path=self.path, block="null bitmap", offset=f.null_offset)
                self._null = bitmaps.deserialize(body, path=self.path, block="null bitmap", offset=f.null_offset)
                self.stats.bitmaps_read += 1
        return self._null.copy()

    def non_null_rows(self) -> BitMap64:
        """Every row with a key: the rows of every entry (the file keeps no bitmap of them, so the first call
        reads every data block)."""
        if self._non_null is None:
            self._non_null = self._rows_between(None, True, None, True)
        return self._non_null.copy()

    # ------------------------------------------------------------ counts (no row ids decoded)

    def count_range(self, low: object = None, high: object = None, *, low_inclusive: bool = True,
                    high_inclusive: bool = True) -> int:
        """len(range(...)) from the entries' row counts: the row-id lists themselves are not decoded."""
        kt = self.kt
        lo = None if low is None else rep_of(kt, serialize_key(kt, low))
        hi = None if high is None else rep_of(kt, serialize_key(kt, high))
        bounds = self._span_bounds(lo, low_inclusive, hi, high_inclusive)
        if bounds is None:
            return 0
        b0, j0, b1, j1 = bounds

        def part(b: int, a: int, e: int | None) -> int:
            if a == 0 and e is None:
                return self._block_total(b)
            blk = self._block(b)
            return int(self._counts(b, blk, a, len(blk) if e is None else e).sum())

        if b0 == b1:
            return part(b0, j0, j1)
        return part(b0, j0, None) + sum(self._block_total(b) for b in range(b0 + 1, b1)) + part(b1, 0, j1)

    def count_keys(self, values: Iterable[object]) -> int:
        """len(isin(values)) from the entries' row counts."""
        total = 0
        for kb in {serialize_key(self.kt, v) for v in values if v is not None}:
            if self._bloom_rejects(kb):
                continue
            loc = self._locate(rep_of(self.kt, kb))
            if loc is not None:
                b, blk, j = loc
                total += int(self._counts(b, blk, j, j + 1)[0])
        return total

    def non_null_count(self) -> int:
        """Rows with a key (the first call reads every data block's counts)."""
        if self._non_null_count is None:
            self._non_null_count = self.count_range()
        return self._non_null_count

    def eq(self, value: object) -> BitMap64:
        if value is None:
            return BitMap64()
        kb = serialize_key(self.kt, value)
        if self._bloom_rejects(kb):
            return BitMap64()
        loc = self._locate(rep_of(self.kt, kb))
        if loc is None:
            return BitMap64()
        b, blk, j = loc
        return _bitmap(self._rows(b, blk, np.array([j], dtype=np.int64))[0])

    def isin(self, values: Iterable[object]) -> BitMap64:
        kt = self.kt
        targets: dict[bytes, object] = {}
        for v in values:
            if v is None:
                continue
            kb = serialize_key(kt, v)
            if kb not in targets and not self._bloom_rejects(kb):
                targets[kb] = rep_of(kt, kb)
        if not targets:
            return BitMap64()
        idx = self.index()
        reps = sorted(targets.values())   # type: ignore[type-var]  # reps of one key type are mutually comparable
        where = lower_bounds(idx.reps, reps)   # ascending: the targets of one block are consecutive
        blocks, firsts = np.unique(where, return_index=True)
        bounds = np.append(firsts, len(reps)).tolist()
        parts: list[np.ndarray] = []
        for g, b in enumerate(blocks.tolist()):
            if b >= len(idx):
                break
            mine = reps[bounds[g]:bounds[g + 1]]
            blk = self._block(b)
            brep = blk.extra["reps"]
            js = lower_bounds(brep, mine)
            hit = [int(j) for j, t in zip(js.tolist(), mine) if j < len(blk) and brep[j] == t]
            if hit:
                parts.append(self._rows(b, blk, np.array(hit, dtype=np.int64))[0])
        return _bitmap(np.concatenate(parts)) if parts else BitMap64()

    def range(self, low: object = None, high: object = None, *, low_inclusive: bool = True,
              high_inclusive: bool = True) -> BitMap64:
        """Rows whose key lies between low and high in Java logical order (None = unbounded)."""
        kt = self.kt
        lo = None if low is None else rep_of(kt, serialize_key(kt, low))
        hi = None if high is None else rep_of(kt, serialize_key(kt, high))
        return self._range(lo, low_inclusive, hi, high_inclusive)

    def starts_with(self, prefix: str | bytes) -> BitMap64:
        """Rows whose string key starts with `prefix` (raw UTF-8 bytes): one range seek."""
        p = self._prefix_bytes(prefix)
        if not p:
            return self.non_null_rows()
        return self._range(p, True, prefix_upper_bound(p), False)

    def scan(self, match: Callable[[object], bool]) -> BitMap64:
        """Rows whose value satisfies `match` (every key is decoded and tested)."""
        kt = self.kt
        return self._scan_rows(lambda keys: [bool(match(deserialize_key(kt, k))) for k in keys])

    def scan_bytes(self, match: Callable[[bytes], bool]) -> BitMap64:
        """Rows whose serialized key satisfies `match`."""
        return self._scan_rows(lambda keys: [bool(match(k)) for k in keys])

    def entries(self) -> Iterator[tuple[object, BitMap64]]:
        """(value, its local rows) for every key in logical order, one data block at a time."""
        kt = self.kt
        for key, ids in self.raw_entries():
            yield deserialize_key(kt, key), _bitmap(ids)

    def key_bitmaps(self) -> Iterator[tuple[object, BitMap64]]:
        """entries() (a btree file keeps no decoded bitmaps)."""
        yield from self.entries()

    def entries_desc(self) -> Iterator[tuple[object, BitMap64]]:
        """(value, its local rows) in descending logical order: data blocks from the last, one at a time (a
        top-k walk reads only the blocks it needs)."""
        kt = self.kt
        for b in range(len(self.index()) - 1, -1, -1):
            blk = self._block(b, keep=False)
            ids, counts = self._rows(b, blk, np.arange(len(blk), dtype=np.int64))
            bounds = np.concatenate(([0], np.cumsum(counts)))
            keys = blk.keys()
            for i in range(len(blk) - 1, -1, -1):
                yield deserialize_key(kt, keys[i]), _bitmap(ids[bounds[i]:bounds[i + 1]])

    def entries_among(self, rows: AbstractBitMap64, *, desc: bool = False) -> Iterator[tuple[object, BitMap64]]:
        """(value, its local rows among `rows`) in logical order (descending with `desc`), keys with none skipped:
        each data block's row ids are met with `rows` at once, so a selective filter costs the blocks walked, not
        a bitmap per key. The first blocks of a walk are kept with their gathered rows (every DESC top-k starts
        at the last blocks: a warm one is met with no decoding nor postings read); later ones are not."""
        if not rows:
            return
        kt = self.kt
        n = len(self.index())
        for walked, b in enumerate(range(n - 1, -1, -1) if desc else range(n)):
            blk = self._block(b, keep=walked < _KEEP_BLOCKS)
            ids, owner, mine = self._block_rows(b, blk, keep=walked < _KEEP_BLOCKS)
            # met in roaring (never `rows` as an array: it may be the whole table)
            common = rows & mine
            if not common:
                continue
            hit = np.isin(ids, np.frombuffer(common.to_array(), dtype=np.uint64))
            who = owner[hit]
            got = ids[hit]
            cuts = np.flatnonzero(np.diff(who)) + 1
            starts, ends = np.concatenate(([0], cuts)), np.concatenate((cuts, [len(who)]))
            for j in (range(len(starts) - 1, -1, -1) if desc else range(len(starts))):
                yield deserialize_key(kt, blk.key(int(who[starts[j]]))), _bitmap(got[starts[j]:ends[j]])

    def _block_rows(self, b: int, blk: SstBlock, *, keep: bool) -> tuple[np.ndarray, np.ndarray, BitMap64]:
        """Block b's row ids as stored (key by key, uint64), the entry of each, and the ids as one map; with `keep`,
        kept with the cached block and charged to its cache."""
        got = blk.extra.get("rows")
        if got is not None:
            return got
        ids, counts = self._rows(b, blk, np.arange(len(blk), dtype=np.int64))
        ids = ids.astype(np.uint64, copy=False)
        got = (ids, np.repeat(np.arange(len(blk), dtype=np.int32), counts), BitMap64(array("Q", np.sort(ids).tobytes())))
        if keep:
            blk.extra["rows"] = got
            blk.extra["cost"] = int(blk.extra.get("cost", 0)) + 20 * len(ids)   # ids, entries, and the map
            self._blocks.put(int(self.index().offsets[b]), blk)                # charged again, rows included
        return got

    def raw_entries(self) -> Iterator[tuple[bytes, np.ndarray]]:
        """(key bytes, row ids as stored) for every key in logical order, one block at a time."""
        for b, blk in self._walk(0, len(self.index())):
            ids, counts = self._rows(b, blk, np.arange(len(blk), dtype=np.int64))
            bounds = np.concatenate(([0], np.cumsum(counts)))
            keys = blk.keys()
            for i in range(len(blk)):
                yield keys[i], ids[bounds[i]:bounds[i + 1]]

    def key_rows(self) -> Iterator[tuple[bytes, np.ndarray]]:
        """(key bytes, its row ids ascending as uint64) for every key in logical order (deriving a range
        sidecar from this file)."""
        for key, ids in self.raw_entries():
            yield key, ids if len(ids) < 2 or bool((ids[1:] > ids[:-1]).all()) else np.unique(ids)

    def value_counts(self, prefix: str | None = None) -> Iterator[tuple[object, int]]:
        """(value, row count) per key in logical order, optionally only string keys starting with `prefix`."""
        kt = self.kt
        if prefix:
            p = self._prefix_bytes(prefix)
            spans = self._spans(p, True, prefix_upper_bound(p), False)
        else:
            spans = self._spans(None, True, None, True)
        for b, blk, a, e in spans:
            counts = self._counts(b, blk, a, e)
            keys = blk.keys()
            for i, c in zip(range(a, e), counts.tolist()):
                yield deserialize_key(kt, keys[i]), c

    def key_counts(self, dead: BitMap64 | None = None, among: AbstractBitMap64 | None = None
                   ) -> Iterator[tuple[list[bytes] | tuple[np.ndarray, np.ndarray], np.ndarray]]:
        """(keys, row counts) of every key in logical order, a data block at a time, for statistics over every
        key. With `dead` (local ids to leave out) the rows of every key are decoded and dead ones not counted;
        blocks bypass the reader's cache, so memory stays bounded whatever the file's size. With `among` only
        its rows are counted: each block's ids are met with it at once, as entries_among does (an aggregate's
        groups cap is reached without a bitmap or a decoded key per key)."""
        if among is not None:
            yield from self._counts_among(among - dead if dead else among)
            return
        dead_ids = np.frombuffer(dead.to_array(), dtype=np.uint64) if dead else None
        for b, blk in self._walk(0, len(self.index())):
            if dead_ids is None:
                counts = self._counts(b, blk, 0, len(blk))
            else:
                ids, counts = self._rows(b, blk, np.arange(len(blk), dtype=np.int64))
                pos = np.minimum(np.searchsorted(dead_ids, ids), len(dead_ids) - 1)
                live = (dead_ids[pos] != ids).astype(np.int64)
                starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
                counts = np.add.reduceat(live, starts) if len(live) else counts
            yield list(blk.keys()), counts.astype(np.int64)

    def _counts_among(self, rows: AbstractBitMap64) -> Iterator[tuple[tuple[np.ndarray, np.ndarray], np.ndarray]]:
        for b, blk in self._walk(0, len(self.index())):
            ids, owner, mine = self._block_rows(b, blk, keep=False)
            common = rows & mine
            if not common:
                continue
            hit = np.isin(ids, np.frombuffer(common.to_array(), dtype=np.uint64))
            counts = np.bincount(owner[hit], minlength=len(blk)).astype(np.int64)
            keys = np.flatnonzero(counts)   # only the keys with rows among `rows`, gathered into one buffer
            starts, lens = blk.key_start[keys], blk.key_len[keys]
            offs = np.zeros(len(keys) + 1, dtype=np.int64)
            np.cumsum(lens, out=offs[1:])
            pos = np.arange(int(offs[-1]), dtype=np.int64) + np.repeat(starts - offs[:-1], lens)
            yield (blk.data[pos], offs), counts[keys]

    # ------------------------------------------------------------ structure: index, blocks, bloom

    def index(self) -> _Index:
        """The decoded index block (read on first use)."""
        if self._index is None:
            with self._lock:
                if self._index is None:
                    self._index = self._load_index()
        return self._index

    def _load_index(self) -> _Index:
        f = self.footer
        name = "index block"
        body = codecs.decode_block(self._read(f.index_offset, f.index_length + TRAILER_SIZE, name),
                                   path=self.path, block=name, offset=f.index_offset)
        blk = decode_block_body(body, path=self.path, block=name)
        self.stats.blocks_decoded += 1
        limit = min([f.index_offset] + ([f.null_offset] if f.has_nulls else [])
                    + ([f.bloom_offset] if f.has_bloom else []))
        offsets, sizes = decode_handles(blk, file_limit=limit, path=self.path, block=name)
        keys = blk.keys()
        reps = reps_of(self.kt, blk.data, blk.key_start, blk.key_len, keys, path=self.path, block=name)
        if not increasing(reps):
            raise CorruptFileError("index block keys are not strictly increasing in logical order",
                                   path=self.path, block=name)
        return _Index(list(keys), reps, offsets, sizes)

    def _block(self, b: int, keep: bool = True) -> SstBlock:
        """Data block b, decoded and checked (from the LRU when there)."""
        idx = self.index()
        off = int(idx.offsets[b])
        hit = self._blocks.get(off)
        if hit is not None:
            self.stats.block_hits += 1
            return hit
        data = self._read(off, int(idx.sizes[b]) + TRAILER_SIZE, f"data block at {off}")
        return self._decode(b, data, keep)

    def _decode(self, b: int, data: bytes, keep: bool) -> SstBlock:
        idx = self.index()
        off = int(idx.offsets[b])
        name = f"data block at {off}"
        body = codecs.decode_block(data, path=self.path, block=name, offset=off)
        blk = decode_block_body(body, path=self.path, block=name)
        self.stats.blocks_decoded += 1
        if not len(blk):
            raise CorruptFileError("data block without entries", path=self.path, block=name, offset=off)
        keys = None if isinstance(idx.reps, np.ndarray) else blk.keys()
        reps = reps_of(self.kt, blk.data, blk.key_start, blk.key_len, keys, path=self.path, block=name)
        if not increasing(reps):
            raise CorruptFileError("keys are not strictly increasing in logical order", path=self.path,
                                   block=name, offset=off)
        if blk.key(len(blk) - 1) != idx.keys[b]:
            raise CorruptFileError("last key differs from the index block's key for this block",
                                   path=self.path, block=name, offset=off)
        if b > 0 and not idx.reps[b - 1] < reps[0]:
            raise CorruptFileError("first key is not above the previous block's last key", path=self.path,
                                   block=name, offset=off)
        blk.extra["reps"] = reps
        blk.extra["cost"] = reps.nbytes if isinstance(reps, np.ndarray) else 80 * len(reps)
        if keep:
            self._blocks.put(off, blk)
        return blk

    def _walk(self, b0: int, b1: int) -> Iterator[tuple[int, SstBlock]]:
        """Data blocks b0 .. b1 - 1 in order; consecutive uncached blocks are fetched together (a bounded number
        of bytes per read). Only a short walk keeps its blocks in the LRU."""
        idx = self.index()
        keep = b1 - b0 <= _KEEP_BLOCKS
        b = b0
        while b < b1:
            hit = self._blocks.get(int(idx.offsets[b]))
            if hit is not None:
                self.stats.block_hits += 1
                yield b, hit
                b += 1
                continue
            start = int(idx.offsets[b])
            e = b + 1
            end = start + int(idx.sizes[b]) + TRAILER_SIZE
            while (e < b1 and int(idx.offsets[e]) == end and end - start < _RUN_BYTES
                   and self._blocks.get(end) is None):
                end += int(idx.sizes[e]) + TRAILER_SIZE
                e += 1
            run = self._read(start, end - start, f"data block at {start}")
            for k in range(b, e):
                o = int(idx.offsets[k]) - start
                yield k, self._decode(k, run[o:o + int(idx.sizes[k]) + TRAILER_SIZE], keep)
            b = e

    def _bloom_rejects(self, key: bytes) -> bool:
        f = self.footer
        if not f.has_bloom:
            return False
        if self._bloom is None:
            self._bloom = BTreeBloom(self._read(f.bloom_offset, f.bloom_length, "bloom filter"), f.bloom_expected)
        if self._bloom.might_contain(key):
            return False
        self.stats.bloom_skips += 1
        return True

    # ------------------------------------------------------------ helpers

    def _read(self, offset: int, length: int, block: str) -> bytes:
        """Exactly `length` bytes at `offset` for the part named `block` (counted in stats)."""
        data = read_exact(self.source, offset, length, block)
        self.stats.reads += 1
        self.stats.bytes_read += length
        return data

    def _locate(self, t: object) -> tuple[int, SstBlock, int] | None:
        """(block number, the block, entry) of the key whose search form is `t`, or None."""
        idx = self.index()
        b = lower_bound(idx.reps, t)
        if b == len(idx):
            return None
        blk = self._block(b)
        reps = blk.extra["reps"]
        j = lower_bound(reps, t)
        return (b, blk, j) if j < len(blk) and reps[j] == t else None

    def _rows(self, b: int, blk: SstBlock, entries: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        ids, counts = gather_rows(blk, entries, self.footer.version, path=self.path,
                                  block=f"data block at {int(self.index().offsets[b])}")
        self.stats.postings_read += len(entries)
        return ids, counts

    def _counts(self, b: int, blk: SstBlock, a: int, e: int) -> np.ndarray:
        """Row counts of entries a..e-1 (version 1: the lists' count prefixes only)."""
        if e <= a:
            return np.zeros(0, dtype=np.int64)
        if self.footer.version == 1:
            counts, _ = read_varints_at(blk.data, blk.val_start[a:e], INT_BYTES, path=self.path,
                                        block=f"data block at {int(self.index().offsets[b])}")
            return counts.astype(np.int64)
        return self._rows(b, blk, np.arange(a, e, dtype=np.int64))[1]

    def _span_bounds(self, lo: object, lo_incl: bool, hi: object, hi_incl: bool
                     ) -> tuple[int, int, int, int | None] | None:
        """(first block, its first entry, last block, its end entry or None for all) of the keys within the
        bounds; None when no key can be. Decodes at most the two edge blocks."""
        idx = self.index()
        n = len(idx)
        if n == 0:
            return None
        if lo is not None and hi is not None and _empty_bounds(lo, lo_incl, hi, hi_incl):
            return None
        if lo is None:
            b0, j0 = 0, 0
        else:
            b0 = (lower_bound if lo_incl else upper_bound)(idx.reps, lo)
            if b0 == n:
                return None
            j0 = (lower_bound if lo_incl else upper_bound)(self._block(b0).extra["reps"], lo)
        j1: int | None
        if hi is None:
            b1, j1 = n - 1, None
        else:
            b1 = lower_bound(idx.reps, hi)
            if b1 == n:
                b1, j1 = n - 1, None
            else:
                j1 = (upper_bound if hi_incl else lower_bound)(self._block(b1).extra["reps"], hi)
        return None if b0 > b1 else (b0, j0, b1, j1)

    def _block_total(self, b: int) -> int:
        """Rows of data block b (its entries' counts summed once, then kept: a count over many blocks decodes
        only its two edge blocks)."""
        totals = self._totals
        if totals is None:
            totals = self._totals = np.full(len(self.index()), -1, dtype=np.int64)
        if totals[b] < 0:
            blk = self._block(b)
            totals[b] = int(self._counts(b, blk, 0, len(blk)).sum())
        return int(totals[b])

    def _spans(self, lo: object, lo_incl: bool, hi: object, hi_incl: bool
               ) -> Iterator[tuple[int, SstBlock, int, int]]:
        """(block, decoded block, first entry, end entry) of every run of keys within the bounds, in order."""
        bounds = self._span_bounds(lo, lo_incl, hi, hi_incl)
        if bounds is None:
            return
        b0, j0, b1, j1 = bounds
        for b, blk in self._walk(b0, b1 + 1):
            a = j0 if b == b0 else 0
            e = len(blk) if b < b1 or j1 is None else j1
            if e > a:
                yield b, blk, a, e

    def _rows_between(self, lo: object, lo_incl: bool, hi: object, hi_incl: bool) -> BitMap64:
        parts = [self._rows(b, blk, np.arange(a, e, dtype=np.int64))[0]
                 for b, blk, a, e in self._spans(lo, lo_incl, hi, hi_incl)]
        return _bitmap(np.concatenate(parts)) if parts else BitMap64()

    def _range(self, lo: object, lo_incl: bool, hi: object, hi_incl: bool) -> BitMap64:
        if lo is None and hi is None:
            return self.non_null_rows()
        return self._rows_between(lo, lo_incl, hi, hi_incl)

    def _scan_rows(self, test: Callable[[list[bytes]], list[bool]]) -> BitMap64:
        parts = []
        for b, blk in self._walk(0, len(self.index())):
            hits = np.flatnonzero(np.array(test(blk.keys()), dtype=bool))
            if len(hits):
                parts.append(self._rows(b, blk, hits.astype(np.int64))[0])
        return _bitmap(np.concatenate(parts)) if parts else BitMap64()

    def _prefix_bytes(self, prefix: str | bytes) -> bytes:
        if not self.kt.is_string:
            raise UnsupportedTypeError(f"starts_with needs a string column, not {self.kt.spelling}")
        return prefix.encode("utf-8") if isinstance(prefix, str) else bytes(prefix)


def _empty_bounds(lo: Any, lo_incl: bool, hi: Any, hi_incl: bool) -> bool:
    """Whether no key lies within the bounds (search forms of one key type compare with each other)."""
    return bool(hi < lo or (hi == lo and not (lo_incl and hi_incl)))


def _bitmap(ids: np.ndarray) -> BitMap64:
    """A BitMap64 of row ids (sorted first: pyroaring builds from sorted ids several times faster)."""
    if len(ids) > 1 and not bool((ids[1:] >= ids[:-1]).all()):
        ids = np.sort(ids)
    return BitMap64(array("Q", ids.astype(np.uint64, copy=False).tobytes()))
