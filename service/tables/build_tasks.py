"""The shapes a build passes between a table source and the one build pipeline (service.build_job).

A source plans a BuildPlan (picklable: a Spark task gets it whole), its TaskReader turns one task into
Arrow batches (ROW_ID plus one column per indexed column), the shared worker writes each BuildRange's index
files and returns RESULT_SCHEMA rows, and the source commits those rows. Imports service.catalog only.
"""
from __future__ import annotations

import hashlib
import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

import pyarrow as pa

from index_format.families import BITMAP
from index_format.storage import temp_target

__all__ = ["BATCH_ROWS", "RESULT_DDL", "RESULT_SCHEMA", "ROW_ID", "BuildOutcome", "BuildPlan", "BuildRange", "FileNames",
           "SparkScan", "TaskReader", "job_stamp", "stamp_of_file"]

ROW_ID = "_bgix_row_id"   # the row-id column of every batch a TaskReader yields (int64)
# Rows per batch a task yields, whatever reads it (a plain table's file slices; Spark's Arrow batches): the worker
# counts a range's rows as its batches arrive, so a build's progress moves inside one range.
BATCH_ROWS = 65_536

# What a task returns to the driver: one row per written index file (metadata only, never row data).
# range: index into BuildPlan.ranges; sidecar_size: bytes of the range sidecar written beside the file
# (path + SIDECAR_SUFFIX), null when none.
RESULT_SCHEMA = pa.schema([
    ("range", pa.int32()), ("range_start", pa.int64()), ("range_end", pa.int64()), ("path", pa.string()),
    ("file_size", pa.int64()), ("row_count", pa.int64()), ("meta", pa.binary()),
    ("sidecar_size", pa.int64()),
])
RESULT_DDL = ("range int, range_start long, range_end long, path string, file_size long, row_count long, "
              "meta binary, sidecar_size long")


@dataclass(frozen=True)
class BuildRange:
    """Inclusive row-id range of one column built as one unit (its index files carry this whole range).

    `rows`: rows the range receives (progress; with BuildPlan.exact_rows the range is written as soon as
    they all arrived, else when the task that holds it ends).
    """

    column: str
    start: int
    end: int
    rows: int


class TaskReader(Protocol):
    """Reads one task's input in a worker (picklable: Spark ships it)."""

    def read(self, task: int) -> Iterator[pa.RecordBatch]:
        """Batches of ROW_ID (int64 row ids) plus one column per indexed column, named by the column."""


_STAMP_HEX = 16   # hex digits of a file name's uuid that name the build job (the other 16 are random)
_GLOBAL_UUID = re.compile(r"-global-index-([0-9a-f]{8})-([0-9a-f]{4})-([0-9a-f]{4})-[0-9a-f]{4}-[0-9a-f]{12}\.index$")


def job_stamp(job_id: str) -> str:
    """The 16 hex digits that begin the uuid of every Paimon index file job `job_id` writes (a hash of the id,
    so any job id works): who wrote an uncommitted file can be told from its name (orphan cleanup)."""
    return hashlib.sha256(job_id.encode("utf-8")).hexdigest()[:_STAMP_HEX]


def stamp_of_file(name: str) -> str | None:
    """The job stamp a `<type>-global-index-<uuid>.index` file name carries (its uuid's first 16 hex digits,
    whoever wrote it: only a job's own stamp is ever looked up), also through the name of a temp file being
    written for one (index_format.storage.temp_target); None for other names."""
    m = _GLOBAL_UUID.search(temp_target(name) or name)
    return None if m is None else "".join(m.groups())


def _stamped_uuid(stamp: str) -> str:
    """A uuid string whose first 16 hex digits are `stamp`, the rest random (64 random bits per file)."""
    return str(uuid.UUID(hex=stamp + uuid.uuid4().hex[:32 - len(stamp)]))


