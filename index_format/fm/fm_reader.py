"""FM global index reader: exact substring, prefix, suffix, equality and LIKE answers from Paimon FM-index files.

Implements index_format.index_reader.IndexReader (pyroaring BitMap64 of LOCAL row ids) plus `contains` and
`like`, the operators the family exists for. Opening reads the container footer and directory only. The first
question that needs a partition reads it whole (one ranged read), checks every block's CRC and decodes it once:
the BWT from the quad wavelet levels, the full suffix array from the sampled one (LF steps, vectorised), and from
them the partition's text, which is the rows' values ("verification" needs no data file). A pattern is then
found by binary search of the suffix array (O(m log n)), occurrences map to rows through the row boundaries, and
a general LIKE verifies the candidate rows of its longest literal piece against the whole pattern with the
predicate package's LIKE matcher. Corrupt bytes raise IndexFormatError subclasses naming the file and the part
("container footer", "partition 2 wavelet level 1 block 0", ...). Imports numpy/pyroaring and
index_format.{fm,errors,keys,storage,types}.
"""
from __future__ import annotations

import bisect
import re
import struct
import threading
from array import array
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
from pyroaring import AbstractBitMap64, BitMap64

from index_format.errors import ChecksumError, CorruptFileError, TruncatedFileError, UnsupportedTypeError
from index_format.fm.fm_format import (
    FIRST_BYTE_SYMBOL,
    FOOTER_SIZE,
    MAX_DIRECTORY,
    SEPARATOR,
    TERMINATOR,
    BlockInfo,
    IndexMeta,
    PartitionMeta,
    VectorBlock,
    check_block,
    crc,
    decode_block,
    decode_container_footer,
    decode_directory,
    decode_index_meta,
    decode_partition_footer,
)
from index_format.index_reader import entries_among
from index_format.keys import deserialize_key
from index_format.parallel import THREADS, map_parts
from index_format.storage import RangeSource, Storage, as_source
from index_format.storage.sources import read_exact
from index_format.types import KeyType, parse_type

__all__ = ["FMIndexReader", "FMReadStats", "open_fm_index"]

_SEP16 = struct.pack(">H", SEPARATOR)
_PREFIX_CODES = 1 << 17   # the prefix table's most entries (int32: 512 KB), so k = 3 for up to 50 symbols
_TERM16 = struct.pack(">H", TERMINATOR)


@dataclass
class FMReadStats:
    """What a reader has fetched and decoded so far (index_reader.ReadCounters)."""

    bytes_read: int = 0
    reads: int = 0
    blocks_decoded: int = 0
    bitmaps_read: int = 0
    partitions_decoded: int = 0


def open_fm_index(source: RangeSource | str, kt: KeyType | str, *, storage: Storage | None = None,
                  size: int | None = None, cache: object | None = None,
                  bitmap_cache: object | None = None) -> FMIndexReader:
    """Open an fm file by reading its container footer and directory; `size` should come from the manifest.

    Same call shape as the other families' open functions. `cache`: a shared block cache (get/put by key, the
    service's BlockCache under BGIX_CACHE_BYTES) that keeps decoded partitions, keyed by (path, size, partition
    offset) and charged what they keep resident, so readers of many or large fm files stay within its budget;
    without it the reader keeps every partition it decoded (see cache_cost). `bitmap_cache` is not used.
    Raises:
        FileNotFoundError: a path that does not exist. IndexFormatError: a bad footer or directory.
        UnsupportedTypeError: `kt` is not STRING.
    """
    src = as_source(source, storage=storage, size=size)
    return FMIndexReader(src, parse_type(kt) if isinstance(kt, str) else kt, shared=cache)


