"""Lazy bitmap-index reader: footer first, then only the blocks a question needs (spec §2.10).

Answers correctly on logical-order (current Java) and byte-order (pypaimon/legacy) files (spec §2.7).
Imports the format modules, numpy and pyroaring; storage only through the RangeSource protocol.
"""
from __future__ import annotations

import os
import threading
from bisect import bisect_left, bisect_right
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import numpy as np
from pyroaring import BitMap, BitMap64

from index_format import bitmaps
from index_format.codecs import decode_block
from index_format.global_index.dictionary import DecodedBlock, decode_entries
from index_format.errors import CorruptFileError, TruncatedFileError, UnsupportedTypeError
from index_format.global_index.footer import Footer, parse_footer
from index_format.keys import deserialize_key, serialize_key, sort_key_of_bytes, sort_keys_of_bytes
from index_format.layout import BITMAP64_ONE_BUCKET_HIGH0, FOOTER_SIZE, TRAILER_SIZE
from index_format.types import KeyType, parse_type

if TYPE_CHECKING:
    from index_format.storage import Storage

# Bitmaps closer than this are fetched with one read (the gap is usually a dictionary block).
_MERGE_GAP = 64 * 1024
# From this many bitmaps on, decode them vectorized (numpy) instead of one call each.
_BULK_MIN = 64
# Bitmap bytes decoded vectorized at once (bounds the decoder's temporary memory).
_BULK_CHUNK = 32 * 1024 * 1024
_PREFIX = BITMAP64_ONE_BUCKET_HIGH0


class RangeSource(Protocol):
    """What the reader needs from a file (same shape as storage.RangeSource)."""

    name: str
    size: int

    def read(self, offset: int, length: int) -> bytes: ...


class LocalFileSource:
    """A RangeSource over a local path (positional reads, one descriptor)."""

    def __init__(self, path: str, size: int | None = None) -> None:
        self.name = path
        self.size = os.stat(path).st_size if size is None else size
        self._fd = os.open(path, os.O_RDONLY)

    def read(self, offset: int, length: int) -> bytes:
        if offset < 0 or length < 0 or offset + length > self.size:
            raise TruncatedFileError(f"read of {length} bytes at {offset} past the end ({self.size} bytes)",
                                     path=self.name, offset=offset)
        data = os.pread(self._fd, length, offset)
        if len(data) != length:
            raise TruncatedFileError(f"expected {length} bytes at offset {offset}, got {len(data)}",
                                     path=self.name, offset=offset)
        return data

    def __del__(self) -> None:
        try:
            os.close(self._fd)
        except (OSError, AttributeError):
            pass


@dataclass
class ReadStats:
    bytes_read: int = 0
    reads: int = 0
    blocks_decoded: int = 0
    bitmaps_read: int = 0


class BlockCache:
    """Bounded LRU of decoded dictionary blocks, shareable between readers (keyed by file + offset)."""

    def __init__(self, max_blocks: int = 4096) -> None:
        self.max_blocks = max_blocks
        self._data: OrderedDict[tuple[str, int, int], DecodedBlock] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple[str, int, int]) -> DecodedBlock | None:
        with self._lock:
            blk = self._data.get(key)
            if blk is not None:
                self._data.move_to_end(key)
            return blk

    def put(self, key: tuple[str, int, int], blk: DecodedBlock) -> None:
        with self._lock:
            self._data[key] = blk
            self._data.move_to_end(key)
            while len(self._data) > self.max_blocks:
                self._data.popitem(last=False)

    def __len__(self) -> int:
        return len(self._data)


def open_index(source: RangeSource | str, kt: KeyType | str, *, storage: Storage | None = None,
               size: int | None = None, cache: BlockCache | None = None) -> IndexReader:
    """Open a file by reading only its footer; `size` should come from the manifest (spec §2.2)."""
    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        if storage is not None:
            src: RangeSource = storage.open_source(path, size)
        else:
            src = LocalFileSource(path, size)
    else:
        src = source
        if size is not None and size != src.size:
            src = _SizedSource(src, size)
    return IndexReader(src, parse_type(kt) if isinstance(kt, str) else kt, cache=cache)


