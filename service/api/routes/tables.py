"""Tables: register, list, show, forget; the row-id map of a table's data files."""
from __future__ import annotations

import logging
from typing import Annotated

from fastapi import APIRouter, Path, Query

from index_format.errors import BgixError
from service.api import schemas
from service.api.deps import BearerDep, ReadAuth, Services, ServicesDep, WriteAuth, check_token
from service.api.error_table import ErrorDescription, describe
from service.api.presenters import data_file_public, file_error_public, show_partitions, table_public
from service.catalog.catalog_errors import CorruptDocumentError
from service.catalog.model import Table
from service.jobs.active_builds import check_no_active_build

log = logging.getLogger("bgix.api")
router = APIRouter(prefix="/v1/tables", tags=["tables"])
TableName = Annotated[str, Path(pattern=schemas.TABLE_NAME_PATTERN, description="Table name")]
ERRORS: dict[int | str, dict[str, object]] = {
    code: {"model": schemas.ErrorEnvelope} for code in (400, 401, 403, 404, 409, 422, 500, 503)}


@router.put("/{name}", response_model=schemas.TablePublic, dependencies=[WriteAuth], responses=ERRORS,
            response_model_exclude_unset=True)
def register_table(name: TableName, body: schemas.TableCreate, services: ServicesDep) -> schemas.TablePublic:
    """Register a table (idempotent for the same definition).

    The catalog checks the location: relative → 400; outside the roots, the warehouse root, a directory
    containing it, or inside the warehouse's tables/ or jobs/ directories → 403. Partition columns must be
    plain names, without duplicates, and the hive directory levels (col=value) of the data files already
    there, in order → else 400 invalid_option. Format 'paimon': the location must be a Paimon table
    directory with row-tracking.enabled=true, else 400 invalid_table; its metadata files must read, else
    422 corrupt_table_metadata (or 500 corrupt_index_file for a corrupt deletion vector).

    All or nothing: a PUT that fails leaves no table behind, and one that fails on a name already registered
    (the same definition) leaves that registration as it was.
    """
    table = Table(name=name, location=body.location, format=body.format,
                  partition_columns=list(body.partition_columns), row_id_column=body.row_id_column)
    fresh = not services.catalog.has_table(name)
    stored = services.query_service.sources.register(table)   # the source's checks come before the catalog's put
    services.query_service.invalidate(name)
    try:
        shown = _shown(services, stored)
        shown.model_dump_json()   # what the response writes must write, or the table is not kept
        return shown
    except Exception:
        if fresh:   # registered by this request but cannot be shown: take it back out
            _unregister(services, name)
        raise


def _unregister(services: Services, name: str) -> None:
    """Forget a table a failed PUT registered; the PUT's own error stays the answer."""
    try:
        services.catalog.drop_table(name)
        services.query_service.forget_table(name)
    except Exception:
        log.warning("could not take back the registration of table %r after its PUT failed", name, exc_info=True)


def _shown(services: Services, t: Table) -> schemas.TablePublic:
    """A table's definition, with the summary its source shows of the version served when it has one (a
    Paimon table's snapshot: fields, indexes)."""
    shows = services.query_service.sources.open(t).shows_summary
    return table_public(t, services.query_service.view(t.name).summary if shows else None)


@router.get("", response_model=schemas.TablesPublic, dependencies=[ReadAuth], responses=ERRORS,
            response_model_exclude_unset=True)
