"""Start, cancel and track build jobs, run by build-runner processes apart from the web process; one build per
index at a time (409).

A build runner (service.build_job.build_runner, started and fed by service.server.build_runners: one warm runner
for every build, or one per build) writes each job's progress and final state to the catalog; this module
records, hands over, cancels and reaps jobs, and marks failed the jobs whose runner died. pyspark is never
imported here (the web process stays Spark-free); service.build_job is not imported either.

With `bgix serve --workers N` (a WorkerGroup, service.server.worker_group) every worker has a JobRunner but
only the one holding the group's runner lock starts runners, tracks, reaps and recovers builds. Any
worker validates and records a job under the group's build lock (one build per index across workers);
a worker that is not the job runner leaves the spec in the group's `pending/` directory, which the job
runner hands to its build runner on its next poll. A cancel on another worker reaches the build runner at once
(its directory is in the group's shared one) and leaves a request in `cancel/` for the job runner. When the
job-runner worker exits or dies the kernel releases its lock; its build runner finishes what it runs and
exits; another worker's watcher takes the role over and adopts the builds still running (`recover`).
"""
from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import tempfile
import threading
import time
import weakref
import uuid
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from index_format.options import check_families
from index_format.storage import Storage
from service.server.build_runners import BuildRunners, RunnerProcess
from service.catalog.catalog_errors import UnknownTableColumnError
from service.server.job_log import log_end, log_start
from service.server.settings import Settings
from service.catalog import Catalog
from service.jobs.build_inbox import write_private
from service.catalog.catalog_errors import JobNotFoundError
from service.jobs.job_logs import has_job_log, write_job_log
from service.jobs.jobspec import JobSpec
from service.jobs.liveness import job_process_alive, process_alive
from service.catalog.model import JobRecord, now
from service.tables import TableSources, build_families, check_spec, remove_dead_build_files
from service.jobs.active_builds import check_no_active_build

if TYPE_CHECKING:
    from service.server.worker_group import WorkerGroup

log = logging.getLogger("bgix.jobs")
# Worker groups: a queued record without a pid may belong to a build the previous job runner just spawned
# (its process has not recorded itself yet); a new job runner waits this long before calling it gone.
_ADOPT_GRACE = 30.0
# How often the job runner looks for builds that died mid-way (their in-flight markers) besides at start-up and
# when it reaps a build whose runner died: their unreferenced index files are removed.
_DEAD_BUILD_POLL_S = 30.0


@dataclass
class _Tracked:
    job_id: str
    table: str
    column: str
    host: RunnerProcess | None   # the runner it was handed to; None: adopted from an earlier service (pid only)
    pid: int
    cancelled: bool = False
    pid_start: int | None = None            # adopted jobs: the recorded start time of `pid`
    start_logged: bool = False              # its start line is out (service.server.job_log): once per job