@dataclass(frozen=True)
class FileNames:
    """Where a range's index files go: `<out_dir>/<prefix><start>-<end>-<uuid>-<n>.index` (bgix's
    warehouse), or with `uuid_only` `<out_dir>/<prefix><uuid>.index` (Paimon's global index naming); `stamp`
    (job_stamp of the build's job) begins each such uuid."""

    out_dir: str
    prefix: str = ""
    uuid_only: bool = False
    stamp: str = ""

    def new_path(self, start: int, end: int, index_type: str = BITMAP.name) -> Any:
        """A callable giving a fresh path per call, for write_index_files; with `uuid_only` and no prefix the
        family's own (`<index_type>-global-index-`)."""
        base = self.out_dir.rstrip("/")
        if self.uuid_only:
            prefix = self.prefix or f"{index_type}-global-index-"
            stamp = self.stamp
            if stamp:
                return lambda: f"{base}/{prefix}{_stamped_uuid(stamp)}.index"
            return lambda: f"{base}/{prefix}{uuid.uuid4()}.index"
        stem = f"{base}/{self.prefix}{start:012d}-{end:012d}-{uuid.uuid4().hex[:12]}"
        seq = iter(range(1 << 30))
        return lambda: f"{stem}-{next(seq):04d}.index"


@dataclass(frozen=True)
class SparkScan:
    """A plain table's files for the Spark-scan engine variant (`scan=spark`): Spark reads them (the indexed
    `columns`) and computes row ids in the JVM. `files`: (path, first_row_id) in row-id order; `bytes`: their total
    size."""

    format: str
    columns: tuple[str, ...]
    files: tuple[tuple[str, int], ...]
    row_id_column: str | None = None
    bytes: int = 0


@dataclass(frozen=True)
class BuildPlan:
    """One build's work, picklable.

    `task_rows`: row ids each task indexes (ordering and balancing); `task_closes[i]`: ranges complete once
    task i ended (written then, when not exact_rows). Progress counts units: the ranges (rows as written)
    or, with `progress_by_task`, the tasks (task_rows as each ends). `message`: nothing to build, and why.
    `light_driver`: the driver only schedules Python tasks and collects file records, so a session the
    build starts itself may use a lean JVM. `state`: driver-side,
    source-private (what commit_build needs).
    """

    columns: dict[str, str]                 # indexed column → KeyType spelling
    ranges: tuple[BuildRange, ...]
    task_rows: tuple[int, ...]
    reader: TaskReader | None
    names: FileNames
    options: dict[str, str]                 # IndexOptions.to_dict()
    storage_config: dict[str, Any]
    task_closes: tuple[tuple[int, ...], ...] = ()
    exact_rows: bool = True
    progress_by_task: bool = False
    sidecars: bool = True
    test_hooks: dict[str, Any] = field(default_factory=dict)
    spark_scan: SparkScan | None = None
    light_driver: bool = False
    index_type: str = BITMAP.name           # the family the worker writes (index_format.families)
    families: dict[str, str] = field(default_factory=dict)   # per column, when columns differ (else index_type)
    column_names: dict[str, FileNames] = field(default_factory=dict)   # per column, where columns differ (else names)
    message: str | None = None
    state: Any = None

    @property
    def progress_rows(self) -> list[int]:
        return list(self.task_rows) if self.progress_by_task else [r.rows for r in self.ranges]

    @property
    def tasks(self) -> int:
        return len(self.task_rows)

    def family_of(self, column: str) -> str:
        """The index family built on `column`."""
        return self.families.get(column, self.index_type)

    def names_of(self, column: str) -> FileNames:
        """Where the index files of `column` go."""
        return self.column_names.get(column, self.names)


@dataclass(frozen=True)
class BuildOutcome:
    """What a commit made: `result` is what the job returns (a catalog Snapshot; for Paimon tables the new
    Paimon snapshot), with `id` and `summary()`; `message` says what the job did when it built nothing."""

    result: Any
    message: str | None = None
