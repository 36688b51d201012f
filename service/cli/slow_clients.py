"""Slow and too many clients of `bgix serve`: header and body read timeouts and a per-worker connection cap.

uvicorn has a keep-alive timeout but no read timeout: a client that opens a connection and sends nothing, sends
half its headers, or declares a body and stops sending holds its connection (a file descriptor) forever, and
~20,000 of them exhausted the open-file limit (issue 34). Nginx's well-known rules are applied here, in a
subclass of uvicorn's httptools protocol (the protocol sees every byte before any app code, on every path: the
query fast path, FastAPI, the 413 drain):

- header timeout (BGIX_HEADER_TIMEOUT_S): a request's whole header section, from its connection's start or the
  first byte of the request, must arrive within it; else `408` and the connection is closed.
- body timeout (BGIX_BODY_TIMEOUT_S): while a request's body is being read, the client must send some of it at
  least this often (as nginx's client_body_timeout: between two reads, so a big upload on a slow link is fine);
  else `408` (or only the close, once a response has started). Time during which the server itself stopped
  reading (uvicorn's flow control, the app not consuming the body yet) does not count.
- connection cap (BGIX_MAX_CONNECTIONS, per worker): a connection past it gets `503` with `Connection: close`
  at once, before a byte of its request is read, so held connections cannot reach the open-file limit. The cap
  is lowered to fit under the process's open-file limit (less what the reader caches and the process need).

One timer per connection, re-armed lazily (a body chunk only stores the time), so the cost per request is a
few attribute writes. Imports uvicorn and httptools; only `bgix serve` (and its workers) load this module.
"""
from __future__ import annotations

import asyncio
import logging
import resource
from dataclasses import dataclass
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

log = logging.getLogger("bgix.serve")

# File descriptors a worker needs besides its connections: listening socket, logs, pipes, the job watcher's
# files, Spark / runner pipes (the reader caches' own files are added from BGIX_MAX_OPEN_FILES).
_FD_RESERVE = 128


@dataclass(frozen=True)
class ClientLimits:
    """Per-worker limits on clients; picklable, so `--workers N` hands it to each spawned worker."""

    header_timeout_s: float = 10.0
    body_timeout_s: float = 30.0
    max_connections: int = 1024