class _SizedSource:
    """Use the manifest's size for a source whose own size differs."""

    def __init__(self, inner: RangeSource, size: int) -> None:
        self.inner, self.name, self.size = inner, inner.name, size

    def read(self, offset: int, length: int) -> bytes:
        if offset + length > self.size:
            raise TruncatedFileError("read past the recorded file size", path=self.name, offset=offset)
        return self.inner.read(offset, length)


class IndexReader:
    """Read-only view of one bitmap index file; every lookup is correct for both key orders."""

    def __init__(self, source: RangeSource, kt: KeyType, *, cache: BlockCache | None = None) -> None:
        self.source = source
        self.path: str = source.name
        self.kt = kt
        self.size = source.size
        self.stats = ReadStats()
        self._cache = cache if cache is not None else BlockCache()
        self._cache_id = (self.path, self.size)
        self._lock = threading.RLock()  # lazy initialisation only; lookups run lock-free
        if self.size < FOOTER_SIZE:
            raise TruncatedFileError(f"file of {self.size} bytes is shorter than the 48-byte footer",
                                     path=self.path, block="footer")
        self.footer: Footer = parse_footer(self._read(self.size - FOOTER_SIZE, FOOTER_SIZE, "footer"),
                                           self.size, path=self.path)
        self.value_count: int = self.footer.value_count
        self._index: DecodedBlock | None = None
        self._pending_index: DecodedBlock | None = None
        self._index_sk: list | None = None
        self._null: BitMap64 | None = None
        self._non_null: BitMap64 | None = None
        self._order: str | None = None
        self._search_logical = False
        self._search_bytes = False
        self._all: dict[bytes, tuple[int, int]] | None = None

    # ------------------------------------------------------------ raw access

    def _read(self, offset: int, length: int, block: str) -> bytes:
        if offset < 0 or length < 0 or offset + length > self.size:
            raise CorruptFileError(f"{block} ({offset}+{length}) lies outside the file ({self.size} bytes)",
                                   path=self.path, block=block, offset=offset)
        try:
            data = self.source.read(offset, length)
        except TruncatedFileError as exc:
            raise TruncatedFileError(exc.reason, path=self.path, block=block, offset=offset) from None
        if len(data) != length:
            raise TruncatedFileError(f"short read: {len(data)} of {length} bytes", path=self.path,
                                     block=block, offset=offset)
        self.stats.reads += 1
        self.stats.bytes_read += length
        return data

    def bitmap_at(self, offset: int, length: int) -> BitMap64:
        block = f"bitmap at offset {offset}"
        data = self._read(offset, length, block)
        self.stats.bitmaps_read += 1
        return bitmaps.deserialize(data, path=self.path, block=block, offset=offset)

    # ------------------------------------------------------------ block index and blocks

    def _block_index(self) -> DecodedBlock:
        idx = self._index
        if idx is None:
            with self._lock:
                if self._index is None:
                    self._load_block_index()
            idx = self._index
            assert idx is not None
        return idx

    def _load_block_index(self) -> None:
        f = self.footer
        raw = self._read(f.index_offset, f.index_length + TRAILER_SIZE, "block index")
        body = decode_block(raw, path=self.path, block="block index", offset=f.index_offset)
        idx = decode_entries(body, file_size=self.size - FOOTER_SIZE, path=self.path,
                             block="block index", allow_empty=True, trailer=TRAILER_SIZE)
        if (len(idx) == 0) != (self.value_count == 0) or len(idx) > max(self.value_count, 0):
            raise CorruptFileError(f"{len(idx)} dictionary blocks for {self.value_count} keys",
                                   path=self.path, block="block index")
        self._index_sk = sort_keys_of_bytes(self.kt, idx.keys)
        self._pending_index = idx
        try:
            self._detect_order()
        finally:
            self._pending_index = None
        self._index = idx  # published only once the search flags are set

    def _detect_order(self) -> None:
        # spec §2.7: decide which binary searches are valid for this file
        idx = self._pending_index
        assert idx is not None and self._index_sk is not None
        sk, keys = self._index_sk, idx.keys
        log_ok = all(sk[i] < sk[i + 1] for i in range(len(sk) - 1))
        byte_ok = all(keys[i] < keys[i + 1] for i in range(len(keys) - 1))
        if self.kt.byte_order_is_logical:
            byte_ok = log_ok = log_ok and byte_ok
        elif log_ok and byte_ok and len(idx):
            # ambiguous block index: the first block's own entries tell the writer's order
            blk = self._block(0)
            bsk = self._sort_keys(blk)
            blog = all(bsk[i] < bsk[i + 1] for i in range(len(bsk) - 1))
            bbyte = all(blk.keys[i] < blk.keys[i + 1] for i in range(len(blk) - 1))
            if blog != bbyte:
                log_ok, byte_ok = blog, bbyte
        self._search_logical = log_ok
        self._search_bytes = byte_ok
        if log_ok and not byte_ok:
            self._order = "logical"
        elif byte_ok and not log_ok:
            self._order = "bytes"
        elif log_ok and byte_ok and self.kt.byte_order_is_logical:
            self._order = "logical"
        else:
            self._order = "unknown"

    @property
    def key_order(self) -> str:
        if self.value_count == 0:
            return "logical"
        self._block_index()
        return self._order or "unknown"

    @property
    def block_count(self) -> int:
        return len(self._block_index())

    def block_info(self) -> list[tuple[bytes, int, int]]:
        """(first key bytes, stored body offset, stored body length) per dictionary block."""
        idx = self._block_index()
        return list(zip(idx.keys, idx.offsets, idx.lengths))

    def block_codec(self, i: int) -> int:
        """Compression type byte of dictionary block i (for inspection)."""
        idx = self._block_index()
        return self._read(idx.offsets[i] + idx.lengths[i], 1, f"dictionary block {i}")[0]

    def _block(self, i: int) -> DecodedBlock:
        idx = self._index
        if idx is None:
            idx = self._pending_index if self._pending_index is not None else self._block_index()
        off = idx.offsets[i]
        key = (self._cache_id[0], self._cache_id[1], off)
        blk = self._cache.get(key)
        if blk is None:
            name = f"dictionary block {i}"
            raw = self._read(off, idx.lengths[i] + TRAILER_SIZE, name)
            body = decode_block(raw, path=self.path, block=name, offset=off)
            blk = decode_entries(body, file_size=self.size - FOOTER_SIZE, path=self.path, block=name)
            if blk.keys[0] != idx.keys[i]:
                raise CorruptFileError("first key differs from the block index", path=self.path, block=name)
            blk.lookup = dict(zip(blk.keys, range(len(blk.keys))))
            if len(blk.lookup) != len(blk.keys):
                raise CorruptFileError("duplicate key in a dictionary block", path=self.path, block=name)
            self.stats.blocks_decoded += 1
            self._cache.put(key, blk)
        return blk

    def _sort_keys(self, blk: DecodedBlock) -> list:
        if blk.sort_keys is None:
            blk.sort_keys = sort_keys_of_bytes(self.kt, blk.keys)
        return blk.sort_keys

    def _all_entries(self) -> dict[bytes, tuple[int, int]]:
        """Exact-match map over every entry (files whose order cannot be trusted)."""
        if self._all is None:
            out: dict[bytes, tuple[int, int]] = {}
            for b in range(len(self._block_index())):
                blk = self._block(b)
                for k, o, n in zip(blk.keys, blk.offsets, blk.lengths):
                    out[k] = (o, n)
            self._all = out
        return self._all

    def _locate(self, kb: bytes) -> tuple[int, int] | None:
        """(offset, length) of a key's bitmap, or None (spec §2.10 point lookup)."""
        idx = self._index if self._index is not None else self._block_index()
        if not idx.keys:
            return None
        tried = -1
        if self._search_logical:
            assert self._index_sk is not None
            b = bisect_right(self._index_sk, sort_key_of_bytes(self.kt, kb)) - 1
            if b >= 0:
                blk = self._block(b)
                j = blk.lookup.get(kb)  # type: ignore[union-attr]
                if j is not None:
                    return blk.offsets[j], blk.lengths[j]
                tried = b
        if self._search_bytes:
            b = bisect_right(idx.keys, kb) - 1
            if b >= 0 and b != tried:
                blk = self._block(b)
                j = blk.lookup.get(kb)  # type: ignore[union-attr]
                if j is not None:
                    return blk.offsets[j], blk.lengths[j]
        if not self._search_logical and not self._search_bytes:
            return self._all_entries().get(kb)
        return None

    # ------------------------------------------------------------ answers

    def null_rows(self) -> BitMap64:
        if self._null is None:
            f = self.footer
            self._null = self._named_bitmap(f.null_offset, f.null_length, "null-rows bitmap")
        return self._null.copy()

    def non_null_rows(self) -> BitMap64:
        if self._non_null is None:
            f = self.footer
            self._non_null = self._named_bitmap(f.non_null_offset, f.non_null_length, "non-null-rows bitmap")
        return self._non_null.copy()

    def _named_bitmap(self, offset: int, length: int, name: str) -> BitMap64:
        data = self._read(offset, length, name)
        return bitmaps.deserialize(data, path=self.path, block=name, offset=offset)

    def eq(self, value: object) -> BitMap64:
        if value is None:
            return BitMap64()
        loc = self._locate(serialize_key(self.kt, value))
        return BitMap64() if loc is None else self.bitmap_at(*loc)

    def isin(self, values: Iterable[object]) -> BitMap64:
        seen: set[bytes] = set()
        locs: list[tuple[int, int]] = []
        for v in values:
            if v is None:
                continue
            kb = serialize_key(self.kt, v)
            if kb in seen:
                continue
            seen.add(kb)
            loc = self._locate(kb)
            if loc is not None:
                locs.append(loc)
        return self._union(locs)

    def _gather(self, offs: np.ndarray, lens: np.ndarray) -> tuple[bytes, np.ndarray, np.ndarray, np.ndarray]:
        """Read the byte ranges (offs, lens) with one read per cluster (gaps ≤ _MERGE_GAP).

        Returns (buffer, position of each range in it, offs, lens), the ranges sorted by offset.
        """
        order = np.argsort(offs, kind="stable")
        offs, lens = offs[order], lens[order]
        ends = np.maximum.accumulate(offs + lens)
        cut = np.flatnonzero(offs[1:] - ends[:-1] > _MERGE_GAP) + 1
        s_first = np.concatenate(([0], cut))
        s_last = np.concatenate((cut, [len(offs)])) - 1
        starts, stops = offs[s_first], ends[s_last]
        pieces = [self._read(int(a), int(b - a), f"bitmaps at offset {int(a)}")
                  for a, b in zip(starts.tolist(), stops.tolist())]
        raw = pieces[0] if len(pieces) == 1 else b"".join(pieces)
        base = np.zeros(len(starts), dtype=np.int64)
        np.cumsum((stops - starts)[:-1], out=base[1:])
        span_of = np.repeat(np.arange(len(starts)), s_last - s_first + 1)
        rel = offs - starts[span_of] + base[span_of]
        return raw, rel, offs, lens

    def _union_chunk(self, offs: np.ndarray, lens: np.ndarray, small: list[BitMap], large: list[BitMap64]
                     ) -> None:
        """Decode the bitmaps (offs, lens): ids < 2^32 into `small` (32-bit), others into `large`."""
        raw, rel, offs, lens = self._gather(offs, lens)
        if len(offs) >= _BULK_MIN:
            ids, rejected = bitmaps.decode_array_bitmaps(np.frombuffer(raw, dtype=np.uint8), rel, lens)
            if len(ids):
                small.append(bitmaps.bitmap_of_ids(ids))
            todo = np.flatnonzero(rejected).tolist()
        else:
            todo = range(len(offs))
        if not len(todo):
            return
        mv = memoryview(raw)
        rel_l, len_l, off_l = rel.tolist(), lens.tolist(), offs.tolist()
        for k in todo:
            p, length, off = rel_l[k], len_l[k], off_l[k]
            piece = mv[p:p + length]
            if length > 12 and piece[:12] == _PREFIX:
                # ids < 2^32: the 32-bit map behind the 12-byte prefix unions faster (perf notes)
                try:
                    small.append(BitMap.deserialize(piece[12:]))
                except Exception:
                    raise CorruptFileError("malformed roaring bitmap", path=self.path,
                                           block=f"bitmap at offset {off}", offset=off) from None
            else:
                large.append(bitmaps.deserialize(piece, path=self.path, block=f"bitmap at offset {off}",
                                                 offset=off))

    def _union(self, locs: list[tuple[int, int]] | tuple[np.ndarray, np.ndarray]) -> BitMap64:
        """OR of the bitmaps at `locs` ((offset, length) pairs or two arrays), neighbours read at once."""
        if isinstance(locs, tuple):
            offs, lens = locs
        else:
            if not locs:
                return BitMap64()
            if len(locs) == 1:
                return self.bitmap_at(*locs[0])
            arr = np.array(locs, dtype=np.int64).reshape(-1, 2)
            offs, lens = arr[:, 0], arr[:, 1]
        if len(offs) == 0:
            return BitMap64()
        if len(offs) == 1:
            return self.bitmap_at(int(offs[0]), int(lens[0]))
        self.stats.bitmaps_read += len(offs)
        small: list[BitMap] = []
        large: list[BitMap64] = []
        order = np.argsort(offs, kind="stable")
        offs, lens = offs[order], lens[order]
        # chunks of ≤ _BULK_CHUNK bytes bound the memory of the vectorized decode
        chunk_of = np.cumsum(lens) // _BULK_CHUNK
        cuts = [0, *(np.flatnonzero(chunk_of[1:] != chunk_of[:-1]) + 1).tolist(), len(offs)]
        for a, b in zip(cuts[:-1], cuts[1:]):
            self._union_chunk(offs[a:b], lens[a:b], small, large)
        if small:
            merged = BitMap.union(*small) if len(small) > 1 else small[0]
            merged.run_optimize()
            large.append(BitMap64.deserialize(_PREFIX + merged.serialize()) if len(merged)
                         else BitMap64())
        return bitmaps.union(large)

    def _iter_blocks(self) -> Iterator[tuple[int, DecodedBlock]]:
        for b in range(len(self._block_index())):
            yield b, self._block(b)

    def _block_arrays(self, blk: DecodedBlock) -> tuple[np.ndarray, np.ndarray]:
        """The block's bitmap offsets and lengths as int64 arrays (cached with the block)."""
        arrs = blk.extra.get("np")
        if arrs is None:
            arrs = (np.array(blk.offsets, dtype=np.int64), np.array(blk.lengths, dtype=np.int64))
            blk.extra["np"] = arrs
        return arrs

    def _range_span(self, lo: object, hi: object, low_inclusive: bool, high_inclusive: bool
                    ) -> tuple[int, int, int, int] | None:
        """(b0, j0, b1, j1): the keys in [lo, hi] run from entry j0 of block b0 to before entry j1 of
        block b1 (logical-order files, binary-searched; spec §2.10); None when empty."""
        sk = self._index_sk
        assert sk is not None
        b0 = 0 if lo is None else max(bisect_right(sk, lo) - 1, 0)
        b1 = len(sk) - 1 if hi is None else bisect_right(sk, hi) - 1
        if b1 < b0:
            return None
        j0 = 0
        if lo is not None:
            bsk = self._sort_keys(self._block(b0))
            j0 = bisect_left(bsk, lo) if low_inclusive else bisect_right(bsk, lo)
        if hi is None:
            j1 = len(self._block(b1))
        else:
            bsk = self._sort_keys(self._block(b1))
            j1 = bisect_right(bsk, hi) if high_inclusive else bisect_left(bsk, hi)
        return _nonempty(b0, j0, b1, j1, len(self._block(b0)))

    def _prefix_span(self, p: bytes) -> tuple[int, int, int, int] | None:
        """Like _range_span for keys starting with `p` (byte order = logical order for strings)."""
        keys = self._block_index().keys
        upper = _upper_bound(p)
        b0 = max(bisect_right(keys, p) - 1, 0)
        b1 = len(keys) - 1 if upper is None else bisect_left(keys, upper) - 1
        if b1 < b0:
            return None
        j0 = bisect_left(self._block(b0).keys, p)
        blk1 = self._block(b1)
        j1 = len(blk1) if upper is None else bisect_left(blk1.keys, upper)
        return _nonempty(b0, j0, b1, j1, len(self._block(b0)))

    def _span_locs(self, b0: int, j0: int, b1: int, j1: int) -> tuple[np.ndarray, np.ndarray]:
        """Bitmap offsets and lengths of the entries from (b0, j0) to before (b1, j1)."""
        parts: list[tuple[np.ndarray, np.ndarray]] = []
        for b in range(b0, b1 + 1):
            o, ln = self._block_arrays(self._block(b))
            lo = j0 if b == b0 else 0
            hi = j1 if b == b1 else len(o)
            if lo < hi:
                parts.append((o[lo:hi], ln[lo:hi]))
        return _concat(parts)

    def _span_union(self, span: tuple[int, int, int, int] | None) -> BitMap64:
        """Rows of the keys in a span. A span over most blocks is answered as non-null rows minus
        the keys outside it: every non-null row has exactly one key (spec §2.9), and fewer blocks
        and bitmaps are read."""
        if span is None:
            return BitMap64()
        b0, j0, b1, j1 = span
        last = len(self._block_index()) - 1
        if (b1 - b0 + 1) * 10 <= (last + 1) * 6 or last < 3:
            return self._union(self._span_locs(b0, j0, b1, j1))
        parts: list[tuple[np.ndarray, np.ndarray]] = []
        if b0 > 0 or j0 > 0:
            parts.append(self._span_locs(0, 0, b0, j0))
        n1 = len(self._block(b1))
        if b1 < last or j1 < n1:
            nl = len(self._block(last))
            parts.append(self._span_locs(b1, j1, last, nl) if j1 < n1 else self._span_locs(b1 + 1, 0, last, nl))
        outside = _concat(parts)
        if len(outside[0]) == 0:
            return self.non_null_rows()
        return self.non_null_rows() - self._union(outside)

    def _range_locs(self, low: object, high: object, low_inclusive: bool, high_inclusive: bool
                    ) -> tuple[np.ndarray, np.ndarray]:
        """Bitmap locations of the keys in a range, for files whose order is not logical."""
        kt = self.kt
        lo = None if low is None else sort_key_of_bytes(kt, serialize_key(kt, low))
        hi = None if high is None else sort_key_of_bytes(kt, serialize_key(kt, high))
        locs: list[tuple[int, int]] = []
        for _, blk in self._iter_blocks():
            for s, o, n in zip(self._sort_keys(blk), blk.offsets, blk.lengths):
                if lo is not None and (s < lo or (s == lo and not low_inclusive)):
                    continue
                if hi is not None and (s > hi or (s == hi and not high_inclusive)):
                    continue
                locs.append((o, n))
        return _as_arrays(locs)

    def range(self, low: object = None, high: object = None, *, low_inclusive: bool = True,
              high_inclusive: bool = True) -> BitMap64:
        """Rows whose key lies between low and high in Java logical order (None = unbounded)."""
        if not self._block_index().keys:
            return BitMap64()
        if self._order == "logical":
            kt = self.kt
            lo = None if low is None else sort_key_of_bytes(kt, serialize_key(kt, low))
            hi = None if high is None else sort_key_of_bytes(kt, serialize_key(kt, high))
            return self._span_union(self._range_span(lo, hi, low_inclusive, high_inclusive))
        return self._union(self._range_locs(low, high, low_inclusive, high_inclusive))

    def _prefix_bytes(self, prefix: str | bytes) -> bytes:
        if not self.kt.is_string:
            raise UnsupportedTypeError(f"starts_with needs a string column, not {self.kt.spelling}")
        return prefix.encode("utf-8") if isinstance(prefix, str) else bytes(prefix)

    def _prefix_locs(self, prefix: str) -> tuple[np.ndarray, np.ndarray]:
        p = self._prefix_bytes(prefix)
        if not self._block_index().keys:
            return _NO_LOCS
        if self._order == "logical":
            span = self._prefix_span(p)
            return _NO_LOCS if span is None else self._span_locs(*span)
        locs: list[tuple[int, int]] = []
        for _, blk in self._iter_blocks():
            locs.extend((o, n) for k, o, n in zip(blk.keys, blk.offsets, blk.lengths) if k.startswith(p))
        return _as_arrays(locs)

    def starts_with(self, prefix: str) -> BitMap64:
        """Rows whose string key starts with `prefix` (raw UTF-8 bytes, spec §2.10)."""
        if prefix == "" or prefix == b"":
            if not self.kt.is_string:
                raise UnsupportedTypeError(f"starts_with needs a string column, not {self.kt.spelling}")
            return self.non_null_rows()
        p = self._prefix_bytes(prefix)
        if self._block_index().keys and self._order == "logical":
            return self._span_union(self._prefix_span(p))
        return self._union(self._prefix_locs(prefix))

    def scan(self, match: Callable[[object], bool]) -> BitMap64:
        kt = self.kt
        locs = [(o, n) for _, blk in self._iter_blocks()
                for k, o, n in zip(blk.keys, blk.offsets, blk.lengths) if match(deserialize_key(kt, k))]
        return self._union(locs)

    def scan_bytes(self, match: Callable[[bytes], bool]) -> BitMap64:
        locs = [(o, n) for _, blk in self._iter_blocks()
                for k, o, n in zip(blk.keys, blk.offsets, blk.lengths) if match(k)]
        return self._union(locs)

    def raw_entries(self) -> Iterator[tuple[bytes, int, int]]:
        """(key bytes, bitmap offset, bitmap length) in file order."""
        for _, blk in self._iter_blocks():
            yield from zip(blk.keys, blk.offsets, blk.lengths)

    def entries(self) -> Iterator[tuple[object, int, int]]:
        """(value, bitmap offset, bitmap length) in file order (logical order for current files)."""
        kt = self.kt
        for k, o, n in self.raw_entries():
            yield deserialize_key(kt, k), o, n

    def value_counts(self, prefix: str | None = None) -> Iterator[tuple[object, int]]:
        """(value, row count) per key in logical order, optionally only keys with a string prefix."""
        if prefix:
            po, pl = self._prefix_locs(prefix)
            locs_set = set(zip(po.tolist(), pl.tolist()))
            items = [(k, o, n) for k, o, n in self.raw_entries() if (o, n) in locs_set]
        else:
            items = list(self.raw_entries())
        if self._order != "logical":
            kt = self.kt
            items.sort(key=lambda e: sort_key_of_bytes(kt, e[0]))
        if not items:
            return
        offs = np.fromiter((e[1] for e in items), dtype=np.int64, count=len(items))
        lens = np.fromiter((e[2] for e in items), dtype=np.int64, count=len(items))
        # counts from the container headers of all bitmaps at once (no decoding), in offset order
        order = np.argsort(offs, kind="stable")
        raw, rel, s_offs, s_lens = self._gather(offs, lens)
        cards, rejected = bitmaps.header_cardinalities(np.frombuffer(raw, dtype=np.uint8), rel, s_lens)
        if bool(rejected.any()):
            mv = memoryview(raw)
            for j in np.flatnonzero(rejected).tolist():
                p, n, o = int(rel[j]), int(s_lens[j]), int(s_offs[j])
                cards[j] = len(bitmaps.deserialize(mv[p:p + n], path=self.path,
                                                   block=f"bitmap at offset {o}", offset=o))
        counts = np.empty(len(items), dtype=np.int64)
        counts[order] = cards
        kt = self.kt
        for (k, _o, _n), c in zip(items, counts.tolist()):
            yield deserialize_key(kt, k), c

_NO_LOCS = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))


def _nonempty(b0: int, j0: int, b1: int, j1: int, n0: int) -> tuple[int, int, int, int] | None:
    """Normalize a span (j0 may equal the length n0 of block b0) or None if it holds no entry."""
    if j0 >= n0 and b0 < b1:
        b0, j0 = b0 + 1, 0
    if b0 > b1 or (b0 == b1 and j0 >= j1):
        return None
    return b0, j0, b1, j1


def _concat(parts: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    if not parts:
        return _NO_LOCS
    if len(parts) == 1:
        return parts[0]
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


def _as_arrays(locs: list[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray]:
    if not locs:
        return _NO_LOCS
    arr = np.array(locs, dtype=np.int64).reshape(-1, 2)
    return arr[:, 0], arr[:, 1]


def _upper_bound(prefix: bytes) -> bytes | None:
    """Exclusive upper bound of keys with `prefix`: drop trailing 0xFF, increment (spec §2.10)."""
    p = bytearray(prefix)
    while p and p[-1] == 0xFF:
        p.pop()
    if not p:
        return None
    p[-1] += 1
    return bytes(p)
