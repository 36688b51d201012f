"""Annotated dependencies: the per-app services bundle, catalog, query service, query pool, job runner and bearer auth.

Handlers declare what they need in their signature; auth is a dependency, not code in handlers.
Must not import service.build_job or pyspark.
"""
from __future__ import annotations

import hmac
from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from index_format.storage import Storage
from service.api.error_codes import UnauthorizedError
from service.query.executor import QueryExecutor
from service.server.job_runner import JobRunner
from service.observability.metrics import Metrics
from service.query.query_service import QueryService
from service.server.settings import Settings
from service.catalog import Catalog


# Dependencies are `async def` on purpose: FastAPI runs sync dependencies in the thread pool, one
# thread hop each, which cost more than a whole point query.


@dataclass(frozen=True)
class Services:
    """Everything one app instance owns; built in create_app(), stored on app.state.services."""

    settings: Settings
    storage: Storage
    catalog: Catalog
    query_service: QueryService
    jobs: JobRunner
    metrics: Metrics
    query_pool: QueryExecutor


async def get_services(request: Request) -> Services:
    services: Services = request.app.state.services
    return services


ServicesDep = Annotated[Services, Depends(get_services)]
_bearer = HTTPBearer(auto_error=False, description="Bearer token (BGIX_TOKEN)")
BearerDep = Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]


def check_token(services: Services, credentials: HTTPAuthorizationCredentials | None) -> None:
    """Raises UnauthorizedError unless the bearer token matches BGIX_TOKEN (no-op when unset)."""
    token = services.settings.token
    if token is None:
        return
    given = credentials.credentials if credentials is not None else ""
    # Constant-time compare so the token cannot be guessed byte by byte from response timing.
    if not hmac.compare_digest(given.encode(), token.get_secret_value().encode()):
        raise UnauthorizedError("missing or invalid bearer token")


async def require_write(services: ServicesDep, credentials: BearerDep) -> None:
    """Every mutating endpoint: the token is required whenever BGIX_TOKEN is set."""
    check_token(services, credentials)


async def require_read(services: ServicesDep, credentials: BearerDep) -> None:
    """Read endpoints: the token is required only with BGIX_READ_TOKEN_REQUIRED."""
    if services.settings.read_token_required:
        check_token(services, credentials)


async def read_services(request: Request, credentials: BearerDep) -> Services:
    """Services plus the read-token check in one dependency (the hot query path resolves one node)."""
    services: Services = request.app.state.services
    if services.settings.read_token_required:
        check_token(services, credentials)
    return services


ReadServicesDep = Annotated[Services, Depends(read_services)]
WriteAuth = Depends(require_write)
ReadAuth = Depends(require_read)
