"""pypaimon-rust as the judge of multivalue (ARRAY column) index files: build a table, let pypaimon-rust's
`CALL sys.create_global_index(..., index_type => 'multivalue')` index it, and hand back every file it wrote
with its manifest entry (read through pypaimon's index manifest reader) and the source rows of its shard.
"""
from __future__ import annotations

import datetime as dt
import decimal
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pypaimon import CatalogFactory
from pypaimon.index.index_file_handler import IndexFileHandler
from pypaimon_rust.datafusion import SQLContext

_INSERT_BATCH = 500   # rows per INSERT statement


@dataclass(frozen=True)
class Shard:
    """One multivalue file pypaimon-rust wrote: its manifest entry, its bytes, and the rows it indexes."""

    range_start: int
    range_end: int
    row_count: int          # manifest _ROW_COUNT
    meta: bytes             # manifest _INDEX_META (spec §4)
    data: bytes
    rows: list[list[object] | None]   # the shard's source arrays, by local row id


def sql_literal(value: object, sql_type: str) -> str:
    """A literal of `value` for pypaimon-rust's SQL (DataFusion)."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    if isinstance(value, dt.date):
        return f"DATE '{value.isoformat()}'"
    if isinstance(value, decimal.Decimal):
        return f"CAST('{value}' AS {sql_type})"
    return str(value)


def _array(values: Sequence[object] | None, sql_type: str) -> str:
    if values is None:
        return "NULL"
    return "[" + ", ".join(sql_literal(v, sql_type) for v in values) + "]"


class MultivalueTable:
    """A row-tracking pypaimon-rust table `t (id BIGINT, c ARRAY<sql_type>)` under `warehouse`."""

    def __init__(self, warehouse: Path, sql_type: str) -> None:
        self.warehouse = str(warehouse)
        self.sql_type = sql_type
        self.rows: list[list[object] | None] = []
        self.ctx = SQLContext()
        self.ctx.register_catalog("p", {"warehouse": self.warehouse})
        self.ctx.set_current_catalog("p")
        self.ctx.sql(f"CREATE TABLE t (id BIGINT, c ARRAY<{sql_type}>) WITH ('row-tracking.enabled'='true',"
                     "'data-evolution.enabled'='true')")

    def insert(self, rows: Sequence[Sequence[object] | None]) -> None:
        """Append rows (row ids continue where the table ends)."""
        for i in range(0, len(rows), _INSERT_BATCH):
            batch = rows[i:i + _INSERT_BATCH]
            values = ", ".join(f"({len(self.rows) + i + j}, {_array(a, self.sql_type)})" for j, a in enumerate(batch))
            self.ctx.sql(f"INSERT INTO t (id, c) VALUES {values}")
        self.rows.extend(None if a is None else list(a) for a in rows)

    def index(self, options: dict[str, str] | None = None) -> list[Shard]:
        """Run pypaimon-rust's create_global_index on `c`; every multivalue file of the table, by row range."""
        given = "" if not options else ", options => '" + ",".join(f"{k}={v}" for k, v in options.items()) + "'"
        self.ctx.sql(f"CALL sys.create_global_index(table => 'default.t', index_column => 'c', "
                     f"index_type => 'multivalue'{given})")
        return self.shards()

    def shards(self) -> list[Shard]:
        table = CatalogFactory.create({"warehouse": self.warehouse}).get_table("default.t")
        snapshot = table.snapshot_manager().get_latest_snapshot()
        index_dir = table.path_factory().global_index_path_factory().index_path()
        # the _ROW_ID of each row: what the index's local ids are relative to (spec §5.1)
        ids = [int(i) for batch in self.ctx.sql('SELECT "_ROW_ID", id FROM t ORDER BY id')
               for i in batch.column(0).to_pylist()]
        by_row_id = {rid: self.rows[pos] for pos, rid in enumerate(ids)}
        out = []
        for entry in IndexFileHandler(table=table).scan(snapshot, lambda e: e.index_file.index_type == "multivalue"):
            f = entry.index_file
            g = f.global_index_meta
            a, b = int(g.row_range_start), int(g.row_range_end)
            data = Path(f"{index_dir}/{f.file_name}").read_bytes()
            assert f.file_name.startswith("multivalue-global-index-") and len(data) == int(f.file_size)
            out.append(Shard(a, b, int(f.row_count), bytes(g.index_meta), data,
                             [by_row_id[r] for r in range(a, b + 1)]))
        return sorted(out, key=lambda s: s.range_start)
