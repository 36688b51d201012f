"""Where each catalog object lives under a warehouse root (paths relative to the Storage root).

Pure string functions (no I/O); imports only index_format.errors, for the name check's InvalidOptionError.
"""
from __future__ import annotations

import hashlib
import re

from index_format.errors import InvalidOptionError

_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]{0,127}$")


def check_name(kind: str, name: str) -> str:
    """Reject names that could escape their directory (no '/', no '..', no empty names).

    Raises:
        InvalidOptionError: the name is not a plain identifier-like token.
    """
    if not _NAME.match(name) or ".." in name:
        raise InvalidOptionError(f"invalid {kind} name {name!r}: use letters, digits, '_', '.', '-'")
    return name


def check_partition_columns(columns: list[str]) -> list[str]:
    """Partition column names are hive directory keys (`col=value`): plain names, no duplicates.

    Raises:
        InvalidOptionError: naming the first bad or repeated column.
    """
    seen: set[str] = set()
    for c in columns:
        bad = (not isinstance(c, str) or not c.strip() or c != c.strip() or any(ch in c for ch in "/\\=")
               or ".." in c or any(ord(ch) < 32 or ord(ch) == 127 for ch in c) or len(c) > 256)
        if bad:
            raise InvalidOptionError(
                f"invalid partition column {c!r}: a partition column is a plain column name (no '/', '\\', "
                "'=', '..', control characters or surrounding whitespace)")
        if c in seen:
            raise InvalidOptionError(f"partition column {c!r} is given twice")
        seen.add(c)
    return columns


def tables_dir() -> str:
    return "tables"


def table_dir(table: str) -> str:
    return f"tables/{check_name('table', table)}"


def table_json(table: str) -> str:
    return f"{table_dir(table)}/table.json"


def files_dir(table: str) -> str:
    """The row-id map, versioned like snapshots (files/<version>.json; the highest version is current)."""
    return f"{table_dir(table)}/files"


def files_json(table: str, version: int) -> str:
    return f"{files_dir(table)}/{version:012d}.json"


def indexes_dir(table: str) -> str:
    return f"{table_dir(table)}/indexes"


def index_root(table: str, column: str) -> str:
    return f"{indexes_dir(table)}/{check_name('column', column)}"


def snapshots_dir(table: str, column: str) -> str:
    return f"{index_root(table, column)}/snapshots"


def snapshot_json(table: str, column: str, snapshot_id: int) -> str:
    # Zero-padded so a plain listing sorts by id.
    return f"{snapshots_dir(table, column)}/{snapshot_id:012d}.json"


def data_dir(table: str, column: str) -> str:
    return f"{index_root(table, column)}/data"


def job_data_dir(table: str, column: str, job_id: str) -> str:
    """Index files of one job live under their own prefix so a failed job's leftovers are easy to find."""
    return f"{data_dir(table, column)}/{check_name('job', job_id)}"


def sidecars_dir() -> str:
    """Range sidecars derived from index files bgix did not build (Paimon tables, other writers)."""
    return "_sidecars"


def derived_sidecar(index_path: str, size: int) -> str:
    """Where the sidecar derived from the index file at `index_path` (resolved) of `size` bytes is kept: a
    file rewritten in place (another size) gets another sidecar."""
    digest = hashlib.sha256(index_path.encode("utf-8")).hexdigest()[:40]
    return f"{sidecars_dir()}/{digest[:2]}/{digest}-{int(size)}.range-bitmap"


def jobs_dir() -> str:
    return "jobs"


def job_json(job_id: str) -> str:
    return f"jobs/{check_name('job', job_id)}.json"


def job_log(job_id: str) -> str:
    """The build's driver-side log, beside its record (service.jobs.job_logs)."""
    return f"jobs/{check_name('job', job_id)}.log"


def job_task_reports(job_id: str) -> str:
    """Where a running build's Spark tasks report their progress (service.build_job.progress)."""
    return f"jobs/{check_name('job', job_id)}.tasks"


def snapshot_id_from_name(name: str) -> int | None:
    """`.../000000000003.json` → 3; anything else (temp files, other names) → None."""
    base = name.rstrip("/").rsplit("/", 1)[-1]
    if not base.endswith(".json"):
        return None
    stem = base[: -len(".json")]
    return int(stem) if stem.isdigit() else None


def stats_dir(table: str, column: str) -> str:
    """Where a column's index statistics live (service.query.index_stats); a Paimon column name that is no safe
    directory name gets a digest instead."""
    try:
        return f"{index_root(table, column)}/stats"
    except InvalidOptionError:
        digest = hashlib.blake2b(column.encode(), digest_size=8).hexdigest()
        return f"{indexes_dir(table)}/_stats-{digest}/stats"