class JobRunner:
    """Hands builds to build runners and reaps them with one watcher thread."""

    def __init__(self, catalog: Catalog, storage: Storage, settings: Settings,
                 on_finished: Callable[[str], None], group: WorkerGroup | None = None) -> None:
        self.catalog = catalog
        self.sources = TableSources(catalog)
        self.storage = storage
        self.settings = settings
        self._on_finished = on_finished
        self._tracked: dict[str, _Tracked] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._group = group
        self._deferred: dict[str, float] = {}   # job id -> when a pid-less queued record counts as gone
        self._cleaning = threading.Lock()       # one dead-build cleanup at a time (service.tables)
        self._next_dead_check = 0.0
        self._spec_dir = group.spec_dir if group is not None else Path(tempfile.mkdtemp(prefix="bgix-jobs-"))
        # An app that never starts (an OpenAPI export, a test's bare create_app) leaves no directory behind; once
        # started, close() decides (a build still running keeps its runner directory).
        self._unused = weakref.finalize(self, shutil.rmtree, str(self._spec_dir), True) if group is None else None
        self.runners = BuildRunners(self._spec_dir / "runner", settings, owner=lambda: self.is_runner)

    @property
    def is_runner(self) -> bool:
        """This process spawns and tracks build processes (always, outside a worker group)."""
        return self._group is None or self._group.is_runner

    # ---- lifecycle --------------------------------------------------------------------------
    def start_watcher(self) -> None:
        if self._unused is not None:
            self._unused.detach()
        if self._group is None:
            self.recover()
            self.runners.start()
        else:
            self._claim_runner()
        self._thread = threading.Thread(target=self._watch, name="bgix-job-watcher", daemon=True)
        self._thread.start()

    def _claim_runner(self) -> None:
        """Worker groups: take the job-runner role when no live worker holds it, then adopt its builds."""
        assert self._group is not None
        if self._group.is_runner or not self._group.try_acquire_runner():
            return
        log.info("worker %s runs the build jobs", os.getpid())
        try:
            self.recover()
            self.runners.start()
        except BaseException:
            self._group.release_runner()   # e.g. the catalog is briefly unreadable: a later poll tries again
            raise

    def close(self, *, kill: bool = False) -> None:
        """Stop watching; runners finish the builds they run (detached: adopted on the next start) and exit;
        with kill=True they cancel them (tests)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        if not self.is_runner:
            return   # a worker that never ran jobs: nothing to reap, the group's files are not its own
        busy = {t.host.pid for t in self._tracked.values() if t.host is not None and self._job_active(t.job_id)}
        self.runners.close(kill=kill, busy=busy)
        self._reap_all()
        if self._group is not None:
            for t in list(self._tracked.values()):   # final records whose process was not seen to end
                if not self._job_active(t.job_id):
                    self._remove_files(t.job_id)
            # Another worker still serving takes the role over and adopts the builds still running;
            # `bgix serve` removes the group directory (with the spec files) when the last worker is gone.
            self._group.release_runner()
            return
        # Spec files may hold storage credentials: remove them unless a detached build still runs from them.
        if not any(self._job_active(t.job_id) for t in self._tracked.values()):
            shutil.rmtree(self._spec_dir, ignore_errors=True)

    def _job_active(self, job_id: str) -> bool:
        try:
            return self.catalog.get_job(job_id).active
        except Exception:  # an unreadable record: treat the job as still running
            return True

    def recover(self) -> None:
        """After a restart: queued/running records whose process is gone become failed (not lost).

        In a worker group this runs when a worker becomes the job runner: jobs still pending in the group
        are left to be spawned, and pid-less queued records of the last few seconds get a grace period
        (their process may not have recorded itself yet).
        """
        for job in self.catalog.list_jobs():
            if not job.active:
                continue
            if job.pid is not None and job_process_alive(job):
                self._adopt(job)
                continue
            if job.pid is None and self.runners.box.is_waiting(job.id):
                with self._lock:   # handed over, not yet taken: a runner takes it
                    self._tracked[job.id] = _Tracked(job.id, job.table, job.column,
                                                     self.runners.host_for_waiting(job.id), 0)
                continue
            if self._group is not None and job.pid is None:
                if (self._group.pending_dir / f"{job.id}.json").exists():
                    continue
                if job.state == "queued" and time.time() - job.created_at < _ADOPT_GRACE:
                    self._deferred[job.id] = time.monotonic() + _ADOPT_GRACE
                    continue
            self._mark_failed(job.id, "build process is gone (service restarted while the job ran)")
        self.clean_dead_builds()

    def clean_dead_builds(self, *, wait: bool = False) -> None:
        """Remove, in a thread of its own, the index files builds that died mid-way left (their in-flight markers
        name a process that is gone; service.tables.remove_dead_build_files); skipped while one runs."""
        self._next_dead_check = time.monotonic() + _DEAD_BUILD_POLL_S
        if not self._cleaning.acquire(blocking=False):
            return

        def clean() -> None:
            try:
                remove_dead_build_files(self.catalog)
            except Exception:
                log.warning("could not clean up after dead builds", exc_info=True)
            finally:
                self._cleaning.release()

        worker = threading.Thread(target=clean, name="bgix-dead-builds", daemon=True)
        worker.start()
        if wait:
            worker.join()

    def _adopt(self, job: JobRecord) -> None:
        with self._lock:
            if job.id not in self._tracked:
                # a running build's start was logged by the service that started it
                self._tracked[job.id] = _Tracked(job.id, job.table, job.column, None, job.pid or 0,
                                                 pid_start=job.pid_start, start_logged=job.started_at is not None)

    def _recheck_deferred(self) -> None:
        """Pid-less records left alone at take-over: adopt them once their process recorded itself."""
        for job_id, deadline in list(self._deferred.items()):
            try:
                job = self.catalog.get_job(job_id)
            except JobNotFoundError:
                self._deferred.pop(job_id, None)
                continue
            if job.active and job.pid is not None and job_process_alive(job):
                self._deferred.pop(job_id, None)
                self._adopt(job)   # reaped and cleaned up like any build from now on
                continue
            if job.active and job.pid is None and time.monotonic() <= deadline:
                continue
            self._deferred.pop(job_id, None)
            if job.active:
                self._mark_failed(job_id, "build process is gone (its job runner exited while it started)")
            self._remove_files(job_id)   # ended unseen: nobody else removes its spec
            self._on_finished(job.table)

    # ---- API operations ---------------------------------------------------------------------
    def start(self, table: str, column: str, index_type: str, partitions: Any, options: Any) -> JobRecord:
        """Validate, record and hand a build job to a build runner.

        Everything the job could only fail on is refused here (400), before a runner sees it.
        Raises:
            TableNotFoundError; InvalidOptionError (from JobSpec: column name, index type, spec §7.1
            options and their ranges, a read-only codec, malformed partitions or ones the table does not have
            or that match no data file; options of another family than the build's; options that differ from
            the existing index's without rebuild; a column type the family cannot hold); UnknownTableColumnError
            listing the columns of the table's data files (none: no data file yet); BuildInProgressError naming
            the running job.
        """
        t = self.catalog.get_table(table)
        spec = check_spec(JobSpec(
            job_id=uuid.uuid4().hex, warehouse=self.storage.root, table=table, index_column=column,
            index_type=index_type, options=options, partitions=partitions,
            storage_options=dict(self.settings.storage_options), allowed_roots=list(self.storage.allowed_roots),
            spark_master=self.settings.spark_master, engine=self.settings.build_engine, table_format=t.format,
        ))
        check_families(options, spec.families.values())
        source = self.sources.open(t)
        known = source.source_columns()
        for c in spec.columns:
            if known is None:   # no data file to hold it (yet): the build would "succeed" having indexed nothing
                raise UnknownTableColumnError(table, c, [], why=f"its location {t.location} holds no data file")
            if c not in known:
                raise UnknownTableColumnError(table, c, known)
        # What the build could only fail on later (partitions, column types, options differing from the
        # index's without rebuild: service.tables), refused now.
        return self.hand_over(source.check_build(spec, options))

    def hand_over(self, spec: JobSpec) -> JobRecord:
        """Record a checked spec as a queued job and hand it to a build runner (start() without the checks).

        Raises:
            BuildInProgressError naming the running job.
        """
        table, column = spec.table, spec.index_column
        # One check-then-record at a time (across the workers of a group too), so two requests cannot both pass.
        with self._lock, self._build_lock():
            check_no_active_build(self.catalog, table, column, families=build_families(spec))
            self.catalog.put_job(JobRecord(id=spec.job_id, table=table, column=column, spec=spec.public_dict()))
            try:
                if self.is_runner:
                    self._tracked[spec.job_id] = self._spawn(spec)
                else:
                    self._enqueue(spec)
            except BaseException as exc:
                # A queued record without a process would block this index with 409 until a restart.
                self._mark_failed(spec.job_id, f"could not start the build: {type(exc).__name__}: {exc}")
                self.runners.box.withdraw(spec.job_id)
                if self._group is not None:
                    (self._group.pending_dir / f"{spec.job_id}.json").unlink(missing_ok=True)
                raise
        # The runner records the job's pid (its own) and state when it starts the build (service.build_job.main);
        # writing the pid here too would race with that read-modify-write.
        return self.catalog.get_job(spec.job_id)

    def cancel(self, job_id: str) -> JobRecord:
        """Stop a queued/running job and mark it cancelled; finished jobs are returned unchanged.

        Its runner cancels it (a runner this service started, or any in a worker group's shared directory). A
        build adopted from an earlier service's runner: that runner gets SIGTERM and cancels all it still runs.
        """
        job = self.catalog.get_job(job_id)
        if not job.active:
            return job
        with self._lock:
            tracked = self._tracked.get(job_id)
            if tracked is not None:
                tracked.cancelled = True
        if tracked is not None:
            self._cancel_tracked(tracked)
        else:
            host = self.runners.by_pid(job.pid)
            if host is not None or self._group is not None:
                self.runners.cancel(job_id, host)   # a runner of this service, or of the group's shared directory
            elif job.pid is not None and job_process_alive(job):
                _terminate(job.pid)
            if self._group is not None:
                # Worker groups: the job runner drops the pending spec, or cancels the build it handed over.
                (self._group.cancel_dir / job_id).touch()
        return self.catalog.update_job(job_id, state="cancelled", error="cancelled by request",
                                       finished_at=now())

    def state_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for job in self.catalog.list_jobs():
            counts[job.state] = counts.get(job.state, 0) + 1
        return counts

    # ---- internals --------------------------------------------------------------------------
    def _build_lock(self) -> Any:
        return self._group.build_lock() if self._group is not None else nullcontext()

    def _enqueue(self, spec: JobSpec) -> None:
        """Worker groups, not the job runner: leave the spec for the job runner to spawn."""
        assert self._group is not None
        final = self._group.pending_dir / f"{spec.job_id}.json"
        tmp = final.with_suffix(".tmp")
        write_private(tmp, json.dumps(spec.to_dict()))
        os.replace(tmp, final)   # whole or not at all: the job runner only reads *.json

    def _spawn(self, spec: JobSpec) -> _Tracked:
        host = self.runners.submit(spec.job_id, json.dumps(spec.to_dict()))   # may hold storage credentials
        return _Tracked(spec.job_id, spec.table, spec.index_column, host, host.pid)

    def _cancel_tracked(self, t: _Tracked) -> None:
        self.runners.cancel(t.job_id, t.host)
        if t.host is not None and t.host.job == t.job_id:
            t.host.terminate()   # a runner of this build only: ending it ends the build at once, wherever it is
        elif t.host is None and self._group is None:
            _terminate(t.pid)   # adopted from an earlier service: its runner reads another directory

    def _spawn_pending(self) -> None:
        """The job runner of a group: spawn the jobs other workers recorded (unless cancelled meanwhile)."""
        assert self._group is not None
        for path in sorted(self._group.pending_dir.glob("*.json")):
            job_id = path.stem
            try:
                job = self.catalog.get_job(job_id)
            except JobNotFoundError:
                path.unlink(missing_ok=True)
                continue
            if job.state != "queued" or job.pid is not None:
                path.unlink(missing_ok=True)
                continue
            with self._lock:
                try:
                    host = self.runners.submit(job_id, path.read_text())
                    self._tracked[job_id] = _Tracked(job_id, job.table, job.column, host, host.pid)
                except Exception as exc:
                    self._mark_failed(job_id, f"could not start the build: {type(exc).__name__}: {exc}")
                    self.runners.box.withdraw(job_id)
                finally:
                    path.unlink(missing_ok=True)

    def _handle_cancels(self) -> None:
        """The job runner of a group: cancel requests that landed on other workers."""
        assert self._group is not None
        for marker in list(self._group.cancel_dir.iterdir()):
            job_id = marker.name
            (self._group.pending_dir / f"{job_id}.json").unlink(missing_ok=True)
            with self._lock:
                tracked = self._tracked.get(job_id)
                first = tracked is not None and not tracked.cancelled
                if tracked is not None:
                    tracked.cancelled = True
            if tracked is not None and first:
                self._cancel_tracked(tracked)
            elif tracked is None:
                self.runners.cancel(job_id, None)   # e.g. adopted and untracked: any runner here may hold it
            marker.unlink(missing_ok=True)

    def _watch(self) -> None:
        while not self._stop.wait(self.settings.job_poll_seconds):
            try:
                if self._group is not None:
                    self._claim_runner()
                    if not self._group.is_runner:
                        continue
                    self._handle_cancels()
                    self._spawn_pending()
                    if self._deferred:
                        self._recheck_deferred()
                self._reap_all()
                self.runners.poll()
                if time.monotonic() >= self._next_dead_check:
                    self.clean_dead_builds()
            except Exception:  # the watcher must survive a briefly unreadable catalog
                log.exception("job watcher iteration failed")

    def _reap_all(self) -> None:
        with self._lock:
            items = list(self._tracked.values())
        for t in items:
            job = self._read_job(t.job_id)
            if job is not None:
                self._note_start(t, job)
            ended, rc = self._ended(t, job)
            if not ended:
                continue
            self._finish(t, rc)
            with self._lock:
                self._tracked.pop(t.job_id, None)

    def _read_job(self, job_id: str) -> JobRecord | None:
        """The job's record; None when it does not read (counted as still running)."""
        try:
            return self.catalog.get_job(job_id)
        except Exception:
            return None

    @staticmethod
    def _note_start(t: _Tracked, job: JobRecord) -> None:
        """Log the job's start once its runner recorded it (the watcher sees every record it tracks)."""
        if not t.start_logged and job.started_at is not None:
            t.start_logged = True
            log_start(job)

    def _ended(self, t: _Tracked, job: JobRecord | None) -> tuple[bool, int | None]:
        """(the job is over, its runner's exit code when the runner died with it)."""
        if job is not None and not job.active:
            return True, None
        if t.host is None:   # adopted: over when its process is gone
            return not process_alive(t.pid, t.pid_start), None
        if t.host.alive():
            return False, None
        # never taken (the runner had just exited idle): re-hand it, unless it is being cancelled (cancelling ends
        # the runner first and records the cancel after; the record may still say queued)
        if self.runners.box.is_waiting(t.job_id) and not t.cancelled:
            t.host = self.runners.host_for_waiting(t.job_id)
            t.pid = t.host.pid
            return False, None
        return True, t.host.proc.returncode

    def _finish(self, t: _Tracked, rc: int | None) -> None:
        job = self.catalog.get_job(t.job_id)
        self._note_start(t, job)
        if job.active:
            if t.cancelled:
                job = self.catalog.update_job(t.job_id, state="cancelled", finished_at=now())
            else:
                # the log first: a client that sees the record failed reads the runner's output at once
                self._keep_runner_output(t)
                job = self._record_failed(t.job_id, f"build runner exited with code {rc} without finishing the "
                                                    "build" + self._log_tail(t))
            self.clean_dead_builds()   # the index files the build had written and never committed
        elif job.state == "failed" and not job.error:
            job = self.catalog.update_job(t.job_id, error=f"build failed (exit code {rc})" + self._log_tail(t))
        log_end(job)
        if rc is not None:
            log.debug("job %s: its runner exited with code %s", t.job_id, rc)
        # The spec may hold storage credentials: it lives only as long as its build. A cancel request stays for
        # the runner (a cancelled record is final before the runner has stopped the build); it clears it.
        self.runners.box.withdraw(t.job_id, cancel=False)
        self._on_finished(t.table)

    def readiness(self) -> tuple[bool, str]:
        """Whether builds are ready to start at full speed (the warm runner is up), and the runner's state."""
        return self.runners.readiness()

    def _remove_files(self, job_id: str) -> None:
        self.runners.box.withdraw(job_id)

    def _mark_failed(self, job_id: str, error: str) -> None:
        """Record the job failed (it ended unseen by any runner) and log its failure line."""
        log_end(self._record_failed(job_id, error))

    def _record_failed(self, job_id: str, error: str) -> JobRecord:
        return self.catalog.update_job(job_id, state="failed", error=error, finished_at=now())

    def _keep_runner_output(self, t: _Tracked) -> None:
        """A build whose runner died keeps the runner's output as its log when it could not write its own."""
        if t.host is None or has_job_log(self.storage, t.job_id):
            return
        try:
            write_job_log(self.storage, t.job_id, "the build runner exited before the build ended; its output:\n"
                          + t.host.output())
        except Exception:
            log.warning("could not keep the runner output of job %s", t.job_id, exc_info=True)

    @staticmethod
    def _log_tail(t: _Tracked) -> str:
        data = t.host.log_tail() if t.host is not None else ""
        return f"; output tail: {data}" if data else ""


def _terminate(pid: int) -> None:
    """SIGTERM to a runner this service did not start: it cancels every build it runs."""
    try:
        os.kill(pid, signal.SIGTERM)
    except OSError:
        pass
