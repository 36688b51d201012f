"""The catalog: the registry of tables, their versioned index snapshots (commit, GC) and job records.

JSON documents on Storage (local dir or s3://), read one by one (documents.py). What a table's kind keeps (a
plain table's data-file map: service.tables.files.data_files) and the rules of which jobs are live
(service.jobs.active_builds) are not here. Imports index_format and service.catalog only.
Commit protocol: snapshot N+1 is created with Storage.write_if_absent, so of two writers expecting N
exactly one creates it; readers take the highest committed id, so they see the old or the new
snapshot, never a mix.
"""
from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any

from index_format.errors import InvalidOptionError, PathNotAllowedError
from index_format.sidecar import SIDECAR_SUFFIX
from index_format.storage import Storage, is_absolute_location, is_under
from service.catalog import warehouse_layout
from service.catalog.documents import dumps, job_of, read_doc, table_of
from service.catalog.catalog_errors import (
    CommitConflictError,
    CorruptDocumentError,
    IndexNotFoundError,
    InvalidTextError,
    JobNotFoundError,
    LocationNotAllowedError,
    TableExistsError,
    TableNotFoundError,
)
from service.catalog.model import FORMATS, JobRecord, Snapshot, Table, now

log = logging.getLogger("bgix.catalog")


class Catalog:
    """Catalog over one warehouse root; cheap to create, holds no open state besides the Storage."""

    def __init__(self, storage: Storage) -> None:
        self.storage = storage

    # -- tables ----------------------------------------------------------------------------------
    def put_table(self, t: Table) -> Table:
        """Register a table (check_table first). Re-registering the identical definition returns the stored
        one. What a table's kind checks (service.tables register_table) comes before this.

        Raises:
            TableExistsError: a different definition is registered under the name.
            As check_table.
        """
        t = self.check_table(t)
        if self.storage.write_if_absent(warehouse_layout.table_json(t.name), dumps(t.to_dict())):
            return t
        existing = self.get_table(t.name)
        if existing.same_definition(t):
            return existing
        raise TableExistsError(f"table {t.name!r} already exists with a different definition")

    def check_table(self, t: Table) -> Table:
        """`t` with its location resolved, after the checks of every table kind.

        Raises:
            InvalidTextError: a field that is not valid Unicode (could be stored, never shown).
            InvalidOptionError: unknown format, bad name or partition column names.
            PathNotAllowedError, LocationNotAllowedError: see check_location.
        """
        bad = t.bad_text()
        if bad is not None:
            raise InvalidTextError(f"table {bad[0]} is not valid Unicode: lone surrogate at character {bad[1]}",
                                   position=f"$.{bad[0]}")
        warehouse_layout.check_name("table", t.name)
        if t.format not in FORMATS:
            raise InvalidOptionError(f"table format {t.format!r} is not one of {list(FORMATS)}")
        warehouse_layout.check_partition_columns(t.partition_columns)
        return replace(t, location=self.check_location(t.location))

    def check_location(self, location: str) -> str:
        """The resolved table location: an absolute path or fsspec URL under the storage roots, outside
        the catalog's own directories (drop_table and drop_index delete those; source data never).

        Raises:
            PathNotAllowedError: a relative path.
            LocationNotAllowedError: outside the roots; the warehouse root itself or a directory containing
                it (its scan would list the catalog's own documents as data); inside its tables/ or jobs/.
        """
        if not is_absolute_location(location):
            raise PathNotAllowedError(f"location {location!r} must be an absolute path or an fsspec URL")
        try:
            resolved = self.storage.resolve(location)
            managed = [self.storage.resolve(d) for d in (warehouse_layout.tables_dir(), warehouse_layout.jobs_dir())]
        except PathNotAllowedError as exc:
            raise LocationNotAllowedError(str(exc)) from exc
        warehouse = self.storage.root.rstrip("/")
        if resolved.rstrip("/") == warehouse:
            raise LocationNotAllowedError(f"location {location!r} is the warehouse root {warehouse!r}")
        if is_under(warehouse, resolved.rstrip("/")):
            raise LocationNotAllowedError(
                f"location {location!r} contains the warehouse {warehouse!r} (its catalog documents would be "
                "listed as data)")
        for d in managed:
            if is_under(resolved, d.rstrip("/")):
                raise LocationNotAllowedError(
                    f"location {location!r} lies inside the catalog directory {d!r} of the warehouse")
        return resolved

    def get_table(self, name: str) -> Table:
        """Raises TableNotFoundError; CorruptDocumentError when its table.json does not parse."""
        t = read_doc(self.storage, warehouse_layout.table_json(name), table_of)
        if t is None:
            raise TableNotFoundError(f"table {name!r} not found")
        return t

    def has_table(self, name: str) -> bool:
        """Whether a table.json is stored under `name` (readable or not)."""
        return self.storage.exists(warehouse_layout.table_json(name))

    def list_tables(self) -> list[Table]:
        """Every readable table; one with a corrupt table.json is left out (see scan_tables)."""
        return self.scan_tables()[0]

    def scan_tables(self) -> tuple[list[Table], dict[str, CorruptDocumentError]]:
        """(readable tables by name, {name: error} of tables whose table.json is corrupt)."""
        out, broken = [], {}
        for p in self.storage.list(warehouse_layout.tables_dir()):
            name = p.rstrip("/").rsplit("/", 1)[-1]
            try:
                t = read_doc(self.storage, warehouse_layout.table_json(warehouse_layout.check_name("table", name)), table_of)
            except InvalidOptionError:  # not a directory the catalog made
                continue
            except CorruptDocumentError as exc:
                log.warning("table %r: %s", name, exc)
                broken[name] = exc
                continue
            if t is not None:
                out.append(t)
        return sorted(out, key=lambda t: t.name), broken

    def drop_table(self, name: str) -> None:
        """Forget the table and delete its indexes (never its data files). Works on a table whose
        table.json is corrupt: dropping is how an operator cleans one up, and only the catalog's own
        directory is deleted."""
        if not self.storage.exists(warehouse_layout.table_json(name)):
            raise TableNotFoundError(f"table {name!r} not found")
        self.storage.delete(warehouse_layout.table_dir(name), recursive=True)

    # -- snapshots -------------------------------------------------------------------------------
    def snapshot_ids(self, table: str, column: str) -> list[int]:
        ids = (warehouse_layout.snapshot_id_from_name(p) for p in self.storage.list(warehouse_layout.snapshots_dir(table, column)))
        return sorted(i for i in ids if i is not None)

    def get_snapshot(self, table: str, column: str, snapshot_id: int) -> Snapshot:
        """Raises IndexNotFoundError; CorruptDocumentError when the snapshot document does not parse."""
        snap = read_doc(self.storage, warehouse_layout.snapshot_json(table, column, snapshot_id), Snapshot.from_dict)
        if snap is None:
            raise IndexNotFoundError(f"index on {table}.{column} has no snapshot {snapshot_id}")
        return snap

    def current_snapshot(self, table: str, column: str) -> Snapshot | None:
        """The highest committed snapshot, or None when the column has no index."""
        ids = self.snapshot_ids(table, column)
        return self.get_snapshot(table, column, ids[-1]) if ids else None

    def list_indexes(self, table: str) -> list[Snapshot]:
        """Current snapshot of every indexed column of the table; a column whose current snapshot is
        corrupt is left out (load_indexes reports it)."""
        return self.load_indexes(table)[0]

    def load_indexes(self, table: str) -> tuple[list[Snapshot], dict[str, CorruptDocumentError]]:
        """(current snapshots by column, {column: error} of columns whose current snapshot is corrupt):
        one broken column must not take the table's other indexes down."""
        self.get_table(table)
        out, broken = [], {}
        for p in self.storage.list(warehouse_layout.indexes_dir(table)):
            column = p.rstrip("/").rsplit("/", 1)[-1]
            try:
                snap = self.current_snapshot(table, column)
            except InvalidOptionError:  # not a directory the catalog made
                continue
            except CorruptDocumentError as exc:
                log.warning("index %s.%s: %s", table, column, exc)
                broken[column] = exc
                continue
            if snap is not None:
                out.append(snap)
        return sorted(out, key=lambda s: s.column), broken

    def commit(self, table: str, column: str, expected_snapshot_id: int | None, snapshot: Snapshot) -> Snapshot:
        """Make `snapshot` current if the current snapshot is still `expected_snapshot_id` (None = none).

        Returns the stored snapshot (with its new id and parent_id).
        Raises:
            CommitConflictError: another commit happened since `expected_snapshot_id` was read.
        """
        self.check_current(table, column, expected_snapshot_id)
        new_id = (expected_snapshot_id or 0) + 1
        stored = replace(snapshot, id=new_id, parent_id=expected_snapshot_id, table=table, column=column,
                         created_at=now())
        if not self.storage.write_if_absent(warehouse_layout.snapshot_json(table, column, new_id), dumps(stored.to_dict())):
            raise CommitConflictError(f"index {table}.{column}: snapshot {new_id} was committed by another writer")
        return stored

    def check_current(self, table: str, column: str, expected_snapshot_id: int | None) -> None:
        """Raises CommitConflictError unless the column's current snapshot is `expected_snapshot_id` (None = none)."""
        current = self.snapshot_ids(table, column)
        latest = current[-1] if current else None
        if latest != expected_snapshot_id:
            raise CommitConflictError(
                f"index {table}.{column}: expected snapshot {expected_snapshot_id}, current is {latest}")

    def drop_index(self, table: str, column: str) -> None:
        """Remove the index: its snapshots and all its files. Does not parse the snapshots, so an index
        whose current snapshot is corrupt can still be dropped."""
        if not self.snapshot_ids(table, column):
            raise IndexNotFoundError(f"table {table!r} has no index on column {column!r}")
        self.storage.delete(warehouse_layout.index_root(table, column), recursive=True)

    def index_dir(self, table: str, column: str) -> str:
        """Resolved directory under which the index files of (table, column) are written."""
        return self.storage.resolve(warehouse_layout.data_dir(table, column))

    def job_index_dir(self, table: str, column: str, job_id: str) -> str:
        return self.storage.resolve(warehouse_layout.job_data_dir(table, column, job_id))

    def referenced_files(self, table: str, column: str) -> set[str]:
        """Resolved paths of index files named by any retained snapshot, and of the range sidecars written
        beside them (a sidecar is referenced while its index file is, when the entry records one)."""
        out: set[str] = set()
        for sid in self.snapshot_ids(table, column):
            for f in self.get_snapshot(table, column, sid).files:
                path = self.storage.resolve(f.path)
                out.add(path)
                if f.sidecar_size is not None:
                    out.add(path + SIDECAR_SUFFIX)
        return out

    def collect_garbage(self, table: str, column: str, *, live_jobs: set[str]) -> list[str]:
        """Delete index files no snapshot references, except those under the directories of `live_jobs` (job
        ids: which jobs are live is service.jobs' rule, active_builds.collect_garbage); returns what was deleted.
        """
        referenced = self.referenced_files(table, column)
        data_dir = self.index_dir(table, column)
        deleted = []
        for path in self.storage.list(data_dir, recursive=True):
            rel = path[len(data_dir.rstrip("/")) + 1:]
            if rel.split("/", 1)[0] in live_jobs or path in referenced:
                continue
            self.storage.delete(path)
            deleted.append(path)
        return deleted

    # -- jobs ------------------------------------------------------------------------------------
    def put_job(self, job: JobRecord) -> JobRecord:
        self.storage.write_atomic(warehouse_layout.job_json(job.id), dumps(job.to_dict()))
        return job

    def get_job(self, job_id: str) -> JobRecord:
        """Raises JobNotFoundError; CorruptDocumentError when the record does not parse."""
        job = read_doc(self.storage, warehouse_layout.job_json(job_id), job_of)
        if job is None:
            raise JobNotFoundError(f"job {job_id!r} not found")
        return job

    def list_jobs(self) -> list[JobRecord]:
        """Every readable job record, oldest first; corrupt records are left out (see scan_jobs)."""
        return self.scan_jobs()[0]

    def scan_jobs(self) -> tuple[list[JobRecord], dict[str, CorruptDocumentError]]:
        """(readable job records oldest first, {job id: error} of records that do not parse)."""
        out, broken = [], {}
        for p in self.storage.list(warehouse_layout.jobs_dir()):
            name = p.rstrip("/").rsplit("/", 1)[-1]
            if name.endswith(".json") and not name.startswith("."):
                try:
                    job = read_doc(self.storage, p, job_of)
                except CorruptDocumentError as exc:
                    log.warning("job record skipped: %s", exc)
                    broken[name[: -len(".json")]] = exc
                    continue
                if job is not None:
                    out.append(job)
        return sorted(out, key=lambda j: (j.created_at, j.id)), broken

    def update_job(self, job_id: str, **changes: Any) -> JobRecord:
        """Read-modify-write of one job record (only its own process and the service write it)."""
        job = self.get_job(job_id).with_(**changes)
        return self.put_job(job)

    def write_progress(self, job_id: str, progress: dict[str, Any]) -> None:
        job = self.get_job(job_id)
        self.put_job(job.with_(progress={**job.progress, **progress}))

    def read_progress(self, job_id: str) -> dict[str, Any]:
        return dict(self.get_job(job_id).progress)
