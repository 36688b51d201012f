"""Fixture: Paimon tables made by pypaimon itself (the judge) in tmp_path."""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.unit.tables.paimon.paimon_tables import create_table


@pytest.fixture
def table_factory(tmp_path: Path) -> Callable[..., Path]:
    """Builds tables in one warehouse under tmp_path; returns each table's directory."""
    warehouse = tmp_path / "warehouse"

    def build(name: str = "events", **kwargs: object) -> Path:
        return create_table(warehouse, name, **kwargs)  # type: ignore[arg-type]
    return build