@dataclass(slots=True)
class _Part:
    """One decoded partition: its text (big-endian u16 symbols), full suffix array, separator positions, the
    rows' bytes and null flags."""

    first_row_id: int
    rows: int
    text16: bytes
    sa: np.ndarray          # int32[n]
    seps: np.ndarray        # int64[rows]: position of each row's separator
    blob: bytes             # each text position's byte (row values are slices of it)
    nulls: np.ndarray       # bool[rows]
    b2s: np.ndarray         # int32[256]: dense symbol of each byte, -1 if absent
    base: int               # the alphabet size
    k: int                  # symbols of the prefix table
    bounds: np.ndarray      # int32[base^k + 1]: suffixes whose first k symbols (base-`base` code) are below each

    @property
    def nbytes(self) -> int:
        return (len(self.text16) + self.sa.nbytes + self.seps.nbytes + len(self.blob) + self.nulls.nbytes
                + self.bounds.nbytes + 1024)

    def resident_bytes(self) -> int:
        """What a shared block cache charges this partition (BlockCache)."""
        return self.nbytes

    def starts(self) -> np.ndarray:
        return np.concatenate([[0], self.seps[:-1] + 1])

    def value(self, row: int) -> bytes:
        start = 0 if row == 0 else int(self.seps[row - 1]) + 1
        return self.blob[start:int(self.seps[row])]

    def pattern16(self, data: bytes) -> bytes | None:
        """`data` as big-endian dense symbols; None when a byte never occurs in the partition."""
        syms = self.b2s[np.frombuffer(data, dtype=np.uint8)]
        if len(syms) and int(syms.min()) < 0:
            return None
        return syms.astype(">u2").tobytes()

    def occurrences(self, pat16: bytes) -> np.ndarray:
        """Text positions where `pat16` starts: the suffix-array range of its first k symbols from the prefix
        table, then (for a longer pattern) a binary search inside it."""
        m = len(pat16)
        syms = struct.unpack(f">{m // 2}H", pat16)
        head = syms[:self.k]
        code = 0
        for c in head:
            code = code * self.base + c
        width = self.base ** (self.k - len(head))
        lo, hi = int(self.bounds[code * width]), int(self.bounds[(code + 1) * width])
        text, sa = self.text16, self.sa
        if len(syms) > self.k and lo < hi:
            def key(s: np.int32) -> bytes:
                p = 2 * int(s)
                return text[p:p + m]

            lo = bisect.bisect_left(sa, pat16, lo=lo, hi=hi, key=key)
            hi = bisect.bisect_right(sa, pat16, lo=lo, hi=hi, key=key)
        return np.asarray(sa[lo:hi], dtype=np.int64)

    def rows_at(self, positions: np.ndarray) -> np.ndarray:
        """The row holding each (non-separator) text position."""
        return np.searchsorted(self.seps, positions, side="left")

    def non_null(self) -> np.ndarray:
        return np.flatnonzero(~self.nulls)

    def empty_rows(self) -> np.ndarray:
        """Rows whose value is '' (not null)."""
        lengths = self.seps - self.starts()
        return np.flatnonzero((lengths == 0) & ~self.nulls)


