"""The app of one `bgix serve --workers N` worker: uvicorn imports `create_worker_app` (factory=True) in each
worker process; settings come from the BGIX_* environment the workers inherit, the shared directory from
`_BGIX_WORKER_GROUP` (service.server.worker_group). What the group adds to an app lives in service.server.group_query.
"""
from __future__ import annotations

import os
from pathlib import Path

from fastapi import FastAPI

from service.api.app import create_app
from service.server.worker_group import ENV_VAR, WorkerGroup


def create_worker_app() -> FastAPI:
    """The uvicorn factory of a worker (`service.api.worker_app:create_worker_app`, factory=True)."""
    path = os.environ.get(ENV_VAR)
    if not path:
        raise RuntimeError(f"{ENV_VAR} is not set: start workers with `bgix serve --workers N`")
    return create_app(worker_group=WorkerGroup(Path(path)))
