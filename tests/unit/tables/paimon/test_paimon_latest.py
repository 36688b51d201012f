"""latest_snapshot_id, the cheap freshness check, agrees with pypaimon's own latest snapshot: with Paimon's
LATEST hint, with a stale hint (a commit after the hint was written) and with no hint at all."""
from __future__ import annotations

import random
from pathlib import Path

from service.tables.paimon import latest_snapshot_id
from tests.unit.tables.paimon.paimon_tables import DB, append, catalog, create_table, make_rows


def _pypaimon_latest(warehouse: Path, name: str) -> int:
    return int(catalog(warehouse).get_table(f"{DB}.{name}").snapshot_manager().get_latest_snapshot().id)


def test_latest_snapshot_id_follows_pypaimon(tmp_path: Path) -> None:
    warehouse = tmp_path / "wh"
    location = create_table(warehouse, "fresh", commits=2, rows=20)
    assert latest_snapshot_id(str(location)) == _pypaimon_latest(warehouse, "fresh") == 2
    append(warehouse, "fresh", make_rows(random.Random(1), 10))
    assert latest_snapshot_id(str(location)) == _pypaimon_latest(warehouse, "fresh") == 3

    hint = location / "snapshot" / "LATEST"
    hint.write_text("1")   # stale: snapshots 2 and 3 were committed after it
    assert latest_snapshot_id(str(location)) == 3
    hint.unlink()          # no hint: the table is opened the full way
    assert latest_snapshot_id(str(location)) == 3
