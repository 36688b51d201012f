"""A real `bgix serve` for the benchmarks: on a free loopback port, ready (GET /readyz) within 60 s.

    from _server import start_server, stop_server   # bench/ is on sys.path when a bench script runs

    proc, url = start_server({"BGIX_WAREHOUSE": ..., "BGIX_ALLOWED_ROOTS": ...}, root / "serve.log")
    try:
        ...
    finally:
        stop_server(proc)
"""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path

import httpx

BGIX = Path(sys.executable).with_name("bgix")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(env: Mapping[str, str], log: Path, *, pythonpath: str | None = None, workers: int = 1,
                 this_interpreter: bool = False) -> tuple[subprocess.Popen[bytes], str]:
    """Start `bgix serve` with `env` over this process's environment, output to `log`; (process, base URL).

    `workers`: `bgix serve --workers` (1 by default: the benchmarks measure one process's latency, CPU and
    memory; bench_workers.py compares several). `pythonpath`: serve from that source tree (e.g. a checkout of
    another commit) instead of the installed `bgix`; its modules shadow the editable install. `this_interpreter`:
    run the installed `bgix` with this process's interpreter rather than the one the `bgix` script names, so the
    build jobs the server spawns (with its sys.executable) see the same venv path as the caller (the build jobs'
    JVM class archive is keyed by that path). Exits (SystemExit) when the server dies or is not ready within 60 s.
    """
    port = free_port()
    args = ["serve", "--host", "127.0.0.1", "--port", str(port), "--no-access-log", "--log-level", "warning"]
    if pythonpath is None or workers != 1:   # source trees from before --workers serve one process anyway
        args += ["--workers", str(workers)]
    cmd, full_env = [str(BGIX), *args], {**os.environ, **env}
    if pythonpath or this_interpreter:
        cmd = [sys.executable, "-c", "import sys; from service.cli import main; sys.exit(main())", *args]
    if pythonpath:
        full_env["PYTHONPATH"] = pythonpath
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, env=full_env, stdout=out, stderr=subprocess.STDOUT, cwd=pythonpath or None)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"server exited: {log.read_text()[-2000:]}")
        try:
            if httpx.get(f"{url}/readyz", timeout=1).status_code == 200:
                return proc, url
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    proc.kill()
    raise SystemExit("server not ready within 60 s")


def stop_server(proc: subprocess.Popen[bytes]) -> None:
    """Terminate, then kill after 15 s."""
    proc.terminate()
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


class KeepAlive:
    """One keep-alive HTTP/1.1 connection from Python's standard library, for latency figures.

    Why not httpx: on this kind of machine httpx spends about 0.4 ms of its own per request (a warm range
    count: 0.86 ms p50 through httpx, 0.43 ms through http.client), which would be the client's time, not
    the service's.
    """

    def __init__(self, url: str, timeout: float = 120) -> None:
        import http.client
        host, port = url.split("//", 1)[1].rsplit(":", 1)
        self.conn = http.client.HTTPConnection(host, int(port), timeout=timeout)

    def post_json(self, path: str, body: object) -> dict[str, object]:
        """POST a JSON body; the decoded answer (an error status raises RuntimeError with the body)."""
        import json
        self.conn.request("POST", path, json.dumps(body).encode(), {"Content-Type": "application/json"})
        response = self.conn.getresponse()
        payload = response.read()
        if response.status != 200:
            raise RuntimeError(f"{path}: HTTP {response.status}: {payload[:500]!r}")
        return json.loads(payload)  # type: ignore[no-any-return]

    def __enter__(self) -> KeepAlive:
        return self

    def __exit__(self, *exc: object) -> None:
        self.conn.close()
