"""The build-runner processes the service starts (service.build_job.build_runner): one warm runner for every build
(BGIX_BUILD_RUNNER=warm, the default) or one runner per build (process), and how a spec and a cancel reach them.

Nothing here waits on a runner: a spec is a file in the runner directory (service.jobs.build_inbox) and a
wake-up byte on the runner's stdin, written without blocking. The runner's stdin is a pipe the service holds:
when the service goes away (exit, crash, kill -9) the runner reads EOF, finishes the builds it has, takes no new
ones and exits. pyspark and service.build_job are never imported here.
"""
from __future__ import annotations

import fcntl
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from service.server.settings import Settings
from service.jobs.build_inbox import FAILED, READY, WARM, BuildInbox
from service.jobs.liveness import process_alive

log = logging.getLogger("bgix.jobs")
_LOG_TAIL = 2000


class RunnerProcess:
    """One runner process the service started."""

    def __init__(self, proc: subprocess.Popen[bytes], log_path: Path, job: str | None) -> None:
        self.proc = proc
        self.log_path = log_path
        self.job = job              # a runner for this one build (process mode), else None
        self.seen_dead = False
        fd = proc.stdin.fileno() if proc.stdin is not None else None
        if fd is not None:
            fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_NONBLOCK)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None

    def wake(self) -> None:
        """Tell the runner to look at its directory now (it polls anyway: a full or closed pipe is fine)."""
        if self.proc.stdin is None or self.proc.stdin.closed:
            return
        try:
            self.proc.stdin.write(b"\n")
            self.proc.stdin.flush()
        except (BlockingIOError, BrokenPipeError, OSError, ValueError):
            pass

    def release(self) -> None:
        """The service goes: the runner finishes what it has and exits (EOF on its stdin)."""
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            try:
                self.proc.stdin.close()
            except OSError:
                pass

    def reap_later(self) -> None:
        """A daemon thread waits for the process, so it is neither a zombie nor a Popen collected while running."""
        threading.Thread(target=self.proc.wait, name=f"reap-runner-{self.pid}", daemon=True).start()

    def terminate(self) -> None:
        """SIGTERM: the runner cancels every build it runs and exits."""
        try:
            os.kill(self.proc.pid, signal.SIGTERM)
        except OSError:
            pass

    def output(self, limit: int = 1 << 20) -> str:
        """The last `limit` bytes the runner wrote (its stdout and stderr: Spark's log too), as text."""
        try:
            with open(self.log_path, "rb") as fh:
                end = fh.seek(0, os.SEEK_END)
                fh.seek(max(0, end - limit))
                return fh.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def log_tail(self) -> str:
        return self.output(_LOG_TAIL).strip()


