"""Lazy bitmap-index reader: footer first, then only the blocks a question needs (spec §2.10).

Answers correctly on logical-order (current Java) and byte-order (pypaimon/legacy) files (spec §2.7).
The facade over block_index (key search) and gather (bulk bitmap reads); bytes come from a RangeSource,
or from a path opened through index_format.storage.
"""
from __future__ import annotations

from array import array
from collections.abc import Callable, Iterable, Iterator
from typing import Any, cast

import numpy as np
from pyroaring import AbstractBitMap, AbstractBitMap64, BitMap64

from index_format import bitmaps
from index_format.errors import TruncatedFileError, UnsupportedTypeError
from index_format.global_index import gather
from index_format.global_index.block_index import BlockCache, BlockIndex, Locs, Span
from index_format.global_index.footer import Footer, parse_footer
from index_format.global_index.reads import BitmapCache, FileReads, ReadStats
from index_format.index_reader import IndexReader, KeyBitmap, entries_among
from index_format.keys import deserialize_key, serialize_key, sort_key_of_bytes
from index_format.layout import FOOTER_SIZE
from index_format.storage import RangeSource, Storage, as_source
from index_format.types import KeyType, parse_type

# IndexReader (the protocol every family's reader implements) is re-exported for the callers that type readers.
__all__ = ["BitmapCache", "BitmapIndexReader", "BlockCache", "IndexReader", "ReadStats", "open_index"]

_SCAN_BITMAP_BYTES = 4 << 20   # key_counts: bitmap bytes read per gather
_FIRST_KEYS, _KEYS_PER_GATHER = 64, 4096   # key_rows: keys whose bitmaps are read at once (a sample first)


def open_index(source: RangeSource | str, kt: KeyType | str, *, storage: Storage | None = None,
               size: int | None = None, cache: BlockCache | None = None,
               bitmap_cache: BitmapCache | None = None) -> BitmapIndexReader:
    """Open a file by reading only its footer; `size` should come from the manifest (spec §2.2).

    `source` is a RangeSource or a path: resolved by `storage` when given, else a local file.
    `bitmap_cache` keeps decoded bitmaps across readers and queries (warm answers skip I/O and decoding).
    Raises:
        FileNotFoundError: a path that does not exist. IndexFormatError: a bad footer.
        PathNotAllowedError: a path outside the storage roots.
    """
    src = as_source(source, storage=storage, size=size)
    return BitmapIndexReader(src, parse_type(kt) if isinstance(kt, str) else kt, cache=cache, bitmap_cache=bitmap_cache)


