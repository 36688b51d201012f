"""Paimon tables made by pypaimon-rust (the judge for btree and multivalue indexes): create, write Arrow batches,
build global indexes with its `sys.create_global_index`, and ask its DataFusion SQL which `_ROW_ID`s match
(its scans use the global indexes, so a wrong index file shows up as missing rows)."""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

import pyarrow as pa
from pypaimon_rust.datafusion import PaimonCatalog, SQLContext

DB = "default"
ROW_TRACKING = {"row-tracking.enabled": "true", "data-evolution.enabled": "true"}


def sql_context(warehouse: Path) -> SQLContext:
    ctx = SQLContext()
    ctx.register_catalog("p", {"warehouse": str(warehouse)})
    ctx.set_current_catalog("p")
    return ctx


def run(ctx: SQLContext, sql: str) -> pa.Table:
    batches = ctx.sql(sql)
    return pa.Table.from_batches(batches) if batches else pa.table({})


def create_table(warehouse: Path, name: str, columns_ddl: str, options: dict[str, str] | None = None,
                 partition_keys: Sequence[str] = ()) -> Path:
    """`CREATE TABLE default.<name> (<columns_ddl>) [PARTITIONED BY (<partition_keys>)]` with row tracking and data
    evolution (plus `options`)."""
    opts = {**ROW_TRACKING, **(options or {})}
    with_ = ", ".join(f"'{k}'='{v}'" for k, v in opts.items())
    partitioned = f" PARTITIONED BY ({', '.join(partition_keys)})" if partition_keys else ""
    run(sql_context(warehouse), f"CREATE TABLE {DB}.{name} ({columns_ddl}){partitioned} WITH ({with_})")
    return warehouse / f"{DB}.db" / name


def append(warehouse: Path, name: str, data: pa.Table | Iterable[pa.RecordBatch], db: str = DB) -> None:
    """One commit of `data`, a table or batches written one at a time as they come (their column names and types
    must match the table's), to `<db>.<name>` (any Paimon table, whoever created it)."""
    table = PaimonCatalog({"warehouse": str(warehouse)}).get_table(f"{db}.{name}")
    builder = table.new_batch_write_builder()
    write = builder.new_write()
    try:
        for batch in data.to_batches() if isinstance(data, pa.Table) else data:
            write.write_arrow(batch)
        messages = write.prepare_commit()
    finally:
        write.close()
    commit = builder.new_commit()
    try:
        commit.commit(messages)
    finally:
        commit.close()


def create_index(warehouse: Path, name: str, column: str, index_type: str, options: str | None = None) -> None:
    """pypaimon-rust's `CALL sys.create_global_index` (an incremental build of the rows not indexed yet)."""
    extra = f", options => '{options}'" if options else ""
    run(sql_context(warehouse), f"CALL sys.create_global_index(table => '{DB}.{name}', index_column => '{column}', "
                                f"index_type => '{index_type}'{extra})")


def matching_row_ids(warehouse: Path, name: str, where: str) -> list[int]:
    """pypaimon-rust's answer: the `_ROW_ID`s of `SELECT … WHERE <where>`, sorted."""
    got = run(sql_context(warehouse), f'SELECT "_ROW_ID" FROM {DB}.{name} WHERE {where}')
    return sorted(got.column("_ROW_ID").to_pylist()) if got.num_rows else []


def read_rows(warehouse: Path, name: str, columns: list[str]) -> list[dict[str, object]]:
    """Every live row's `columns` and `_ROW_ID`, as pypaimon-rust reads them."""
    cols = ", ".join(columns)
    return run(sql_context(warehouse), f'SELECT "_ROW_ID", {cols} FROM {DB}.{name}').to_pylist()
