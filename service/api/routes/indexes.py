"""Indexes: create_global_index (202 + job id), drop_global_index, remove_orphan_files, per-column index listing, value
look-ups."""
from __future__ import annotations

from typing import Annotated, Literal, cast

from fastapi import APIRouter, Path, Query
from fastapi.responses import JSONResponse

from index_format.errors import IndexFormatError
from index_format.families import FAMILIES
from index_format.literals import to_json
from service.api import schemas
from service.api.deps import ReadAuth, ServicesDep, WriteAuth
from service.api.error_table import describe, log
from service.query.query_errors import InvalidCursorError, SnapshotChangedError
from service.api.presenters import iso
from service.query.query_service import ColumnView
from service.query.results import ValuesCursor
from service.api.routes.tables import ERRORS, TableName
from service.jobs.active_builds import check_no_active_build

router = APIRouter(tags=["indexes"])
ColumnName = Annotated[str, Path(min_length=1, max_length=256, description="Indexed column")]


@router.post("/v1/create_global_index", status_code=202, response_model=schemas.JobCreated,
             dependencies=[WriteAuth], responses=ERRORS)
def create_global_index(body: schemas.CreateIndexRequest, services: ServicesDep) -> JSONResponse:
    """Start a build job (spec §7.2); 409 names the job already building it. `index_type` is the family:
    bitmap (any predicate; low and medium cardinality), btree (sorted keys; high cardinality and ranges) or
    multivalue (ARRAY columns; array_contains, arrays_overlap, array_contains_all).
    `index_column` may list several columns ("uid,tags"), built from one scan, with one family for all or one per
    column in order (`index_type` "btree,multivalue"). Paimon tables: the job commits the table's own global index
    files as one new Paimon snapshot; plain tables: each column's index takes its next snapshot.
    400 before any job starts: a column the table does not have, a type its family cannot hold, an option of
    another family (`bitmap-index.compression` on a btree build)."""
    job = services.jobs.start(body.table, body.index_column, body.index_type, body.partitions,
                              body.options)
    return JSONResponse(schemas.JobCreated(job_id=job.id).model_dump(), status_code=202,
                        headers={"Location": f"/v1/jobs/{job.id}"})


@router.get("/v1/index-families", response_model=schemas.IndexFamiliesPublic, dependencies=[ReadAuth],
            responses=ERRORS)
def list_index_families() -> schemas.IndexFamiliesPublic:
    """The index families bgix serves (index_format.families), with what each answers and whether bgix builds it."""
    return schemas.IndexFamiliesPublic(families=[
        schemas.IndexFamilyPublic(name=f.name, description=f.description, builds=f.builds,
                                  answers=None if f.answers is None else sorted(f.answers),
                                  key_types=None if f.key_types is None else sorted(f.key_types))
        for f in FAMILIES.values()])


@router.post("/v1/drop_global_index", response_model=schemas.Dropped, dependencies=[WriteAuth],
             responses=ERRORS)
def drop_global_index(body: schemas.DropIndexRequest, services: ServicesDep) -> schemas.Dropped:
    """Remove an index (all snapshots and files of the column); the source data is untouched.
    Paimon tables: one new Paimon snapshot takes the column's global index files (every family) out of the table
    (index deletes, as Paimon's drop_global_index); the files stay for older snapshots."""
    source = services.query_service.sources.open(body.table)
    # A running build would commit into the dropped index and bring it back.
    check_no_active_build(services.catalog, body.table, body.index_column)
    source.drop_index(body.index_column)
    services.query_service.forget_table(body.table, source.table.location)
    return schemas.Dropped(table=body.table, index_column=body.index_column)


@router.post("/v1/remove_orphan_files", response_model=schemas.OrphanFilesRemoved, dependencies=[WriteAuth],
             responses=ERRORS)
def remove_orphan_files(body: schemas.RemoveOrphanFilesRequest, services: ServicesDep) -> schemas.OrphanFilesRemoved:
    """Remove a Paimon table's orphan global index files (as Paimon's remove_orphan_files, for index files only):
    files in its `index/` directory that no snapshot, tag, changelog or branch references and no running bgix build
    may still commit, and that either a bgix build that is over wrote (a killed build) or are older than
    `older_than_s`. Data files, manifests and deletion-vector files are never touched. `dry_run` lists them only.
    400 unsupported_operation for a plain table; 500 corrupt_catalog_document (nothing removed) when a snapshot's
    index manifest cannot be read."""
    report = services.query_service.sources.open(body.table).remove_orphan_files(
        older_than_s=body.older_than_s, dry_run=body.dry_run)
    return schemas.OrphanFilesRemoved(
        table=body.table, dry_run=report.dry_run, older_than_s=report.older_than_s, files=len(report.removed),
        bytes=report.bytes,
        removed=[schemas.OrphanFilePublic(path=f.path, file_name=f.file_name, bytes=f.bytes, age_s=round(f.age_s, 3),
                                          job_id=f.job_id, reason=f.reason) for f in report.removed],
        kept=schemas.OrphanFilesKept(referenced=report.kept_referenced, in_flight=report.kept_in_flight,
                                     young=report.kept_young),
        failed=list(report.failed), metadata_scanned=report.metadata_scanned)


