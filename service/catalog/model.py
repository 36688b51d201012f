"""Catalog documents: Table, DataFile, UnreadableFile, IndexFileEntry, Snapshot, JobRecord; each round-trips to JSON.

Imports only the standard library (no Storage, no pyarrow): these are plain records.
"""
from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any, Literal

FORMATS = ("parquet", "orc", "csv", "json", "paimon")
PAIMON = "paimon"  # a Paimon table directory: row ids, data files and indexes come from Paimon
JOB_STATES = ("queued", "running", "succeeded", "failed", "cancelled")
JobState = Literal["queued", "running", "succeeded", "failed", "cancelled"]


def now() -> float:
    """Wall-clock seconds since the epoch (what every *_at field holds)."""
    return time.time()


def _known(cls: type, data: dict[str, Any]) -> dict[str, Any]:
    # Documents may gain fields later (contracts only add); ignore what this version does not know.
    names = {f.name for f in fields(cls)}
    return {k: v for k, v in data.items() if k in names}


def _partitioned(cls: type, data: dict[str, Any]) -> dict[str, Any]:
    # A file record (data or index file) with its hive partition as a fresh dict.
    d = _known(cls, data)
    d["partition"] = dict(d.get("partition") or {})
    return d


@dataclass(frozen=True)
class Table:
    """A name bound to data files: location, format, hive partition columns, optional row-id column."""

    name: str
    location: str
    format: str = "parquet"
    partition_columns: list[str] = field(default_factory=list)
    row_id_column: str | None = None
    created_at: float = field(default_factory=now)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Table:
        d = _known(cls, data)
        d["partition_columns"] = list(d.get("partition_columns") or [])
        return cls(**d)

    def bad_text(self) -> tuple[str, int] | None:
        """(field, character) of the first text field that cannot be encoded as UTF-8 (a lone surrogate);
        None when all can. Such a definition could be stored (as a JSON escape) but never shown."""
        texts = [("name", self.name), ("location", self.location), ("format", self.format),
                 ("row_id_column", self.row_id_column),
                 *((f"partition_columns[{i}]", c) for i, c in enumerate(self.partition_columns))]
        for where, text in texts:
            if isinstance(text, str) and not text.isascii():
                try:
                    text.encode("utf-8")
                except UnicodeEncodeError as e:
                    return where, e.start
        return None

    def same_definition(self, other: Table) -> bool:
        """Equal apart from created_at (re-registering the same table is not an error)."""
        return replace(self, created_at=0.0) == replace(other, created_at=0.0)


@dataclass(frozen=True)
class DataFile:
    """One source data file and its slice of the row-id space: ids [first_row_id, first_row_id + row_count)."""

    path: str
    size: int
    mtime: float
    row_count: int
    first_row_id: int
    partition: dict[str, str] = field(default_factory=dict)
    # Paimon data files only: the columns a data-evolution file writes (None: all) and its newest sequence
    # number; where files share row ids, each column's current value is in the newest file that writes it.
    write_cols: tuple[str, ...] | None = None
    max_sequence_number: int | None = None

    @property
    def end_row_id(self) -> int:
        """Exclusive end of the file's ids."""
        return self.first_row_id + self.row_count

    def fingerprint(self) -> tuple[str, int, float, int]:
        return (self.path, self.size, self.mtime, self.first_row_id)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DataFile:
        d = _partitioned(cls, data)
        if d.get("write_cols") is not None:
            d["write_cols"] = tuple(d["write_cols"])
        return cls(**d)


@dataclass(frozen=True)
class UnreadableFile:
    """A data file the last scan could not read (empty, junk, not a regular file, outside the partition
    layout): it has no row ids. Kept with its fingerprint so an unchanged file is not read again, and a
    fixed one gets ids at the next scan."""

    path: str
    reason: str
    size: int = -1
    mtime: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> UnreadableFile:
        return cls(**_known(cls, data))


