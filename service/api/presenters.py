"""Catalog records → public response models (ISO timestamps, progress defaults).

Pure conversions; must not import fastapi, pyspark or touch storage.
"""
from __future__ import annotations

from datetime import UTC, datetime

from service.api import schemas
from service.catalog.model import PAIMON, DataFile, JobRecord, Table, UnreadableFile
from service.tables.table_summary import OriginSummary, StaleFileSummary, TableSummary


def iso(ts: float | None) -> str | None:
    """Epoch seconds → ISO 8601 UTC text (None stays None)."""
    if ts is None:
        return None
    return datetime.fromtimestamp(ts, tz=UTC).isoformat()


def table_public(t: Table, summary: TableSummary | None = None) -> schemas.TablePublic:
    """`summary` (the source's description of the version served, when it has one: a Paimon snapshot) adds
    it under the field of its kind (`paimon`); other tables' responses stay as they were."""
    out = schemas.TablePublic(
        name=t.name, location=t.location, format=t.format,
        partition_columns=list(t.partition_columns), row_id_column=t.row_id_column,
        created_at=iso(t.created_at))
    if summary is not None and summary.kind == PAIMON:
        out.paimon = paimon_public(summary)
        show_partitions(out, summary)
    return out


def show_partitions(out: schemas.TablePublic, summary: TableSummary | None) -> None:
    """A table whose partitions are its own schema's (Paimon: registration names none): report those."""
    if summary is not None:
        out.partition_columns = list(summary.partition_keys)


def paimon_public(v: TableSummary) -> schemas.PaimonTablePublic:
    return schemas.PaimonTablePublic(
        snapshot_id=v.version,
        fields=[schemas.PaimonFieldPublic(id=f.field_id, name=f.name, type=f.type, key_type=f.key_type)
                for f in v.fields],
        partition_keys=list(v.partition_keys), row_count=v.row_count, deleted_rows=v.deleted_rows,
        options=dict(v.options),
        indexes=[schemas.PaimonIndexPublic(column=i.column, index_type=i.index_type, field_id=i.field_id,
                                           key_type=i.key_type,
                                           files=i.files, rows=i.rows, bytes=i.bytes,
                                           row_ranges=[list(r) for r in i.row_ranges],
                                           origins=[_origin_public(o) for o in i.origins], stale=i.stale,
                                           stale_files=[_stale_public(f) for f in i.stale_files],
                                           served=i.served, reason=i.reason)
                 for i in v.indexes])


def _stale_public(f: StaleFileSummary) -> schemas.PaimonStaleFilePublic:
    return schemas.PaimonStaleFilePublic(
        index_file=f.index_file, row_range=list(f.row_range), reason=f.reason, data_file=f.data_file,
        sequence=f.sequence, baseline=f.baseline, baseline_from=f.baseline_from)


def _origin_public(o: OriginSummary) -> schemas.PaimonIndexOriginPublic:
    return schemas.PaimonIndexOriginPublic(
        origin=o.writer, job_id=o.job_id, snapshot_id=o.snapshot_id,
        files=o.files, rows=o.rows, row_ranges=[list(r) for r in o.row_ranges])


def job_public(j: JobRecord) -> schemas.JobPublic:
    p = j.progress or {}
    progress = schemas.JobProgress(
        fraction=float(p.get("fraction") or 0.0), rows_indexed=int(p.get("rows_indexed") or 0),
        ranges_done=int(p.get("ranges_done") or 0), ranges_total=int(p.get("ranges_total") or 0),
        phases={str(k): float(v) for k, v in p["phases"].items()} if isinstance(p.get("phases"), dict) else None)
    return schemas.JobPublic(
        id=j.id, table=j.table, index_column=j.column,
        index_type=str((j.spec or {}).get("index_type", "bitmap")), state=j.state,
        progress=progress, error=j.error, snapshot_id=j.snapshot_id, created_at=iso(j.created_at),
        started_at=iso(j.started_at), finished_at=iso(j.finished_at), duration_s=j.duration_s(),
        message=None if p.get("message") is None else str(p["message"]))


def data_file_public(f: DataFile) -> schemas.DataFilePublic:
    return schemas.DataFilePublic(path=f.path, first_row_id=f.first_row_id, row_count=f.row_count,
                                  size=f.size, partition=dict(f.partition),
                                  write_cols=None if f.write_cols is None else list(f.write_cols),
                                  max_sequence_number=f.max_sequence_number)


def file_error_public(u: UnreadableFile) -> schemas.FileErrorPublic:
    return schemas.FileErrorPublic(path=u.path, reason=u.reason)
