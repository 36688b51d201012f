"""service.query.index_stats on files from the library writer, against pandas truth: several files with one
key in both, byte-order files, dead rows, wide sort keys (decimal(30,2)), prefixes, stored and corrupt documents."""
from __future__ import annotations

import decimal
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from pyroaring import BitMap64

from index_format.global_index.reader import open_index
from index_format.global_index.writer import write_index_bytes
from index_format.storage import Storage
from index_format.types import parse_type
from service.catalog import warehouse_layout
from service.query import index_stats as ist


def _files(tmp: Path, storage: Storage, kt_name: str, values: list, cuts: list[int], options: dict | None = None
           ) -> list[ist.StatsFile]:
    kt = parse_type(kt_name)
    out = []
    bounds = [0, *cuts, len(values)]
    for i, (a, b) in enumerate(zip(bounds[:-1], bounds[1:])):
        data, _ = write_index_bytes(values[a:b], np.arange(b - a, dtype=np.int64), kt,
                                    {"bitmap-index.dictionary-block-size": "64 b", **(options or {})})
        path = tmp / f"f{i}.index"
        path.write_bytes(data)
        out.append(ist.StatsFile(path=str(path), size=len(data), range_start=a, range_end=b - 1,
                                 open=lambda p=str(path), n=len(data): open_index(p, kt, storage=storage, size=n)))
    return out


def _truth(values: list, dead: set[int], order: str) -> list[tuple[object, int]]:
    s = pd.Series([v for i, v in enumerate(values) if i not in dead and v is not None], dtype=object)
    items = sorted(((k, int(n)) for k, n in s.value_counts().items()), key=lambda kv: kv[0])
    if order == "count":
        items.sort(key=lambda kv: -kv[1])
    return items


def _pages(storage: Storage, stats: ist.IndexStats, kt_name: str, order: str, prefix: str | None = None,
           size: int = 9) -> list[tuple[object, int]]:
    out: list[tuple[object, int]] = []
    while True:
        page = ist.page(storage, stats, parse_type(kt_name), order, prefix, len(out), size)
        out.extend(page)
        if len(page) < size:
            return out


@pytest.mark.parametrize("options", [{}, {"bgix.key-order": "bytes"}])
def test_ints_over_files_with_dead_rows(tmp_path: Path, options: dict) -> None:
    storage = Storage(str(tmp_path))
    rng = np.random.default_rng(1)
    values = [None if rng.random() < 0.05 else int(v) for v in rng.integers(-300, 300, 2000)]
    files = _files(tmp_path, storage, "bigint", values, [700, 1400], options)
    dead = set(range(650, 820)) | {3, 1999}
    stats = ist.load_or_compute(storage, "t", "c", parse_type("bigint"), files, BitMap64(dead))
    live = [v for i, v in enumerate(values) if i not in dead]
    assert stats.distinct_values == len({v for v in live if v is not None})
    assert stats.null_rows == sum(v is None for v in live)
    for order in ("value", "count"):
        assert _pages(storage, stats, "bigint", order) == _truth(values, dead, order)
    # another dead set is another document
    other = ist.load_or_compute(storage, "t", "c", parse_type("bigint"), files, BitMap64({5}))
    assert other.key != stats.key
    assert _pages(storage, other, "bigint", "count") == _truth(values, {5}, "count")


def test_strings_prefix_and_stored_document(tmp_path: Path) -> None:
    storage = Storage(str(tmp_path))
    rng = np.random.default_rng(2)
    values = [f"w{int(v):04d}" for v in rng.zipf(1.3, 5000) % 3000]
    files = _files(tmp_path, storage, "string", values, [2500])
    kt = parse_type("string")
    stats = ist.load_or_compute(storage, "t", "c", kt, files, None)
    for prefix in ("w0", "w00", "w2999", "w1", "x", "v"):
        for order in ("value", "count"):
            want = _truth([v for v in values if v.startswith(prefix)], set(), order)
            assert _pages(storage, stats, "string", order, prefix) == want, (prefix, order)
    # read back from the warehouse by a fresh call; then a corrupt sidecar is recomputed
    again = ist.load_or_compute(storage, "t", "c", kt, files, None)
    assert again.key == stats.key and again.fences == stats.fences
    assert _pages(storage, again, "string", "count") == _truth(values, set(), "count")
    Path(again.count_path).write_bytes(b"PAR1 broken")
    fixed = ist.load_or_compute(storage, "t", "c", kt, files, None)
    assert _pages(storage, fixed, "string", "count") == _truth(values, set(), "count")


def test_wide_decimal_sort_keys(tmp_path: Path) -> None:
    storage = Storage(str(tmp_path))
    rng = np.random.default_rng(3)
    values = [decimal.Decimal(int(v)).scaleb(-2) * (10 ** 20) for v in rng.integers(-50, 50, 400)]
    arr = pa.array(values, type=pa.decimal128(30, 2))
    files = _files(tmp_path, storage, "decimal(30,2)", arr, [150])
    stats = ist.load_or_compute(storage, "t", "c", parse_type("decimal(30,2)"), files, None)
    got = _pages(storage, stats, "decimal(30,2)", "value")
    assert got == _truth(values, set(), "value")


def test_older_documents_are_pruned(tmp_path: Path) -> None:
    storage = Storage(str(tmp_path))
    values = [i % 7 for i in range(300)]
    files = _files(tmp_path, storage, "int", values, [])
    kt = parse_type("int")
    for k in range(ist.KEPT_DOCUMENTS + 3):
        stats = ist.load_or_compute(storage, "t", "c", kt, files, BitMap64({k}))
        assert _pages(storage, stats, "int", "count") == _truth(values, {k}, "count")
    stats_dir = tmp_path / warehouse_layout.stats_dir("t", "c")
    assert len(list(stats_dir.glob("*.json"))) == ist.KEPT_DOCUMENTS
    assert len(list(stats_dir.glob("*.parquet"))) == 2 * ist.KEPT_DOCUMENTS
    assert (stats_dir / f"{stats.key}.json").exists()
