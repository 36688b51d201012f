"""The demo's service process: pick a port, start `bgix serve` in its own process group, wait for it, stop it
and everything it started.

The demo talks to this process over HTTP only, like any user would. Stopping it stops its whole process tree:
the service's build runner (a session of its own, so that a plain `bgix serve` leaves builds running on
purpose) and the runner's Spark JVM and Python workers would otherwise outlive the demo (Linux /proc).
"""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

from service.jobs.liveness import process_alive, stat_fields
from service.server.settings import Settings

__all__ = ["auth_headers", "java_available", "pick_port", "start_server", "stop_server",
           "wait_ready"]

READY_TIMEOUT_S = 60.0
STOP_GRACE_S = 15.0      # for the service, then for what it started, to end on SIGTERM before SIGKILL


def java_available() -> bool:
    home = os.environ.get("JAVA_HOME")
    return shutil.which("java") is not None or bool(home and (Path(home) / "bin" / "java").exists())


def auth_headers(settings: Settings) -> dict[str, str]:
    token = settings.token.get_secret_value() if settings.token is not None else ""
    return {"Authorization": f"Bearer {token}"} if token else {}


def pick_port(host: str, preferred: int) -> int:
    for port in (preferred, 0):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind((host, port))
            except OSError:
                continue
            return int(s.getsockname()[1])
    raise SystemExit(f"bgix demo: no free port on {host}")


def start_server(host: str, port: int, warehouse: Path, engine: str, spark_master: str) -> subprocess.Popen[bytes]:
    env = dict(os.environ)
    env.update({
        "BGIX_WAREHOUSE": str(warehouse),
        "BGIX_BUILD_ENGINE": engine,
        "BGIX_SPARK_MASTER": spark_master,
        "SPARK_LOCAL_IP": env.get("SPARK_LOCAL_IP", "127.0.0.1"),
        "PYSPARK_PYTHON": env.get("PYSPARK_PYTHON", sys.executable),
        "PYSPARK_DRIVER_PYTHON": env.get("PYSPARK_DRIVER_PYTHON", sys.executable),
    })
    cmd = [sys.executable, "-c", "from service.cli import main; raise SystemExit(main())",
           "serve", "--host", host, "--port", str(port), "--log-level", "warning", "--no-access-log"]
    # Own process group: Ctrl-C reaches us once, and we stop the server (and its build jobs) ourselves.
    return subprocess.Popen(cmd, env=env, start_new_session=True)


def descendants(pid: int) -> dict[int, int | None]:
    """Every process below `pid` (children, theirs, …) → its start time (as liveness.process_start), from /proc."""
    children: dict[int, list[int]] = {}
    started: dict[int, int | None] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        fields = stat_fields(int(entry.name))   # one read per process: its parent and its start time
        if fields is None:
            continue
        children.setdefault(int(fields[1]), []).append(int(entry.name))
        started[int(entry.name)] = int(fields[19]) if len(fields) > 19 else None
    out: dict[int, int | None] = {}
    todo = list(children.get(pid, ()))
    while todo:
        p = todo.pop()
        if p not in out:
            out[p] = started.get(p)
            todo.extend(children.get(p, ()))
    return out


def stop_server(server: subprocess.Popen[bytes]) -> None:
    """Stop the service and every process it started (its build runner, the runner's Spark JVM and workers): SIGTERM,
    then SIGKILL for what is still there after STOP_GRACE_S; returns once they are all gone."""
    # Taken first: once the service exits, what it started is re-parented and no longer traceable to it.
    tree = descendants(server.pid) if server.poll() is None else {}
    if server.poll() is None:
        try:
            os.killpg(server.pid, signal.SIGTERM)
            server.wait(timeout=STOP_GRACE_S)
        except (subprocess.TimeoutExpired, ProcessLookupError):
            try:
                os.killpg(server.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            server.wait(timeout=5)
    # The runner would finish its builds and its JVM outlive it by seconds; the demo leaves nothing running.
    for sig, grace in ((signal.SIGTERM, STOP_GRACE_S), (signal.SIGKILL, 5.0)):
        alive = {p: t for p, t in tree.items() if process_alive(p, t)}
        for p in alive:
            try:
                os.kill(p, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + grace
        while alive and time.monotonic() < deadline:
            time.sleep(0.05)
            alive = {p: t for p, t in alive.items() if process_alive(p, t)}
        if not alive:
            return


def wait_ready(http: httpx.Client, server: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"bgix demo: the service exited with code {server.returncode} while starting")
        try:
            if http.get("/v1/tables").status_code < 500:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise SystemExit(f"bgix demo: the service did not answer within {READY_TIMEOUT_S:.0f} s")
