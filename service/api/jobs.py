"""Start, cancel and track build jobs as separate processes; one build per index at a time (409).

The job process (`python -m service.build_job.main --spec SPEC.json`) writes its own progress and final
state to the catalog; this module only spawns, reaps and marks jobs whose process died. pyspark is never
imported here (the web process stays Spark-free); service.build_job is not imported either.
"""
from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from index_format.storage import Storage
from service.api.errors import UnknownTableColumnError
from service.api.settings import Settings
from service.catalog import Catalog
from service.catalog.jobspec import JobSpec, check_partitions_match, resolve_options
from service.catalog.liveness import job_process_alive, process_alive
from service.catalog.model import JobRecord, Table, now
from service.catalog.partitions import check_keys, check_matches, check_readable
from service.catalog.view_source import load_view_source

log = logging.getLogger("bgix.jobs")
_LOG_TAIL = 2000
_EXIT_GRACE = 10.0  # seconds close() waits for finished jobs' processes to exit


@dataclass
class _Tracked:
    job_id: str
    table: str
    column: str
    proc: subprocess.Popen[bytes] | None   # None: adopted from an earlier service run (pid only)
    pid: int
    log_path: Path | None
    cancelled: bool = False
    pid_start: int | None = None            # adopted jobs: the recorded start time of `pid`


