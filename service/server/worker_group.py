"""`bgix serve --workers N`: what the N uvicorn worker processes of one service share, on this host.

The parent (`bgix serve`) creates a private directory (mode 0700) and names it in the environment
variable `_BGIX_WORKER_GROUP` (internal, not a setting); every worker opens it in
`service.api.worker_app.create_worker_app()`, the factory uvicorn imports. The directory holds:

* `runner.lock`: `fcntl.flock`-ed for its whole life by the one worker that runs build jobs (spawns,
  tracks, reaps, recovers them: service.server.job_runner.JobRunner). The kernel drops the lock when that
  process exits or dies; another worker's watcher then takes it over and adopts the running builds.
* `build.lock`: held while a worker checks "no build of this index is active" and records a new job,
  so two workers cannot both pass the check (409 across workers).
* `specs/`: the job runner's spec and log files; `pending/`: specs recorded by other workers, which the
  job runner spawns (it polls every `BGIX_JOB_POLL_SECONDS`); `cancel/`: cancel requests for jobs the
  job runner tracks (a cancel may land on any worker).
* `generation`: an 8-byte counter, memory-mapped by every worker. A worker that learns of a commit or a
  drop (job finished, job reported succeeded, table registered or dropped) bumps it; every worker
  compares it on each request and drops its cached snapshot views when it changed (read-your-writes
  across workers).

Only the standard library: the `bgix serve` parent imports this module and stays small.
"""
from __future__ import annotations

import fcntl
import mmap
import os
import shutil
import struct
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ENV_VAR = "_BGIX_WORKER_GROUP"
_GEN = struct.Struct("<Q")


class WorkerGroup:
    """The shared directory of one multi-worker service, opened by the parent and by every worker."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.spec_dir = self.path / "specs"
        self.pending_dir = self.path / "pending"
        self.cancel_dir = self.path / "cancel"
        self._runner_fd: int | None = None
        self._gen_fd = os.open(self.path / "generation", os.O_RDWR)
        self._gen = mmap.mmap(self._gen_fd, _GEN.size)
        self._gen_lock = threading.Lock()

    # ---- parent side ----------------------------------------------------------------------------
    @classmethod
    def create(cls) -> WorkerGroup:
        """A new group directory (0700: spec files may hold storage credentials)."""
        path = Path(tempfile.mkdtemp(prefix="bgix-serve-"))
        for sub in ("specs", "pending", "cancel"):
            (path / sub).mkdir(mode=0o700)
        (path / "generation").write_bytes(_GEN.pack(0))
        for name in ("runner.lock", "build.lock"):
            (path / name).touch(mode=0o600)
        return cls(path)

    def remove(self) -> bool:
        """After the last worker: delete the directory unless a build still runs from a spec in it (then it
        stays; False). Specs never spawned go in any case (the next start marks their jobs failed)."""
        self.close()
        for pending in self.pending_dir.glob("*.json"):
            pending.unlink(missing_ok=True)
        if any(self.spec_dir.glob("*.json")):
            return False
        shutil.rmtree(self.path, ignore_errors=True)
        return True

    def close(self) -> None:
        self.release_runner()
        try:
            self._gen.close()
        except (BufferError, ValueError):
            pass
        try:
            os.close(self._gen_fd)
        except OSError:
            pass

    # ---- the job runner role --------------------------------------------------------------------
    @property
    def is_runner(self) -> bool:
        return self._runner_fd is not None

    def try_acquire_runner(self) -> bool:
        """Become the job runner if no live worker is (non-blocking); True while this process is it."""
        if self._runner_fd is not None:
            return True
        fd = os.open(self.path / "runner.lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            return False
        self._runner_fd = fd
        return True

    def release_runner(self) -> None:
        fd, self._runner_fd = self._runner_fd, None
        if fd is not None:
            os.close(fd)   # closing the only descriptor of the open file releases the flock

    @contextmanager
    def build_lock(self) -> Iterator[None]:
        """Exclusive across the workers (a fresh open file each time, so also across threads)."""
        fd = os.open(self.path / "build.lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    # ---- snapshot freshness ---------------------------------------------------------------------
    def generation(self) -> int:
        return int(_GEN.unpack_from(self._gen, 0)[0])

    def bump(self) -> None:
        """Tell every worker to re-resolve its cached snapshot views on its next request."""
        with self._gen_lock:
            fcntl.flock(self._gen_fd, fcntl.LOCK_EX)
            try:
                _GEN.pack_into(self._gen, 0, (self.generation() + 1) & 0xFFFF_FFFF_FFFF_FFFF)
            finally:
                fcntl.flock(self._gen_fd, fcntl.LOCK_UN)
