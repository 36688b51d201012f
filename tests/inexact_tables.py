"""The one place tests build tables whose answers are not exact, and judge them independently.

A Paimon table (row tracking, data evolution, deletion vectors) written by pypaimon: `status`, `code` (bitmap)
and `tags` (ARRAY<STRING>, multivalue) indexed by a bgix build, then rows appended that no index covers and rows
deleted on both sides. `status = 'error'` is then answered with `coverage.complete: false`, and a NOT over an
array predicate is declined by the multivalue index (`exact: false`: dropped under an AND, or the whole answer).

QUERY_OPTIONS is what every query of these tests sends besides its own members: `"scan": "never"`, since by default
the service reads what no index covers (or answers) and these answers would be exact; the client's side of an
inexact answer is what these tests are for.

`truth` is the judge: plain Python over pypaimon's own read of the live rows, with SQL three-valued logic (and
Spark SQL's array functions), never bgix's output.
"""
from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pyarrow as pa
from pypaimon import Schema

from service.demo.paimon_events import append_arrow
from tests.api.helpers import wait_job
from tests.factories import random_array
from tests.unit.tables.paimon.paimon_tables import FULL_OPTIONS, catalog, delete_rows, pypaimon_read

QUERY_OPTIONS: dict[str, Any] = {"scan": "never"}
NAME = "inexact"
SCHEMA = pa.schema([("id", pa.int64()), ("status", pa.string()), ("code", pa.int32()),
                    ("tags", pa.list_(pa.string()))])
COLUMNS = [f.name for f in SCHEMA]
BUILT_ROWS = 3000        # two commits, indexed by the build
APPENDED_ROWS = 1000     # a third commit after the build: no index covers it
STATUSES = ("ok", "error", "warn", "", None)
TAGS = ("vip", "eu", "us", "beta")


def _rows(rng: random.Random, start: int, n: int) -> pa.Table:
    return pa.table({
        "id": pa.array(range(start, start + n), pa.int64()),
        "status": [rng.choice(STATUSES) for _ in range(n)],
        "code": pa.array([None if rng.random() < 0.1 else rng.randint(-20, 20) for _ in range(n)], pa.int32()),
        "tags": pa.array([random_array(rng, TAGS, empty=0.15, longest=3) for _ in range(n)],
                         SCHEMA.field("tags").type),
    }, schema=SCHEMA)


def build_inexact_table(http: httpx.Client, warehouse: Path, *, deletes: bool = True) -> Path:
    """Write the table under `warehouse`, register it with the service behind `http` (a TestClient or an httpx
    client of a served app), build its indexes, then append uncovered rows and (with `deletes`) delete some rows
    among the indexed and among the appended ones. Returns the table's location."""
    cat = catalog(warehouse)
    cat.create_database("db", True)
    cat.create_table(f"db.{NAME}", Schema.from_pyarrow_schema(SCHEMA, options=dict(FULL_OPTIONS)), False)
    table = lambda: catalog(warehouse).get_table(f"db.{NAME}")  # noqa: E731 - a fresh handle per commit
    rng = random.Random(30)
    for start in range(0, BUILT_ROWS, BUILT_ROWS // 2):
        append_arrow(table(), _rows(rng, start, BUILT_ROWS // 2))
    location = warehouse / "db.db" / NAME
    r = http.put(f"/v1/tables/{NAME}", json={"format": "paimon", "location": str(location)})
    assert r.status_code == 200, r.text
    r = http.post("/v1/create_global_index", json={"table": NAME, "index_column": "status,code,tags",
                                                   "index_type": "bitmap,bitmap,multivalue"})
    assert r.status_code == 202, r.text
    assert wait_job(http, r.json()["job_id"])["state"] == "succeeded"
    append_arrow(table(), _rows(rng, BUILT_ROWS, APPENDED_ROWS))
    if deletes:
        delete_rows(location, [*range(5, BUILT_ROWS, 97), *range(BUILT_ROWS + 3, BUILT_ROWS + APPENDED_ROWS, 89)])
    return location


def live_rows(location: Path) -> list[dict[str, Any]]:
    """pypaimon's read of every live row (with `_ROW_ID`), in `_ROW_ID` order."""
    return sorted(pypaimon_read(location, COLUMNS).to_pylist(), key=lambda r: r["_ROW_ID"])


def _has(tags: list[str | None] | None, tag: str) -> bool | None:
    """Spark SQL's array_contains: NULL for a NULL array, or for an array with a NULL element and no match."""
    if tags is None:
        return None
    return True if tag in tags else (None if None in tags else False)


def _not(v: bool | None) -> bool | None:
    return None if v is None else not v


def _and(a: bool | None, b: bool | None) -> bool | None:
    return False if a is False or b is False else (None if a is None or b is None else True)


# Each predicate of the tests with its meaning in plain Python (True / False / None for UNKNOWN).
PREDICATES: dict[str, Callable[[dict[str, Any]], bool | None]] = {
    "status = 'error'": lambda r: None if r["status"] is None else r["status"] == "error",
    "status IN ('warn', NULL) OR code > 15": lambda r: (
        True if r["status"] == "warn" or (r["code"] is not None and r["code"] > 15) else
        (None if r["status"] is None or r["status"] != "warn" or r["code"] is None else False)),
    "array_contains(tags, 'vip') AND NOT array_contains(tags, 'eu')":
        lambda r: _and(_has(r["tags"], "vip"), _not(_has(r["tags"], "eu"))),
    "NOT array_contains(tags, 'eu')": lambda r: _not(_has(r["tags"], "eu")),
    "status LIKE 'e%' AND code BETWEEN -5 AND 5": lambda r: _and(
        None if r["status"] is None else r["status"].startswith("e"),
        None if r["code"] is None else -5 <= r["code"] <= 5),
}


def truth(rows: list[dict[str, Any]], where: str) -> list[int]:
    """The `_ROW_ID`s of `rows` where `where` (a key of PREDICATES) is TRUE, ascending."""
    return [r["_ROW_ID"] for r in rows if PREDICATES[where](r) is True]


@contextmanager
def served_client(http: Any) -> Iterator[Any]:
    """A service.client.Client over `http`'s transport (a TestClient of the in-process app), sending QUERY_OPTIONS."""
    from service.client import Client

    with Client("http://testserver", transport=http._transport, query_options=QUERY_OPTIONS) as client:
        yield client