@router.get("/v1/tables/{name}/indexes", response_model=schemas.IndexesPublic,
            dependencies=[ReadAuth], responses=ERRORS)
def list_indexes(name: TableName, services: ServicesDep) -> schemas.IndexesPublic:
    """Per indexed column and index family: snapshot, files, bytes, covered/uncovered ranges, distinct values,
    null rows."""
    view = services.query_service.view(name)
    live = {(f.path, f.size, f.mtime, f.first_row_id) for f in view.data_files}
    out = []
    errors = [schemas.IndexErrorPublic(column=column, error=schemas.ErrorBody(**describe(exc)))
              for column, exc in sorted(view.broken_columns.items())]
    for column, cv in [(c, v) for c, main in sorted(view.columns.items()) for v in (main, *main.more)]:
        snap = cv.snapshot
        stats: dict[str, int | None] = {"distinct_values": None, "null_rows": None}
        key_order = None
        try:
            stats.update(services.query_service.index_stats(cv, view))
            key_order = _key_order(cv, view.records_key_order)
        except IndexFormatError as exc:   # one index file does not read: named, the rest is still listed
            services.metrics.corrupt_files.inc()
            log.error("corrupt index file: %s", exc)
            errors.append(schemas.IndexErrorPublic(column=column, index_type=snap.index_type,
                                                   error=schemas.ErrorBody(**describe(exc))))
        changed = any((s.path, s.size, s.mtime, s.first_row_id) not in live for s in snap.source_files)
        out.append(schemas.IndexPublic(
            column=column, index_type=snap.index_type, key_type=snap.key_type, snapshot_id=snap.id,
            files=len(snap.files), bytes=sum(f.file_size for f in snap.files),
            covered_ranges=[list(r) for r in snap.covered_ranges],
            uncovered_ranges=view.uncovered(cv.index),
            distinct_values=stats["distinct_values"], null_rows=stats["null_rows"],
            built_at=iso(snap.created_at), stale=bool(snap.stale or changed),
            options={str(k): str(v) for k, v in snap.options.items()},
            key_order=key_order))
    return schemas.IndexesPublic(table=name, indexes=out, errors=errors)


def _key_order(cv: ColumnView, recorded: bool) -> schemas.KeyOrder | None:
    """bgix builds record the order with their options; where other writers' files make up the index (a
    Paimon table's) none is recorded, so the files tell (their readers are cached; index_stats opened them)."""
    if cv.kt.byte_order_is_logical:  # strings, booleans: both orders are the same
        return None
    # the recorded option and the readers spell only KeyOrder's words (the response model checks them)
    if recorded:
        return cast("schemas.KeyOrder | None", cv.snapshot.options.get("bgix.key-order"))
    orders = {cast("schemas.KeyOrder", ref.open().key_order) for ref in cv.index.files}
    return orders.pop() if len(orders) == 1 else "mixed"


@router.get("/v1/tables/{name}/indexes/{column}/values", response_model=schemas.ValuesPublic,
            dependencies=[ReadAuth], responses=ERRORS)
def list_values(
    name: TableName, column: ColumnName, services: ServicesDep,
    prefix: Annotated[str | None, Query(max_length=4096, description="String prefix filter")] = None,
    limit: Annotated[int, Query(ge=1, le=schemas.MAX_LIMIT)] = 100,
    order: Annotated[Literal["count", "value"], Query(description="rows descending, or value order")] = "count",
    cursor: Annotated[str | None, Query(max_length=4096)] = None,
) -> schemas.ValuesPublic:
    """Distinct values with their row counts, from the column's main index (no row ids materialized); the same
    value in several files or row ranges of the snapshot is summed. A multivalue (ARRAY) column lists its
    elements, each with the rows whose array holds it (order=count: the top elements)."""
    key = f"{order}|{prefix}"
    offset = 0
    snap = None
    if cursor is not None:
        page = ValuesCursor.decode(cursor)
        offset, snap = page.offset, page.snapshot
        if page.key != key:
            raise InvalidCursorError("cursor belongs to a different look-up")
        if snap != services.query_service.column(name, column).snapshot.id:   # before any statistics work
            raise SnapshotChangedError("index snapshot changed since the first page; restart without a cursor")
    # One more than the page tells whether another page follows; only those rows are read.
    cv, items = services.query_service.value_page(name, column, prefix, order, offset, limit + 1)
    if snap is not None and snap != cv.snapshot.id:
        raise SnapshotChangedError("index snapshot changed since the first page; restart without a cursor")
    values = [schemas.ValueCount(value=to_json(cv.kt, value), rows=rows) for value, rows in items[:limit]]
    more = len(items) > limit
    # NULL is no key of the index, so no value entry: its count comes with the first page (the top values).
    nulls = None if cursor is not None else \
        services.query_service.index_stats(cv, services.query_service.view(name))["null_rows"]
    return schemas.ValuesPublic(
        column=cv.index.column, values=values, snapshot_id=cv.snapshot.id, null_rows=nulls,
        next_cursor=ValuesCursor(offset + limit, cv.snapshot.id, key).encode() if more else None)
