"""Which builds are live: the one definition of "a build is running", reaping the dead ones, refusing a second
build of one index, and index garbage collection that spares live builds' files.

Rules over the catalog's job records (service.catalog keeps the documents, not these rules).
"""
from __future__ import annotations

from collections.abc import Mapping

from index_format.errors import InvalidOptionError
from service.catalog import Catalog
from service.catalog.catalog_errors import BuildInProgressError
from service.catalog.model import JobRecord, now
from service.jobs.jobspec import column_families
from service.jobs.liveness import job_process_alive


def active_jobs(catalog: Catalog, table: str, column: str | None = None,
             families: Mapping[str, str] | None = None) -> list[JobRecord]:
    """Queued/running jobs of (table, column), or of any column when None, whose process is alive or
    has not recorded itself yet (a queued record the service is starting): the one definition of
    "a build is running". `families` (column → family; tables whose indexes are keyed by column and
    family): only jobs building one of those (column, family) pairs."""
    return [j for j in catalog.list_jobs()
            if j.table == table and (column is None or _same_columns(j.column, column))
            and (families is None or _same_index(j, families)) and j.active
            and (j.pid is None or job_process_alive(j))]


def reap_dead_jobs(catalog: Catalog, table: str, column: str) -> list[str]:
    """Mark queued/running jobs whose process is gone (killed, crashed host process) as failed."""
    dead = [j for j in catalog.list_jobs()
            if j.table == table and _same_columns(j.column, column) and j.active and j.pid is not None
            and not job_process_alive(j)]
    for j in dead:
        catalog.put_job(j.with_(state="failed", finished_at=now(),
                               error=j.error or f"job process {j.pid} exited without finishing"))
    return [j.id for j in dead]


def check_no_active_build(catalog: Catalog, table: str, column: str | None = None, *,
                          except_job: str | None = None, families: Mapping[str, str] | None = None) -> None:
    """Raises BuildInProgressError (naming the job) if another live job builds the same index, or with
    `column` None any index of the table. `families` (column → family, where a column may have one index
    per family: Paimon tables): the same index is the same (column, family); None: any family of the column.

    From inside a job (`except_job` = its own id) only running jobs that started earlier count, so of
    two jobs started together exactly one goes ahead; from the service any queued/running job counts.
    """
    others = [j for j in active_jobs(catalog, table, column, families) if j.id != except_job]
    if except_job is not None:
        me = catalog.get_job(except_job)
        mine = (me.started_at or now(), me.id)
        others = [j for j in others if j.state == "running" and (j.started_at or 0.0, j.id) < mine]
    if others:
        what = f"index {table}.{column}" if column is not None else f"table {table!r}"
        if column is not None and families is not None:
            what += f" ({','.join(dict.fromkeys(families.values()))})"
        more = f" (and {[j.id for j in others[1:]]})" if len(others) > 1 else ""
        raise BuildInProgressError(f"{what} is already being built by job {others[0].id}{more}",
                                   job_id=others[0].id)


def collect_garbage(catalog: Catalog, table: str, column: str, *, keep_job: str | None = None) -> list[str]:
    """Delete the index files of (table, column) no snapshot references, except those of live jobs and of
    `keep_job`; returns what was deleted. A job counts as live while its record is queued/running and its
    process (pid) still exists."""
    live = {j.id for j in active_jobs(catalog, table, column)}
    if keep_job:
        live.add(keep_job)
    return catalog.collect_garbage(table, column, live_jobs=live)


def _same_columns(a: str, b: str) -> bool:
    """Two jobs' index_column values name a common column (Paimon builds may take a comma list)."""
    return a == b or bool(set(a.split(",")) & set(b.split(",")))


def _same_index(job: JobRecord, families: Mapping[str, str]) -> bool:
    """A job builds one of the (column, family) pairs of `families`. A record whose spec names no index_type
    built bitmap (the default); one whose families do not parse counts as building them all (refusing is the
    safe side)."""
    spec = job.spec or {}
    try:
        theirs = column_families(job.column, str(spec.get("index_type") or "bitmap"))
    except InvalidOptionError:
        return True
    return any(theirs.get(c) == f for c, f in families.items())
