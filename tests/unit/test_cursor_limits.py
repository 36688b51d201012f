"""Paging cursors at the edges (issue 10 item 3): out-of-range numbers and oversized text are 400
invalid_cursor, and paging near the top of the uint64 id space does not overflow."""
from __future__ import annotations

import base64
import json

import pytest
from pyroaring import BitMap64

from service.query.query_errors import InvalidCursorError
from service.query.results import Cursor, page_ids, page_runs

TOP = (1 << 64) - 1


def raw_cursor(obj: object) -> str:
    return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")


@pytest.mark.parametrize("after", [TOP + 1, 1 << 200, -2, True, 1.5, "1", None])
def test_after_outside_the_row_id_range_is_invalid(after: object) -> None:
    with pytest.raises(InvalidCursorError):
        Cursor.decode(raw_cursor({"a": after, "s": {}, "q": "x"}))


@pytest.mark.parametrize("snapshot", [1 << 63, -(1 << 63) - 1, 1 << 100, True, 1.0])
def test_snapshot_outside_int64_is_invalid(snapshot: object) -> None:
    with pytest.raises(InvalidCursorError):
        Cursor.decode(raw_cursor({"a": 1, "s": {"t": snapshot}, "q": "x"}))


def test_edges_that_are_valid_round_trip() -> None:
    for after, snap in ((-1, 0), (TOP, (1 << 63) - 1), (0, -(1 << 63))):
        c = Cursor(after, {"t": snap}, "q")
        assert Cursor.decode(c.encode()) == c


def test_oversized_and_garbage_cursors_are_invalid() -> None:
    with pytest.raises(InvalidCursorError):
        Cursor.decode(raw_cursor({"a": 1, "s": {}, "q": "x" * 5000}))
    with pytest.raises(InvalidCursorError):
        Cursor.decode(raw_cursor({"a": int("9" * 3000), "s": {}, "q": "x"})[:4096])
    with pytest.raises(InvalidCursorError):
        Cursor.decode(base64.urlsafe_b64encode(b"[" * 3000).decode())
    with pytest.raises(InvalidCursorError):
        Cursor.decode("\ud800")


def test_paging_at_the_top_of_the_id_space() -> None:
    rows = BitMap64([0, 1, 2, TOP - 2, TOP - 1, TOP])
    assert page_ids(rows, TOP, 10) == ([], None)
    assert page_ids(rows, TOP - 3, 2) == ([TOP - 2, TOP - 1], TOP - 1)
    assert page_runs(rows, -1, 10) == ([[0, 2], [TOP - 2, TOP]], None)
    assert page_runs(rows, -1, 1) == ([[0, 2]], 2)
    assert page_runs(rows, 2, 5) == ([[TOP - 2, TOP]], None)
    run = BitMap64()
    run.add_range(TOP - 100_000, TOP)
    run.add(TOP)
    assert page_runs(run, -1, 3) == ([[TOP - 100_000, TOP]], None)
