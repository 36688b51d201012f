"""Keep one build's driver-side log beside its job record (service.jobs.job_logs), while it runs and after.

A build runner runs several builds at once, in threads over one Spark session, so a build's log is the log
records of its own thread (everything the build logs, Spark failures of its job group included: the engines
log them there), written every few seconds and when the build ends; plus, with `runner_output` (the runner's
stderr file, where Spark's JVM writes its own log), the part of it written while the build ran, without the
runner's Python log lines (those of this build are above; those of other builds are not this build's).
Imports service.catalog and index_format.storage only.
"""
from __future__ import annotations

import logging
import os
import re
import threading
from pathlib import Path
from types import TracebackType

from index_format.storage import Storage
from service.jobs.job_logs import MAX_BYTES, write_job_log

log = logging.getLogger("bgix.build_job")
FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
_FLUSH_S = 5.0
_RUNNER_TAIL = 256 * 1024   # bytes of the runner's output kept per build
# a Python log line of the runner (logging.basicConfig with FORMAT), as opposed to the JVM's own lines
_PYTHON_LINE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} (?:DEBUG|INFO|WARNING|ERROR|CRITICAL) \S+: ")


def stderr_file() -> Path | None:
    """This process's stderr when it is a regular file (a build runner's, as the service starts it)."""
    try:
        path = Path(os.readlink("/proc/self/fd/2"))
        return path if path.is_file() else None
    except OSError:
        return None


class _ThreadHandler(logging.Handler):
    """Formats the records of one thread into a bounded list of lines (its last ~2 MiB)."""

    def __init__(self, thread: int) -> None:
        super().__init__(logging.INFO)
        self.thread = thread
        self.lines: list[str] = []
        self.size = 0
        self.version = 0
        self.setFormatter(logging.Formatter(FORMAT))

    def filter(self, record: logging.LogRecord) -> bool:
        return record.thread == self.thread

    def emit(self, record: logging.LogRecord) -> None:
        try:
            line = self.format(record) + "\n"
        except Exception:
            self.handleError(record)
            return
        with self.lock or threading.Lock():
            self.lines.append(line)
            self.size += len(line)
            while self.size > 2 * MAX_BYTES and len(self.lines) > 1:
                self.size -= len(self.lines.pop(0))
            self.version += 1

    def text(self) -> str:
        with self.lock or threading.Lock():
            return "".join(self.lines)


class JobLogCapture:
    """`with JobLogCapture(storage, job_id, header):` around a build, in the build's own thread."""

    def __init__(self, storage: Storage, job_id: str, header: str, *, runner_output: Path | None = None,
                 flush_s: float = _FLUSH_S) -> None:
        self.storage = storage
        self.job_id = job_id
        self.header = header
        self.runner_output = runner_output
        self.flush_s = flush_s
        self.handler = _ThreadHandler(threading.get_ident())
        self._start = 0
        self._written = -1
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._flusher: threading.Thread | None = None

    def __enter__(self) -> JobLogCapture:
        if self.runner_output is not None:
            try:
                self._start = self.runner_output.stat().st_size
            except OSError:
                self.runner_output = None
        logging.getLogger().addHandler(self.handler)
        self._flusher = threading.Thread(target=self._flush_loop, name=f"job-log-{self.job_id}", daemon=True)
        self._flusher.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.finish()

    def finish(self) -> None:
        """Stop capturing and store the whole log; the build calls it before it records its end, so a client that
        sees the job ended finds its log complete (later calls, and __exit__ after one, do nothing)."""
        if self._stop.is_set():
            return
        logging.getLogger().removeHandler(self.handler)
        self._stop.set()
        if self._flusher is not None:
            self._flusher.join(timeout=10)
        self._write(final=True)

    def _flush_loop(self) -> None:
        while not self._stop.wait(self.flush_s):
            self._write(final=False)

    def _write(self, *, final: bool) -> None:
        """Store the log so far (nothing when nothing was logged: a build that never started keeps no log)."""
        with self._lock:
            version = self.handler.version
            if version == 0 or (version == self._written and not final):
                return
            text = self.header + self.handler.text()
            if final:
                text += self._runner_part()
            try:
                write_job_log(self.storage, self.job_id, text)
                self._written = version
            except Exception:   # the log must never fail the build; the runner's own log still has it
                log.debug("could not store the log of job %s", self.job_id, exc_info=True)

    def _runner_part(self) -> str:
        """What the runner's process wrote to its stderr (the JVM's log) while this build ran."""
        if self.runner_output is None:
            return ""
        try:
            with open(self.runner_output, "rb") as fh:
                end = fh.seek(0, os.SEEK_END)
                start = max(self._start, end - _RUNNER_TAIL)
                fh.seek(start)
                data = fh.read(end - start)
        except OSError:
            return ""
        lines = [ln for ln in data.decode("utf-8", "replace").splitlines(keepends=True) if not _PYTHON_LINE.match(ln)]
        if not "".join(lines).strip():
            return ""
        return ("---- build runner output while this build ran (Spark's driver log; shared by the builds that ran "
                "at the same time) ----\n" + "".join(lines))
