"""The range-bitmap payload as a file index: index_format.range_bitmap (the one implementation, shared with
the range sidecars) behind the PayloadReader interface, with Java's RangeBitmapFileIndex.Reader answers.

Every predicate Java's reader overrides returns rows (an empty bitmap rather than SKIP). A NULL literal
has no answer in Java (its converter is not null-safe), so it is REMAIN here: cannot prune.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

from pyroaring import BitMap, BitMap64

from index_format.errors import InvalidOptionError
from index_format.file_index.payload_reader import PayloadReader
from index_format.file_index.result import REMAIN, FileIndexResult, Rows
from index_format.range_bitmap import RangeBitmapReader, write_range_bitmap
from index_format.range_bitmap.range_keys import check_supported
from index_format.storage import BytesSource
from index_format.types import KeyType

__all__ = ["RangeBitmapPayloadReader", "write_range_bitmap_payload"]

_OPTIONS = ("chunk-size",)


def write_range_bitmap_payload(kt: KeyType, values: object, options: Mapping[str, str]) -> bytes:
    unknown = sorted(set(options) - set(_OPTIONS))
    if unknown:
        raise InvalidOptionError(f"range-bitmap has no option {unknown[0]!r}; options: {', '.join(_OPTIONS)}")
    try:
        return write_range_bitmap(kt, values, chunk_size=options.get("chunk-size"))
    except ValueError as exc:
        raise InvalidOptionError(f"range-bitmap chunk-size {options.get('chunk-size')!r}: {exc}") from None


_ONE_BUCKET = (1).to_bytes(8, "little") + (0).to_bytes(4, "little")


def _rows(bm: BitMap64) -> Rows:
    # Positions of one data file are < 2^31: the 64-bit portable form is then one bucket (high key 0)
    # around the 32-bit portable bytes, so converting is a slice, not a per-row copy.
    if not bm:
        return Rows(BitMap())
    return Rows(BitMap.deserialize(bm.serialize()[len(_ONE_BUCKET):]))


def _to64(bm: BitMap) -> BitMap64:
    return BitMap64.deserialize(_ONE_BUCKET + bm.serialize()) if bm else BitMap64()


class RangeBitmapPayloadReader(PayloadReader):
    index_type = "range-bitmap"

    def __init__(self, data: bytes | memoryview, kt: KeyType, *, path: str | None = None) -> None:
        check_supported(kt)
        self.kt = kt
        self.path = path
        self.reader = RangeBitmapReader(BytesSource(bytes(data), name=path or "range-bitmap payload"), kt)

    def eq(self, value: object) -> FileIndexResult:
        return REMAIN if value is None else _rows(self.reader.eq(value))

    def ne(self, value: object) -> FileIndexResult:
        return REMAIN if value is None else _rows(self.reader.not_eq(value))

    def lt(self, value: object) -> FileIndexResult:
        return REMAIN if value is None else _rows(self.reader.lt(value))

    def le(self, value: object) -> FileIndexResult:
        return REMAIN if value is None else _rows(self.reader.le(value))

    def gt(self, value: object) -> FileIndexResult:
        return REMAIN if value is None else _rows(self.reader.gt(value))

    def ge(self, value: object) -> FileIndexResult:
        return REMAIN if value is None else _rows(self.reader.ge(value))

    def between(self, low: object, high: object) -> FileIndexResult:
        if low is None or high is None:
            return REMAIN
        return _rows(self.reader.between(low, high))

    def isin(self, values: Sequence[object]) -> FileIndexResult:
        return REMAIN if any(v is None for v in values) else _rows(self.reader.isin(values))

    def not_in(self, values: Sequence[object]) -> FileIndexResult:
        return REMAIN if any(v is None for v in values) else _rows(self.reader.not_in(values))

    def is_null(self) -> FileIndexResult:
        return _rows(self.reader.is_null())

    def is_not_null(self) -> FileIndexResult:
        return _rows(self.reader.is_not_null())

    def top_n(self, k: int, *, descending: bool, nulls_first: bool, strict: bool,
              found: FileIndexResult = REMAIN) -> FileIndexResult:
        found64 = _to64(found.bitmap) if isinstance(found, Rows) else None
        pick = self.reader.topk if descending else self.reader.bottomk
        return _rows(pick(k, nulls_first=nulls_first, strict=strict, found=found64))

    def describe(self) -> dict[str, object]:
        from index_format.literals import to_json
        r = self.reader
        return {**super().describe(), "row_count": r.row_count, "cardinality": r.cardinality,
                "null_count": len(r.is_null()), "min": to_json(self.kt, r.min) if r.min is not None else None,
                "max": to_json(self.kt, r.max) if r.max is not None else None, "chunks": r.chunk_count,
                "slices": r.slice_count}
