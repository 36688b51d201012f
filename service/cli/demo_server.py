"""The demo's service process: pick a port, start `bgix serve` in its own process group, wait for it, stop it.

The demo talks to this process over HTTP only, like any user would.
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

from service.server.settings import Settings

__all__ = ["auth_headers", "java_available", "pick_port", "start_server", "stop_server", "wait_ready"]

READY_TIMEOUT_S = 60.0


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


def stop_server(server: subprocess.Popen[bytes]) -> None:
    if server.poll() is not None:
        return
    try:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=15)
    except (subprocess.TimeoutExpired, ProcessLookupError):
        try:
            os.killpg(server.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        server.wait(timeout=5)


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
