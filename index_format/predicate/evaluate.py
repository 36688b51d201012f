"""One bound leaf × one file reader → rows in LOCAL ids of that file (spec §2.10, §5.4, §6).

UNSUPPORTED is a value, never an exception. Budgets are applied by combine.py (they need file sizes).
Imports the reader only for typing; never the writer.
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from pyroaring import BitMap64

from index_format import keys
from index_format.predicate.tree import BoundLeaf

if TYPE_CHECKING:
    from index_format.global_index.reader import IndexReader


class Unsupported:
    """The index declines to answer (type, NULL bound or budget); the engine must scan instead."""

    _instance: Unsupported | None = None

    def __new__(cls) -> Unsupported:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNSUPPORTED"

    def __reduce__(self) -> tuple[type, tuple[()]]:
        return (Unsupported, ())


UNSUPPORTED: Final = Unsupported()


@dataclass(frozen=True, slots=True)
class FileAnswer:
    """Local row ids of one file where the leaf is TRUE, and where it is UNKNOWN (null rows; for an
    IN/NOT IN list holding NULL, every row that is not FALSE)."""

    true_rows: BitMap64
    null_rows: BitMap64


# Complement operators are answered as "rows − nulls − positive" (spec §5.4).
POSITIVE: dict[str, str] = {"ne": "eq", "not_in": "in", "is_not_null": "is_null"}


def positive_op(op: str) -> str:
    """The operator whose matches a complement operator subtracts (itself for the others)."""
    return POSITIVE.get(op, op)


@functools.lru_cache(maxsize=256)
def _compiled(regex: str) -> re.Pattern[str]:
    return re.compile(regex)


def matching_rows(leaf: BoundLeaf, reader: IndexReader, values: tuple[object, ...] | None = None) -> BitMap64:
    """Local rows where the POSITIVE form of `leaf` is TRUE (for `ne` the rows equal to the value, …).

    `values` optionally narrows an IN list to the literals inside this file's key bounds.
    Must not be called for unsupported or constant leaves.
    """
    op = positive_op(leaf.op)
    if op == "eq":
        return reader.eq(leaf.value)
    if op == "in":
        return reader.isin(leaf.values if values is None else values)
    if op == "is_null":
        return reader.null_rows()
    if op in ("lt", "le"):
        return reader.range(None, leaf.value, high_inclusive=op == "le")
    if op in ("gt", "ge"):
        return reader.range(leaf.value, None, low_inclusive=op == "ge")
    if op == "between":
        if keys.sort_key(leaf.kt, leaf.low) > keys.sort_key(leaf.kt, leaf.high):  # type: ignore[operator]
            return BitMap64()  # spec §5.5: low > high → empty
        return reader.range(leaf.low, leaf.high)
    if op == "not_between":
        below = reader.range(None, leaf.low, high_inclusive=False)
        return below | reader.range(leaf.high, None, low_inclusive=False)
    if op in ("starts_with", "ends_with", "contains") and leaf.value == "":
        return reader.non_null_rows()  # spec §5.5: empty literal → every non-null row
    if op == "starts_with":
        return reader.starts_with(str(leaf.value))
    if op == "ends_with":
        suffix = str(leaf.value).encode("utf-8")
        return reader.scan_bytes(lambda b: bytes(b).endswith(suffix))
    if op == "contains":
        needle = str(leaf.value).encode("utf-8")
        return reader.scan_bytes(lambda b: needle in bytes(b))
    if op == "like":
        matcher = _compiled(str(leaf.regex)).match
        return reader.scan(lambda v: isinstance(v, str) and matcher(v) is not None)
    raise ValueError(f"no per-file evaluation for {leaf!r}")


def evaluate_file(leaf: BoundLeaf, reader: IndexReader) -> FileAnswer | Unsupported:
    """Answer one leaf on one file, complements computed within the file (pypaimon rule, spec §5.4).

    Budgets are not applied here (combine.py knows the file sizes); `unsupported` leaves give UNSUPPORTED.
    """
    if leaf.unsupported is not None:
        return UNSUPPORTED
    nulls = reader.null_rows()
    if leaf.op == "always_true":
        return FileAnswer(nulls | reader.non_null_rows(), BitMap64())
    if leaf.op == "always_false":
        return FileAnswer(BitMap64(), BitMap64())
    if leaf.op == "always_unknown":
        return FileAnswer(BitMap64(), nulls | reader.non_null_rows())
    if leaf.op == "is_null":
        return FileAnswer(BitMap64(nulls), BitMap64())
    if leaf.op == "is_not_null":
        return FileAnswer(reader.non_null_rows(), BitMap64())
    matches = matching_rows(leaf, reader)
    if leaf.null_in_list:
        every = nulls | reader.non_null_rows()
        if leaf.op == "in":
            return FileAnswer(matches, every - matches)
        return FileAnswer(BitMap64(), every - matches)  # NOT IN (…, NULL): never TRUE (spec §5.5)
    if leaf.op in POSITIVE:
        return FileAnswer(reader.non_null_rows() - matches, BitMap64(nulls))
    return FileAnswer(matches, BitMap64(nulls))
