"""Slow and too many clients against a real `bgix serve` (issue 34, defect 4; service.cli.slow_clients).

A client that declares a body and stops sending, one that stops mid-headers (also on a keep-alive connection's
second request) and one that connects and sends nothing are closed (with 408) once BGIX_BODY_TIMEOUT_S /
BGIX_HEADER_TIMEOUT_S pass; before, uvicorn held them forever. Past BGIX_MAX_CONNECTIONS a new connection is
answered 503 and closed at once (before its header timeout could act: the answer says which), and once the held
connections are gone a normal request is served. Checks are on
what happened (the server closed, with what status), with client timeouts far above the server's.
"""
from __future__ import annotations

import socket
import time
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from tests.api.server import bgix_process

pytestmark = pytest.mark.slow

HEADER_S, BODY_S, CAP = 1.0, 1.5, 12
WAIT_S = 20.0   # a client gives up on the server after this long: far above both timeouts


def _env(root: Path) -> dict[str, str]:
    return {"BGIX_WAREHOUSE": str(root / "warehouse"), "BGIX_ALLOWED_ROOTS": str(root), "BGIX_BUILD_ENGINE": "local",
            "BGIX_BUILD_PREWARM": "false", "BGIX_HEADER_TIMEOUT_S": str(HEADER_S),
            "BGIX_BODY_TIMEOUT_S": str(BODY_S), "BGIX_MAX_CONNECTIONS": str(CAP)}


def _connect(url: str) -> socket.socket:
    parts = urlsplit(url)
    return socket.create_connection((parts.hostname, parts.port), timeout=WAIT_S)


def _until_closed(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection; raises TimeoutError if it never does."""
    data = b""
    while True:
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            return data
        if not chunk:
            return data
        data += chunk


@pytest.mark.parametrize("workers", [1, 2])
def test_stalled_clients_are_closed_and_the_connection_cap_holds(tmp_path: Path, workers: int) -> None:
    with bgix_process(_env(tmp_path), tmp_path / "serve.log", workers=workers) as (url, _):
        # body: headers declare 100 bytes, 4 come, then nothing
        body = _connect(url)
        body.sendall(b"POST /v1/tables/t/query HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Content-Length: 100\r\n\r\n{\"wh")
        # headers: half a request line and a header, then nothing
        headers = _connect(url)
        headers.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
        silent = _connect(url)   # connects and sends nothing at all
        # keep-alive: a first request served, the second one stops mid-headers
        second = _connect(url)
        second.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        first = second.recv(65536)
        assert first.startswith(b"HTTP/1.1 200"), first
        second.sendall(b"GET /heal")
        started = time.monotonic()
        for sock, what in ((body, b"BGIX_BODY_TIMEOUT_S"), (headers, b"BGIX_HEADER_TIMEOUT_S"),
                           (silent, b"BGIX_HEADER_TIMEOUT_S"), (second, b"BGIX_HEADER_TIMEOUT_S")):
            with sock:
                answer = _until_closed(sock)   # TimeoutError (a failure) if the server holds it WAIT_S
            assert b"HTTP/1.1 408" in answer and what in answer, answer   # (after the rest of the 200)
        assert time.monotonic() - started < WAIT_S   # the server closed them, not our client timeout

        # the cap: CAP per worker, so of CAP * workers + 4 connections at least 4 are refused with 503 at once (which
        # ones depends on how the kernel spreads them over the workers); the others wait for the header timeout
        socks = [_connect(url) for _ in range(CAP * workers + 4)]
        answers = []
        for sock in socks:
            with sock:
                answers.append(_until_closed(sock))
        refused = [a for a in answers if a.startswith(b"HTTP/1.1 503")]
        assert len(refused) >= 4 and all(b"BGIX_MAX_CONNECTIONS" in a for a in refused), answers
        assert all(a.startswith((b"HTTP/1.1 503", b"HTTP/1.1 408")) for a in answers), answers
        # once the hostile connections are gone, a normal request is served
        deadline = time.monotonic() + WAIT_S
        while True:
            status = httpx.get(f"{url}/healthz", timeout=WAIT_S).status_code
            if status == 200 or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert status == 200
