"""`<warehouse>/<db>.db/<table>` parsing: the warehouse is the parent of the <db>.db directory."""
from __future__ import annotations

from pathlib import Path

import pytest

from service.catalog.catalog_errors import TableNotFoundError
from service.tables.paimon import NotAPaimonTableError, PaimonLocation, parse_location, to_storage_path


@pytest.mark.parametrize("text,expected", [
    ("/w/h/db.db/t", PaimonLocation("/w/h", "db", "t")),
    ("/w/h/db.db/t/", PaimonLocation("/w/h", "db", "t")),
    ("file:///w/db.db/t", PaimonLocation("/w", "db", "t")),
    ("file:/w/db.db/t", PaimonLocation("/w", "db", "t")),
    ("s3://bucket/wh/sales.db/orders", PaimonLocation("s3://bucket/wh", "sales", "orders")),
    ("s3://bucket/sales.db/orders", PaimonLocation("s3://bucket", "sales", "orders")),
    ("memory:///wh/db.db/t", PaimonLocation("memory:///wh", "db", "t")),
])
def test_parse_location_splits_warehouse_database_table(text: str, expected: PaimonLocation) -> None:
    loc = parse_location(text)
    assert loc == expected
    assert loc.identifier == f"{expected.database}.{expected.table}"
    assert loc.table_path == f"{expected.warehouse}/{expected.database}.db/{expected.table}"


def test_relative_paths_are_made_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    loc = parse_location("wh/db.db/t")
    assert loc.warehouse == str(tmp_path / "wh")


@pytest.mark.parametrize("text", [
    "", "   ", "/w/h/db/t", "/w/db.db", "/db.db/t", "/w/.db/t", "s3://db.db/t", "/w/db.db/t$snapshots",
])
def test_other_shapes_are_not_paimon_tables(text: str) -> None:
    with pytest.raises(NotAPaimonTableError) as info:
        parse_location(text)
    assert isinstance(info.value, TableNotFoundError)
    assert info.value.location == text


@pytest.mark.parametrize("path,expected", [
    ("file:/a/b", "/a/b"), ("file:///a/b", "/a/b"), ("file://localhost/a/b", "/a/b"),
    ("/a/b", "/a/b"), ("s3://b/k", "s3://b/k"),
])
def test_to_storage_path_drops_file_urls(path: str, expected: str) -> None:
    assert to_storage_path(path) == expected
