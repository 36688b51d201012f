"""A plain table's data-file map: which files are live (with their row ids), retired or unreadable, kept as
versioned JSON documents in the warehouse beside the table's record and merged from a scan (rowid_map.py).
"""
from __future__ import annotations

from typing import Any

from service.catalog import Catalog, warehouse_layout
from service.catalog.catalog_errors import CommitConflictError
from service.catalog.documents import dumps, files_doc_of, read_doc
from service.catalog.model import DataFile, UnreadableFile
from service.tables.files.rowid_map import merge_scan


class DataFileMap:
    """The data-file maps of a catalog's plain tables; cheap to create (holds the catalog only)."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog

    def _doc(self, table: str) -> tuple[int, dict[str, Any] | None]:
        """(version, parsed document) of the current row-id map; (0, None) before the first scan.

        Raises:
            CorruptDocumentError: the current map does not parse (ids cannot be handed out safely).
        """
        versions = [warehouse_layout.snapshot_id_from_name(p) for p in self.catalog.storage.list(warehouse_layout.files_dir(table))]
        ok = sorted(v for v in versions if v is not None)
        if not ok:
            return 0, None
        return ok[-1], read_doc(self.catalog.storage, warehouse_layout.files_json(table, ok[-1]), files_doc_of)

    def live(self, table: str) -> list[DataFile]:
        """The persisted row-id map (live files, ascending first_row_id); scans once if never scanned."""
        return self.live_and_retired(table)[0]

    def live_and_retired(self, table: str) -> tuple[list[DataFile], list[DataFile]]:
        """(live, retired) from one read of the map; scans once if never scanned."""
        _, doc = self._doc(table)
        if doc is None:
            return self.refresh(table), self.retired(table)
        return list(doc["files"]), list(doc["retired"])

    def retired(self, table: str) -> list[DataFile]:
        """Files that were removed or rewritten since they got their ids (their ids are never reused)."""
        _, doc = self._doc(table)
        return list(doc["retired"]) if doc else []

    def unreadable(self, table: str) -> list[UnreadableFile]:
        """Data files the last scan could not read (they have no row ids until a scan can read them)."""
        _, doc = self._doc(table)
        return list(doc["unreadable"]) if doc else []

    def refresh(self, table: str, *, attempts: int = 5) -> list[DataFile]:
        """Scan the table location and update the row-id map; returns the live files.

        Unchanged files keep their ids. New files, sorted by path, get ids after the current maximum.
        A file whose size or mtime changed is retired and re-added at the end (its old ids now name
        no row, so indexes built over them become stale); a removed file is retired.
        A file that cannot be read (DataFileError: empty, junk, not a regular file; or outside the
        partition layout) gets no ids and does not fail the scan: it is recorded under "unreadable"
        with its reason and fingerprint, and gets ids at a later scan once it reads.
        The map is versioned and written with write_if_absent, so two concurrent scans cannot hand
        out the same ids twice: the loser re-reads the winner's map and merges again.
        """
        t = self.catalog.get_table(table)
        for _ in range(attempts):
            version, doc = self._doc(table)
            live, new_doc = merge_scan(self.catalog.storage, t, doc)
            if doc is not None and all(new_doc[k] == [x.to_dict() for x in doc[k]]
                                       for k in ("files", "retired", "unreadable")):
                return live
            if self.catalog.storage.write_if_absent(warehouse_layout.files_json(table, version + 1), dumps(new_doc)):
                return live
        raise CommitConflictError(f"table {table!r}: the row-id map kept changing under {attempts} scans")
