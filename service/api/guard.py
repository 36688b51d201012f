"""The outermost guard of every HTTP request: the body size limit (413) and a last-resort 500 envelope.

Pure ASGI (no BaseHTTPMiddleware): a body over BGIX_MAX_BODY_BYTES is refused from its Content-Length
before a byte is read, or, without one, as soon as the streamed bytes pass the limit. An unexpected
exception becomes the 500 envelope here instead of in Starlette's ServerErrorMiddleware, which re-raises
after responding and makes the server drop the keep-alive connection. Must not import pyspark.

After a 413 the rest of the body is read and discarded, up to BGIX_BODY_DRAIN_BYTES or DRAIN_SECONDS, before
the connection closes (as nginx's lingering close): a client that writes its whole body before reading the
answer (Python's urllib) would otherwise see the connection reset instead of the 413. Nothing drained is kept.
"""
from __future__ import annotations

import logging

import anyio
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from service.api.error_codes import BodyTooLargeError
from service.api.error_table import envelope

log = logging.getLogger("bgix.api")

# Longest time a refused body is drained after its 413 (a client that stops sending cannot hold the connection).
DRAIN_SECONDS = 5.0


class RequestGuard:
    def __init__(self, app: ASGIApp, max_body_bytes: int, drain_bytes: int = 16 * 1024 * 1024) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes
        self.drain_bytes = drain_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = _content_length(scope)
        if declared is not None and declared > self.max_body_bytes:
            await self._too_large(scope, receive, send)
            return
        if declared is None and scope.get("method") in ("POST", "PUT", "PATCH"):
            # Chunked upload: read it here (bounded) so the limit holds before any parser sees it.
            chunks: list[bytes] = []
            size = 0
            while True:
                message = await receive()
                if message["type"] != "http.request":
                    break
                chunk = message.get("body", b"")
                size += len(chunk)
                if size > self.max_body_bytes:
                    await self._too_large(scope, receive, send)
                    return
                chunks.append(chunk)
                if not message.get("more_body", False):
                    break
            receive = replay_body(b"".join(chunks), receive)

        started = [False]

        async def tracking_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                started[0] = True
            await send(message)

        try:
            await self.app(scope, receive, tracking_send)
        except Exception:
            log.exception("internal error on %s %s", scope.get("method"), scope.get("path"))
            if started[0]:
                raise  # half a response went out: only closing the connection can tell the client
            await envelope(500, "internal", "internal server error")(scope, receive, send)

    async def _too_large(self, scope: Scope, receive: Receive, send: Send) -> None:
        exc = BodyTooLargeError(self.max_body_bytes)
        response = envelope(413, "body_too_large", str(exc), {"type": "BodyTooLargeError", "limit": exc.limit})
        # The unread body makes the server close the connection after this response; that is intended.
        response.headers["Connection"] = "close"

        async def lingering_send(message: Message) -> None:
            # The whole answer goes out first; the server may only end the response (and close) after the drain.
            if message["type"] == "http.response.body" and not message.get("more_body", False):
                await send({**message, "more_body": True})
                await self._drain(scope, receive)
                message = {"type": "http.response.body", "body": b"", "more_body": False}
            await send(message)

        await response(scope, receive, lingering_send)

    async def _drain(self, scope: Scope, receive: Receive) -> None:
        """Read and discard the refused body, at most drain_bytes of it and for at most DRAIN_SECONDS."""
        if any(k == b"expect" and v.lower() == b"100-continue" for k, v in scope.get("headers", ())):
            return   # the client waits for a go-ahead before sending its body: there is nothing to drain
        left = self.drain_bytes
        with anyio.move_on_after(DRAIN_SECONDS):
            while left > 0:
                message = await receive()
                if message["type"] != "http.request":
                    return
                left -= len(message.get("body", b""))
                if not message.get("more_body", False):
                    return


def _content_length(scope: Scope) -> int | None:
    for key, value in scope.get("headers", ()):
        if key == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


def replay_body(body: bytes, receive: Receive) -> Receive:
    sent = [False]

    async def replay() -> Message:
        if not sent[0]:
            sent[0] = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()  # later calls wait for the disconnect, as the server's receive would

    return replay
