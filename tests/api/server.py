"""Start a real `bgix serve` process on a free loopback port, wait for /readyz (bounded), stop it after."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import httpx

BGIX = Path(sys.executable).with_name("bgix")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def bgix_server(env: dict[str, str], log: Path, timeout: float = 60.0) -> Iterator[str]:
    """Yield the base URL of a running `bgix serve`; the process is terminated (then killed) on exit."""
    with bgix_process(env, log, timeout) as (url, _):
        yield url


def rss_bytes(proc: subprocess.Popen[bytes] | int) -> int:
    """Resident set size of a running process, or of the process with that pid (Linux /proc)."""
    pid = proc if isinstance(proc, int) else proc.pid
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for pid {pid}")


@contextmanager
def bgix_process(env: dict[str, str], log: Path, timeout: float = 60.0, *, workers: int = 1,
                 log_level: str = "warning", bgix: Path = BGIX, base_env: Mapping[str, str] = os.environ,
                 ) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """`bgix_server`, also yielding the process (for its pid and memory).

    `workers`: `bgix serve --workers N`; 1 (the default here) is one process answering on `proc.pid`, more
    make `proc` the parent of N worker processes. `log_level`: `--log-level` (info shows the job lines). `bgix`: the
    command (another venv's); `base_env`: the environment `env` is laid over.
    """
    port = free_port()
    full_env = {**base_env, **env}
    with open(log, "wb") as out:
        proc = subprocess.Popen([str(bgix), "serve", "--host", "127.0.0.1", "--port", str(port),
                                 "--workers", str(workers), "--no-access-log", "--log-level", log_level],
                                env=full_env, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"bgix serve exited with {proc.returncode}: {log.read_text()[-2000:]}")
            try:
                if httpx.get(f"{url}/readyz", timeout=1.0).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"bgix serve not ready after {timeout} s: {log.read_text()[-2000:]}")
            time.sleep(0.1)
        yield url, proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