class FMIndexReader:
    """Read-only view of one FM index file (rows numbered from the index metadata's first row id)."""

    key_order = "unknown"   # rows are stored in row order; entries() sorts the values

    def __init__(self, source: RangeSource, kt: KeyType, *, shared: Any = None) -> None:
        if kt.name != "string":
            raise UnsupportedTypeError(f"an fm index holds STRING values, not {kt.name}")
        self.source = source
        self.path: str = source.name
        self.kt = kt
        self.size = source.size
        self.stats = FMReadStats()
        self._lock = threading.Lock()
        self._parts: dict[int, _Part] = {}   # decoded partitions, without a shared cache
        self._shared = shared
        if self.size < FOOTER_SIZE:
            raise TruncatedFileError(f"file of {self.size} bytes is shorter than the 64-byte footer",
                                     path=self.path, block="container footer")
        foot_at = self.size - FOOTER_SIZE
        info, first, rows, count = decode_container_footer(self._read(foot_at, FOOTER_SIZE, "container footer"),
                                                           path=self.path, offset=foot_at)
        check_block(info, 0, foot_at, MAX_DIRECTORY, path=self.path, block="container directory")
        if info.offset + info.stored != foot_at:
            raise CorruptFileError("container directory is not right before the footer", path=self.path,
                                   block="container directory", offset=info.offset)
        body = self._block(self._read(info.offset, info.stored, "container directory"), info, "container directory")
        meta = decode_index_meta(body, path=self.path)
        if (meta.first_row_id, meta.row_count, len(meta.partitions)) != (first, rows, count) \
                or meta.partitions[-1].end != info.offset:
            raise CorruptFileError("container footer and directory disagree", path=self.path,
                                   block="container directory", offset=info.offset)
        self.meta: IndexMeta = meta
        self._value_count: int | None = None

    # ------------------------------------------------------------ file facts

    @property
    def first_row_id(self) -> int:
        return self.meta.first_row_id

    @property
    def row_count(self) -> int:
        return self.meta.row_count

    @property
    def partitions(self) -> tuple[PartitionMeta, ...]:
        return self.meta.partitions

    @property
    def value_count(self) -> int:
        """Distinct non-null values (the first call decodes every partition): counted by Arrow over each row's
        bytes with its separator byte (the same suffix on every value keeps them distinct)."""
        if self._value_count is None:
            import pyarrow as pa
            import pyarrow.compute as pc
            chunks = []
            for p in self._all():
                offsets = np.concatenate([p.starts(), p.seps[-1:] + 1]) if p.rows else np.zeros(1, np.int64)
                valid = pa.array(~p.nulls).buffers()[1]
                chunks.append(pa.LargeBinaryArray.from_buffers(
                    pa.large_binary(), p.rows, [valid, pa.py_buffer(offsets.astype(np.int64)),
                                                pa.py_buffer(p.blob)], null_count=int(p.nulls.sum())))
            self._value_count = int(pc.count_distinct(pa.chunked_array(chunks, pa.large_binary())).as_py()) \
                if chunks else 0
        return self._value_count

    def cache_cost(self) -> int:
        """Bytes the reader keeps: with a shared cache its directory only (the cache charges the decoded
        partitions); else the decoded partitions (about 8 bytes per text symbol), before decoding an estimate of
        eight times the file."""
        if self._shared is not None:
            return 4096 + 64 * len(self.meta.partitions)
        with self._lock:
            done = {p.first_row_id: p.nbytes for p in self._parts.values()}
        if len(done) == len(self.meta.partitions):
            return 4096 + sum(done.values())
        return 4096 + 8 * self.size

    # ------------------------------------------------------------ rows

    def null_rows(self) -> BitMap64:
        return self._collect(lambda p: np.flatnonzero(p.nulls))

    def non_null_rows(self) -> BitMap64:
        return self._collect(lambda p: p.non_null())

    def non_null_count(self) -> int:
        return sum(int((~p.nulls).sum()) for p in self._all())

    def contains(self, substring: str | bytes) -> BitMap64:
        """Rows whose value contains `substring` (exact: every occurrence in the text lies inside one row)."""
        data = _utf8(substring)
        if not data:
            return self.non_null_rows()

        def rows(p: _Part) -> np.ndarray:
            pat = p.pattern16(data)
            return np.zeros(0, np.int64) if pat is None else p.rows_at(p.occurrences(pat))
        return self._collect(rows)

    def starts_with(self, prefix: str | bytes) -> BitMap64:
        """Rows whose value starts with `prefix` (raw UTF-8 bytes): occurrences of separator + prefix, and the
        first row."""
        data = _utf8(prefix)
        if not data:
            return self.non_null_rows()

        def rows(p: _Part) -> np.ndarray:
            pat = p.pattern16(data)
            if pat is None:
                return np.zeros(0, np.int64)
            found = p.rows_at(p.occurrences(_SEP16 + pat)) + 1
            if p.text16.startswith(pat):
                found = np.append(found, 0)
            return found
        return self._collect(rows)

    def ends_with(self, suffix: str | bytes) -> BitMap64:
        """Rows whose value ends with `suffix`: occurrences of suffix + separator."""
        data = _utf8(suffix)
        if not data:
            return self.non_null_rows()

        def rows(p: _Part) -> np.ndarray:
            pat = p.pattern16(data)
            return np.zeros(0, np.int64) if pat is None else p.rows_at(p.occurrences(pat + _SEP16))
        return self._collect(rows)

    def eq(self, value: object) -> BitMap64:
        if value is None:
            return BitMap64()
        data = _utf8(value)
        return self._collect(lambda p: self._eq_rows(p, data))

    def isin(self, values: Iterable[object]) -> BitMap64:
        wanted = {_utf8(v) for v in values if v is not None}
        if not wanted:
            return BitMap64()
        return self._collect(lambda p: np.concatenate([self._eq_rows(p, d) for d in wanted]))

    def count_keys(self, values: Iterable[object]) -> int:
        return len(self.isin(values))

    def like(self, pattern: str, escape: str | None = "\\") -> BitMap64:
        """Rows whose value matches the SQL LIKE `pattern` (`%` any run, `_` one character, `escape` quotes the
        next character): candidates from the longest literal piece, each verified against the whole pattern."""
        from index_format.literals import like_regex
        pattern = _to_backslash(pattern, escape)
        rx = re.compile(like_regex(pattern))   # ValueError: a lone trailing escape
        pieces, wild = _literal_pieces(pattern)
        if not wild:
            return self.eq("".join(pieces))
        best = max(pieces, key=lambda s: len(s.encode("utf-8")), default="")
        data = best.encode("utf-8")

        def rows(p: _Part) -> np.ndarray:
            if data:
                pat = p.pattern16(data)
                if pat is None:
                    return np.zeros(0, np.int64)
                cand = np.unique(p.rows_at(p.occurrences(pat)))
            else:
                cand = p.non_null()
            return np.array([r for r in cand.tolist()
                             if rx.match(p.value(r).decode("utf-8", "surrogateescape"))], dtype=np.int64)
        return self._collect(rows)

    def range(self, low: object = None, high: object = None, *, low_inclusive: bool = True,
              high_inclusive: bool = True) -> BitMap64:
        """Rows whose value lies between `low` and `high` in UTF-8 byte order (every value is compared)."""
        lo = None if low is None else _utf8(low)
        hi = None if high is None else _utf8(high)

        def ok(v: bytes) -> bool:
            if lo is not None and (v < lo or (v == lo and not low_inclusive)):
                return False
            return not (hi is not None and (v > hi or (v == hi and not high_inclusive)))
        return self.scan_bytes(ok)

    def count_range(self, low: object = None, high: object = None, *, low_inclusive: bool = True,
                    high_inclusive: bool = True) -> int:
        return len(self.range(low, high, low_inclusive=low_inclusive, high_inclusive=high_inclusive))

    def scan(self, match: Callable[[object], bool]) -> BitMap64:
        """Rows whose value satisfies `match` (each distinct value tested once)."""
        kt = self.kt
        return self.scan_bytes(lambda v: bool(match(deserialize_key(kt, v))))

    def scan_bytes(self, match: Callable[[bytes], bool]) -> BitMap64:
        out = BitMap64()
        for value, ids in self._grouped():
            if match(value):
                out |= _bitmap(ids)
        return out

    # ------------------------------------------------------------ every value

    def entries(self) -> Iterator[tuple[object, BitMap64]]:
        """(value, its rows) for every distinct value in UTF-8 byte order."""
        kt = self.kt
        for value, ids in self._grouped():
            yield deserialize_key(kt, value), _bitmap(ids)

    def key_bitmaps(self) -> Iterator[tuple[object, BitMap64]]:
        """entries() (an fm file keeps no bitmaps)."""
        yield from self.entries()

    def entries_desc(self) -> Iterator[tuple[object, BitMap64]]:
        """entries() in descending order (an fm file has no key order to walk: every value is grouped first)."""
        yield from reversed(list(self.entries()))

    def entries_among(self, rows: AbstractBitMap64, *, desc: bool = False) -> Iterator[tuple[object, BitMap64]]:
        """entries() or entries_desc() cut to `rows` (IndexReader.entries_among)."""
        yield from entries_among(self.entries_desc() if desc else self.entries(), rows)

    def key_rows(self) -> Iterator[tuple[bytes, np.ndarray]]:
        for value, ids in self._grouped():
            yield value, ids.astype(np.uint64)

    def value_counts(self, prefix: str | None = None) -> Iterator[tuple[object, int]]:
        kt = self.kt
        p = _utf8(prefix) if prefix else b""
        for value, ids in self._grouped():
            if value.startswith(p):
                yield deserialize_key(kt, value), len(ids)

    def key_counts(self, dead: BitMap64 | None = None, among: AbstractBitMap64 | None = None
                   ) -> Iterator[tuple[list[bytes], np.ndarray]]:
        """(values, live row counts) of every distinct value, in one batch; with `among`, only its rows count."""
        keys: list[bytes] = []
        counts: list[int] = []
        dead_ids = np.frombuffer(dead.to_array(), dtype=np.uint64).astype(np.int64) if dead else None
        for value, ids in self._grouped():
            if among is not None:
                live = ids if dead_ids is None else ids[~np.isin(ids, dead_ids)]
                n = among.intersection_cardinality(BitMap64(array("Q", live.astype(np.uint64).tobytes())))
            else:
                n = len(ids) if dead_ids is None else int((~np.isin(ids, dead_ids)).sum())
            keys.append(value)
            counts.append(n)
        if keys:
            yield keys, np.array(counts, dtype=np.int64)

    def values(self) -> list[bytes | None]:
        """Every row's value in row order (None for nulls): the verification text, decoded."""
        out: list[bytes | None] = []
        for p in self._all():
            out.extend(_part_values(p))
        return out

    def partition_values(self, i: int) -> list[bytes | None]:
        """The values of partition `i` alone, in row order (None for nulls): decodes only that partition, so a
        damaged one elsewhere in the file does not stop it (`bgix file inspect` checks them one by one).

        Raises:
            IndexError: no such partition. IndexFormatError: the partition does not decode (names the block).
        """
        if not 0 <= i < len(self.meta.partitions):
            raise IndexError(f"partition {i} of {len(self.meta.partitions)}")
        return _part_values(self._part(i))

    # ------------------------------------------------------------ internals

    def _eq_rows(self, p: _Part, data: bytes) -> np.ndarray:
        if not data:
            return p.empty_rows()
        pat = p.pattern16(data)
        if pat is None:
            return np.zeros(0, np.int64)
        found = p.rows_at(p.occurrences(_SEP16 + pat + _SEP16)) + 1
        if p.text16.startswith(pat + _SEP16):
            found = np.append(found, 0)
        return found

    def _collect(self, rows_of: Callable[[_Part], np.ndarray]) -> BitMap64:
        parts = []
        for p in self._all():
            r = rows_of(p)
            if len(r) * 32 < p.rows:   # few: sorted and made distinct by a sort of their own
                if len(r):
                    parts.append(np.unique(r) + p.first_row_id)
            else:
                hit = np.zeros(p.rows, dtype=bool)   # distinct and sorted in one pass (rows < partition size)
                hit[r] = True
                parts.append(np.flatnonzero(hit) + p.first_row_id)
        return _bitmap(np.concatenate(parts)) if parts else BitMap64()

    def _grouped(self) -> Iterator[tuple[bytes, np.ndarray]]:
        """(value bytes, its row ids ascending) for every distinct non-null value, in byte order."""
        groups: dict[bytes, list[int]] = {}
        for p in self._all():
            starts = p.starts().tolist()
            ends = p.seps.tolist()
            nulls = p.nulls.tolist()
            blob, base = p.blob, p.first_row_id
            for i in range(p.rows):
                if not nulls[i]:
                    groups.setdefault(blob[starts[i]:ends[i]], []).append(base + i)
        for value in sorted(groups):
            yield value, np.array(groups[value], dtype=np.int64)

    def _all(self) -> Iterator[_Part]:
        """Every partition in order, a window at a time: a window's missing partitions are decoded first on the
        worker threads (numpy releases the GIL); a window bounds what a question holds beyond the cache."""
        n = len(self.meta.partitions)
        step = 4 * THREADS
        for w0 in range(0, n, step):
            window = range(w0, min(n, w0 + step))
            got: dict[int, _Part | None] = {i: self._cached(i) for i in window}
            if sum(p is None for p in got.values()) > 1:
                with self._lock:   # another question may have decoded them meanwhile
                    got = {i: p if p is not None else self._cached(i) for i, p in got.items()}
                    missing = [i for i, p in got.items() if p is None]
                    for i, part in zip(missing, map_parts(self._decode, missing)):
                        got[i] = part
                        self._keep(i, part)
            for i in window:
                have = got[i]
                yield have if have is not None else self._part(i)

    def _part(self, i: int) -> _Part:
        got = self._cached(i)
        if got is not None:
            return got
        with self._lock:
            got = self._cached(i)
            if got is None:
                got = self._decode(i)
                self._keep(i, got)
            return got

    def _cached(self, i: int) -> _Part | None:
        if self._shared is None:
            return self._parts.get(i)
        hit = self._shared.get((self.path, self.size, self.meta.partitions[i].start))
        return hit if isinstance(hit, _Part) else None

    def _keep(self, i: int, part: _Part) -> None:
        self.stats.partitions_decoded += 1
        if self._shared is None:
            self._parts[i] = part
        else:
            self._shared.put((self.path, self.size, self.meta.partitions[i].start), part)

    def _read(self, offset: int, length: int, block: str) -> bytes:
        data = read_exact(self.source, offset, length, block)
        self.stats.reads += 1
        self.stats.bytes_read += length
        return data

    def _block(self, stored: bytes | memoryview, info: BlockInfo, name: str) -> bytes:
        out = decode_block(stored, info, path=self.path, block=name)
        self.stats.blocks_decoded += 1
        return out

    def _decode(self, i: int) -> _Part:
        pm = self.meta.partitions[i]
        name = f"partition {i}"
        raw = memoryview(self._read(pm.start, pm.end - pm.start, name))
        foot_at = pm.end - FOOTER_SIZE
        footer = decode_partition_footer(bytes(raw[foot_at - pm.start:]), path=self.path, offset=foot_at, name=name)
        if footer.first_row_id != pm.first_row_id or footer.row_count != pm.row_count:
            raise CorruptFileError("partition footer and container directory disagree", path=self.path,
                                   block=f"{name} footer", offset=foot_at)
        dinfo = footer.directory
        check_block(dinfo, pm.start, foot_at, MAX_DIRECTORY, path=self.path, block=f"{name} directory")
        if dinfo.offset + dinfo.stored != foot_at:
            raise CorruptFileError("partition directory is not right before its footer", path=self.path,
                                   block=f"{name} directory", offset=dinfo.offset)

        def stored(info: BlockInfo) -> memoryview:
            return raw[info.offset - pm.start:info.offset - pm.start + info.stored]

        d = decode_directory(self._block(stored(dinfo), dinfo, f"{name} directory"), footer, pm.start,
                             path=self.path, name=name)
        n, rows = d.text_length, d.row_count
        for k, page in enumerate(d.pages):   # checked, not decoded: the values come from the text
            if crc(stored(page), page.codec) != page.checksum:
                raise ChecksumError("verification page CRC-32 mismatch", path=self.path,
                                    block=f"{name} verification page {k}", offset=page.offset)

        def words(blocks: list[VectorBlock], what: str, groups: int) -> list[np.ndarray]:
            out = []
            for k, b in enumerate(blocks):
                where = f"{name} {what} block {k}"
                body = self._block(stored(b.info), b.info, where)
                if len(body) < 8:
                    raise CorruptFileError("block shorter than its header", path=self.path, block=where)
                nw, npref = struct.unpack_from(">II", body, 0)
                if npref != (nw + 63) // 64 + 1 or len(body) != 8 + 4 * groups * npref + 8 * nw:
                    raise CorruptFileError("rank block header does not match its length", path=self.path,
                                           block=where, offset=b.info.offset)
                out.append(np.frombuffer(body, dtype=">u8", offset=8 + 4 * groups * npref).astype("<u8"))
            return out

        def bits(blocks: list[VectorBlock], length: int, what: str) -> np.ndarray:
            ws = words(blocks, what, 1)
            flat = np.concatenate(ws) if ws else np.zeros(0, "<u8")
            if len(flat) != -(-length // 64):
                raise CorruptFileError(f"{what} has {len(flat)} words for {length} bits", path=self.path, block=name)
            return np.unpackbits(flat.view(np.uint8), bitorder="little")[:length].astype(bool)

        # BWT symbols from the quad levels (each level's order: the previous one stably partitioned by digit)
        bwt = np.zeros(n, dtype=np.uint16)
        perm = np.arange(n, dtype=np.int64)
        for level, blocks in enumerate(d.wavelets):
            ws = words(blocks, f"wavelet level {level}", 4)
            flat = np.concatenate(ws) if ws else np.zeros(0, "<u8")
            if len(flat) != -(-n // 32):
                raise CorruptFileError(f"wavelet level {level} has {len(flat)} words for {n} symbols",
                                       path=self.path, block=name)
            by = flat.view(np.uint8)
            digits = ((by[:, None] >> np.array([0, 2, 4, 6], dtype=np.uint8)) & 3).reshape(-1)[:n]
            shift = (d.level_count - level - 1) * 2
            bwt[perm] |= digits.astype(np.uint16) << shift
            perm = perm[np.argsort(digits, kind="stable")]
        if not np.array_equal(np.bincount(bwt, minlength=d.alphabet_size)[:d.alphabet_size], np.diff(d.cumulative)) \
                or int(bwt.max(initial=0)) >= d.alphabet_size:
            raise CorruptFileError("wavelet levels do not match the symbol counts", path=self.path,
                                   block=f"{name} wavelet levels")
        # LF mapping, then the full suffix array from the samples
        order = np.argsort(bwt, kind="stable")
        lf = np.empty(n, dtype=np.int64)
        lf[order] = np.arange(n, dtype=np.int64)
        del order
        sampled = np.flatnonzero(bits(d.sampled_rows, n, "sampled rows"))
        vals_parts = [np.frombuffer(self._block(stored(b.info), b.info, f"{name} sample values block {k}"),
                                    dtype=">u4") for k, b in enumerate(d.sample_values)]
        vals = np.concatenate(vals_parts).astype(np.int64) if vals_parts else np.zeros(0, np.int64)
        if len(sampled) != d.sample_count or len(vals) != d.sample_count or (len(vals) and (
                int(vals.max()) >= n or np.any(vals % d.sample_rate))):
            raise CorruptFileError("sampled suffix array does not match its rate", path=self.path,
                                   block=f"{name} sample values")
        sa = np.full(n, -1, dtype=np.int64)
        rows_k, v = sampled, vals
        for _ in range(d.sample_rate):
            sa[rows_k] = v
            rows_k = lf[rows_k]
            v = (v - 1) % n
        del lf
        if int(sa.min(initial=0)) < 0:
            raise CorruptFileError("suffix samples do not reach every position", path=self.path,
                                   block=f"{name} sample values")
        text = np.empty(n, dtype=np.uint16)
        text[sa] = np.repeat(np.arange(d.alphabet_size, dtype=np.uint16), np.diff(d.cumulative))
        seps = np.flatnonzero(text == SEPARATOR)
        boundaries = np.flatnonzero(bits(d.boundaries, n, "row boundaries"))
        if text[n - 1] != TERMINATOR or not np.array_equal(seps, boundaries):
            raise CorruptFileError("decoded text does not match the row boundaries", path=self.path,
                                   block=f"{name} row boundaries")
        nulls = bits(d.null_rows, rows, "null rows")
        if int(nulls.sum()) != d.null_count:
            raise CorruptFileError("null-row count mismatch", path=self.path, block=f"{name} null rows")
        # the prefix table: how many suffixes begin below each k-symbol code (the suffix array is in that order;
        # a suffix shorter than k is padded with the terminator, the smallest symbol, which keeps the order)
        base = d.alphabet_size
        k = 1
        while k < 4 and base ** (k + 1) <= _PREFIX_CODES:
            k += 1
        padded = np.concatenate([text, np.zeros(k, dtype=np.uint16)]).astype(np.int64)
        code = padded[:n].copy()
        for j in range(1, k):
            code = code * base + padded[j:n + j]
        bounds = np.zeros(base ** k + 1, dtype=np.int32)
        np.cumsum(np.bincount(code, minlength=base ** k), out=bounds[1:])
        del padded, code
        s2b = np.zeros(d.alphabet_size, dtype=np.uint8)
        present = np.flatnonzero(d.byte_to_symbol >= 0)
        s2b[d.byte_to_symbol[present]] = present.astype(np.uint8)
        return _Part(pm.first_row_id, rows,
                     text.astype(">u2").tobytes(), sa.astype(np.int32), seps.astype(np.int64),
                     s2b[text].tobytes(), nulls, d.byte_to_symbol.astype(np.int32), base, k, bounds)


def _part_values(p: _Part) -> list[bytes | None]:
    starts = p.starts().tolist()
    ends = p.seps.tolist()
    nulls = p.nulls.tolist()
    return [None if nulls[i] else p.blob[starts[i]:ends[i]] for i in range(p.rows)]


def _utf8(value: object) -> bytes:
    """A literal's UTF-8 bytes (bytes pass as they are: raw keys)."""
    return value if isinstance(value, bytes) else str(value).encode("utf-8")


def _to_backslash(pattern: str, escape: str | None) -> str:
    """`pattern` with its escape character rewritten to the backslash the LIKE matcher takes."""
    if escape in (None, "", "\\"):
        return pattern if escape else pattern.replace("\\", "\\\\")
    out, i = [], 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == escape and i + 1 < len(pattern):
            out.append("\\" + pattern[i + 1])
            i += 2
            continue
        out.append("\\\\" if ch == "\\" else ch)
        i += 1
    return "".join(out)


def _literal_pieces(pattern: str) -> tuple[list[str], bool]:
    """(the literal runs between wildcards, escapes resolved; whether the pattern has any wildcard)."""
    pieces, cur, wild, i = [], [], False, 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\" and i + 1 < len(pattern):
            cur.append(pattern[i + 1])
            i += 2
            continue
        if ch in "%_":
            wild = True
            pieces.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
        i += 1
    pieces.append("".join(cur))
    return [p for p in pieces if p], wild


def _bitmap(ids: np.ndarray) -> BitMap64:
    if len(ids) > 1 and not bool((ids[1:] >= ids[:-1]).all()):
        ids = np.sort(ids)
    return BitMap64(array("Q", ids.astype(np.uint64, copy=False).tobytes()))
