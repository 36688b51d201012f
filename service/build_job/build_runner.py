"""The build runner: a process that runs the build jobs the service hands it, each in its own thread, keeping
one Spark session (and its Python workers) up between builds.

    python -m service.build_job.build_runner --dir DIR [--master M --prewarm] [--idle S] [--job ID]

The service (service.server.job_runner) starts it and talks to it through DIR only (service.jobs.build_inbox),
so nothing the service does waits on it. Each build is service.build_job.main.run_job, which records the job's
state, progress and result in the catalog, as a build process always did. A byte on stdin wakes the runner
at once (it also polls); EOF on stdin means the service is gone: the runner takes nothing new, finishes the
builds it has and exits. SIGTERM cancels every build it runs and exits. When its Spark JVM dies (its builds
fail saying so) it takes nothing new and exits with status 3 once they have ended: the service starts another.

Two ways the service uses it: one warm runner for every build (`--prewarm`: start the Spark session and its
Python workers before the first build arrives; `--idle S`: give the memory back after S seconds without a
build), or one runner per build (`--job ID`: that build only, then exit), the isolation of a process per build.
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import select
import signal
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from index_format.errors import BgixError, InvalidOptionError
from service.build_job.engines import job_group, jvm_exit, runner_session, warm_workers
from service.build_job.job_log_capture import FORMAT, stderr_file
from service.build_job.main import parse_spec, record_failure, run_job
from service.build_job.warm_up import warm_up_build
from service.jobs.build_inbox import FAILED, READY, STARTING, STOPPED, WARM, BuildInbox
from service.jobs.jobspec import JobSpec

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger("bgix.build_runner")
_POLL_S = 0.05        # inbox / cancel poll when no wake-up byte arrives
_STOP_GRACE_S = 30.0  # how long a SIGTERM waits for cancelled builds to record themselves


@dataclass
class _Running:
    spec: JobSpec
    thread: threading.Thread
    cancel: threading.Event = field(default_factory=threading.Event)


class BuildRunner:
    """The runner's loop: claim specs, run each build in a thread on the shared session, honour cancels."""

    def __init__(self, root: Path, *, master: str | None, idle_s: float, only_job: str | None) -> None:
        self.box = BuildInbox(root)
        self.master = master
        self.idle_s = idle_s
        self.only_job = only_job
        self.running: dict[str, _Running] = {}
        self.builds = 0
        self.draining = False        # the service is gone (stdin EOF): take nothing new
        self.stopping = False        # SIGTERM: cancel everything and leave
        self.jvm_dead = False        # the session's JVM died: take nothing new, leave once the builds have failed
        self._spark: SparkSession | None = None
        self._app_id: str | None = None   # read once: the state file is written even after the JVM died
        self.sessions = 0            # Spark sessions this runner started (one, unless a stop made it start again)
        self._spark_lock = threading.Lock()
        self._idle_since = time.monotonic()
        self._state = STARTING
        self._error: str | None = None
        self._state_lock = threading.Lock()   # the prewarm thread writes the state too
        self.warming = False                  # the idle clock starts once the warm-up is over
        self.output = stderr_file()           # where Spark's JVM logs: each build keeps its part (job logs)

    # ---- the Spark session ----------------------------------------------------------------------
    def session(self, master: str) -> SparkSession:
        """The runner's one session (created on first use); every build of this runner uses the same master."""
        with self._spark_lock:
            self.master = self.master or master
            if master != self.master:
                raise InvalidOptionError(f"this build runner's Spark session is for master {self.master!r}, "
                                         f"the job spec names {master!r}")
            if self._spark is None:
                self._spark = runner_session(self.master)
                self._app_id = self._spark.sparkContext.applicationId
                self.sessions += 1
            return self._spark

    def prewarm(self) -> None:
        """Start the session and its Python workers now, so the first build pays neither."""
        assert self.master is not None
        try:
            spark = self.session(self.master)
            warm_workers(spark)
            warm_up_build(spark, self.master)
        except Exception as exc:  # builds will report it too; the runner stays up for local-engine builds
            log.exception("could not warm the Spark session")
            self._error = f"{type(exc).__name__}: {exc}"
            self.write_state(FAILED)
        else:
            self.write_state(WARM)
        finally:
            self._idle_since = time.monotonic()
            self.warming = False

    def write_state(self, state: str) -> None:
        with self._state_lock:
            self._state = state
            if self.draining or self.only_job is not None:
                return   # a successor may own the directory's state by now; a one-build runner has none to tell
            self.box.write_state({"pid": os.getpid(), "state": state, "master": self.master, "builds": self.builds,
                                  "running": sorted(self.running), "sessions": self.sessions, "spark_app": self._app_id,
                                  "error": self._error})

    # ---- the loop -------------------------------------------------------------------------------
    def serve(self) -> int:
        while True:
            self._wait_for_wake()
            if self.stopping:
                return self._stop()
            self._handle_cancels()
            # reap first: a build that just failed because the JVM died must stop this runner taking the next one
            self._reap()
            waiting = [] if self.draining or self.jvm_dead else self._waiting()
            if waiting and not self._jvm_died():
                self._claim_new(waiting)
            if self.running:
                continue
            if self.jvm_dead:   # exit non-zero: the service starts another runner for the builds still waiting
                return self._leave(code=3)
            if self.draining or (self.only_job is not None and self.builds):
                return self._leave()
            if (self.idle_s >= 0 and not self.warming and time.monotonic() - self._idle_since > self.idle_s
                    and not self._waiting()):
                log.info("build runner idle for %.0f s: exiting to give its memory back", self.idle_s)
                return self._leave()

    def _wait_for_wake(self) -> None:
        if self.draining:
            time.sleep(_POLL_S)
            return
        try:
            ready, _, _ = select.select([sys.stdin.buffer], [], [], _POLL_S)
        except (OSError, ValueError):   # no usable stdin (started by hand): poll only
            time.sleep(_POLL_S)
            return
        if ready and not os.read(sys.stdin.fileno(), 4096):
            log.info("the service is gone: finishing %d build(s), taking no new ones", len(self.running))
            self.draining = True

    def _waiting(self) -> list[Path]:
        specs = self.box.specs()
        return [p for p in specs if p.stem == self.only_job] if self.only_job is not None else specs

    def _claim_new(self, waiting: list[Path]) -> None:
        for path in waiting:
            if self.only_job is not None and self.builds:
                return
            claimed = self.box.claim(path)
            if claimed is not None:
                self._start(claimed)

    def _start(self, claimed: Path) -> None:
        try:
            raw = json.loads(claimed.read_text())
            spec = parse_spec(raw)   # records a bad spec in its job record
        except Exception:
            log.exception("unreadable job spec %s", claimed.name)
            claimed.unlink(missing_ok=True)
            return
        run = _Running(spec, threading.Thread(target=self._run, args=(spec, claimed), name=f"build-{spec.job_id}",
                                              daemon=True))
        self.running[spec.job_id] = run
        self.builds += 1
        # before the record says running: a runner killed from then on has named the job in its output (the log
        # the service keeps for a build whose runner died, service.server.job_runner)
        log.info("job %s: starting (table %s, columns %s)", spec.job_id, spec.table, ",".join(spec.columns))
        if spec.job_id in self.box.cancel_requests():
            run.cancel.set()
        run.thread.start()
        self.write_state(self._state)

    def _run(self, spec: JobSpec, claimed: Path) -> None:
        run = self.running[spec.job_id]
        try:
            try:
                spark = self.session(spec.spark_master) if spec.engine != "local" else None
            except Exception as exc:   # e.g. no Java: the job must not stay queued
                record_failure(spec, exc)
                raise
            run_job(spec, spark, cancel=run.cancel, runner_output=self.output)
            log.info("job %s: done", spec.job_id)
        except BaseException as exc:  # recorded in the job record by run_job; the runner goes on
            # an unexpected failure keeps its traceback in the runner's log (a BgixError names its problem)
            log.warning("job %s: %s: %s", spec.job_id, type(exc).__name__, exc,
                        exc_info=not isinstance(exc, (BgixError, KeyboardInterrupt)))
        finally:
            self.box.withdraw(spec.job_id)

    def _handle_cancels(self) -> None:
        for job_id in self.box.cancel_requests():
            run = self.running.get(job_id)
            if run is not None and not run.cancel.is_set():
                self._cancel(run)
            elif run is None and not self.box.is_waiting(job_id):
                self.box.withdraw(job_id)   # not ours, or already over (the record says cancelled)

    def _cancel(self, run: _Running) -> None:
        log.info("job %s: cancelling", run.spec.job_id)
        run.cancel.set()
        if self._spark is not None:
            self._spark.sparkContext.cancelJobGroup(job_group(run.spec.job_id))

    def _reap(self) -> None:
        ended = [job_id for job_id, run in self.running.items() if not run.thread.is_alive()]
        for job_id in ended:
            self.running.pop(job_id)
        if ended:
            self._idle_since = time.monotonic()
            self._jvm_died()
            self.write_state(self._state)

    def _jvm_died(self) -> bool:
        """Whether the session's JVM has died (checked before every claim, not only when a build ends: it can die
        between builds too). A new session needs a new process, so such a runner takes no new build."""
        if self._spark is not None and not self.jvm_dead:
            how = jvm_exit(self._spark)
            if how is not None:   # its builds failed saying so
                log.error("the Spark JVM of this build runner died (%s): taking no new build", how)
                self.jvm_dead = True
                self._error = f"Spark JVM died ({how})"
                self.write_state(self._state)
        return self.jvm_dead

    def _stop(self) -> int:
        for run in self.running.values():
            self._cancel(run)
        deadline = time.monotonic() + _STOP_GRACE_S
        for run in list(self.running.values()):
            run.thread.join(timeout=max(0.0, deadline - time.monotonic()))
        return self._leave()

    def _leave(self, code: int = 0) -> int:
        self.write_state(STOPPED)
        if self._spark is not None and not self.jvm_dead:
            try:
                self._spark.stop()
            except Exception:
                log.warning("could not stop the Spark session", exc_info=True)
        return code


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m service.build_job.build_runner",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--dir", required=True, type=Path, help="the runner directory (inbox/, claimed/, cancel/)")
    parser.add_argument("--master", default=None, help="Spark master of the runner's session")
    parser.add_argument("--prewarm", action="store_true", help="start the session and its workers now")
    parser.add_argument("--idle", type=float, default=-1.0, help="exit after this many idle seconds (<0: never)")
    parser.add_argument("--job", default=None, help="run this job only, then exit")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format=FORMAT)
    runner = BuildRunner(args.dir, master=args.master, idle_s=args.idle, only_job=args.job)

    def on_term(_signum: int, _frame: Any) -> None:
        runner.stopping = True

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)
    runner.write_state(STARTING)
    if args.prewarm and args.master:
        runner.warming = True
        threading.Thread(target=runner.prewarm, name="prewarm", daemon=True).start()
    else:
        runner.write_state(READY)
    return runner.serve()


if __name__ == "__main__":
    sys.exit(main())
