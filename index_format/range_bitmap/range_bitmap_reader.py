"""Lazy reader of a range-bitmap payload: Paimon's predicate semantics and exact ranges for the query engine.

Reads the top-level header eagerly (about 40 bytes), the dictionary's chunk headers, key blocks and the
bit slices only when a predicate needs them, and keeps what it decoded. Results are BitMap64 row
positions. The Paimon-named methods (eq, lt, ..., topk) reproduce `RangeBitmap`'s answers, including its
min/max short-cuts (spec 2.5); `range`/`count_range` give exact positive matches for arbitrary bounds.
"""
from __future__ import annotations

import struct
import threading
from collections.abc import Iterable

from pyroaring import BitMap64

from index_format.errors import CorruptFileError, TruncatedFileError, UnsupportedVersionError
from index_format.layout import BE_I32, RANGE_BITMAP_TOP
from index_format.range_bitmap.bsi import PLANES_MIN_FILL, BitSliceIndex, first_n
from index_format.range_bitmap.chunked_dictionary import ChunkedDictionary
from index_format.range_bitmap.range_keys import (
    WIDTH, Rep, check_supported, decode_key, exact_rep, java_rep, rep_of_bytes,
)
from index_format.storage import BytesSource, RangeSource
from index_format.types import KeyType

VERSION = 1


