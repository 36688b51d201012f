"""The catalog: tables, the row-id map of their data files, versioned index snapshots, job records.

JSON documents on Storage (local dir or s3://). Imports index_format.storage and service.catalog only.
Commit protocol: snapshot N+1 is created with Storage.write_if_absent, so of two writers expecting N
exactly one creates it; readers take the highest committed id, so they see the old or the new
snapshot, never a mix.
"""
from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from index_format.errors import InvalidOptionError, PathNotAllowedError
from index_format.storage import Storage, is_absolute_location, is_under
from service.catalog import layout
from service.catalog.errors import (
    BuildInProgressError,
    CommitConflictError,
    IndexNotFoundError,
    JobNotFoundError,
    LocationNotAllowedError,
    TableExistsError,
    TableNotFoundError,
    UnsupportedOperationError,
)
from service.catalog.liveness import job_process_alive
from service.catalog.model import FORMATS, PAIMON, DataFile, JobRecord, Snapshot, Table, now
from service.catalog.scan import count_rows, file_stat, list_data_files, parse_partition, read_schema


def _dumps(doc: dict[str, Any]) -> bytes:
    return json.dumps(doc, indent=1, sort_keys=True).encode()


class Catalog:
    """Catalog over one warehouse root; cheap to create, holds no open state besides the Storage."""

    def __init__(self, storage: Storage) -> None:
        self.storage = storage

    # -- documents -------------------------------------------------------------------------------
    def _read_json(self, path: str) -> dict[str, Any] | None:
        try:
            return json.loads(self.storage.read_bytes(path))  # type: ignore[no-any-return]
        except FileNotFoundError:
            return None

    # -- tables ----------------------------------------------------------------------------------
    def put_table(self, t: Table) -> Table:
        """Register a table. Re-registering the identical definition returns the stored one.

        Raises:
            TableExistsError: a different definition is registered under the name.
            InvalidOptionError: unknown format or bad name.
            PathNotAllowedError, LocationNotAllowedError: see check_location.
            InvalidTableError: a 'paimon' table whose location is not a row-tracking Paimon table.
        """
        layout.check_name("table", t.name)
        if t.format not in FORMATS:
            raise InvalidOptionError(f"table format {t.format!r} is not one of {list(FORMATS)}")
        t = replace(t, location=self.check_location(t.location))
        if t.format == PAIMON:
            self._check_paimon(t, self.storage.storage_options)
        if self.storage.write_if_absent(layout.table_json(t.name), _dumps(t.to_dict())):
            return t
        existing = self.get_table(t.name)
        if existing.same_definition(t):
            return existing
        raise TableExistsError(f"table {t.name!r} already exists with a different definition")

    def check_location(self, location: str) -> str:
        """The resolved table location: an absolute path or fsspec URL under the storage roots, outside
        the catalog's own directories (drop_table and drop_index delete those; source data never).

        Raises:
            PathNotAllowedError: a relative path.
            LocationNotAllowedError: outside the roots, or inside the warehouse's tables/ or jobs/.
        """
        if not is_absolute_location(location):
            raise PathNotAllowedError(f"location {location!r} must be an absolute path or an fsspec URL")
        try:
            resolved = self.storage.resolve(location)
            managed = [self.storage.resolve(d) for d in (layout.tables_dir(), layout.jobs_dir())]
        except PathNotAllowedError as exc:
            raise LocationNotAllowedError(str(exc)) from exc
        for d in managed:
            if is_under(resolved, d.rstrip("/")):
                raise LocationNotAllowedError(
                    f"location {location!r} lies inside the catalog directory {d!r} of the warehouse")
        return resolved

    @staticmethod
    def _check_paimon(t: Table, storage_options: dict[str, Any]) -> None:
        """A Paimon table brings its own row ids (`_ROW_ID`) and partitions; the location must open as one."""
        if t.row_id_column is not None or t.partition_columns:
            raise InvalidOptionError(
                "a Paimon table takes its row ids (_ROW_ID) and partition keys from Paimon: "
                "give neither row_id_column nor partition_columns")
        from service.catalog.paimon import open_paimon_table  # loads pypaimon only when needed
        open_paimon_table(t.location, storage_options=storage_options)

    def get_table(self, name: str) -> Table:
        doc = self._read_json(layout.table_json(name))
        if doc is None:
            raise TableNotFoundError(f"table {name!r} not found")
        return Table.from_dict(doc)

    def list_tables(self) -> list[Table]:
        out = []
        for p in self.storage.list(layout.tables_dir()):
            name = p.rstrip("/").rsplit("/", 1)[-1]
            doc = self._read_json(layout.table_json(name))
            if doc is not None:
                out.append(Table.from_dict(doc))
        return sorted(out, key=lambda t: t.name)

    def drop_table(self, name: str) -> None:
        """Forget the table and delete its indexes (never its data files)."""
        self.get_table(name)
        self.storage.delete(layout.table_dir(name), recursive=True)

    def source_columns(self, name: str) -> list[str] | None:
        """Column names of the table's data files (schema of the first file in row-id order, plus the
        partition columns), or None while the location holds no data file. Reads one footer only."""
        t = self.get_table(name)
        if t.format == PAIMON:  # the schema's fields (the partition keys among them)
            from service.catalog.paimon import open_paimon_table
            pt = open_paimon_table(t.location, storage_options=self.storage.storage_options)
            return [str(n) for n in pt.table.field_names]
        paths = list_data_files(self.storage, t.location, t.format)
        if not paths:
            return None
        schema = read_schema(self.storage, paths[0], t.format)
        return [*schema.names, *(c for c in t.partition_columns if c not in schema.names)]

    # -- the row-id map --------------------------------------------------------------------------
    def _files_doc(self, table: str) -> tuple[int, dict[str, Any] | None]:
        """(version, document) of the current row-id map; (0, None) before the first scan."""
        versions = [layout.snapshot_id_from_name(p) for p in self.storage.list(layout.files_dir(table))]
        ok = sorted(v for v in versions if v is not None)
        if not ok:
            return 0, None
        return ok[-1], self._read_json(layout.files_json(table, ok[-1]))

    def data_files(self, table: str) -> list[DataFile]:
        """The persisted row-id map (live files, ascending first_row_id); scans once if never scanned."""
        _, doc = self._files_doc(table)
        if doc is None:
            return self.refresh_data_files(table)
        return [DataFile.from_dict(d) for d in doc["files"]]

    def retired_files(self, table: str) -> list[DataFile]:
        """Files that were removed or rewritten since they got their ids (their ids are never reused)."""
        _, doc = self._files_doc(table)
        return [DataFile.from_dict(d) for d in (doc or {}).get("retired", [])]

    def refresh_data_files(self, table: str, *, attempts: int = 5) -> list[DataFile]:
        """Scan the table location and update the row-id map; returns the live files.

        Unchanged files keep their ids. New files, sorted by path, get ids after the current maximum.
        A file whose size or mtime changed is retired and re-added at the end (its old ids now name
        no row, so indexes built over them become stale); a removed file is retired.
        The map is versioned and written with write_if_absent, so two concurrent scans cannot hand
        out the same ids twice: the loser re-reads the winner's map and merges again.
        """
        t = self.get_table(table)
        if t.format == PAIMON:  # Paimon assigns the ids (_ROW_ID); a bgix row-id map would contradict them
            raise UnsupportedOperationError(f"table {table!r} is a Paimon table: its data files come from Paimon")
        for _ in range(attempts):
            version, doc = self._files_doc(table)
            live, new_doc = self._merge_scan(t, doc)
            if doc is not None and new_doc["files"] == doc["files"] and new_doc["retired"] == doc.get("retired"):
                return live
            if self.storage.write_if_absent(layout.files_json(table, version + 1), _dumps(new_doc)):
                return live
        raise CommitConflictError(f"table {table!r}: the row-id map kept changing under {attempts} scans")

    def _merge_scan(self, t: Table, doc: dict[str, Any] | None) -> tuple[list[DataFile], dict[str, Any]]:
        doc = doc or {"next_row_id": 0, "files": [], "retired": []}
        known = {d["path"]: DataFile.from_dict(d) for d in doc["files"]}
        next_id = int(doc["next_row_id"])
        live: list[DataFile] = []
        retired = [DataFile.from_dict(d) for d in doc.get("retired", [])]
        new_paths: list[tuple[str, int, float]] = []
        root = t.location.rstrip("/")
        seen = set()
        for path in list_data_files(self.storage, t.location, t.format):
            seen.add(path)
            size, mtime = file_stat(self.storage, path)
            old = known.get(path)
            if old is not None and old.size == size and old.mtime == mtime:
                live.append(old)
                continue
            if old is not None:
                retired.append(old)
            new_paths.append((path, size, mtime))
        retired.extend(f for p, f in known.items() if p not in seen)
        for path, size, mtime in new_paths:  # already sorted by path
            rel = path[len(root) + 1:]
            rel_dir = rel.rsplit("/", 1)[0] if "/" in rel else ""
            rows = count_rows(self.storage, path, t.format, size)
            live.append(DataFile(path, size, mtime, rows, next_id, parse_partition(rel_dir, t.partition_columns)))
            next_id += rows
        live.sort(key=lambda f: f.first_row_id)
        return live, {"next_row_id": next_id, "files": [f.to_dict() for f in live],
                      "retired": [f.to_dict() for f in retired], "scanned_at": now()}

    # -- snapshots -------------------------------------------------------------------------------
    def snapshot_ids(self, table: str, column: str) -> list[int]:
        ids = (layout.snapshot_id_from_name(p) for p in self.storage.list(layout.snapshots_dir(table, column)))
        return sorted(i for i in ids if i is not None)

    def get_snapshot(self, table: str, column: str, snapshot_id: int) -> Snapshot:
        doc = self._read_json(layout.snapshot_json(table, column, snapshot_id))
        if doc is None:
            raise IndexNotFoundError(f"index on {table}.{column} has no snapshot {snapshot_id}")
        return Snapshot.from_dict(doc)

    def current_snapshot(self, table: str, column: str) -> Snapshot | None:
        """The highest committed snapshot, or None when the column has no index."""
        ids = self.snapshot_ids(table, column)
        return self.get_snapshot(table, column, ids[-1]) if ids else None

    def require_snapshot(self, table: str, column: str) -> Snapshot:
        snap = self.current_snapshot(table, column)
        if snap is None:
            raise IndexNotFoundError(f"table {table!r} has no index on column {column!r}")
        return snap

    def list_indexes(self, table: str) -> list[Snapshot]:
        """Current snapshot of every indexed column of the table."""
        self.get_table(table)
        out = []
        for p in self.storage.list(layout.indexes_dir(table)):
            snap = self.current_snapshot(table, p.rstrip("/").rsplit("/", 1)[-1])
            if snap is not None:
                out.append(snap)
        return sorted(out, key=lambda s: s.column)

    def commit(self, table: str, column: str, expected_snapshot_id: int | None, snapshot: Snapshot) -> Snapshot:
        """Make `snapshot` current if the current snapshot is still `expected_snapshot_id` (None = none).

        Returns the stored snapshot (with its new id and parent_id).
        Raises:
            CommitConflictError: another commit happened since `expected_snapshot_id` was read.
        """
        current = self.snapshot_ids(table, column)
        latest = current[-1] if current else None
        if latest != expected_snapshot_id:
            raise CommitConflictError(
                f"index {table}.{column}: expected snapshot {expected_snapshot_id}, current is {latest}")
        new_id = (expected_snapshot_id or 0) + 1
        stored = replace(snapshot, id=new_id, parent_id=expected_snapshot_id, table=table, column=column,
                         created_at=now())
        if not self.storage.write_if_absent(layout.snapshot_json(table, column, new_id), _dumps(stored.to_dict())):
            raise CommitConflictError(f"index {table}.{column}: snapshot {new_id} was committed by another writer")
        return stored

    def drop_index(self, table: str, column: str) -> None:
        """Remove the index: its snapshots and all its files."""
        self.require_snapshot(table, column)
        self.storage.delete(layout.index_root(table, column), recursive=True)

    def index_dir(self, table: str, column: str) -> str:
        """Resolved directory under which the index files of (table, column) are written."""
        return self.storage.resolve(layout.data_dir(table, column))

    def job_index_dir(self, table: str, column: str, job_id: str) -> str:
        return self.storage.resolve(layout.job_data_dir(table, column, job_id))

    def referenced_files(self, table: str, column: str) -> set[str]:
        """Resolved paths of index files named by any retained snapshot."""
        out: set[str] = set()
        for sid in self.snapshot_ids(table, column):
            out.update(self.storage.resolve(f.path) for f in self.get_snapshot(table, column, sid).files)
        return out

    def collect_garbage(self, table: str, column: str, *, keep_job: str | None = None) -> list[str]:
        """Delete index files no snapshot references, except those of live jobs; returns what was deleted.

        A job counts as live while its record is queued/running and its process (pid) still exists.
        """
        live_jobs = {j.id for j in self.active_jobs(table, column)}
        if keep_job:
            live_jobs.add(keep_job)
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
        self.storage.write_atomic(layout.job_json(job.id), _dumps(job.to_dict()))
        return job

    def get_job(self, job_id: str) -> JobRecord:
        doc = self._read_json(layout.job_json(job_id))
        if doc is None:
            raise JobNotFoundError(f"job {job_id!r} not found")
        return JobRecord.from_dict(doc)

    def list_jobs(self) -> list[JobRecord]:
        out = []
        for p in self.storage.list(layout.jobs_dir()):
            name = p.rstrip("/").rsplit("/", 1)[-1]
            if name.endswith(".json") and not name.startswith("."):
                doc = self._read_json(p)
                if doc is not None:
                    out.append(JobRecord.from_dict(doc))
        return sorted(out, key=lambda j: j.created_at)

    def update_job(self, job_id: str, **changes: Any) -> JobRecord:
        """Read-modify-write of one job record (only its own process and the service write it)."""
        job = self.get_job(job_id).with_(**changes)
        return self.put_job(job)

    def write_progress(self, job_id: str, progress: dict[str, Any]) -> None:
        job = self.get_job(job_id)
        self.put_job(job.with_(progress={**job.progress, **progress}))

    def read_progress(self, job_id: str) -> dict[str, Any]:
        return dict(self.get_job(job_id).progress)

    def active_jobs(self, table: str, column: str | None = None) -> list[JobRecord]:
        """Queued/running jobs of (table, column), or of any column when None, whose process is alive or
        has not recorded itself yet (a queued record the service is starting): the one definition of
        "a build is running"."""
        return [j for j in self.list_jobs()
                if j.table == table and (column is None or _same_columns(j.column, column)) and j.active
                and (j.pid is None or job_process_alive(j))]

    def reap_dead_jobs(self, table: str, column: str) -> list[str]:
        """Mark queued/running jobs whose process is gone (killed, crashed host process) as failed."""
        dead = [j for j in self.list_jobs()
                if j.table == table and _same_columns(j.column, column) and j.active and j.pid is not None
                and not job_process_alive(j)]
        for j in dead:
            self.put_job(j.with_(state="failed", finished_at=now(),
                                 error=j.error or f"job process {j.pid} exited without finishing"))
        return [j.id for j in dead]

    def check_no_active_build(self, table: str, column: str | None = None, *,
                              except_job: str | None = None) -> None:
        """Raises BuildInProgressError (naming the job) if another live job builds the same index, or with
        `column` None any index of the table.

        From inside a job (`except_job` = its own id) only running jobs that started earlier count, so of
        two jobs started together exactly one goes ahead; from the service any queued/running job counts.
        """
        others = [j for j in self.active_jobs(table, column) if j.id != except_job]
        if except_job is not None:
            me = self.get_job(except_job)
            mine = (me.started_at or now(), me.id)
            others = [j for j in others if j.state == "running" and (j.started_at or 0.0, j.id) < mine]
        if others:
            what = f"index {table}.{column}" if column is not None else f"table {table!r}"
            more = f" (and {[j.id for j in others[1:]]})" if len(others) > 1 else ""
            raise BuildInProgressError(f"{what} is already being built by job {others[0].id}{more}",
                                       job_id=others[0].id)


def _same_columns(a: str, b: str) -> bool:
    """Two jobs' index_column values name a common column (Paimon builds may take a comma list)."""
    return a == b or bool(set(a.split(",")) & set(b.split(",")))
