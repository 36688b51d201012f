"""Row ids and range planning: partition specs, uncovered ranges, row_id_column checks."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from service.tables.files.rowids import (
    RowRange, check_new_ids, check_row_id_column, parse_partitions, ranges_of_ids,
    select_files, uncovered_ranges,
)
from index_format.errors import InvalidOptionError
from service.catalog import DataFile, RowIdError, Table
from service.catalog.model import Snapshot, SourceFile


def _f(path: str, first: int, rows: int, **part: str) -> DataFile:
    return DataFile(path, 1, 0.0, rows, first, dict(part))


def test_parse_partitions_like_paimon() -> None:
    assert parse_partitions("dt=2026-06-18,hh=0;dt=2026-06-19,hh=1") == [
        {"dt": "2026-06-18", "hh": "0"}, {"dt": "2026-06-19", "hh": "1"}]
    assert parse_partitions(None) == [] and parse_partitions("") == []
    with pytest.raises(InvalidOptionError, match="not key=value"):
        parse_partitions("dt")


def test_select_files_by_partition() -> None:
    t = Table("t", "/x", partition_columns=["dt"])
    files = [_f("a", 0, 5, dt="1"), _f("b", 5, 5, dt="2")]
    assert [f.path for f in select_files(files, t, [{"dt": "2"}])] == ["b"]
    with pytest.raises(InvalidOptionError, match="not partition columns"):
        select_files(files, t, [{"hh": "1"}])
    with pytest.raises(InvalidOptionError, match="not partitioned"):
        select_files(files, Table("u", "/x"), [{"dt": "1"}])


def test_uncovered_ranges_cut_per_partition_and_skip_covered() -> None:
    files = [_f("a", 0, 700, dt="1"), _f("b", 700, 600, dt="1"), _f("c", 1300, 500, dt="2"),
             _f("d", 1800, 0, dt="2"), _f("e", 1800, 250, dt="1")]
    got = uncovered_ranges(files, [], 1000)
    # oracle by hand: dt=1 rows 0..1299 → [0,999],[1000,1299]; dt=2 → [1300,1799]; e (dt=1 again) → [1800,2049]
    assert [(r.start, r.end, r.partition["dt"]) for r in got] == [
        (0, 999, "1"), (1000, 1299, "1"), (1300, 1799, "2"), (1800, 2049, "1")]
    got = uncovered_ranges(files, [[0, 1299]], 1000)
    assert [(r.start, r.end) for r in got] == [(1300, 1799), (1800, 2049)]
    assert RowRange(5, 9).rows == 5


def test_row_id_column_checks() -> None:
    assert list(check_row_id_column(pa.array([5, 1, 3]), "rid")) == [1, 3, 5]
    with pytest.raises(RowIdError, match="duplicate value 3"):
        check_row_id_column(pa.array([3, 1, 3]), "rid")
    with pytest.raises(RowIdError, match="null"):
        check_row_id_column(pa.array([1, None]), "rid")
    with pytest.raises(RowIdError, match="negative"):
        check_row_id_column(pa.array([1, -1]), "rid")
    with pytest.raises(RowIdError, match="integer"):
        check_row_id_column(pa.array(["a"]), "rid")
    ids = np.array([2, 4, 6, 8, 10], dtype=np.int64)
    assert [(r.start, r.end) for r in ranges_of_ids(ids, 2)] == [(2, 4), (6, 8), (10, 10)]


def test_new_ids_are_checked_against_the_ids_the_index_holds_not_its_spans() -> None:
    """An index built from file a (ids 1, 3, 9: range [1, 9]): new ids in its gaps are free, an id a holds is not;
    with a rewritten or removed since, its ids cannot be read, so any id inside [1, 9] needs a rebuild."""
    a = _f("a", 0, 3)
    base = Snapshot(1, "t", "v", "int", covered_ranges=[[1, 9]], source_files=[SourceFile.of(a)])
    held = {"a": np.array([1, 3, 9], dtype=np.int64)}
    read: list[str] = []

    def read_ids(s: SourceFile) -> np.ndarray:
        read.append(s.path)
        return held[s.path]

    new = np.array([2, 4, 12], dtype=np.int64)
    check_new_ids(new, base, [a], read_ids, "rid")              # 2 and 4 lie in gaps of [1, 9]: free
    assert read == ["a"]
    check_new_ids(np.array([10, 11], dtype=np.int64), base, [a], read_ids, "rid")
    assert read == ["a"]                                         # nothing inside a range: no file read
    check_new_ids(new, None, [], read_ids, "rid")                # no index yet
    with pytest.raises(RowIdError, match=r"reuse id 3, which data file 'a' holds already"):
        check_new_ids(np.array([3, 20], dtype=np.int64), base, [a], read_ids, "rid")
    rewritten = DataFile("a", 2, 5.0, 3, 0)
    with pytest.raises(RowIdError, match=r"id 2 inside the index range \[1, 9\].*'a'.*rebuild"):
        check_new_ids(new, base, [rewritten], read_ids, "rid")
