"""The direct Parquet read of a build task gives exactly pypaimon's rows, and is declined wherever pypaimon's reader
has work to do (deletion vectors, data-evolution patches, columns added after a file was written).

Judge: pypaimon's own read of the same split (`read_rows`), and pypaimon-rust's SQL for a table it wrote.
"""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from service.tables.paimon import ROW_ID, open_paimon_table, plan_splits, read_rows
from service.tables.paimon.direct_read import direct_batches
from tests.unit.tables.paimon import rust_tables as rt
from tests.unit.tables.paimon.paimon_tables import delete_rows, pypaimon_table, update_rows


def _direct(location: Path, columns: list[str], dictionary: tuple[str, ...] = ()) -> list[pa.Table | None]:
    table = open_paimon_table(str(location))
    out = []
    for split in plan_splits(table):
        batches = direct_batches(table, split, columns, dictionary)
        out.append(None if batches is None else pa.Table.from_batches(list(batches)))
    return out


def _decoded(t: pa.Table) -> pa.Table:
    plain = pa.schema([f.with_type(f.type.value_type) if pa.types.is_dictionary(f.type) else f for f in t.schema])
    return t.cast(plain).combine_chunks()


def _same_as_pypaimon(location: Path, columns: list[str], dictionary: tuple[str, ...] = ()) -> None:
    table = open_paimon_table(str(location))
    for split, got in zip(plan_splits(table), _direct(location, columns, dictionary), strict=True):
        assert got is not None
        want = read_rows(table, columns, [split])
        assert got.column_names == want.column_names == [*columns, ROW_ID]
        for c in dictionary:
            assert pa.types.is_dictionary(got.schema.field(c).type)
        assert _decoded(got).sort_by(ROW_ID).equals(want.sort_by(ROW_ID).combine_chunks())


def test_pypaimon_tables_read_directly_as_pypaimon_reads_them(table_factory: Callable[..., Path]) -> None:
    location = table_factory()   # partitioned by dt, 3 commits, nulls and '' among the strings
    _same_as_pypaimon(location, ["status", "code"])
    _same_as_pypaimon(location, ["status", "flag", "code"], dictionary=("status",))


def test_a_pypaimon_rust_table_with_several_commits(tmp_path: Path) -> None:
    wh = tmp_path / "wh"
    location = rt.create_table(wh, "t", "id BIGINT, s STRING, n INT")
    for k in range(3):
        ids = list(range(k * 1000, (k + 1) * 1000))
        rt.append(wh, "t", pa.table({"id": pa.array(ids, pa.int64()),
                                     "s": [None if i % 97 == 0 else f"v{i % 13}" for i in ids],
                                     "n": pa.array([i % 7 - 3 for i in ids], pa.int32())}))
    _same_as_pypaimon(location, ["s", "n"], dictionary=("s",))
    # and pypaimon-rust agrees on what row each id is
    got = pa.concat_tables([_decoded(t) for t in _direct(location, ["s"], ("s",)) if t is not None])
    judge = rt.matching_row_ids(wh, "t", "s = 'v5'")
    assert sorted(got.filter(pc.equal(got["s"], "v5"))[ROW_ID].to_pylist()) == sorted(judge)


def test_deletion_vectors_go_through_pypaimon(table_factory: Callable[..., Path]) -> None:
    location = table_factory()
    delete_rows(location, [3, 4, 2500])
    results = _direct(location, ["status"])
    assert None in results   # the splits whose files have deletion vectors
    table = open_paimon_table(str(location))
    for split, got in zip(plan_splits(table), results, strict=True):
        if got is not None:   # untouched splits still read directly, and the same
            assert got.sort_by(ROW_ID).equals(read_rows(table, ["status"], [split]).sort_by(ROW_ID).combine_chunks())


def test_data_evolution_patches_go_through_pypaimon(table_factory: Callable[..., Path]) -> None:
    location = table_factory(options={"row-tracking.enabled": "true", "data-evolution.enabled": "true"})
    update_rows(location, "code", [0, 1], [7, 8])
    assert None in _direct(location, ["code"])


def test_a_column_added_later_goes_through_pypaimon(table_factory: Callable[..., Path]) -> None:
    from pypaimon.schema.schema_change import SchemaChange
    from pypaimon.schema.data_types import AtomicType

    location = table_factory(options={"row-tracking.enabled": "true", "data-evolution.enabled": "true"})
    cat_table = pypaimon_table(location)
    warehouse = location.parent.parent
    from tests.unit.tables.paimon.paimon_tables import catalog
    catalog(warehouse).alter_table(f"db.{location.name}", [SchemaChange.add_column("extra", AtomicType("INT"))],
                                   False)
    assert cat_table is not None
    assert set(_direct(location, ["extra"])) == {None}
    assert all(t is not None for t in _direct(location, ["status"]))   # old columns still read directly