def list_tables(services: ServicesDep) -> schemas.TablesPublic:
    """All registered tables. A table whose catalog document cannot be read, or that cannot be shown, is
    listed under `errors` (name and error), so one broken table does not hide the others or fail the list."""
    good, broken = services.catalog.scan_tables()
    failed: dict[str, BaseException] = dict(broken)
    tables = []
    for t in good:
        try:
            shown = _listed(services, t)
            shown.model_dump_json()   # one table that cannot be written must not fail the whole response
        except Exception as exc:  # noqa: BLE001 — listed under `errors` with its error instead
            log.warning("table %r listed under errors: %s", t.name, exc, exc_info=not isinstance(exc, BgixError))
            failed[t.name] = exc
            continue
        tables.append(shown)
    out = schemas.TablesPublic(tables=tables, count=len(tables))
    if failed:  # set only when there is one, so the usual response stays as it was
        out.errors = [schemas.TableErrorPublic(name=name, error=schemas.ErrorBody(**_described(exc)))
                      for name, exc in sorted(failed.items())]
    return out


def _described(exc: BaseException) -> ErrorDescription:
    """A listed table's error as GET /v1/tables/{name} would report it (a bug: 'internal', no more said)."""
    body = describe(exc)
    if body["code"] == "internal":
        return {"code": "internal", "message": "internal server error (see the server log)",
                "details": {"type": type(exc).__name__}}
    return body


def _listed(services: Services, t: Table) -> schemas.TablePublic:
    """A table in the list: its definition; a Paimon table's partition columns are its snapshot's partition keys
    (the served view, cached; when it cannot be read the table is listed as registered and GET names why)."""
    out = table_public(t)
    if services.query_service.sources.open(t).shows_summary:
        try:
            show_partitions(out, services.query_service.view(t.name).summary)
        except BgixError:
            log.debug("table %r listed without its Paimon partition keys", t.name, exc_info=True)
    return out


@router.get("/{name}", response_model=schemas.TablePublic, dependencies=[ReadAuth], responses=ERRORS,
            response_model_exclude_unset=True)
def get_table(name: TableName, services: ServicesDep) -> schemas.TablePublic:
    """One table's definition; for a Paimon table also its current snapshot: fields with their ids and
    types, partition keys, row count and every global index in it (bitmap, btree, multivalue; one entry per
    column and index_type)."""
    return _shown(services, services.catalog.get_table(name))


@router.delete("/{name}", response_model=schemas.Dropped, dependencies=[WriteAuth], responses=ERRORS)
def drop_table(name: TableName, services: ServicesDep) -> schemas.Dropped:
    """Forget the table and its indexes; the source data is never touched. 409 while a build runs.
    Works on a table whose catalog documents are corrupt (only the catalog's directory is deleted)."""
    check_no_active_build(services.catalog, name)
    try:
        location: str | None = services.catalog.get_table(name).location
    except CorruptDocumentError:
        location = None   # only its catalog directory is known (and dropped)
    services.catalog.drop_table(name)
    # its cached readers hold open files (a Paimon table's index files under its location): close them now
    services.query_service.forget_table(name, location)
    return schemas.Dropped(table=name)


@router.get("/{name}/files", response_model=schemas.FilesPublic, dependencies=[ReadAuth],
            responses=ERRORS)
def list_files(name: TableName, services: ServicesDep, credentials: BearerDep,
               refresh: Annotated[bool, Query(description="Rescan the location first (writes the "
                                                          "row-id map: needs the write token)")] = False,
               ) -> schemas.FilesPublic:
    """The row-id map: each data file with its first row id and row count (a Paimon table's data files
    with their first _ROW_ID, as its current snapshot lists them). `errors` lists the data files the last
    scan could not read (path and reason): they get no row ids until a later scan can read them."""
    if refresh:
        # A rescan persists a new row-id map version: a mutation, so it needs the token like PUT.
        check_token(services, credentials)
        services.query_service.sources.open(name).refresh()
        services.query_service.invalidate(name)
    view = services.query_service.view(name)
    files = sorted(view.data_files, key=lambda f: f.first_row_id)
    total = max((f.first_row_id + f.row_count for f in files), default=0)
    errors = services.query_service.sources.open(view.table).unreadable_files()
    return schemas.FilesPublic(table=name, files=[data_file_public(f) for f in files], total_rows=total,
                               errors=[file_error_public(u) for u in errors])
