"""The table-source seam: one source per table kind, picked by Table.format; registration checks through it."""
from __future__ import annotations

from pathlib import Path

import pytest

from index_format.errors import InvalidOptionError
from index_format.storage import Storage
from service.catalog import Catalog, Table
from service.catalog.catalog_errors import InvalidTableError
from service.tables import TableSources, open_source, register_table
from service.tables.files.files_source import FileSource
from service.tables.paimon.paimon_source import PaimonSource
from tests.factories import make_parquet_table
from tests.unit.tables.paimon.paimon_tables import create_table


def _catalog(tmp_path: Path) -> Catalog:
    return Catalog(Storage(str(tmp_path / "wh"), [str(tmp_path / "data")]))


def test_each_kind_gets_its_source_and_the_kind_shares_its_state(tmp_path: Path) -> None:
    catalog = _catalog(tmp_path)
    gen = make_parquet_table(tmp_path / "data" / "pq", rows_per_file=(10,))
    location = create_table(tmp_path / "data" / "warehouse", "events", commits=1, rows=50)
    register_table(catalog, Table("plain", str(gen.location)))
    register_table(catalog, Table("events", str(location), "paimon"))
    sources = TableSources(catalog)
    plain, paimon = sources.open("plain"), sources.open("events")
    assert isinstance(plain, FileSource) and isinstance(paimon, PaimonSource)
    assert paimon.origins is sources.open("events").origins   # one origins cache per owner
    assert paimon.origins is not open_source(catalog, "events").origins  # type: ignore[attr-defined]
    assert plain.version() is None and paimon.version() == 1
    view = paimon.view()
    assert view.summary is not None and not view.records_key_order and view.total_rows == 50
    assert plain.view().summary is None and plain.unreadable_files() == [] and paimon.unreadable_files() == []


def test_registration_goes_through_the_source(tmp_path: Path) -> None:
    catalog = _catalog(tmp_path)
    location = create_table(tmp_path / "data" / "warehouse", "events", commits=1, rows=10)
    with pytest.raises(InvalidOptionError, match="_ROW_ID"):
        register_table(catalog, Table("events", str(location), "paimon", partition_columns=["region"]))
    (tmp_path / "data" / "plain").mkdir()
    with pytest.raises(InvalidTableError):
        register_table(catalog, Table("notpaimon", str(tmp_path / "data" / "plain"), "paimon"))
    assert catalog.list_tables() == []