class JobRunner:
    """Spawns build processes and reaps them with one watcher thread."""

    def __init__(self, catalog: Catalog, storage: Storage, settings: Settings,
                 on_finished: Callable[[str], None]) -> None:
        self.catalog = catalog
        self.storage = storage
        self.settings = settings
        self._on_finished = on_finished
        self._tracked: dict[str, _Tracked] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._spec_dir = Path(tempfile.mkdtemp(prefix="bgix-jobs-"))

    # ---- lifecycle --------------------------------------------------------------------------
    def start_watcher(self) -> None:
        self.recover()
        self._thread = threading.Thread(target=self._watch, name="bgix-job-watcher", daemon=True)
        self._thread.start()

    def close(self, *, kill: bool = False) -> None:
        """Stop watching; with kill=True also terminate running job processes (tests)."""
        if kill:
            for t in list(self._tracked.values()):
                self._signal(t, signal.SIGTERM)
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        # Jobs whose record is final are only exiting: wait for them (bounded) so none is left a zombie.
        # Builds still running keep running detached (own session) and are adopted on the next start.
        deadline = time.monotonic() + _EXIT_GRACE
        for t in list(self._tracked.values()):
            if t.proc is None or t.proc.poll() is not None or self._job_active(t.job_id):
                continue
            try:
                t.proc.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                log.warning("job %s process %s did not exit after its record was final", t.job_id, t.pid)
        self._reap_all()
        # Spec files may hold storage credentials: remove them unless a detached build still runs from them.
        if not any(self._job_active(t.job_id) for t in self._tracked.values()):
            shutil.rmtree(self._spec_dir, ignore_errors=True)

    def _job_active(self, job_id: str) -> bool:
        try:
            return self.catalog.get_job(job_id).active
        except Exception:  # an unreadable record: treat the job as still running
            return True

    def recover(self) -> None:
        """After a restart: queued/running records whose process is gone become failed (not lost)."""
        for job in self.catalog.list_jobs():
            if not job.active:
                continue
            if job.pid is not None and job_process_alive(job):
                with self._lock:
                    self._tracked[job.id] = _Tracked(job.id, job.table, job.column, None, job.pid, None,
                                                     pid_start=job.pid_start)
                continue
            self._mark_failed(job.id, "build process is gone (service restarted while the job ran)")

    # ---- API operations ---------------------------------------------------------------------
    def start(self, table: str, column: str, index_type: str, partitions: Any, options: Any) -> JobRecord:
        """Validate, record and spawn a build job.

        Everything the job could only fail on is refused here (400), before a process is spawned.
        Raises:
            TableNotFoundError; InvalidOptionError (from JobSpec: column name, index type, spec §7.1
            options and their ranges, a read-only codec, rebuild on a Paimon table, malformed partitions or
            ones the table does not have or that match no data file; options that differ from the existing
            index's without rebuild); UnknownTableColumnError
            listing the columns of the table's data files; BuildInProgressError naming the running job.
        """
        t = self.catalog.get_table(table)
        spec = JobSpec(
            job_id=uuid.uuid4().hex, warehouse=self.storage.root, table=table, index_column=column,
            index_type=index_type, options=options, partitions=partitions,
            storage_options=dict(self.settings.storage_options), allowed_roots=list(self.storage.allowed_roots),
            spark_master=self.settings.spark_master, engine=self.settings.build_engine, table_format=t.format,
        )
        spec.check_table(t)
        known = self.catalog.source_columns(table)
        for c in spec.columns:
            if known is not None and c not in known:
                raise UnknownTableColumnError(table, c, known)
        column = spec.index_column
        if spec.is_paimon:
            self._check_paimon(t, spec)
        else:
            check_partitions_match(self.storage, t, spec.partitions)
            # The map as last scanned; the job rescans and checks again (service.build_job.plan).
            check_readable(self.catalog.unreadable_files(table), t, spec.partitions)
            # Incremental builds keep the index's options; differing ones need rebuild (jobspec.resolve_options).
            previous = self.catalog.current_snapshot(table, column)
            spec = replace(spec, options=resolve_options(options, previous.options if previous else None, column))
        with self._lock:  # one check-then-record at a time, so two requests cannot both pass
            self.catalog.check_no_active_build(table, column)
            self.catalog.put_job(JobRecord(id=spec.job_id, table=table, column=column, spec=spec.public_dict()))
            try:
                tracked = self._spawn(spec)
            except BaseException as exc:
                # A queued record without a process would block this index with 409 until a restart.
                self._mark_failed(spec.job_id, f"could not start the build process: {type(exc).__name__}: {exc}")
                (self._spec_dir / f"{spec.job_id}.json").unlink(missing_ok=True)
                raise
            self._tracked[spec.job_id] = tracked
        # The job process records its own pid and state when it starts (service.build_job.main);
        # writing the pid here too would race with that read-modify-write.
        return self.catalog.get_job(spec.job_id)

    def _check_paimon(self, t: Table, spec: JobSpec) -> None:
        """What the Paimon build would fail on, refused now: column types, partition keys, and partition
        specs that match no data file."""
        from service.catalog.paimon import open_paimon_table
        from service.catalog.paimon.build_plan import check_build_columns
        pt = open_paimon_table(t.location, storage_options=self.storage.storage_options)
        check_keys(spec.partitions, list(pt.table.partition_keys), t.name)
        check_build_columns(pt, spec.columns, spec.partitions)
        if spec.partitions:
            check_matches(spec.partitions, (f.partition for f in load_view_source(self.catalog, t.name).data_files),
                          t.name)

    def cancel(self, job_id: str) -> JobRecord:
        """Terminate a queued/running job and mark it cancelled; finished jobs are returned unchanged."""
        job = self.catalog.get_job(job_id)
        if not job.active:
            return job
        with self._lock:
            tracked = self._tracked.get(job_id)
            if tracked is not None:
                tracked.cancelled = True
        if tracked is not None:
            self._signal(tracked, signal.SIGTERM)
        elif job.pid is not None and job_process_alive(job):
            try:
                os.killpg(job.pid, signal.SIGTERM)
            except OSError:
                pass
        return self.catalog.update_job(job_id, state="cancelled", error="cancelled by request",
                                       finished_at=now())

    def state_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for job in self.catalog.list_jobs():
            counts[job.state] = counts.get(job.state, 0) + 1
        return counts

    # ---- internals --------------------------------------------------------------------------
    def _spawn(self, spec: JobSpec) -> _Tracked:
        job_id, table, column = spec.job_id, spec.table, spec.index_column
        spec_path = self._spec_dir / f"{job_id}.json"
        spec_path.write_text(json.dumps(spec.to_dict()))
        os.chmod(spec_path, 0o600)  # may hold storage credentials
        log_path = self._spec_dir / f"{job_id}.log"
        env = dict(os.environ)
        env.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        env.setdefault("PYSPARK_PYTHON", sys.executable)
        env.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
        with open(log_path, "wb") as log_file:
            proc = subprocess.Popen(
                [sys.executable, "-m", "service.build_job.main", "--spec", str(spec_path)],
                stdin=subprocess.DEVNULL, stdout=log_file, stderr=subprocess.STDOUT,
                start_new_session=True, env=env,
            )
        log.info("job %s started (pid %s) for %s.%s", job_id, proc.pid, table, column)
        return _Tracked(job_id, table, column, proc, proc.pid, log_path)

    def _signal(self, t: _Tracked, sig: int) -> None:
        try:
            os.killpg(t.pid, sig)  # the whole session: Spark's JVM and Python workers too
        except OSError:
            pass

    def _watch(self) -> None:
        while not self._stop.wait(self.settings.job_poll_seconds):
            try:
                self._reap_all()
            except Exception:  # the watcher must survive a briefly unreadable catalog
                log.exception("job watcher iteration failed")

    def _reap_all(self) -> None:
        with self._lock:
            items = list(self._tracked.values())
        for t in items:
            if t.proc is not None:
                rc = t.proc.poll()
                if rc is None:
                    continue
            elif process_alive(t.pid, t.pid_start):
                continue
            else:
                rc = None
            self._finish(t, rc)
            with self._lock:
                self._tracked.pop(t.job_id, None)

    def _finish(self, t: _Tracked, rc: int | None) -> None:
        job = self.catalog.get_job(t.job_id)
        if job.active:
            if t.cancelled:
                self.catalog.update_job(t.job_id, state="cancelled", finished_at=now())
            else:
                self._mark_failed(t.job_id, f"build process exited with code {rc} without finishing"
                                  + self._log_tail(t))
        elif job.state == "failed" and not job.error:
            self.catalog.update_job(t.job_id, error=f"build failed (exit code {rc})" + self._log_tail(t))
        log.info("job %s ended: exit code %s", t.job_id, rc)
        # The spec may hold storage credentials: it lives only as long as its process.
        (self._spec_dir / f"{t.job_id}.json").unlink(missing_ok=True)
        if t.log_path is not None:
            t.log_path.unlink(missing_ok=True)
        self._on_finished(t.table)

    def _mark_failed(self, job_id: str, error: str) -> None:
        self.catalog.update_job(job_id, state="failed", error=error, finished_at=now())

    @staticmethod
    def _log_tail(t: _Tracked) -> str:
        if t.log_path is None or not t.log_path.exists():
            return ""
        data = t.log_path.read_bytes()[-_LOG_TAIL:].decode("utf-8", "replace").strip()
        return f"; output tail: {data}" if data else ""
