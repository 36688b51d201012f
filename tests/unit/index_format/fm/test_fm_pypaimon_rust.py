"""pypaimon-rust builds fm indexes on fresh tables at test time (two commits, several row ranges and partitions,
nulls, empty strings, unicode, long values, `%` `_` `\\`): our reader over its files answers random substring,
LIKE, prefix, suffix and equality predicates as plain Python does, and as its own SQL does; our writer's files
for each range's rows are the same bytes (none, lz4, zstd) and its index metadata is the manifest's."""
from __future__ import annotations

import random
from pathlib import Path

import pyarrow as pa
import pytest
from pypaimon import CatalogFactory
from pypaimon.index.index_file_handler import IndexFileHandler

from index_format.fm.fm_reader import open_fm_index
from index_format.fm.fm_writer import write_fm_bytes
from tests.unit.index_format.fm.fm_truth import check_reader, like_truth, random_like, random_texts
from tests.unit.tables.paimon.rust_tables import append, create_index, create_table, matching_row_ids




def _fm_files(warehouse: Path, name: str) -> list[tuple[int, int, bytes, bytes]]:
    """(range start, range end, file bytes, index metadata) of every fm file in the table's latest snapshot."""
    table = CatalogFactory.create({"warehouse": str(warehouse)}).get_table(f"default.{name}")
    snapshot = table.snapshot_manager().get_latest_snapshot()
    index_dir = table.path_factory().global_index_path_factory().index_path()
    out = []
    for entry in IndexFileHandler(table=table).scan(snapshot, lambda e: e.index_file.index_type == "fm"):
        f, g = entry.index_file, entry.index_file.global_index_meta
        data = Path(f"{index_dir}/{f.file_name}").read_bytes()
        assert f.file_name.startswith("fm-global-index-") and len(data) == int(f.file_size)
        assert int(f.row_count) == int(g.row_range_end) - int(g.row_range_start) + 1
        out.append((int(g.row_range_start), int(g.row_range_end), data, bytes(g.index_meta)))
    return sorted(out)


@pytest.mark.parametrize("codec", ["none", "zstd", "lz4"])
def test_pypaimon_rust_fm_files(tmp_path: Path, codec: str) -> None:
    rng = random.Random(codec)
    rows = random_texts(rng, 260) + random_texts(rng, 140)
    create_table(tmp_path, "t", "id INT, txt STRING")
    for part in (rows[:260], rows[260:]):    # two commits: row ids 0..259, then 260..399
        append(tmp_path, "t", pa.table({"id": pa.array(range(len(part)), pa.int32()),
                                        "txt": pa.array(part, pa.string())}))
    options = (f"sorted-index.records-per-range=150,fm-index.partition-row-count=40,fm-index.sa-sample-rate=8,"
               f"fm-index.compression={codec}")
    create_index(tmp_path, "t", "txt", "fm", options)
    files = _fm_files(tmp_path, "t")
    assert [(a, b) for a, b, _, _ in files] == [(0, 149), (150, 299), (300, 399)]
    for a, b, data, meta in files:
        reader = open_fm_index(str(_write(tmp_path, data)), "string")
        assert len(reader.partitions) > 1
        check_reader(reader, rows[a:b + 1], rng, rounds=40)
        ours, our_meta = write_fm_bytes(rows[a:b + 1], 0, dict(p.split("=") for p in options.split(",")))
        assert (ours, our_meta) == (data, meta)
    # its SQL (which uses these files) and plain Python agree on LIKE patterns
    for _ in range(6):
        p = random_like(rng)
        assert matching_row_ids(tmp_path, "t", "txt LIKE '" + p.replace("'", "''") + "'") == \
            sorted(like_truth(rows, p)), p


def _write(tmp: Path, data: bytes) -> Path:
    path = tmp / f"copy-{len(data)}-{hash(data) & 0xFFFF}.index"
    path.write_bytes(data)
    return path
