"""Sample "events" table for the demo, the dashboard tests and docs: realistic columns with nulls, as Parquet.

Vectorized with numpy/pyarrow (2M rows in a few seconds); imports no fastapi or pyspark.
"""
from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

# Tenants look like customer slugs so prefix look-ups (`tenant LIKE 'acme%'`) have something to find.
_TENANT_STEMS = (
    "acme", "globex", "initech", "umbrella", "hooli", "stark", "wayne", "wonka", "tyrell", "cyberdyne",
    "soylent", "aperture", "vandelay", "dunder", "prestige", "oscorp", "monarch", "gringotts", "pied", "nakatomi",
)
TENANTS: tuple[str, ...] = tuple(f"{stem}-{i:02d}" for stem in _TENANT_STEMS for i in range(1, 13))
STATUSES: tuple[str, ...] = ("ok", "error", "timeout", "redirect", "throttled", "cancelled")
_STATUS_P = (0.80, 0.07, 0.03, 0.06, 0.025, 0.015)
COUNTRIES: tuple[str, ...] = (
    "US", "DE", "GB", "FR", "IN", "BR", "JP", "CA", "NL", "ES", "IT", "SE", "PL", "AU", "MX",
    "KR", "CH", "BE", "AT", "DK", "NO", "FI", "IE", "PT", "CZ", "AR", "ZA", "SG", "NZ", "TR",
)
DEVICES: tuple[str, ...] = ("ios", "android", "web", "desktop", "tv")
_DEVICE_P = (0.30, 0.32, 0.25, 0.10, 0.03)
START = dt.datetime(2026, 10, 1)
SPAN_SECONDS = 30 * 24 * 3600

SCHEMA = pa.schema([
    ("event_id", pa.int64()),
    ("tenant", pa.string()),
    ("status", pa.string()),
    ("country", pa.string()),
    ("device", pa.string()),
    ("ts", pa.timestamp("us")),
    ("amount", pa.float64()),
])
MARKER = ".bgix-sample.json"


def _zipf_weights(n: int, s: float) -> np.ndarray:
    w: np.ndarray = 1.0 / np.arange(1, n + 1) ** s
    total: float = w.sum()
    return w / total


def _choice_with_nulls(rng: np.random.Generator, values: tuple[str, ...], p: np.ndarray | tuple[float, ...],
                       n: int, null_fraction: float) -> pa.Array:
    """Dictionary-style pick: draw indices, then take from a string array (no Python loop per row)."""
    idx = rng.choice(len(values), size=n, p=np.asarray(p, dtype=float))
    arr = pa.array(values, type=pa.string()).take(pa.array(idx))
    if null_fraction <= 0:
        return arr
    mask = rng.random(n) < null_fraction
    return pc.if_else(pa.array(mask), pa.nulls(n, pa.string()), arr)


def events_batch(first_event_id: int, n: int, rng: np.random.Generator) -> pa.Table:
    """`n` events starting at `first_event_id`; roughly 1% null status, 3% null country, 2% null device, 5% null amount."""
    ts_us = np.sort(rng.integers(0, SPAN_SECONDS, size=n)).astype("int64") * 1_000_000
    ts_us += rng.integers(0, 1_000_000, size=n)
    start_us = int((START - dt.datetime(1970, 1, 1)).total_seconds()) * 1_000_000
    amount = np.round(rng.lognormal(mean=3.0, sigma=1.0, size=n), 2)
    amount_mask = rng.random(n) < 0.05
    return pa.table({
        "event_id": pa.array(np.arange(first_event_id, first_event_id + n, dtype="int64")),
        "tenant": _choice_with_nulls(rng, TENANTS, _zipf_weights(len(TENANTS), 0.9), n, 0.0),
        "status": _choice_with_nulls(rng, STATUSES, _STATUS_P, n, 0.01),
        "country": _choice_with_nulls(rng, COUNTRIES, _zipf_weights(len(COUNTRIES), 1.1), n, 0.03),
        "device": _choice_with_nulls(rng, DEVICES, _DEVICE_P, n, 0.02),
        "ts": pa.array(ts_us + start_us, type=pa.timestamp("us")),
        "amount": pa.array(amount, mask=amount_mask, type=pa.float64()),
    }, schema=SCHEMA)


def write_events(directory: str | Path, rows: int = 2_000_000, files: int = 8, seed: int = 7) -> list[Path]:
    """Write `rows` events as `files` Parquet files `part-00000.parquet`… into `directory`; returns their paths.

    Deterministic for a given (rows, files, seed). Re-uses the files if a previous call with the same
    arguments already wrote them (a marker file records the arguments).
    """
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    marker, paths = _marker(out), _paths(out, files)
    if is_current(out, rows, files, seed):
        return paths
    for stale in out.glob("part-*.parquet"):
        stale.unlink()
    rng = np.random.default_rng(seed)
    bounds = np.linspace(0, rows, files + 1).astype(int)
    for i, path in enumerate(paths):
        n = int(bounds[i + 1] - bounds[i])
        pq.write_table(events_batch(int(bounds[i]), n, rng), path, row_group_size=256 * 1024)
    marker.write_text(json.dumps({"rows": rows, "files": files, "seed": seed}))
    return paths


def is_current(directory: str | Path, rows: int, files: int = 8, seed: int = 7) -> bool:
    """True when `directory` already holds exactly what write_events(directory, rows, files, seed) writes."""
    out = Path(directory)
    marker = _marker(out)
    try:
        spec = json.loads(marker.read_text())
    except (OSError, ValueError):
        return False
    return spec == {"rows": rows, "files": files, "seed": seed} and all(p.exists() for p in _paths(out, files))


def _marker(out: Path) -> Path:
    # The marker sits beside the table directory, not in it, so table scans only ever see Parquet files.
    return out.parent / f".{out.name}{MARKER}"


def _paths(out: Path, files: int) -> list[Path]:
    return [out / f"part-{i:05d}.parquet" for i in range(files)]