def fitted_limits(header_timeout_s: float, body_timeout_s: float, max_connections: int,
                  max_open_files: int) -> ClientLimits:
    """The limits, with the connection cap lowered (and a warning) when it cannot fit under RLIMIT_NOFILE next
    to the reader caches' files (max_open_files, range sidecars half as many more) and the process's own. A soft
    limit below what is needed is first raised towards the hard one (the workers inherit it)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    cap = max_connections
    needed = max_connections + max_open_files + max_open_files // 2 + _FD_RESERVE
    if soft != resource.RLIM_INFINITY and soft < needed:
        raised = needed if hard == resource.RLIM_INFINITY else min(needed, hard)
        if raised > soft:
            try:
                resource.setrlimit(resource.RLIMIT_NOFILE, (raised, hard))
                soft = raised
            except (ValueError, OSError):
                pass
    if soft != resource.RLIM_INFINITY:
        room = soft - (max_open_files + max_open_files // 2) - _FD_RESERVE
        if room < cap:
            cap = max(16, room)
            log.warning("BGIX_MAX_CONNECTIONS=%s does not fit under the open-file limit (ulimit -n %s) next to "
                        "BGIX_MAX_OPEN_FILES=%s: %s connections per worker", max_connections, soft,
                        max_open_files, cap)
    return ClientLimits(header_timeout_s, body_timeout_s, cap)


def _response(status: bytes, code: str, message: str) -> bytes:
    body = ('{"error":{"code":"%s","message":"%s"}}' % (code, message)).encode()
    return (b"HTTP/1.1 " + status + b"\r\ncontent-type: application/json\r\ncontent-length: "
            + str(len(body)).encode() + b"\r\nconnection: close\r\n\r\n" + body)


_OVER_CAP = _response(b"503 Service Unavailable", "too_many_connections",
                      "the server holds its maximum of connections (BGIX_MAX_CONNECTIONS); retry later")
_HEADER_408 = _response(b"408 Request Timeout", "request_timeout",
                        "request headers not received in time (BGIX_HEADER_TIMEOUT_S)")
_BODY_408 = _response(b"408 Request Timeout", "request_timeout",
                      "request body not received in time (BGIX_BODY_TIMEOUT_S)")

_IDLE, _HEADERS, _BODY = 0, 1, 2


class GuardedHttpProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with the header / body timeouts and the connection cap of `limits`
    (set once per process by `install`)."""

    limits = ClientLimits()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._phase = _IDLE
        self._since = 0.0          # loop time the current phase started, or the last body bytes came
        self._timer: asyncio.TimerHandle | None = None
        self._refused = False

    # ---- connection ------------------------------------------------------------------------
    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]  # as uvicorn's own
        super().connection_made(transport)
        if len(self.connections) > self.limits.max_connections:
            self._refused = True
            transport.write(_OVER_CAP)
            transport.close()
            return
        self._enter(_HEADERS)   # the first request's headers are due from now (nothing sent yet counts)

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._refused:
            return   # closing: nothing of it is parsed
        super().data_received(data)

    # ---- parser callbacks ------------------------------------------------------------------
    def on_message_begin(self) -> None:
        super().on_message_begin()
        if self._phase != _HEADERS:   # a keep-alive connection's next request: its headers are due from now
            self._enter(_HEADERS)

    def on_headers_complete(self) -> None:
        super().on_headers_complete()
        self._enter(_BODY)   # until on_message_complete (at once for a request without a body)

    def on_body(self, body: bytes) -> None:
        self._since = self.loop.time()
        super().on_body(body)

    def on_message_complete(self) -> None:
        self._phase = _IDLE
        self._cancel()
        super().on_message_complete()

    # ---- timers ----------------------------------------------------------------------------
    def _enter(self, phase: int) -> None:
        self._phase = phase
        self._since = self.loop.time()
        self._cancel()
        self._arm(self._timeout())

    def _timeout(self) -> float:
        return self.limits.header_timeout_s if self._phase == _HEADERS else self.limits.body_timeout_s

    def _arm(self, delay: float) -> None:
        self._timer = self.loop.call_later(delay, self._expired)

    def _cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _expired(self) -> None:
        self._timer = None
        if self._phase == _IDLE or self.transport.is_closing():
            return
        now = self.loop.time()
        if self._phase == _BODY and self.flow.read_paused:
            # the server stopped reading (flow control), not the client sending: the wait starts again
            self._since = now
        left = self._since + self._timeout() - now
        if left > 0:
            self._arm(left)   # body bytes came since the timer was armed
            return
        headers = self._phase == _HEADERS
        self._phase = _IDLE
        log.info("closing the connection of %s: %s not received within %s s", _client(self.client),
                 "request headers" if headers else "more of the request body",
                 self.limits.header_timeout_s if headers else self.limits.body_timeout_s)
        cycle = self.cycle
        in_flight = cycle is not None and not cycle.response_complete
        # a 408 only where it answers the stalled request: not into a half-written answer, and not after the
        # answer to a request whose body the app did not wait for
        if (not (in_flight and cycle.response_started)) if headers else (in_flight and not cycle.response_started):
            self.transport.write(_HEADER_408 if headers else _BODY_408)
        if in_flight:
            cycle.disconnected = True   # the app's receive() gets http.disconnect; its answer is not written
            cycle.message_event.set()
        self.transport.close()


def _client(client: tuple[str, int] | None) -> str:
    return "%s:%d" % client if client else "a client"


def install(limits: ClientLimits) -> type[GuardedHttpProtocol]:
    """Set this process's limits; the class to hand to uvicorn as `http=`."""
    GuardedHttpProtocol.limits = limits
    return GuardedHttpProtocol