class BitmapIndexReader:
    """Read-only view of one bitmap (or multivalue) index file; every lookup is correct for both key orders.
    Implements index_format.index_reader.IndexReader."""

    def __init__(self, source: RangeSource, kt: KeyType, *, cache: BlockCache | None = None,
                 bitmap_cache: BitmapCache | None = None) -> None:
        self.source = source
        self.path: str = source.name
        self.kt = kt
        self.size = source.size
        self.stats = ReadStats()
        self._reads = FileReads(source, self.stats, bitmap_cache)
        if self.size < FOOTER_SIZE:
            raise TruncatedFileError(f"file of {self.size} bytes is shorter than the 48-byte footer",
                                     path=self.path, block="footer")
        self.footer: Footer = parse_footer(self._reads.read(self.size - FOOTER_SIZE, FOOTER_SIZE, "footer"),
                                           self.size, path=self.path)
        self.value_count: int = self.footer.value_count
        self.blocks = BlockIndex(self._reads, kt, self.footer, cache if cache is not None else BlockCache())
        self._null: BitMap64 | None = None
        self._non_null: BitMap64 | None = None

    # ------------------------------------------------------------ file structure

    def bitmap_at(self, offset: int, length: int) -> BitMap64:
        """The bitmap stored at (offset, length), e.g. from located_entries()."""
        return self._reads.bitmap_at(offset, length)

    @property
    def key_order(self) -> str:
        """'logical', 'bytes' or 'unknown': the order the file's keys were written in (spec §2.7)."""
        if self.value_count == 0:
            return "logical"
        self.blocks.decoded()
        return self.blocks.order or "unknown"

    @property
    def block_count(self) -> int:
        return len(self.blocks.decoded())

    def block_info(self) -> list[tuple[bytes, int, int]]:
        """(first key bytes, stored body offset, stored body length) per dictionary block."""
        idx = self.blocks.decoded()
        return list(zip(idx.keys, idx.offsets, idx.lengths))

    def cache_cost(self) -> int:
        """Approximate bytes this reader holds once warm: its decoded block index (Python objects, about 12x the
        on-disk body, as for dictionary blocks) plus the cached null / non-null bitmaps (spec §2.2 lengths)."""
        f = self.footer
        return 4096 + 12 * f.index_length + f.null_length + f.non_null_length

    def block_codec(self, i: int) -> int:
        """Compression type byte of dictionary block i (for inspection)."""
        idx = self.blocks.decoded()
        return self._reads.read(idx.offsets[i] + idx.lengths[i], 1, f"dictionary block {i}")[0]

    # ------------------------------------------------------------ answers

    def null_rows(self) -> BitMap64:
        if self._null is None:
            f = self.footer
            self._null = self._reads.named_bitmap(f.null_offset, f.null_length, "null-rows bitmap")
        return self._null.copy()

    def non_null_rows(self) -> BitMap64:
        if self._non_null is None:
            f = self.footer
            self._non_null = self._reads.named_bitmap(f.non_null_offset, f.non_null_length,
                                                      "non-null-rows bitmap")
        return self._non_null.copy()

    def eq(self, value: object) -> BitMap64:
        if value is None:
            return BitMap64()
        loc = self.blocks.locate(serialize_key(self.kt, value))
        return BitMap64() if loc is None else self._reads.bitmap_at(*loc)

    def isin(self, values: Iterable[object]) -> BitMap64:
        return gather.union(self._reads, self._key_locs(values))

    def _key_locs(self, values: Iterable[object]) -> list[tuple[int, int]]:
        """(offset, length) of the bitmap of each distinct non-null value the file holds."""
        seen: set[bytes] = set()
        locs: list[tuple[int, int]] = []
        locate = self.blocks.locate
        for v in values:
            if v is None:
                continue
            kb = serialize_key(self.kt, v)
            if kb in seen:
                continue
            seen.add(kb)
            loc = locate(kb)
            if loc is not None:
                locs.append(loc)
        return locs

    def range(self, low: object = None, high: object = None, *, low_inclusive: bool = True,
              high_inclusive: bool = True) -> BitMap64:
        """Rows whose key lies between low and high in Java logical order (None = unbounded)."""
        if not self.blocks.decoded().keys:
            return BitMap64()
        kt = self.kt
        lo = None if low is None else sort_key_of_bytes(kt, serialize_key(kt, low))
        hi = None if high is None else sort_key_of_bytes(kt, serialize_key(kt, high))
        if self.blocks.order == "logical":
            return self._span_union(self.blocks.range_span(lo, hi, low_inclusive, high_inclusive))
        return gather.union(self._reads, self.blocks.scan_range_locs(lo, hi, low_inclusive, high_inclusive))

    def starts_with(self, prefix: str | bytes) -> BitMap64:
        """Rows whose string key starts with `prefix` (raw UTF-8 bytes, spec §2.10)."""
        p = self._prefix_bytes(prefix)
        if not p:
            return self.non_null_rows()
        if self.blocks.decoded().keys and self.blocks.order == "logical":
            return self._span_union(self.blocks.prefix_span(p))
        return gather.union(self._reads, self.blocks.prefix_locs(p))

    def scan(self, match: Callable[[object], bool]) -> BitMap64:
        """Rows whose value satisfies `match` (every key is decoded and tested)."""
        kt = self.kt
        locs = [(o, n) for blk in self.blocks.iter_blocks()
                for k, o, n in zip(blk.keys, blk.offsets, blk.lengths) if match(deserialize_key(kt, k))]
        return gather.union(self._reads, locs)

    def scan_bytes(self, match: Callable[[bytes], bool]) -> BitMap64:
        """Rows whose serialized key satisfies `match`."""
        locs = [(o, n) for blk in self.blocks.iter_blocks()
                for k, o, n in zip(blk.keys, blk.offsets, blk.lengths) if match(k)]
        return gather.union(self._reads, locs)

    def raw_entries(self) -> Iterator[tuple[bytes, int, int]]:
        """(key bytes, bitmap offset, bitmap length) in file order."""
        for blk in self.blocks.iter_blocks():
            yield from zip(blk.keys, blk.offsets, blk.lengths)

    def located_entries(self) -> Iterator[tuple[object, int, int]]:
        """(value, bitmap offset, bitmap length) in file order (logical order for current files): where each
        key's bitmap lies (inspection; read one with bitmap_at)."""
        kt = self.kt
        for k, o, n in self.raw_entries():
            yield deserialize_key(kt, k), o, n

    def entries(self) -> Iterator[tuple[object, BitMap64]]:
        """(value, its local rows) for every key in logical order, bitmaps read a bounded number at a time."""
        kt = self.kt
        for k, ids in self.key_rows():
            yield deserialize_key(kt, k), BitMap64(array("Q", ids.astype(np.uint64, copy=False).tobytes()))

    def key_rows(self) -> Iterator[tuple[bytes, np.ndarray]]:
        """(key bytes, its local row ids as uint64) for every key in logical order, bitmaps read a bounded
        number of bytes at a time (deriving a range sidecar from this file)."""
        yield from self._rows_of(self._logical(list(self.raw_entries())))

    def entries_desc(self) -> Iterator[tuple[object, BitMap64]]:
        """entries() in descending logical order, bitmaps read a bounded number at a time from the last key."""
        kt = self.kt
        for k, ids in self._rows_of(self._logical(list(self.raw_entries()))[::-1]):
            yield deserialize_key(kt, k), BitMap64(array("Q", ids.astype(np.uint64, copy=False).tobytes()))

    def entries_among(self, rows: AbstractBitMap64, *, desc: bool = False) -> Iterator[tuple[object, BitMap64]]:
        """entries() or entries_desc() cut to `rows` (IndexReader.entries_among)."""
        yield from entries_among(self.entries_desc() if desc else self.entries(), rows)

    def key_bitmaps(self) -> Iterator[KeyBitmap]:
        """(value, its local rows) per key in logical order through the decoded-bitmap cache (a warm call reads and
        decodes nothing), each map 32-bit when its ids fit: what aggregates intersect with a filter."""
        kt = self.kt
        items = self._logical(list(self.raw_entries()))
        for a in range(0, len(items), _KEYS_PER_GATHER):
            part = items[a:a + _KEYS_PER_GATHER]
            offs = np.fromiter((e[1] for e in part), dtype=np.int64, count=len(part))
            lens = np.fromiter((e[2] for e in part), dtype=np.int64, count=len(part))
            for (k, _o, _n), bm in zip(part, gather.decoded(self._reads, offs, lens)):
                yield deserialize_key(kt, k), bm

    def _counts_among(self, rows: AbstractBitMap64) -> Iterator[tuple[list[bytes], np.ndarray]]:
        # the cache keeps 32-bit maps where ids fit: meet those with a 32-bit copy of `rows`, no conversion each
        rows32 = bitmaps.to_32(rows)
        items = list(self.raw_entries())
        for a in range(0, len(items), _KEYS_PER_GATHER):
            part = items[a:a + _KEYS_PER_GATHER]
            offs = np.fromiter((e[1] for e in part), dtype=np.int64, count=len(part))
            lens = np.fromiter((e[2] for e in part), dtype=np.int64, count=len(part))
            counts = [rows32.intersection_cardinality(bm) if rows32 is not None and isinstance(bm, AbstractBitMap)
                      else rows.intersection_cardinality(BitMap64(bm) if isinstance(bm, AbstractBitMap) else bm)
                      for bm in gather.decoded(self._reads, offs, lens)]
            yield [e[0] for e in part], np.array(counts, dtype=np.int64)

    def _rows_of(self, items: list[tuple[bytes, int, int]]) -> Iterator[tuple[bytes, np.ndarray]]:
        """(key bytes, local row ids) of `items` in their order, gathered a bounded number of bitmaps at a time."""
        a = 0
        while a < len(items):
            part = items[a:a + (_FIRST_KEYS if a == 0 else _KEYS_PER_GATHER)]
            a += len(part)
            offs = np.fromiter((e[1] for e in part), dtype=np.int64, count=len(part))
            lens = np.fromiter((e[2] for e in part), dtype=np.int64, count=len(part))
            yield from zip((e[0] for e in part), gather.row_arrays(self._reads, offs, lens))

    def value_counts(self, prefix: str | None = None) -> Iterator[tuple[object, int]]:
        """(value, row count) per key in logical order, optionally only keys with a string prefix."""
        if prefix:
            po, pl = self._prefix_locs(prefix)
            locs_set = set(zip(po.tolist(), pl.tolist()))
            items = [(k, o, n) for k, o, n in self.raw_entries() if (o, n) in locs_set]
        else:
            items = list(self.raw_entries())
        items = self._logical(items)
        if not items:
            return
        offs = np.fromiter((e[1] for e in items), dtype=np.int64, count=len(items))
        lens = np.fromiter((e[2] for e in items), dtype=np.int64, count=len(items))
        counts = gather.cardinalities(self._reads, offs, lens)
        kt = self.kt
        for (k, _o, _n), c in zip(items, counts.tolist()):
            yield deserialize_key(kt, k), c

    def key_counts(self, dead: BitMap64 | None = None, among: AbstractBitMap64 | None = None
                   ) -> Iterator[tuple[list[bytes] | tuple[np.ndarray, np.ndarray], np.ndarray]]:
        """(keys, row counts) of every key in file order, a batch of dictionary blocks at a time, for
        statistics over every key. Keys are a list of bytes, or (key bytes buffer, n + 1 start offsets).

        Counts come from bitmap headers; with `dead` (local ids to leave out, non-empty) every bitmap is
        decoded. Only one batch is held at a time and blocks bypass the shared cache, so memory stays
        bounded whatever the file's size. With `among`, only its rows are counted: intersection cardinalities
        with the bitmaps through the decoded-bitmap cache (as key_bitmaps; what an aggregate's counts read).
        """
        if among is not None:
            yield from self._counts_among(among - dead if dead else among)
            return
        count = gather.cardinalities if not dead else (
            lambda reads, o, n: gather.cardinalities_without(reads, o, n, dead))
        for keys, kbuf, koffs, offs, lens in self.blocks.scan_entries():
            # bitmaps are read a bounded number of bytes at a time (few keys can hold large bitmaps)
            chunk_of = np.cumsum(lens) // _SCAN_BITMAP_BYTES
            cuts = [0, *(np.flatnonzero(chunk_of[1:] != chunk_of[:-1]) + 1).tolist(), len(offs)]
            counts = np.concatenate([count(self._reads, offs[a:b], lens[a:b]) for a, b in zip(cuts[:-1], cuts[1:])
                                     if b > a] or [np.zeros(0, np.int64)])
            yield (keys if keys is not None else (kbuf, koffs)), counts

    def count_keys(self, values: Iterable[object]) -> int:
        """len(isin(values)) (a multivalue file's row may hold several of the values)."""
        return len(self.isin(values))

    def count_range(self, low: object = None, high: object = None, *, low_inclusive: bool = True,
                    high_inclusive: bool = True) -> int:
        """len(range(...))."""
        return len(self.range(low, high, low_inclusive=low_inclusive, high_inclusive=high_inclusive))

    def non_null_count(self) -> int:
        """Rows with a key (the footer's non-null bitmap)."""
        if self._non_null is None:
            self.non_null_rows()
        assert self._non_null is not None
        return len(self._non_null)

    # ------------------------------------------------------------ helpers

    def _logical(self, items: list[tuple[bytes, int, int]]) -> list[tuple[bytes, int, int]]:
        """Entries (key bytes, offset, length) of raw_entries() in logical key order."""
        if self.blocks.order != "logical":
            kt = self.kt
            items.sort(key=lambda e: cast(Any, sort_key_of_bytes(kt, e[0])))   # keys of one type compare
        return items


    def _prefix_bytes(self, prefix: str | bytes) -> bytes:
        if not self.kt.is_string:
            raise UnsupportedTypeError(f"starts_with needs a string column, not {self.kt.spelling}")
        return prefix.encode("utf-8") if isinstance(prefix, str) else bytes(prefix)

    def _prefix_locs(self, prefix: str) -> Locs:
        return self.blocks.prefix_locs(self._prefix_bytes(prefix))

    def _span_union(self, span: Span | None) -> BitMap64:
        """Rows of the keys in a span. A span over most blocks is answered as non-null rows minus
        the keys outside it: every non-null row has exactly one key (spec §2.9), and fewer blocks
        and bitmaps are read."""
        if span is None:
            return BitMap64()
        b0, j0, b1, j1 = span
        last = len(self.blocks.decoded()) - 1
        if (b1 - b0 + 1) * 10 <= (last + 1) * 6 or last < 3:
            return gather.union(self._reads, self.blocks.span_locs(b0, j0, b1, j1))
        outside = self.blocks.outside_span_locs(span)
        if len(outside[0]) == 0:
            return self.non_null_rows()
        return self.non_null_rows() - gather.union(self._reads, outside)
