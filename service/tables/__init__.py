"""The table-source seam: one TableSource per table kind, picked by table_kinds.KINDS and nowhere else (re-exports only).

Sits above service.catalog and service.jobs, below the engine, the API and the build job. table_kinds (KINDS,
TableSources: opens a registered table's source, loading the Paimon kind and pypaimon on first use, and keeps what
sources of one kind share) · table_source (the TableSource protocol, IndexViewSource) · table_summary (what a
source shows of its version, naming no kind) · build_tasks (the shapes of a build) · files/ · paimon/.
"""
from __future__ import annotations

from service.tables.table_kinds import (
    KINDS,
    TableSources,
    build_families,
    check_spec,
    load_task_readers,
    open_source,
    register_table,
    remove_dead_build_files,
    warm_up_table,
)
from service.tables.table_source import IndexViewSource, OrphanFile, OrphanReport, TableSource

__all__ = ["KINDS", "IndexViewSource", "OrphanFile", "OrphanReport", "TableSource", "TableSources", "build_families",
           "check_spec", "load_task_readers", "open_source", "register_table", "remove_dead_build_files",
           "warm_up_table"]
