"""Wire shaping helpers against plain Python: run extraction (incl. runs longer than the numpy window),
id paging, per-file matches, cursors; and the byte-budgeted reader LRU."""
from __future__ import annotations

import random

import pytest
from pyroaring import BitMap64

from index_format.lru import ByteLRU
from service.query.query_errors import InvalidCursorError, SnapshotChangedError
from service.query.results import Cursor, file_matches, page_ids, page_runs
from service.catalog.model import DataFile
from tests.api.helpers import python_runs


@pytest.mark.parametrize("seed", range(6))
def test_page_runs_matches_python(seed: int) -> None:
    rnd = random.Random(seed)
    ids: set[int] = set()
    pos = rnd.randint(0, 10)
    for _ in range(rnd.randint(1, 40)):
        length = rnd.choice([1, 2, 5, 70_000, 200_000]) if rnd.random() < 0.3 else rnd.randint(1, 9)
        ids.update(range(pos, pos + length))
        pos += length + rnd.randint(1, 5)
    rows = BitMap64(sorted(ids))
    want = python_runs(sorted(ids))
    got: list[list[int]] = []
    after = -1
    limit = rnd.randint(1, 7)
    while True:
        runs, last = page_runs(rows, after, limit)
        assert len(runs) <= limit
        got.extend(runs)
        if last is None:
            break
        after = last
    assert got == want


def test_page_ids_and_files() -> None:
    rows = BitMap64([1, 2, 5, 9, 10, 11, 30])
    assert page_ids(rows, -1, 3) == ([1, 2, 5], 5)
    assert page_ids(rows, 5, 3) == ([9, 10, 11], 11)
    assert page_ids(rows, 11, 3) == ([30], None)
    assert page_ids(BitMap64(), -1, 3) == ([], None)
    files = [DataFile("a", 1, 0.0, 10, 0), DataFile("b", 1, 0.0, 10, 10), DataFile("c", 1, 0.0, 20, 20)]
    # a page lists only the files holding its rows, each with the page's matches in it
    out = file_matches(files, [9, 10, 11])
    assert [(f["path"], f["matches"], f["positions"]) for f in out] == [("a", 1, [9]), ("b", 2, [0, 1])]
    assert file_matches(files, []) == []


def test_cursor_round_trip_and_checks() -> None:
    c = Cursor(after=41, snapshots={"a": 3}, query="q1")
    back = Cursor.decode(c.encode())
    assert back == c
    back.check({"a": 3}, "q1")
    with pytest.raises(SnapshotChangedError):
        back.check({"a": 4}, "q1")
    with pytest.raises(InvalidCursorError):
        back.check({"a": 3}, "q2")
    for bad in ("", "abc", "!!!", "eyJhIjoiMSJ9"):
        with pytest.raises(InvalidCursorError):
            Cursor.decode(bad)


def test_byte_lru_evicts_by_bytes_and_reports_hits() -> None:
    lookups: list[bool] = []
    lru: ByteLRU[str] = ByteLRU(100, sizeof=len, on_lookup=lookups.append)
    assert lru.get_or_load(("a", 1), lambda: "x" * 60) == "x" * 60
    assert lru.get_or_load(("a", 1), lambda: "never") == "x" * 60
    lru.get_or_load(("b", 1), lambda: "y" * 50)  # 110 bytes > 100: evicts a
    assert lru.bytes == 50 and len(lru) == 1
    assert lru.get_or_load(("a", 1), lambda: "z") == "z"  # reloaded: a new file (path, size) key
    lru.get_or_load(("c", 1), lambda: "w" * 500)  # larger than the budget: returned, not kept
    assert ("c", 1) not in lru._entries
    assert lookups == [False, True, False, False, False]
    lru.discard_prefix("b")
    assert len(lru) == 1