@dataclass(frozen=True)
class IndexFileEntry:
    """One index file of a snapshot; row ids inside it are local to [range_start, range_end] (spec §5.1)."""

    path: str
    range_start: int
    range_end: int          # inclusive, as in Paimon's _ROW_RANGE_END
    row_count: int
    file_size: int
    meta_hex: str           # spec §4 SortedIndexFileMeta bytes, hex
    partition: dict[str, str] = field(default_factory=dict)
    # bytes of the range sidecar written beside the file (path + index_format.sidecar.SIDECAR_SUFFIX); None: none
    sidecar_size: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> IndexFileEntry:
        return cls(**_partitioned(cls, data))


@dataclass(frozen=True)
class SourceFile:
    """A data file a snapshot covers, with the fingerprint it had when indexed (for staleness)."""

    path: str
    size: int
    mtime: float
    first_row_id: int
    row_count: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SourceFile:
        return cls(**_known(cls, data))

    @classmethod
    def of(cls, f: DataFile) -> SourceFile:
        return cls(f.path, f.size, f.mtime, f.first_row_id, f.row_count)


@dataclass(frozen=True)
class Snapshot:
    """One committed version of one (table, column) index. `id` is assigned at commit (1, 2, …)."""

    id: int
    table: str
    column: str
    key_type: str                               # KeyType.spelling
    index_type: str = "bitmap"
    files: list[IndexFileEntry] = field(default_factory=list)
    options: dict[str, str] = field(default_factory=dict)
    covered_ranges: list[list[int]] = field(default_factory=list)   # merged [start, end] inclusive
    source_files: list[SourceFile] = field(default_factory=list)
    stale: bool = False
    stale_files: list[dict[str, Any]] = field(default_factory=list)  # {path, reason: changed|removed}
    created_at: float = field(default_factory=now)
    job_id: str | None = None
    parent_id: int | None = None
    row_count: int = 0                          # rows covered (sum of covered ranges' source rows)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        return d

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Snapshot:
        d = _known(cls, data)
        d["files"] = [IndexFileEntry.from_dict(x) for x in d.get("files") or []]
        d["source_files"] = [SourceFile.from_dict(x) for x in d.get("source_files") or []]
        d["covered_ranges"] = [[int(a), int(b)] for a, b in d.get("covered_ranges") or []]
        return cls(**d)

    def summary(self) -> dict[str, Any]:
        """Short description for CLI output and logs."""
        return {
            "snapshot_id": self.id, "table": self.table, "column": self.column,
            "key_type": self.key_type, "index_type": self.index_type, "files": len(self.files),
            "index_bytes": sum(f.file_size for f in self.files), "rows_covered": self.row_count,
            "covered_ranges": self.covered_ranges, "stale": self.stale,
            "stale_files": [s["path"] for s in self.stale_files], "job_id": self.job_id,
        }


def empty_progress() -> dict[str, Any]:
    return {"fraction": 0.0, "rows_indexed": 0, "ranges_done": 0, "ranges_total": 0}


@dataclass(frozen=True)
class JobRecord:
    """A build job as the service and the job process see it (`<warehouse>/jobs/<id>.json`)."""

    id: str
    table: str
    column: str
    state: JobState = "queued"
    progress: dict[str, Any] = field(default_factory=empty_progress)
    error: str | None = None
    snapshot_id: int | None = None
    created_at: float = field(default_factory=now)
    started_at: float | None = None
    finished_at: float | None = None
    pid: int | None = None
    pid_start: int | None = None     # start time of `pid` (liveness.process_start): tells a reused pid apart
    spec: dict[str, Any] = field(default_factory=dict)

    @property
    def active(self) -> bool:
        return self.state in ("queued", "running")

    def duration_s(self, at: float | None = None) -> float | None:
        """Seconds the build ran: finished_at - started_at once over, the time so far while it runs (`at`: now);
        None while queued, or for a job that ended before it started (e.g. cancelled while queued)."""
        if self.started_at is None:
            return None
        end = self.finished_at if self.finished_at is not None else (now() if at is None else at)
        return max(0.0, round(end - self.started_at, 3))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> JobRecord:
        d = _known(cls, data)
        d["progress"] = {**empty_progress(), **(d.get("progress") or {})}
        return cls(**d)

    def with_(self, **changes: Any) -> JobRecord:
        return replace(self, **changes)
