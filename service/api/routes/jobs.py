"""Build jobs: list, show, cancel, a build's log (creation is POST /v1/create_global_index in routes.indexes)."""
from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path
from fastapi.responses import PlainTextResponse, Response

from service.api import schemas
from service.api.deps import ReadAuth, ServicesDep, WriteAuth
from service.api.presenters import job_public
from service.api.routes.tables import ERRORS
from service.jobs.job_logs import read_job_log

router = APIRouter(prefix="/v1/jobs", tags=["jobs"])
JobId = Annotated[str, Path(pattern=r"^[A-Za-z0-9_\-]{1,64}$", description="Job id")]


@router.get("", response_model=schemas.JobsPublic, dependencies=[ReadAuth], responses=ERRORS)
def list_jobs(services: ServicesDep) -> schemas.JobsPublic:
    """All job records, oldest first (they survive service restarts)."""
    return schemas.JobsPublic(jobs=[job_public(j) for j in services.catalog.list_jobs()])


@router.get("/{job_id}", response_model=schemas.JobPublic, dependencies=[ReadAuth], responses=ERRORS)
def get_job(job_id: JobId, services: ServicesDep) -> schemas.JobPublic:
    """State and progress of one job."""
    job = services.catalog.get_job(job_id)
    if job.state == "succeeded":
        services.query_service.note_snapshot(job.table, job.column, job.snapshot_id)
    return job_public(job)


@router.get("/{job_id}/log", response_class=Response, dependencies=[ReadAuth], responses={
    **ERRORS, 200: {"content": {"text/plain": {"schema": {"type": "string"}}},
                    "description": "The build's log (empty before it starts)."}})
def get_job_log(job_id: JobId, services: ServicesDep) -> PlainTextResponse:
    """The build's driver-side log, kept beside its job record: what the build logged and Spark's driver output
    while it ran (a build runner runs builds side by side: that part may hold lines of builds run at the same
    time); its last MiB. Written every few seconds while the build runs; empty for a job that has not started
    or that ran before job logs were kept. 404 not_found for an unknown job."""
    services.catalog.get_job(job_id)   # 404 for an unknown job
    return PlainTextResponse(read_job_log(services.storage, job_id) or "")


@router.post("/{job_id}/cancel", response_model=schemas.JobPublic, dependencies=[WriteAuth],
             responses=ERRORS)
def cancel_job(job_id: JobId, services: ServicesDep) -> schemas.JobPublic:
    """Terminate a queued or running job (a finished job is returned unchanged)."""
    return job_public(services.jobs.cancel(job_id))
