"""A file index's answer to a predicate, with Java's FileIndexResult algebra.

REMAIN: cannot prune (the rows may match) · SKIP: no row matches · Rows(bitmap): at most these positions.
The algebra is Java's, not set logic: REMAIN.and(x) = x, x.and(REMAIN) = x, SKIP absorbs AND, REMAIN
absorbs OR, and an empty Rows "does not remain" (it skips the file) while still being a bitmap.
"""
from __future__ import annotations

from pyroaring import BitMap


class FileIndexResult:
    """Base of the three answers; instances are immutable."""

    __slots__ = ()

    def remain(self) -> bool:
        raise NotImplementedError

    def and_(self, other: FileIndexResult) -> FileIndexResult:
        return self if other.remain() else SKIP

    def or_(self, other: FileIndexResult) -> FileIndexResult:
        return REMAIN if other.remain() else self

    def to_json(self) -> dict[str, object]:
        raise NotImplementedError


class _Remain(FileIndexResult):
    __slots__ = ()

    def remain(self) -> bool:
        return True

    def and_(self, other: FileIndexResult) -> FileIndexResult:
        return other

    def or_(self, other: FileIndexResult) -> FileIndexResult:
        return self

    def to_json(self) -> dict[str, object]:
        return {"remain": True}

    def __repr__(self) -> str:
        return "REMAIN"


class _Skip(FileIndexResult):
    __slots__ = ()

    def remain(self) -> bool:
        return False

    def and_(self, other: FileIndexResult) -> FileIndexResult:
        return self

    def or_(self, other: FileIndexResult) -> FileIndexResult:
        return other

    def to_json(self) -> dict[str, object]:
        return {"skip": True}

    def __repr__(self) -> str:
        return "SKIP"


REMAIN: FileIndexResult = _Remain()
SKIP: FileIndexResult = _Skip()


class Rows(FileIndexResult):
    """At most these row positions (Java's BitmapIndexResult over a RoaringBitmap32)."""

    __slots__ = ("bitmap",)

    def __init__(self, bitmap: BitMap) -> None:
        self.bitmap = bitmap

    def remain(self) -> bool:
        return bool(self.bitmap)

    def and_(self, other: FileIndexResult) -> FileIndexResult:
        if isinstance(other, Rows):
            return Rows(self.bitmap & other.bitmap)
        return super().and_(other)

    def or_(self, other: FileIndexResult) -> FileIndexResult:
        if isinstance(other, Rows):
            return Rows(self.bitmap | other.bitmap)
        return super().or_(other)

    def to_json(self) -> dict[str, object]:
        return {"rows": list(self.bitmap)}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Rows) and self.bitmap == other.bitmap

    def __hash__(self) -> int:
        return hash(tuple(self.bitmap))

    def __repr__(self) -> str:
        return f"Rows({len(self.bitmap)} rows)"


def all_rows(row_count: int) -> BitMap:
    """Positions [0, row_count) — what Java's complements flip over."""
    bm = BitMap()
    if row_count > 0:
        bm.add_range(0, row_count)
    return bm