class BuildRunners:
    """Starts runner processes on one runner directory and hands them specs and cancels."""

    def __init__(self, root: Path, settings: Settings, *, owner: Callable[[], bool] = lambda: True) -> None:
        self.box = BuildInbox(root)
        self.settings = settings
        self.warm_mode = settings.build_runner == "warm"
        self._owner = owner           # worker groups: only the job runner's worker starts runners
        self.warm: RunnerProcess | None = None
        self.processes: list[RunnerProcess] = []
        self._started = time.monotonic()
        self._warmed = False          # warmed once: later cold starts (after an idle exit) do not gate readiness
        self._closing = False

    # ---- starting runners -------------------------------------------------------------------------
    def start(self) -> None:
        """With the service: start the warm runner now when prewarming (its session warms meanwhile)."""
        if self.warm_mode and self.settings.build_prewarm and self._owner():
            self.warm_runner()

    def warm_runner(self) -> RunnerProcess:
        """The live warm runner, started when there is none (a cold start: the session warms on demand)."""
        if self.warm is None or not self.warm.alive():
            self.warm = self._spawn(job=None)
        return self.warm

    def _spawn(self, job: str | None) -> RunnerProcess:
        s = self.settings
        args = [sys.executable, "-m", "service.build_job.build_runner", "--dir", str(self.box.root)]
        if job is not None:
            args += ["--job", job]
        else:
            args += ["--idle", str(s.build_idle_s)]
        if s.build_engine == "spark":
            args += ["--master", s.spark_master]
            if job is None and s.build_prewarm:
                args.append("--prewarm")
        # Spark's environment defaults (its Python, SPARK_LOCAL_IP) are set by the runner itself before its JVM
        # starts (service.build_job.engines.spark_process_env, shared with `bgix build`)
        env = dict(os.environ)
        log_path = self.box.root / f"runner-{job or 'warm'}-{time.time_ns()}.log"
        with open(log_path, "wb") as out:
            proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=out, stderr=subprocess.STDOUT,
                                    start_new_session=True, env=env)
        runner = RunnerProcess(proc, log_path, job)
        self.processes.append(runner)
        log.info("build runner %s started (%s)", proc.pid, f"job {job}" if job else "warm")
        return runner

    # ---- specs and cancels ------------------------------------------------------------------------
    def submit(self, job_id: str, spec_json: str) -> RunnerProcess:
        """Hand a spec to a runner; returns the runner that will run it (started here when needed)."""
        self.box.put_spec(job_id, spec_json)
        runner = self.host_for_waiting(job_id)
        runner.wake()
        return runner

    def host_for_waiting(self, job_id: str) -> RunnerProcess:
        """The runner that takes a waiting spec: the warm one (started when there is none), or one of its own.
        Also for a spec still waiting after the runner it was given to ended (an idle exit's race)."""
        return self.warm_runner() if self.warm_mode else self._spawn(job=job_id)

    def by_pid(self, pid: int | None) -> RunnerProcess | None:
        """The live runner this service started with that pid."""
        return next((r for r in self.processes if r.pid == pid and r.alive()), None)

    def cancel(self, job_id: str, runner: RunnerProcess | None) -> None:
        self.box.request_cancel(job_id)
        if runner is not None:
            runner.wake()

    # ---- the watcher's part -----------------------------------------------------------------------
    def poll(self) -> None:
        """Reap ended runner processes (their logs go the second time they are seen ended, after the job
        watcher read their tail); restart a warm runner that crashed; start one for specs left waiting."""
        for runner in list(self.processes):
            if runner.alive():
                continue
            if runner.seen_dead:
                self.processes.remove(runner)
                runner.release()   # its stdin pipe: the process is gone, the pipe is ours to close
                runner.log_path.unlink(missing_ok=True)
                continue
            runner.seen_dead = True
            rc = runner.proc.returncode
            if rc != 0 and not self._closing:
                log.warning("build runner %s exited with code %s: %s", runner.pid, rc, runner.log_tail()[-500:])
                if runner is self.warm and self.settings.build_prewarm and self._owner():
                    self.warm_runner()   # a warm service stays warm
        if self.warm_mode and self._owner() and not self._closing and self.box.waiting():
            if self.warm is None or not self.warm.alive():
                self.warm_runner()

    def readiness(self) -> tuple[bool, str]:
        """(ready, what the builds' side says): not ready while the first warm-up of a prewarming service runs
        (bounded by build_warmup_s), so a client's first build finds the session warm."""
        if not self.warm_mode:
            return True, "a process per build"
        state = self.box.state() or {}
        pid = state.get("pid")
        if state and not (isinstance(pid, int) and pid > 0 and process_alive(pid)):
            state = {"state": "no runner"}   # it exited (idle) or died: the next build starts one
        name = str(state.get("state") or "no runner")
        if state.get("error"):
            name = f"{name}: {state['error']}"
        if not self.settings.build_prewarm:
            return True, name
        if state.get("state") in (WARM, READY, FAILED):
            self._warmed = True
        if self._warmed or time.monotonic() - self._started > self.settings.build_warmup_s:
            return True, name
        return False, f"warming ({name})"

    def close(self, *, kill: bool, busy: set[int]) -> None:
        """The service stops: runners finish what they have and exit (kill: cancel it all). Waits a little for
        runners running nothing (`busy`: pids of runners with builds still running), so none is left a zombie."""
        self._closing = True
        for runner in self.processes:
            runner.terminate() if kill else runner.release()
        deadline = time.monotonic() + 10.0
        for runner in self.processes:
            if runner.pid in busy and not kill:
                runner.reap_later()   # left to finish its builds (by design)
                continue
            try:
                runner.proc.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                log.warning("build runner %s did not exit", runner.pid)
                runner.reap_later()
            runner.release()   # a terminated runner's stdin pipe too
