"""The index family table: names as Paimon spells them, the reader and writer each family plugs in, and the
leaf operators it answers (a leaf outside them is declined, so the engine scans, never answered wrongly)."""
from __future__ import annotations

import pytest
from pyroaring import BitMap64

from index_format.errors import InvalidOptionError
from index_format.families import BITMAP, BUILT_NAMES, FAMILIES, built_family, family
from index_format.global_index.filemeta import parse_meta
from index_format.global_index.reader import open_index
from index_format.global_index.writer import write_index_bytes, write_index_files
from index_format.predicate.answer import ColumnIndex, IndexFileRef, answer_over_files
from index_format.predicate.bind import bind
from index_format.predicate.sql import parse_where
from index_format.storage import BytesSource
from index_format.types import parse_type

S = parse_type("string")
VALUES = ["b", None, "a", "c", "b", "a", None, "d"]


def test_names_are_paimons_and_lookups_ignore_case_and_blanks() -> None:
    assert family(" Bitmap ") is BITMAP and FAMILIES["bitmap"] is BITMAP
    assert built_family("BITMAP") is BITMAP and "bitmap" in BUILT_NAMES
    assert BITMAP.open_reader is open_index and BITMAP.write_files is write_index_files


@pytest.mark.parametrize("name", ["", "bloom", "bitmap2", None])
def test_an_unknown_family_is_named_in_the_error(name: object) -> None:
    with pytest.raises(InvalidOptionError, match="index_type") as got:
        family(name)  # type: ignore[arg-type]
    assert repr(name) in str(got.value) and "'bitmap'" in str(got.value)
    with pytest.raises(InvalidOptionError, match="builds only 'bitmap'"):
        built_family(name)  # type: ignore[arg-type]


def _column(answers: frozenset[str] | None) -> ColumnIndex:
    data, written = write_index_bytes(VALUES, list(range(len(VALUES))), S)
    ref = IndexFileRef("f", 0, len(VALUES) - 1, parse_meta(S, written.meta), len(data),
                       lambda: BITMAP.open_reader(BytesSource(data), S))
    return ColumnIndex("s", S, [ref], answers=answers)


def _truth(test: object) -> BitMap64:
    return BitMap64(i for i, v in enumerate(VALUES) if v is not None and test(v))  # type: ignore[operator]


def _ask(text: str, index: ColumnIndex, count: bool) -> tuple[bool, bool, int, dict[str, object]]:
    """(supported, exact, number of TRUE rows, explain); `count` takes the count-only path."""
    got = answer_over_files(bind(parse_where(text), {"s": S}), {"s": index}, count_only=count,
                            with_unknown=not count, explain=not count)
    n = got.count if got.count is not None else len(got.rows)
    return got.supported, got.exact, n, got.explain


@pytest.mark.parametrize("count", [False, True])
def test_a_leaf_outside_the_familys_operators_is_declined_not_answered(count: bool) -> None:
    narrow = _column(frozenset({"eq", "in"}))
    assert _ask("s = 'b'", narrow, count)[:3] == (True, True, len(_truth(lambda v: v == "b")))
    supported, exact, n, explain = _ask("s > 'a'", narrow, count)
    assert (supported, exact, n) == (False, False, 0)
    if not count:
        assert "the bitmap index of 's' does not answer gt" in explain["unsupported"]  # type: ignore[operator]
    # The same files with every operator (None) answer the range exactly.
    assert _ask("s > 'a'", _column(None), count)[:3] == (True, True, len(_truth(lambda v: v > "a")))
