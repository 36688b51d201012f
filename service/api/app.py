"""The FastAPI app factory: settings → storage, catalog, query service and pool, job runner; routers, error handlers,
metrics middleware, lifespan; /docs and /redoc without a CDN. `python -m service.api.app --export-openapi PATH`
writes the OpenAPI document.

Nothing is created at import time. Must not import service.build_job or pyspark.
"""
from __future__ import annotations

import argparse
import inspect
import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI
from fastapi.routing import APIRoute
from fastapi.staticfiles import StaticFiles
from fastapi_offline import FastAPIOffline
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from index_format.predicate.limits import PredicateLimits
from index_format.storage import Storage
from service.api.deps import Services
from service.api.error_table import install_error_handlers
from service.query.executor import QueryExecutor
from service.api.fast_query import QueryFastPath
from service.api.worker_middleware import WorkerMiddleware
from service.server.group_query import GroupQueryService
from service.api.guard import RequestGuard
from service.server.job_runner import JobRunner
from service.observability.log_format import configure_logging
from service.observability.metrics import Metrics
from service.query.query_service import QueryService
from service.api.routes import aggregate, indexes, jobs, ops, query, tables
from service.server.settings import Settings
from service.catalog import Catalog

if TYPE_CHECKING:
    from service.server.worker_group import WorkerGroup

API_VERSION = "1.0.0"
STATIC_DIR = Path(__file__).resolve().parent / "static"


def custom_generate_unique_id(route: APIRoute) -> str:
    """Stable operation ids: '<tag>-<function name>' (what generated clients are named after)."""
    tag = route.tags[0] if route.tags else "default"
    return f"{tag}-{route.name}"


class _LatencyMiddleware:
    """Pure ASGI middleware (no BaseHTTPMiddleware overhead) timing requests by route template."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics
        # labelled children by (method, route, status): prometheus_client's labels() locks and builds keys
        self._series: dict[tuple[str, str, str], Any] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        status = [500]

        async def send_wrapper(message: Message) -> None:
            if message["type"] == "http.response.start":
                status[0] = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, send_wrapper)
        finally:
            route = scope.get("route")
            key = (scope.get("method", ""), getattr(route, "path", None) or "unmatched", str(status[0]))
            series = self._series.get(key)
            if series is None:
                series = self._series[key] = self.metrics.request_latency.labels(
                    method=key[0], route=key[1], status=key[2])
            series.observe(time.perf_counter() - start)


def build_services(settings: Settings, worker_group: WorkerGroup | None = None) -> Services:
    """Everything an app instance owns, from its settings; `worker_group`: one of `bgix serve --workers N`."""
    storage = Storage(settings.warehouse, settings.effective_allowed_roots(), settings.storage_options)
    catalog = Catalog(storage)
    metrics = Metrics()
    limits = PredicateLimits(max_depth=settings.max_predicate_depth, max_in_values=settings.max_in_values,
                             max_literal_bytes=settings.max_literal_bytes, max_tokens=settings.max_predicate_tokens)
    qs_args = (catalog, storage, metrics)
    qs_kwargs: dict[str, Any] = dict(cache_bytes=settings.cache_bytes, snapshot_ttl=settings.snapshot_ttl_seconds,
                                     limits=limits, parse_cache_bytes=settings.parse_cache_bytes,
                                     max_open_files=settings.max_open_files,
                                     scan_max_rows=settings.query_scan_max_rows,
                                     max_groups=settings.aggregate_max_groups)
    if worker_group is None:
        query_service = QueryService(*qs_args, **qs_kwargs)
    else:
        query_service = GroupQueryService(*qs_args, group=worker_group, **qs_kwargs)
    runner = JobRunner(catalog, storage, settings, on_finished=query_service.invalidate, group=worker_group)
    metrics.watch_jobs(runner.state_counts)
    return Services(settings=settings, storage=storage, catalog=catalog, query_service=query_service, jobs=runner,
                    metrics=metrics, query_pool=QueryExecutor(settings.query_threads, settings.query_timeout_s))


def _include_dashboard(app: FastAPI) -> None:
    """Mount the dashboard router (owned by the dashboard module) and its static files, when present."""
    try:
        from service.api.routes import dashboard
    except ImportError as exc:
        if exc.name != "service.api.routes.dashboard":
            raise
    else:
        app.include_router(dashboard.router)
    if STATIC_DIR.is_dir():
        app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")


# FastAPI's built-in OpenTelemetry hooks look their providers up on every request (profiled: about a tenth
# of a point query's server time); bgix exports its own Prometheus metrics. Older FastAPI has no such hooks.
_NO_TELEMETRY: dict[str, Any] = (
    {"telemetry": {"tracing": False, "metrics": False, "logs": False}}
    if "telemetry" in inspect.signature(FastAPI.__init__).parameters else {})


def create_app(settings: Settings | None = None, *, worker_group: WorkerGroup | None = None) -> FastAPI:
    """A new app; settings are read from the environment (BGIX_*) only when not given.

    `worker_group`: this app is one worker of `bgix serve --workers N` (service.server.worker_group): build
    jobs run in whichever worker holds the group's job-runner lock, and snapshot views are kept fresh
    across the workers.
    """
    settings = settings if settings is not None else Settings()
    if settings.log_format == "json":
        configure_logging("json")   # now too: a worker's uvicorn logs its first lines before the lifespan runs
    services = build_services(settings, worker_group)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        configure_logging(settings.log_format)   # after uvicorn configured its loggers (and their level)
        services.jobs.start_watcher()
        try:
            yield
        finally:
            services.query_pool.close()
            services.jobs.close()

    # FastAPIOffline: FastAPI whose /docs and /redoc load Swagger UI and ReDoc from fastapi-offline's packaged
    # copies (served under /static-offline-docs), not a CDN, so they render on a host with no internet.
    app = FastAPIOffline(
        title="bgix", version=API_VERSION, lifespan=lifespan,
        description="Build and serve Apache Paimon global indexes (bitmap, btree, multivalue); answer "
                    "predicates with exact row-id sets.",
        generate_unique_id_function=custom_generate_unique_id,
        **_NO_TELEMETRY,
    )
    app.state.services = services
    install_error_handlers(app, services.metrics)
    for module in (tables, indexes, jobs, query, aggregate, ops):
        app.include_router(module.router)
    _include_dashboard(app)
    app.add_middleware(QueryFastPath, services=services, fastapi_app=app)
    app.add_middleware(_LatencyMiddleware, metrics=services.metrics)
    if worker_group is not None:
        assert isinstance(services.query_service, GroupQueryService)
        app.add_middleware(WorkerMiddleware, sync=services.query_service.sync_generation)
    app.add_middleware(RequestGuard, max_body_bytes=settings.max_body_bytes,
                       drain_bytes=settings.body_drain_bytes)   # added last: outermost
    return app


def openapi_document(app: FastAPI | None = None) -> dict[str, Any]:
    """The OpenAPI document, generated from an app built with default settings."""
    return (app or create_app(Settings(warehouse="./warehouse"))).openapi()


def export_openapi(path: Path) -> None:
    path.write_text(json.dumps(openapi_document(), indent=2, sort_keys=True) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m service.api.app")
    parser.add_argument("--export-openapi", metavar="PATH", type=Path, required=True,
                        help="write the OpenAPI document of the app to PATH")
    args = parser.parse_args(argv)
    export_openapi(args.export_openapi)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