class RangeBitmapReader:
    """One range-bitmap payload. Thread-safe: concurrent queries share the decoded caches."""

    def __init__(self, source: RangeSource | bytes | bytearray | memoryview, kt: KeyType, *,
                 planes: bool = True) -> None:
        """`planes`: let the bit-slice index keep dense word planes and code counts beside its slices (faster
        ranges on random-order rows, up to memory_bound(planes=True) bytes); False keeps roaring slices only."""
        check_supported(kt)
        self.planes = planes
        if isinstance(source, (bytes, bytearray, memoryview)):
            source = BytesSource(source, name="<range-bitmap bytes>")
        self._source = source
        self._kt = kt
        self._lock = threading.Lock()
        name = source.name
        block = "range-bitmap header"
        if source.size < 4:
            raise TruncatedFileError(f"payload of {source.size} bytes has no header", path=name, block=block)
        hl = BE_I32.unpack(self._read(0, 4, block))[0]
        if hl < 13:
            raise CorruptFileError(f"header length {hl}", path=name, block=block)
        if 4 + hl > source.size:
            raise TruncatedFileError(f"header of {hl} bytes does not fit a payload of {source.size} bytes",
                                     path=name, block=block)
        head = self._read(4, hl, block)
        version, rows, card = RANGE_BITMAP_TOP.unpack_from(head)
        if version > VERSION:
            raise UnsupportedVersionError(f"range-bitmap version {version} (this library reads 1)",
                                          path=name, block=block)
        if rows < 0 or card < 0 or card > rows:
            raise CorruptFileError(f"{rows} rows and {card} distinct values", path=name, block=block)
        pos = 9
        self._min_bytes = self._max_bytes = b""
        try:
            if card > 0:
                self._min_bytes, pos = self._key_at(head, pos)
                self._max_bytes, pos = self._key_at(head, pos)
            dict_len = BE_I32.unpack_from(head, pos)[0]
        except struct.error:
            raise CorruptFileError("header ends inside a key or the dictionary length", path=name,
                                   block=block) from None
        if pos + 4 != hl:
            raise CorruptFileError(f"header is {hl} bytes but its fields take {pos + 4}", path=name, block=block)
        self._dict_at = 4 + hl
        if dict_len < 17:
            raise CorruptFileError(f"dictionary length {dict_len}", path=name, block=block)
        if self._dict_at + dict_len > source.size:
            raise TruncatedFileError(f"dictionary of {dict_len} bytes runs past the end of the payload",
                                     path=name, block=block)
        self._dict_len = dict_len
        self._bsi_at = self._dict_at + dict_len
        self.row_count: int = rows
        self.cardinality: int = card
        if card > 0:
            self._min_rep = rep_of_bytes(kt, self._min_bytes)
            self._max_rep = rep_of_bytes(kt, self._max_bytes)
            if self._max_rep < self._min_rep:
                raise CorruptFileError("max key is below min key", path=name, block=block)
        self._dictionary: ChunkedDictionary | None = None
        self._bsi: BitSliceIndex | None = None

    # ------------------------------------------------------------ plumbing
    def _read(self, offset: int, length: int, block: str) -> bytes:
        try:
            return self._source.read(offset, length)
        except TruncatedFileError as exc:
            raise TruncatedFileError(exc.reason, path=self._source.name, block=block, offset=offset) from None

    def _key_at(self, buf: bytes, pos: int) -> tuple[bytes, int]:
        width = WIDTH.get(self._kt.name)
        if width is None:
            n = BE_I32.unpack_from(buf, pos)[0]
            if n < 0:
                raise struct.error("negative key length")
            width = 4 + n
        if pos + width > len(buf):
            raise struct.error("key past the header")
        return buf[pos:pos + width], pos + width

    def _dict(self) -> ChunkedDictionary:
        d = self._dictionary
        if d is None:
            with self._lock:
                if self._dictionary is None:
                    self._dictionary = ChunkedDictionary(self._source, self._kt, self._dict_at, self._dict_len)
                d = self._dictionary
        return d

    def _slices(self) -> BitSliceIndex:
        b = self._bsi
        if b is None:
            with self._lock:
                if self._bsi is None:
                    self._bsi = BitSliceIndex(self._source, self._bsi_at, self._source.size, planes=self.planes)
                b = self._bsi
        return b

    # ------------------------------------------------------------ facts
    @property
    def min(self) -> object:
        """Smallest key (canonical value), None when every row is null."""
        return decode_key(self._kt, self._min_bytes) if self.cardinality else None

    @property
    def max(self) -> object:
        return decode_key(self._kt, self._max_bytes) if self.cardinality else None

    @property
    def chunk_count(self) -> int:
        return self._dict().chunk_count

    @property
    def slice_count(self) -> int:
        return self._slices().slice_count

    @property
    def nbytes_cached(self) -> int:
        """Approximate bytes held decoded (dictionary regions and blocks, bitmaps' serialized sizes)."""
        n = 0
        if self._dictionary is not None:
            n += self._dictionary.nbytes_cached
        if self._bsi is not None:
            n += self._bsi.nbytes_cached
        return n

    def _all_rows(self) -> BitMap64:
        bm = BitMap64()
        if self.row_count:
            bm.add_range(0, self.row_count)
        return bm

    def _not(self, bm: BitMap64) -> BitMap64:
        """flip over [0, rowCount) AND EBM: the non-null rows outside `bm`."""
        out = self._slices().ebm_copy()
        out -= bm
        return out

    # ------------------------------------------------------------ Paimon semantics
    def is_not_null(self) -> BitMap64:
        if self.cardinality <= 0:
            return BitMap64()
        return self._slices().ebm_copy()

    def is_null(self) -> BitMap64:
        if self.cardinality <= 0:
            return self._all_rows()
        out = self._all_rows()
        out -= self._slices().ebm()
        return out

    non_null_rows = is_not_null
    null_rows = is_null

    def _cmp(self, rep: Rep) -> tuple[int, int]:
        lo, hi = self._min_rep, self._max_rep
        return (rep > lo) - (rep < lo), (rep > hi) - (rep < hi)

    def eq(self, value: object) -> BitMap64:
        if self.cardinality <= 0:
            return BitMap64()
        return self._eq_rep(java_rep(self._kt, value))

    def _eq_rep(self, rep: Rep) -> BitMap64:
        cmin, cmax = self._cmp(rep)
        if cmin == 0 and cmax == 0:
            return self.is_not_null()
        if cmin < 0 or cmax > 0:
            return BitMap64()
        code = self._dict().find(rep)
        if code < 0:
            return BitMap64()
        return self._slices().eq(code)

    def not_eq(self, value: object) -> BitMap64:
        if self.cardinality <= 0:
            return BitMap64()
        return self._not(self.eq(value))

    def isin(self, values: Iterable[object]) -> BitMap64:
        if self.cardinality <= 0:
            return BitMap64()
        out = BitMap64()
        for v in values:
            out |= self.eq(v)
        return out

    def not_in(self, values: Iterable[object]) -> BitMap64:
        if self.cardinality <= 0:
            return BitMap64()
        return self._not(self.isin(values))

    def _gte_rep(self, rep: Rep) -> BitMap64:
        cmin, cmax = self._cmp(rep)
        if cmin <= 0:
            return self.is_not_null()
        if cmax > 0:
            return BitMap64()
        code = self._dict().find(rep)
        return self._slices().gt((-code - 1 if code < 0 else code) - 1)

    def _gt_rep(self, rep: Rep) -> BitMap64:
        cmin, cmax = self._cmp(rep)
        if cmin < 0:
            return self.is_not_null()
        if cmax >= 0:
            return BitMap64()
        code = self._dict().find(rep)
        return self._slices().gt(-code - 2 if code < 0 else code)

    def ge(self, value: object) -> BitMap64:
        if self.cardinality <= 0:
            return BitMap64()
        return self._gte_rep(java_rep(self._kt, value))

    def gt(self, value: object) -> BitMap64:
        if self.cardinality <= 0:
            return BitMap64()
        return self._gt_rep(java_rep(self._kt, value))

    def le(self, value: object) -> BitMap64:
        if self.cardinality <= 0:
            return BitMap64()
        rep = java_rep(self._kt, value)
        cmin, cmax = self._cmp(rep)
        if cmax >= 0:
            return self.is_not_null()
        if cmin < 0:
            return BitMap64()
        return self._not(self._gt_rep(rep))

    def lt(self, value: object) -> BitMap64:
        if self.cardinality <= 0:
            return BitMap64()
        rep = java_rep(self._kt, value)
        cmin, cmax = self._cmp(rep)
        if cmax > 0:
            return self.is_not_null()
        if cmin <= 0:
            return BitMap64()
        return self._not(self._gte_rep(rep))

    def between(self, low: object, high: object) -> BitMap64:
        """Paimon's BETWEEN: gte(low) AND lte(high)."""
        out = self.ge(low)
        out &= self.le(high)
        return out

    def _fill_nulls(self, k: int, nulls_first: bool, found: BitMap64 | None, strict: bool,
                    largest: bool) -> BitMap64:
        if self.cardinality <= 0:
            return self._all_rows()
        bsi = self._slices()
        if not nulls_first:
            out = bsi.top_k(k, found, strict, largest=largest)
            have = len(out)
            if have >= k:
                return out
            nulls = self._nulls_in(found)
            out |= first_n(nulls, k - have) if strict else nulls
            return out
        out = self._nulls_in(found)
        have = len(out)
        if have >= k:
            return first_n(out, k) if strict else out
        out |= bsi.top_k(k - have, found, strict, largest=largest)
        return out

    def _nulls_in(self, found: BitMap64 | None) -> BitMap64:
        if found is not None and not found:
            return BitMap64()
        out = self.is_null()
        if found is not None:
            out &= found
        return out

    def topk(self, k: int, *, nulls_first: bool, strict: bool, found: BitMap64 | None = None) -> BitMap64:
        """Rows of the k largest values (ORDER BY col DESC LIMIT k) as Paimon's `RangeBitmap.topK`."""
        return self._fill_nulls(k, nulls_first, found, strict, largest=True)

    def bottomk(self, k: int, *, nulls_first: bool, strict: bool, found: BitMap64 | None = None) -> BitMap64:
        """Rows of the k smallest values (ORDER BY col ASC LIMIT k) as Paimon's `RangeBitmap.bottomK`."""
        return self._fill_nulls(k, nulls_first, found, strict, largest=False)

    def get(self, row: int) -> object:
        """Value at a row position, None for null or out of range (Paimon's `get`)."""
        if self.cardinality <= 0 or not 0 <= row < self.row_count:
            return None
        code = self._slices().code_of_row(row)
        if code is None:
            return None
        return self.value_of_code(code)

    def value_of_code(self, code: int) -> object:
        rep = self._dict().rep_of_code(code)
        if self._kt.name == "string":
            return bytes(rep).decode("utf-8", "surrogateescape")
        return decode_key(self._kt, _bytes_of_rep(self._kt, rep))

    # ------------------------------------------------------------ exact ranges for the query engine
    def _code_bounds(self, low: object, high: object, low_inclusive: bool,
                     high_inclusive: bool) -> tuple[int, int] | None:
        """First and last code inside the bounds, None when no key can be inside."""
        card = self.cardinality
        if card <= 0:
            return None
        first, last = 0, card - 1
        if low is not None:
            rep = exact_rep(self._kt, low)
            if rep > self._max_rep or (rep == self._max_rep and not low_inclusive):
                return None
            if rep > self._min_rep or (rep == self._min_rep and not low_inclusive):
                code, exact = self._dict().locate(rep)
                first = code + 1 if exact and not low_inclusive else code
        if high is not None:
            rep = exact_rep(self._kt, high)
            if rep < self._min_rep or (rep == self._min_rep and not high_inclusive):
                return None
            if rep < self._max_rep or (rep == self._max_rep and not high_inclusive):
                code, exact = self._dict().locate(rep)
                last = code if exact and high_inclusive else code - 1
        if first > last:
            return None
        return first, last

    def range(self, low: object = None, high: object = None, *, low_inclusive: bool = True,
              high_inclusive: bool = True) -> BitMap64:
        """Non-null rows whose value lies within the bounds (None = unbounded); exact, Java key order."""
        bounds = self._code_bounds(low, high, low_inclusive, high_inclusive)
        if bounds is None:
            return BitMap64()
        first, last = bounds
        bsi = self._slices()
        if last == self.cardinality - 1:
            return bsi.gt(first - 1)
        return bsi.between(first, last)

    def count_range(self, low: object = None, high: object = None, *, low_inclusive: bool = True,
                    high_inclusive: bool = True) -> int:
        """len(range(...)) without building the final bitmaps."""
        bounds = self._code_bounds(low, high, low_inclusive, high_inclusive)
        if bounds is None:
            return 0
        first, last = bounds
        bsi = self._slices()
        if last == self.cardinality - 1:
            return bsi.gt_count(first - 1)
        return bsi.between_count(first, last)

    def memory_bound(self, *, planes: bool) -> int:
        """Bytes this reader may hold once every part is decoded: about the payload (dictionary blocks, roaring
        slices), plus with planes their words and the cumulative code counts (bsi.py)."""
        n = 4096 + self._source.size * 3 // 2
        if planes:
            n += int((self._source.size - self._bsi_at) / PLANES_MIN_FILL) + 8 * (self.cardinality + 1)
        return n

    def non_null_count(self) -> int:
        return 0 if self.cardinality <= 0 else len(self._slices().ebm())

    def count_keys(self, values: Iterable[object]) -> int | None:
        """len(isin(values)) from the cumulative code counts (BitSliceIndex.code_counts); None while they are
        not built (or never will be: no planes), so the caller counts rows instead."""
        if self.cardinality <= 0:
            return 0
        cum = self._slices().code_counts()
        if cum is None:
            return None
        codes = set()
        for v in values:
            rep = java_rep(self._kt, v)
            cmin, cmax = self._cmp(rep)
            if cmin < 0 or cmax > 0:
                continue
            code = 0 if cmin == 0 and cmax == 0 else self._dict().find(rep)   # min == max: one key, code 0
            if code >= 0:
                codes.add(code)
        top = len(cum) - 1
        return sum(int(cum[min(c + 1, top)] - cum[min(c, top)]) for c in codes)


def _bytes_of_rep(kt: KeyType, rep: int) -> bytes:
    """Inverse of rep_of_bytes for fixed-width keys."""
    width = WIDTH[kt.name]
    if kt.name == "double":
        rep = rep ^ 0x7FFFFFFFFFFFFFFF if rep < 0 else rep
    elif kt.name == "float":
        rep = rep ^ 0x7FFFFFFF if rep < 0 else rep
    return rep.to_bytes(width, "big", signed=True)
