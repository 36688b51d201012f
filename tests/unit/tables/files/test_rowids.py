"""Row ids and range planning: partition specs, uncovered ranges, row_id_column checks."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from service.tables.files.rowids import (
    RowRange, check_row_id_column, parse_partitions, ranges_of_ids,
    select_files, uncovered_ranges,
)
from index_format.errors import InvalidOptionError
from service.catalog import DataFile, RowIdError, Table


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
    assert [(r.start, r.end) for r in ranges_of_ids(ids, [], 2, "rid")] == [(2, 4), (6, 8), (10, 10)]
    with pytest.raises(RowIdError, match="rebuild"):
        ranges_of_ids(ids, [[5, 7]], 2, "rid")
