"""A refused body (413) against a real `bgix serve` with two worker processes: a client that writes its whole
body before reading the answer (Python's urllib) gets the 413 envelope, not a reset connection, because the
server drains a bounded amount of the rest; a body far beyond that bound is still refused, and the server
stops reading it (the connection closes long before the client could send it all)."""
from __future__ import annotations

import json
import socket
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.api.server import bgix_process

LIMIT = 64 * 1024
DRAIN = 2 * 1024 * 1024


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("drain")
    env = {"BGIX_WAREHOUSE": str(root / "warehouse"), "BGIX_ALLOWED_ROOTS": str(root), "BGIX_BUILD_ENGINE": "local",
           "BGIX_BUILD_PREWARM": "false", "BGIX_MAX_BODY_BYTES": str(LIMIT), "BGIX_BODY_DRAIN_BYTES": str(DRAIN)}
    with bgix_process(env, root / "serve.log", workers=2) as (base, _):
        yield base


def _urllib_post(url: str, body: bytes, headers: dict[str, str]) -> tuple[int, dict[str, object]]:
    req = urllib.request.Request(f"{url}/v1/tables/t/query", data=body, method="POST",
                                 headers={"Content-Type": "application/json", **headers})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def test_urllib_gets_the_413_envelope_for_a_body_over_the_limit(url: str) -> None:
    # ~1 MB: 16x the limit, within the drain bound. Each request is a new connection (both workers answer some).
    values = [f"v{i:07d}" for i in range(80_000)]
    body = json.dumps({"predicate": {"op": "in", "column": "s", "values": values}}).encode()
    assert 900_000 < len(body) < DRAIN
    for _ in range(6):
        status, doc = _urllib_post(url, body, {})
        assert status == 413, doc
        err = doc["error"]
        assert err["code"] == "body_too_large" and "BGIX_MAX_BODY_BYTES" in err["message"], err  # type: ignore[index]
        assert err["details"]["limit"] == LIMIT  # type: ignore[index]
    # Chunked (no Content-Length): refused once the streamed bytes pass the limit, then drained the same way.
    chunks = (body[i:i + 65536] for i in range(0, len(body), 65536))
    status, doc = _urllib_post(url, chunks, {"Transfer-Encoding": "chunked"})  # type: ignore[arg-type]
    assert status == 413 and doc["error"]["code"] == "body_too_large", doc  # type: ignore[index]


def test_a_body_far_beyond_the_drain_bound_is_refused_without_being_read(url: str) -> None:
    parts = urlsplit(url)
    declared = 1 << 30   # 1 GiB announced; the server must stop long before
    sent = [0]
    with socket.create_connection((parts.hostname, parts.port), timeout=30) as sock:
        sock.sendall(f"POST /v1/tables/t/query HTTP/1.1\r\nHost: {parts.netloc}\r\nContent-Type: application/json"
                     f"\r\nContent-Length: {declared}\r\n\r\n".encode())

        def pour() -> None:   # writes until the server closes the connection
            block = b" " * 65536
            try:
                while sent[0] < declared:
                    sock.sendall(block)
                    sent[0] += len(block)
            except OSError:
                pass

        writer = threading.Thread(target=pour, daemon=True)
        writer.start()
        received = b""
        try:
            while b"\r\n\r\n" not in received or len(received) < received.index(b"\r\n\r\n") + 4 + 50:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                received += chunk
        except OSError:
            pass
        writer.join(timeout=30)
        assert not writer.is_alive(), "the server kept reading the body"
    head, _, rest = received.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 413"), received[:300]
    assert b"body_too_large" in rest, received[:500]
    # The drain bound plus what the sockets' buffers hold, not the gigabyte.
    assert sent[0] < DRAIN + 32 * 1024 * 1024, f"{sent[0]} bytes were accepted"
