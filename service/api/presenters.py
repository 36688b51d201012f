"""Catalog records → public response models (ISO timestamps, progress defaults).

Pure conversions; must not import fastapi, pyspark or touch storage.
"""
from __future__ import annotations

from datetime import UTC, datetime

from service.api import schemas
from service.catalog.model import DataFile, JobRecord, Table


def iso(ts: float | None) -> str | None:
    """Epoch seconds → ISO 8601 UTC text (None stays None)."""
    if ts is None:
        return None
    return datetime.fromtimestamp(ts, tz=UTC).isoformat()


def table_public(t: Table) -> schemas.TablePublic:
    return schemas.TablePublic(
        name=t.name, location=t.location, format=t.format,
        partition_columns=list(t.partition_columns), row_id_column=t.row_id_column,
        created_at=iso(t.created_at))


def job_public(j: JobRecord) -> schemas.JobPublic:
    p = j.progress or {}
    progress = schemas.JobProgress(
        fraction=float(p.get("fraction") or 0.0), rows_indexed=int(p.get("rows_indexed") or 0),
        ranges_done=int(p.get("ranges_done") or 0), ranges_total=int(p.get("ranges_total") or 0))
    return schemas.JobPublic(
        id=j.id, table=j.table, index_column=j.column,
        index_type=str((j.spec or {}).get("index_type", "bitmap")), state=j.state,
        progress=progress, error=j.error, snapshot_id=j.snapshot_id, created_at=iso(j.created_at),
        started_at=iso(j.started_at), finished_at=iso(j.finished_at))


def data_file_public(f: DataFile) -> schemas.DataFilePublic:
    return schemas.DataFilePublic(path=f.path, first_row_id=f.first_row_id, row_count=f.row_count,
                                  size=f.size, partition=dict(f.partition))
