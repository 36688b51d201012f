"""`bgix serve --workers 2` (issue 11): a real server on a free loopback port, two worker processes.

Both workers answer (each names itself in `X-Bgix-Worker`); build jobs start once across the workers (one
202 and one 409 for two concurrent requests landing on different workers), are visible and cancellable
from the worker that did not start them; after a build commits, every worker answers from the new index
even with a snapshot TTL of an hour (read-your-writes across workers); when the job-runner worker dies,
another worker adopts its build; SIGTERM to the parent leaves no worker behind.

Most of these tests run one build runner per build (BGIX_BUILD_RUNNER=process), slowed down by a
`sitecustomize` (on PYTHONPATH) that only acts in a build runner: it writes its pid to a directory and sleeps
before the runner takes its job, so a job stays queued long enough to be raced, cancelled or orphaned. The
last runs the default warm runner, shared by both workers' builds.
"""
from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pandas as pd
import pytest

from tests.api.helpers import wait_job, wait_until, write_table
from tests.api.server import bgix_process

HEADER = "x-bgix-worker"
REPO = Path(__file__).resolve().parents[2]
SITECUSTOMIZE = '''
import os, sys, time
if "service.build_job.build_runner" in getattr(sys, "orig_argv", ()):
    _d = os.environ.get("TEST_BGIX_JOB_PIDS")
    if _d:
        open(os.path.join(_d, str(os.getpid())), "w").close()
    time.sleep(float(os.environ.get("TEST_BGIX_JOB_DELAY", "0")))
'''


@dataclass
class Served:
    url: str
    proc: subprocess.Popen[bytes]
    root: Path
    df: pd.DataFrame
    pids_dir: Path

    def on(self, pid: int) -> httpx.Client:
        """A client whose (one, kept-alive) connection was accepted by worker `pid`.

        Fresh for every request: a connection is kept only while it is used (a pool's idle expiry), and the next
        one may land on either worker."""
        for _ in range(200):
            c = httpx.Client(base_url=self.url, timeout=60.0, limits=httpx.Limits(max_connections=1))
            if int(c.get("/healthz").headers[HEADER]) == pid:
                return c
            c.close()
        raise AssertionError(f"no connection reached worker {pid}")

    def call(self, pid: int, method: str, path: str, **kwargs: Any) -> httpx.Response:
        """One request answered by worker `pid` (checked)."""
        c = self.on(pid)
        try:
            r = c.request(method, path, **kwargs)
        finally:
            c.close()
        assert int(r.headers[HEADER]) == pid, (r.headers[HEADER], pid)
        return r

    def workers(self) -> list[int]:
        """The pids of the two workers, as they name themselves."""
        found: set[int] = set()
        for _ in range(200):
            found.add(int(httpx.get(f"{self.url}/healthz").headers[HEADER]))
            if len(found) == 2:
                return sorted(found)
        raise AssertionError(f"requests reached only workers {found}")

    def count(self, pid: int, where: str, scan: str = "auto") -> httpx.Response:
        return self.call(pid, "POST", "/v1/tables/t/query", json={"where": where, "result": "count", "scan": scan})

    def create(self, pid: int, column: str) -> httpx.Response:
        return self.call(pid, "POST", "/v1/create_global_index", json={"table": "t", "index_column": column})

    def wait_job(self, pid: int, job_id: str, timeout: float = 120.0) -> dict[str, Any]:
        """Poll the job on worker `pid` only, until it ends."""
        return wait_job(lambda path: self.call(pid, "GET", path), job_id, timeout)

    def job_pids(self) -> set[int]:
        return {int(p.name) for p in self.pids_dir.iterdir()}


