"""RequestGuard on its own: a body over the limit is 413 (declared or streamed), a body within it reaches
the app intact, and an unexpected exception becomes the 500 envelope (the server keeps the connection)."""
from __future__ import annotations

from collections.abc import Iterator

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from service.api.guard import RequestGuard
from tests.api.helpers import TestClient


async def echo(request: Request) -> JSONResponse:
    return JSONResponse({"length": len(await request.body())})


async def boom(request: Request) -> JSONResponse:
    raise RuntimeError("a bug")


def _client() -> TestClient:
    # As in create_app: a user middleware, inside Starlette's ServerErrorMiddleware.
    app = Starlette(routes=[Route("/echo", echo, methods=["POST"]), Route("/boom", boom)],
                    middleware=[Middleware(RequestGuard, max_body_bytes=1000)])
    return TestClient(app, raise_server_exceptions=False)


def test_bodies_within_the_limit_pass_and_larger_ones_are_413() -> None:
    with _client() as client:
        assert client.post("/echo", content=b"x" * 1000).json() == {"length": 1000}
        r = client.post("/echo", content=b"x" * 1001)
        assert r.status_code == 413 and r.json()["error"]["code"] == "body_too_large"
        assert r.json()["error"]["details"]["limit"] == 1000

        def chunks(n: int) -> Iterator[bytes]:
            for _ in range(n):
                yield b"x" * 300

        assert client.post("/echo", content=chunks(3)).json() == {"length": 900}
        r = client.post("/echo", content=chunks(4))
        assert r.status_code == 413 and "BGIX_MAX_BODY_BYTES" in r.json()["error"]["message"]


def test_an_unexpected_exception_is_the_500_envelope() -> None:
    with _client() as client:
        r = client.get("/boom")
        assert r.status_code == 500
        assert r.json() == {"error": {"code": "internal", "message": "internal server error", "details": {}}}
        assert "a bug" not in r.text
