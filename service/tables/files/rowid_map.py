"""The row-id map of a plain (bgix) table: one scan of its location merged into the current map.

Unchanged files keep their ids; new ones get ids after the current maximum; changed or removed files are
retired; unreadable ones get none and are recorded with their reason. Imports index_format.storage,
service.catalog and this kind's scan only.
"""
from __future__ import annotations

import logging
from typing import Any

from index_format.storage import Storage
from service.catalog.catalog_errors import DataFileError, RowIdError
from service.catalog.model import DataFile, Table, UnreadableFile, now
from service.tables.files.scan import count_rows, file_stat, list_data_files, parse_partition, relative_dir

log = logging.getLogger("bgix.catalog")


def merge_scan(storage: Storage, t: Table, doc: dict[str, Any] | None) -> tuple[list[DataFile], dict[str, Any]]:
    """Scan `t`'s location against the current map `doc` (parsed, or None before the first scan): the live
    files in id order and the next map document (see Catalog.refresh_data_files for the rules)."""
    doc = doc or {"next_row_id": 0, "files": [], "retired": [], "unreadable": []}
    known = {f.path: f for f in doc["files"]}
    was_unreadable = {u.path: u for u in doc["unreadable"]}
    next_id = int(doc["next_row_id"])
    live: list[DataFile] = []
    retired = list(doc["retired"])
    unreadable: list[UnreadableFile] = []
    new_paths: list[tuple[str, int, float]] = []
    kept = set()
    for path in list_data_files(storage, t.location, t.format):
        try:
            size, mtime = file_stat(storage, path)
        except FileNotFoundError:  # removed since the listing
            continue
        except DataFileError as exc:
            unreadable.append(UnreadableFile(path, exc.reason))
            continue
        old = known.get(path)
        if old is not None and old.size == size and old.mtime == mtime:
            live.append(old)
            kept.add(path)
            continue
        new_paths.append((path, size, mtime))
    retired.extend(f for p, f in known.items() if p not in kept)  # changed, unreadable now, or removed
    for path, size, mtime in new_paths:  # already sorted by path
        bad = was_unreadable.get(path)
        if bad is not None and (bad.size, bad.mtime) == (size, mtime):
            unreadable.append(bad)  # unchanged since it failed: do not read it again
            continue
        try:
            partition = parse_partition(relative_dir(t.location, path), t.partition_columns)
            rows = count_rows(storage, path, t.format, size)
        except FileNotFoundError:
            continue
        except (DataFileError, RowIdError) as exc:
            reason = exc.reason if isinstance(exc, DataFileError) else str(exc)
            log.warning("table %r: data file %r gets no row ids: %s", t.name, path, reason)
            unreadable.append(UnreadableFile(path, reason, size, mtime))
            continue
        live.append(DataFile(path, size, mtime, rows, next_id, partition))
        next_id += rows
    live.sort(key=lambda f: f.first_row_id)
    return live, {"next_row_id": next_id, "files": [f.to_dict() for f in live],
                  "retired": [f.to_dict() for f in retired],
                  "unreadable": [u.to_dict() for u in unreadable], "scanned_at": now()}
