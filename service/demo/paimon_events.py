"""The demo's sample "events" as a Paimon table that pypaimon itself writes, and pypaimon's own index scan of it.

The demo must show a real Paimon table (row tracking, data evolution, a partition key, several commits) and
Paimon's own reader answering from the files bgix committed, so both ends go through pypaimon here.
`append_arrow` (service.tables.paimon.paimon_writes, re-exported here) is the one plain pypaimon append.
"""
from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pypaimon import CatalogFactory, Schema
from pypaimon.common.predicate_builder import PredicateBuilder
from pypaimon.globalindex.data_evolution_global_index_scanner import DataEvolutionGlobalIndexScanner

from service.demo.events import COUNTRIES, SCHEMA, events_batch
from service.tables.paimon.paimon_writes import append_arrow

__all__ = [
    "PARTITION_KEY", "REGIONS", "append_arrow", "is_current_sample", "sample_commits", "sample_schema",
    "scanner_row_ids", "write_sample_table",
]

PARTITION_KEY = "region"
# Country → region; a null country lands in "unknown" (a partition value cannot be null in a path-friendly way).
REGIONS: dict[str, str] = {
    **{c: "amer" for c in ("US", "CA", "BR", "MX", "AR")},
    **{c: "apac" for c in ("IN", "JP", "AU", "KR", "SG", "NZ")},
    **{c: "emea" for c in COUNTRIES if c not in ("US", "CA", "BR", "MX", "AR", "IN", "JP", "AU", "KR", "SG", "NZ")},
}
_UNKNOWN_REGION = "unknown"
_OPTIONS = {"row-tracking.enabled": "true", "data-evolution.enabled": "true", "bucket": "-1"}
_MARKER = ".bgix-sample.json"


def write_sample_table(warehouse: str | Path, database: str, name: str, *, rows: int, commits: int,
                       seed: int = 7) -> Path:
    """Create `<warehouse>/<database>.db/<name>` with pypaimon and write `rows` events in `commits` commits.

    Deterministic for (rows, commits, seed); a table already written with the same arguments is reused,
    one written with other arguments is dropped and rewritten. Returns the table directory.
    """
    warehouse = Path(warehouse)
    location = warehouse / f"{database}.db" / name
    if is_current_sample(location, rows, commits, seed):
        return location
    catalog = CatalogFactory.create({"warehouse": str(warehouse)})
    catalog.create_database(database, True)
    if location.exists():
        shutil.rmtree(location)
    catalog.create_table(f"{database}.{name}", sample_schema(), False)
    table = catalog.get_table(f"{database}.{name}")
    for batch in sample_commits(rows, commits, seed):
        append_arrow(table, batch)
    _marker(location).write_text(json.dumps({"rows": rows, "commits": commits, "seed": seed}))
    return location


def is_current_sample(location: str | Path, rows: int, commits: int, seed: int = 7) -> bool:
    """True when `location` holds exactly what write_sample_table(…, rows, commits, seed) writes."""
    location = Path(location)
    try:
        spec = json.loads(_marker(location).read_text())
    except (OSError, ValueError):
        return False
    return spec == {"rows": rows, "commits": commits, "seed": seed} and (location / "snapshot").is_dir()


def scanner_row_ids(location: str | Path, column: str, op: str, values: list[object]) -> list[int] | None:
    """pypaimon's DataEvolutionGlobalIndexScanner answer for `column <op> values` at the latest snapshot.

    op is one of "=", "in", "!=", "is null" (the shapes pypaimon 2.1's bitmap index answers).
    Returns the sorted `_ROW_ID`s, or None when pypaimon finds no index to answer with.
    """
    location = Path(location)
    table = CatalogFactory.create({"warehouse": str(location.parent.parent)}).get_table(
        f"{location.parent.name.removesuffix('.db')}.{location.name}")
    pb = PredicateBuilder(table.fields)
    build = {"=": lambda: pb.equal(column, values[0]), "in": lambda: pb.is_in(column, list(values)),
             "!=": lambda: pb.not_equal(column, values[0]), "is null": lambda: pb.is_null(column)}
    if op not in build:
        raise ValueError(f"unsupported operator {op!r}; one of {sorted(build)}")
    pred = build[op]()
    scanner = DataEvolutionGlobalIndexScanner.create(table, predicate=pred)
    found = None if scanner is None else scanner.scan(pred)
    return None if found is None else sorted(int(i) for i in found.results())


def sample_schema() -> Schema:
    """The sample table's Paimon schema: the events' columns and `region`, partitioned by it, row tracking and data
    evolution on."""
    return Schema.from_pyarrow_schema(_arrow_schema(), partition_keys=[PARTITION_KEY], options=dict(_OPTIONS))


def sample_commits(rows: int, commits: int, seed: int = 7) -> Iterator[pa.Table]:
    """The sample's rows, one table per commit (with their `region`), deterministic for (rows, commits, seed)."""
    rng = np.random.default_rng(seed)
    bounds = np.linspace(0, rows, commits + 1).astype(int)
    for i in range(commits):
        yield _with_region(events_batch(int(bounds[i]), int(bounds[i + 1] - bounds[i]), rng))


def _arrow_schema() -> pa.Schema:
    return SCHEMA.append(pa.field(PARTITION_KEY, pa.string()))


def _with_region(batch: pa.Table) -> pa.Table:
    keys = pa.array(list(REGIONS), pa.string())
    names = pa.array(list(REGIONS.values()), pa.string())
    region = pc.fill_null(pc.take(names, pc.index_in(batch.column("country"), value_set=keys)), _UNKNOWN_REGION)
    return batch.append_column(PARTITION_KEY, region).cast(_arrow_schema())


def _marker(location: Path) -> Path:
    # Beside the table directory, not in it: Paimon owns everything under the table path.
    return location.parent / f".{location.name}{_MARKER}"