def _ppid(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    return int(stat[stat.rfind(b")") + 2:].split()[1])


def _children(pid: int) -> set[int]:
    return {int(e.name) for e in Path("/proc").iterdir() if e.name.isdigit() and _ppid(int(e.name)) == pid}


def _workers_of(parent: int) -> set[int]:
    """uvicorn's worker processes (not multiprocessing's resource tracker, also a child of the parent)."""
    out = set()
    for pid in _children(parent):
        try:
            if b"spawn_main" in Path(f"/proc/{pid}/cmdline").read_bytes():
                out.add(pid)
        except OSError:
            pass
    return out


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return False
    return stat[stat.rfind(b")") + 2:].split()[0] != b"Z"


def _frame(rows: int = 2000) -> pd.DataFrame:
    rng = np.random.default_rng(11)
    s = pd.Series(np.array(["a", "b", "c"], dtype=object)[rng.integers(0, 3, rows)])
    return pd.DataFrame({"s": s, "n": rng.integers(0, 100, rows)})


@contextmanager
def _served(root: Path, job_delay: float, runner: str = "process") -> Iterator[Served]:
    df = _frame()
    write_table(root / "data" / "t", df, 2)
    (root / "site").mkdir()
    (root / "site" / "sitecustomize.py").write_text(SITECUSTOMIZE)
    pids_dir = root / "jobpids"
    pids_dir.mkdir()
    path = os.pathsep.join(p for p in (str(root / "site"), str(REPO), os.environ.get("PYTHONPATH")) if p)
    env = {"BGIX_WAREHOUSE": str(root / "warehouse"), "BGIX_ALLOWED_ROOTS": str(root),
           "BGIX_BUILD_ENGINE": "local", "BGIX_SNAPSHOT_TTL_SECONDS": "3600", "BGIX_JOB_POLL_SECONDS": "0.05",
           "PYTHONPATH": path, "TEST_BGIX_JOB_PIDS": str(pids_dir), "TEST_BGIX_JOB_DELAY": str(job_delay),
           "BGIX_BUILD_RUNNER": runner}
    with bgix_process(env, root / "serve.log", workers=2) as (url, proc):
        r = httpx.put(f"{url}/v1/tables/t", json={"location": str(root / "data" / "t")}, timeout=60)
        assert r.status_code == 200, r.text
        yield Served(url, proc, root, df, pids_dir)


def _assert_unindexed(r: httpx.Response) -> None:
    """The answer of a query asked with "scan": "never" on a column with no index: no index used, nothing covered."""
    body = r.json()
    assert r.status_code == 200 and body["snapshots"] == {} and body["coverage"]["complete"] is False, r.text


@pytest.mark.slow
def test_workers_answer_build_once_cancel_anywhere_and_read_their_writes(tmp_path: Path) -> None:
    with _served(tmp_path, job_delay=4.0) as srv:
        w1, w2 = srv.workers()
        assert srv.proc.pid not in (w1, w2) and {w1, w2} == _workers_of(srv.proc.pid)

        # Both workers cache the table's view (no index yet); the snapshot TTL is an hour.
        for pid in (w1, w2):
            _assert_unindexed(srv.count(pid, "s = 'a'", scan="never"))
            exact = srv.count(pid, "s = 'a'").json()   # by default the column is read from the data: exact
            assert exact["count"] == int((srv.df.s == "a").sum()) and exact["coverage"]["complete"] is True

        # Two concurrent builds of one index, one request per worker: one 202, one 409 naming the other.
        conns = {pid: srv.on(pid) for pid in (w1, w2)}
        answers: dict[int, httpx.Response] = {}
        barrier = threading.Barrier(2)

        def post(pid: int) -> None:
            barrier.wait()
            answers[pid] = conns[pid].post("/v1/create_global_index", json={"table": "t", "index_column": "s"})

        threads = [threading.Thread(target=post, args=(pid,)) for pid in conns]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        for pid, c in conns.items():
            c.close()
            assert int(answers[pid].headers[HEADER]) == pid
        assert sorted(r.status_code for r in answers.values()) == [202, 409], {p: r.text for p, r in answers.items()}
        started = next(pid for pid, r in answers.items() if r.status_code == 202)
        other = w2 if started == w1 else w1
        job_id = answers[started].json()["job_id"]
        assert job_id in answers[other].json()["error"]["message"]

        # The job is visible from the other worker; a third request there is refused too.
        assert srv.call(other, "GET", f"/v1/jobs/{job_id}").json()["state"] in ("queued", "running")
        assert srv.create(other, "s").status_code == 409

        # Cancelled from the worker that did not start it: the build process (still in its delay) is ended.
        wait_until(lambda: len(srv.job_pids()) == 1, 30, "the build process started")
        (job_pid,) = srv.job_pids()
        runner = _ppid(job_pid)   # the worker that spawned it: the job runner
        assert runner in (w1, w2), (runner, w1, w2)
        r = srv.call(other, "POST", f"/v1/jobs/{job_id}/cancel")
        assert r.status_code == 200 and r.json()["state"] == "cancelled", r.text
        wait_until(lambda: not _alive(job_pid), 30, "the cancelled build process exited")
        for pid in (w1, w2):
            assert srv.call(pid, "GET", f"/v1/jobs/{job_id}").json()["state"] == "cancelled"
            _assert_unindexed(srv.count(pid, "s = 'a'", scan="never"))   # nothing was committed

        # The next build runs to its commit, started and awaited on the job runner only: the other worker
        # neither started, spawned, reaped nor polled it, yet answers from the new snapshot at once.
        plain = w2 if runner == w1 else w1
        r = srv.create(runner, "s")
        assert r.status_code == 202, r.text
        job = srv.wait_job(runner, r.json()["job_id"])
        assert job["state"] == "succeeded" and job["snapshot_id"] == 1, job
        want = int((srv.df.s == "a").sum())
        for pid in (plain, runner):
            r = srv.count(pid, "s = 'a'")
            assert r.status_code == 200 and r.json()["count"] == want, r.text
            assert r.json()["snapshots"] == {"s": 1}

        # A second column built from the other worker and awaited there: the job runner sees it at once too
        # (whether or not its watcher has reaped the process yet).
        r = srv.create(plain, "n")
        assert r.status_code == 202, r.text
        assert srv.wait_job(plain, r.json()["job_id"])["state"] == "succeeded"
        r = srv.count(runner, "n < 10")
        assert r.status_code == 200 and r.json()["count"] == int((srv.df.n < 10).sum()), r.text
        assert len(srv.job_pids()) == 3   # one process per job, each reaped by the job runner
        wait_until(lambda: not any(_alive(p) for p in srv.job_pids()), 30, "every build process was reaped")


@pytest.mark.slow
def test_a_dead_job_runner_is_replaced_and_its_build_adopted(tmp_path: Path) -> None:
    with _served(tmp_path, job_delay=3.0) as srv:
        w1, w2 = srv.workers()
        group_dir = _group_dir((w1, w2))
        r = srv.create(w1, "s")
        assert r.status_code == 202, r.text
        job_id = r.json()["job_id"]
        wait_until(lambda: len(srv.job_pids()) == 1, 30, "the build process started")
        (job_pid,) = srv.job_pids()
        runner = _ppid(job_pid)
        assert runner in (w1, w2)
        os.kill(runner, signal.SIGKILL)   # the job-runner worker dies; its build goes on (own session)

        # uvicorn starts a replacement worker; the survivor takes the job-runner role and adopts the build.
        survivor = w2 if runner == w1 else w1
        job = srv.wait_job(survivor, job_id)
        assert job["state"] == "succeeded", job
        r = srv.count(survivor, "s = 'a'")
        assert r.status_code == 200 and r.json()["count"] == int((srv.df.s == "a").sum()), r.text
        wait_until(lambda: not _alive(job_pid), 30, "the build process ended")
        wait_until(lambda: len(_workers_of(srv.proc.pid)) == 2, 30, "uvicorn replaced the dead worker")
        (fresh,) = _workers_of(srv.proc.pid) - {survivor}
        # The job runner (the survivor or the fresh worker) spawns the next build, wherever it is requested.
        r = srv.create(fresh, "n")
        assert r.status_code == 202, r.text
        assert srv.wait_job(fresh, r.json()["job_id"])["state"] == "succeeded"
        assert srv.count(survivor, "n < 10").json()["count"] == int((srv.df.n < 10).sum())
    # No spec file was left behind (not even the orphaned build's): the shared directory is gone.
    assert not group_dir.exists(), sorted(str(p) for p in group_dir.rglob("*"))


def test_sigterm_to_the_parent_stops_every_worker(tmp_path: Path) -> None:
    with _served(tmp_path, job_delay=0.0, runner="warm") as srv:
        w1, w2 = srv.workers()
        r = srv.create(w1, "s")   # the job runner has been busy once
        assert r.status_code == 202
        assert srv.wait_job(w2, r.json()["job_id"])["state"] == "succeeded"
        r = srv.create(w2, "n")   # requested on the other worker: the same warm runner builds it
        assert r.status_code == 202
        assert srv.wait_job(w1, r.json()["job_id"])["state"] == "succeeded"
        (runner,) = srv.job_pids()   # one build runner for both builds
        assert _alive(runner)
        assert _workers_of(srv.proc.pid) == {w1, w2}
        workers = _children(srv.proc.pid)   # the workers and multiprocessing's resource tracker
        group_dir = _group_dir((w1, w2))
        assert (group_dir / "runner.lock").exists()
        srv.proc.send_signal(signal.SIGTERM)
        assert srv.proc.wait(timeout=30) == 0
        assert [pid for pid in (w1, w2) if _alive(pid)] == []
        # multiprocessing's resource tracker ends when it reads EOF from the (gone) parent: a moment later
        wait_until(lambda: not any(_alive(pid) for pid in workers), 10, f"no child of bgix serve is left: {workers}")
        wait_until(lambda: not _alive(runner), 30, "the build runner exited with the service")
        assert not group_dir.exists()   # the shared directory (spec files may hold credentials) is gone


def _group_dir(workers: tuple[int, ...]) -> Path:
    """The directory the workers share (named in their environment by `bgix serve`)."""
    (path,) = {Path(line.split("=", 1)[1]) for pid in workers
               for line in Path(f"/proc/{pid}/environ").read_bytes().decode(errors="replace").split("\0")
               if line.startswith("_BGIX_WORKER_GROUP=")}
    return path


def test_one_worker_is_the_single_process_of_before(tmp_path: Path) -> None:
    write_table(tmp_path / "data" / "t", _frame(100), 1)
    env = {"BGIX_WAREHOUSE": str(tmp_path / "warehouse"), "BGIX_ALLOWED_ROOTS": str(tmp_path)}
    with bgix_process(env, tmp_path / "serve.log", workers=1) as (url, proc):
        r = httpx.get(f"{url}/healthz")
        assert r.status_code == 200 and HEADER not in r.headers
        assert _children(proc.pid) == set()   # no worker processes: the process answers itself


def test_each_worker_listens_on_its_own_tcp_socket_without_nagle() -> None:
    """`bgix serve --workers N` gives every worker its own SO_REUSEPORT socket on one port (the kernel spreads
    connections over them) of protocol TCP, on which asyncio turns Nagle off (on a protocol-0 socket every
    POST answer waited ~40 ms for a delayed ACK)."""
    import asyncio
    import socket

    from service.cli.serve_workers import listening_sockets

    socks = listening_sockets("127.0.0.1", 0, 3)
    try:
        ports = {s.getsockname()[1] for s in socks}
        assert len(ports) == 1 and all(s.proto == socket.IPPROTO_TCP and s.get_inheritable() for s in socks)
        assert all(s.getsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT) for s in socks)
        sock = socks[0]

        async def accepted_nodelay() -> int:
            seen: list[int] = []

            class Probe(asyncio.Protocol):
                def connection_made(self, transport: asyncio.BaseTransport) -> None:
                    s = transport.get_extra_info("socket")
                    seen.append(s.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
                    transport.close()

            servers = [await asyncio.get_running_loop().create_server(Probe, sock=s) for s in socks]
            for _ in range(6):
                _, writer = await asyncio.open_connection(*sock.getsockname()[:2])
                writer.close()
            for _ in range(200):
                if len(seen) >= 6:
                    break
                await asyncio.sleep(0.01)
            for server in servers:
                server.close()
            return min(seen)

        assert asyncio.run(accepted_nodelay()) != 0
    finally:
        for s in socks:
            s.close()


def test_connections_spread_over_the_workers(tmp_path: Path) -> None:
    """Keep-alive clients connecting at once are served by every worker, not all by the first to wake."""
    write_table(tmp_path / "data" / "t", _frame(100), 1)
    env = {"BGIX_WAREHOUSE": str(tmp_path / "warehouse"), "BGIX_ALLOWED_ROOTS": str(tmp_path)}
    with bgix_process(env, tmp_path / "serve.log", workers=2) as (url, _proc):
        clients = [httpx.Client(base_url=url, timeout=30) for _ in range(24)]
        try:
            seen = Counter(c.get("/healthz").headers[HEADER] for c in clients)
        finally:
            for c in clients:
                c.close()
    assert len(seen) == 2 and min(seen.values()) >= 3, seen
