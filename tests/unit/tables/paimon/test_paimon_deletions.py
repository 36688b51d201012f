"""Deleted _ROW_IDs decoded by index_format from the DELETION_VECTORS files pypaimon's deletes write.

The oracle is the id list given to pypaimon's `delete_by_row_id` and pypaimon's own reads afterwards.
"""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pypaimon.globalindex.create_global_index import create_global_index

from index_format.storage import Storage
from service.tables.paimon import deleted_row_ids, list_deletion_vectors, open_paimon_table
from tests.unit.tables.paimon.paimon_tables import delete_rows, pypaimon_read, pypaimon_table, update_rows


def _read_ids(location: Path) -> set[int]:
    return set(pypaimon_read(location, ["status"]).column("_ROW_ID").to_pylist())


class _CountingStorage(Storage):
    """Records which files the decoder reads (it must go through Storage)."""

    def __init__(self, root: str) -> None:
        super().__init__(root)
        self.reads: list[str] = []

    def read_range(self, path: str, offset: int, length: int) -> bytes:
        self.reads.append(path)
        return super().read_range(path, offset, length)


def test_deleted_ids_are_exactly_the_deleted_rows(table_factory: Callable[..., Path]) -> None:
    location = table_factory()
    everything = _read_ids(location)
    assert len(deleted_row_ids(open_paimon_table(str(location)))) == 0

    first = [0, 1, 17, 1999, 2000, 3333, 5999]  # file starts and ends, every commit
    delete_rows(location, first)
    table = open_paimon_table(str(location))
    storage = _CountingStorage(str(location))
    assert set(deleted_row_ids(table, storage)) == set(first)
    assert storage.reads and all(p.startswith(str(location.resolve())) for p in storage.reads)
    assert _read_ids(location) == everything - set(first)  # pypaimon agrees they are gone

    second = [2, 2001, 4500]
    delete_rows(location, second)
    latest = open_paimon_table(str(location))
    assert set(deleted_row_ids(latest)) == set(first) | set(second)
    assert _read_ids(location) == everything - set(first) - set(second)
    refs = list_deletion_vectors(latest)
    assert sum(r.cardinality or 0 for r in refs) == len(first) + len(second)
    assert all(r.first_row_id is not None and Path(r.index_path).is_file() for r in refs)
    # an older snapshot keeps its own deletion vectors
    assert set(deleted_row_ids(open_paimon_table(str(location), snapshot_id=table.snapshot_id))) == set(first)


def test_deletes_after_an_index_and_on_update_files(table_factory: Callable[..., Path]) -> None:
    location = table_factory(commits=2, rows=800)
    create_global_index(pypaimon_table(location), "status", index_type="bitmap")
    update_rows(location, "flag", [10, 11, 900], [True, False, True])
    ids = [10, 12, 900, 1599]  # rows in ranges that now hold an update file too
    everything = _read_ids(location)
    delete_rows(location, ids)
    assert set(deleted_row_ids(open_paimon_table(str(location)))) == set(ids)
    assert _read_ids(location) == everything - set(ids)
