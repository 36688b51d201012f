"""Operations endpoints: liveness, readiness, Prometheus metrics. No auth (scraped by infrastructure)."""
from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST

from service.api import schemas
from service.api.deps import ServicesDep

router = APIRouter(tags=["ops"])


@router.get("/healthz", response_model=schemas.Health)
async def healthz() -> schemas.Health:
    """The process is up."""
    return schemas.Health()


@router.get("/readyz", response_model=schemas.Ready,
            responses={503: {"model": schemas.Ready, "description": "Warehouse not reachable, or the build runner "
                                                                        "still warming at start-up"}})
def readyz(services: ServicesDep) -> JSONResponse:
    """The warehouse root answers (a cheap list of the tables directory), and the warm build runner is up
    (`checks.builds`: at start-up, while its Spark session and workers warm, at most BGIX_BUILD_WARMUP_S)."""
    checks: dict[str, str] = {}
    try:
        services.catalog.list_tables()
        checks["warehouse"] = "ok"
        ready = True
    except Exception as exc:  # any failure means not ready; the reason is reported, not raised
        checks["warehouse"] = f"{type(exc).__name__}: {exc}"
        ready = False
    builds_ready, checks["builds"] = services.jobs.readiness()
    ready = ready and builds_ready
    body = schemas.Ready(status="ready" if ready else "not_ready", warehouse=services.storage.root,
                         checks=checks)
    return JSONResponse(body.model_dump(), status_code=200 if ready else 503)


@router.get("/metrics", response_class=Response,
            responses={200: {"content": {"text/plain": {"schema": {"type": "string"}}},
                             "description": "Prometheus text exposition"}})
def metrics(services: ServicesDep) -> Response:
    """Prometheus metrics of this app instance."""
    return Response(services.metrics.render(), media_type=CONTENT_TYPE_LATEST)
