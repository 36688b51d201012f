"""The one set of worker threads of index_format's data-parallel loops (numpy and pyarrow release the GIL).

Work is split into parts of whole containers or row ranges; a part runs on a worker only when there is
more than one, so small inputs never pay a thread hand-off. The workers are plain daemon threads fed by one
queue (not concurrent.futures: its import, with logging's, is a few ms of every command-line build).
"""
from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from queue import SimpleQueue
from typing import Generic, TypeVar

T = TypeVar("T")
R = TypeVar("R")

THREADS = max(1, min(4, os.cpu_count() or 1))
_JOBS: SimpleQueue[Callable[[], None]] | None = None
_LOCK = threading.Lock()


def _work(jobs: SimpleQueue[Callable[[], None]]) -> None:
    while True:
        jobs.get()()


def _jobs() -> SimpleQueue[Callable[[], None]]:
    """The workers' queue; THREADS workers start on first use."""
    global _JOBS
    with _LOCK:
        if _JOBS is None:
            jobs: SimpleQueue[Callable[[], None]] = SimpleQueue()
            for i in range(THREADS):
                threading.Thread(target=_work, args=(jobs,), name=f"bgix-part-{i}", daemon=True).start()
            _JOBS = jobs
        return _JOBS


def _forget_workers() -> None:
    # a forked child has none of the parent's threads: it starts its own workers on first use
    global _JOBS, _LOCK
    _JOBS, _LOCK = None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_workers)


def map_parts(fn: Callable[[T], R], parts: Sequence[T]) -> list[R]:
    """fn over every part, in order; parts beyond the first run on the workers, the first in this thread.
    An exception from any part is raised here (the first part's first, then the others' in order)."""
    if len(parts) <= 1:
        return [fn(p) for p in parts]
    done: SimpleQueue[tuple[int, bool, object]] = SimpleQueue()

    def job(i: int, part: T) -> Callable[[], None]:
        def run() -> None:
            try:
                done.put((i, True, fn(part)))
            except BaseException as exc:  # handed to the caller, raised there
                done.put((i, False, exc))
        return run

    jobs = _jobs()
    for i in range(1, len(parts)):
        jobs.put(job(i, parts[i]))
    out: list[object] = [None] * len(parts)
    failed: dict[int, BaseException] = {}
    try:
        out[0] = fn(parts[0])
    finally:
        # every submitted part is waited for, even when the first failed: none may outlive this call
        for _ in range(len(parts) - 1):
            i, ok, value = done.get()
            if ok:
                out[i] = value
            else:
                failed[i] = value  # type: ignore[assignment]  # a failed part's value: its exception
    if failed:
        raise failed[min(failed)]
    return out  # type: ignore[return-value]  # every part filled (a failure raised above)


class Pending(Generic[R]):
    """A part submitted to the workers (`submit`): `result()` waits for it and returns its value or raises its
    exception."""

    __slots__ = ("_done", "_ok", "_value")

    def __init__(self) -> None:
        self._done = threading.Event()
        self._ok = False
        self._value: object = None

    def _set(self, ok: bool, value: object) -> None:
        self._ok, self._value = ok, value
        self._done.set()

    def result(self) -> R:
        self._done.wait()
        if not self._ok:
            raise self._value  # type: ignore[misc]  # a failed part's value: its exception
        return self._value  # type: ignore[return-value]  # set by a part that succeeded


def submit(fn: Callable[[T], R], part: T) -> Pending[R]:
    """fn(part) on a worker while the caller goes on (a stream's parts: `map_parts` when all are at hand)."""
    pending: Pending[R] = Pending()

    def run() -> None:
        try:
            pending._set(True, fn(part))
        except BaseException as exc:  # handed to whoever waits, raised there
            pending._set(False, exc)
    _jobs().put(run)
    return pending
