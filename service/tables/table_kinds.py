"""Table kinds picked by format (KINDS), and what is asked of a table whatever its kind: open its source (sharing
what sources of one kind share), register it, check a build spec, clean up after dead builds.
"""
from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from service.catalog import warehouse_layout
from service.catalog.catalog import Catalog
from service.catalog.catalog_errors import LocationNotFoundError
from service.jobs.inflight_builds import list_inflight, remove_inflight
from service.jobs.jobspec import JobSpec
from service.catalog.model import PAIMON, Table
from service.tables.table_source import OrphanReport, TableSource

__all__ = ["KINDS", "TableSources", "build_families", "check_spec", "load_task_readers", "open_source",
           "register_table", "remove_dead_build_files", "warm_up_table"]


log = logging.getLogger("bgix.tables")


def _paimon() -> Any:
    from service.tables.paimon.paimon_source import PaimonSource  # loads pypaimon only when needed
    return PaimonSource


def _files() -> Any:
    from service.tables.files.files_source import FileSource
    return FileSource


# Table format → its kind's TableSource class, loaded on first use: the one place that tells the kinds apart
# (a new kind is its package plus one entry here). Every other format is a plain table's file format.
KINDS: dict[str, Callable[[], Any]] = {PAIMON: _paimon}


def _kind(table_format: str) -> Any:
    """The TableSource class of a table format."""
    return KINDS.get(table_format, _files)()


class TableSources:
    """Opens table sources over one catalog; owns the state sources of a kind share (created when first
    needed), so whoever keeps a TableSources (the query service) keeps their caches."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self._shared: dict[type, object] = {}
        self._lock = threading.Lock()

    def open(self, table: Table | str) -> TableSource:
        """The source of `table` (a Table, or a name looked up in the catalog: TableNotFoundError)."""
        t = self.catalog.get_table(table) if isinstance(table, str) else table
        kind = _kind(t.format)
        with self._lock:
            if kind not in self._shared:
                self._shared[kind] = kind.new_shared()
            shared = self._shared[kind]
        source: TableSource = kind(self.catalog, t, shared)   # kinds load lazily: the class is Any here
        return source

    def register(self, table: Table) -> Table:
        """Register `table`: the catalog's checks (name, format, location), its location must exist (an empty
        directory may fill later; a mistyped path never does), then its source's checks (a Paimon location must
        open as a row-tracking Paimon table; a plain table's partition columns must be the directory levels of
        its files), then the catalog stores it. Every way in (`PUT /v1/tables/{name}`, `bgix build --location`)
        registers through here.

        Raises: as Catalog.put_table; LocationNotFoundError; InvalidOptionError, InvalidTableError from the source.
        """
        resolved = self.catalog.check_table(table)
        if not self.catalog.storage.exists(resolved.location):
            raise LocationNotFoundError(table.location)
        self.open(resolved).check_registration()
        return self.catalog.put_table(resolved)


def open_source(catalog: Catalog, table: Table | str) -> TableSource:
    """The source of `table` with nothing shared across calls (a build job, the CLI)."""
    return TableSources(catalog).open(table)


def register_table(catalog: Catalog, table: Table) -> Table:
    return TableSources(catalog).register(table)


def check_spec(spec: JobSpec) -> JobSpec:
    """The rules of a job spec that depend on the table kind (`spec.table_format`), e.g. one column per build
    on plain tables (Paimon tables take several; `rebuild` replaces all of a column's index files there).

    Raises:
        InvalidOptionError.
    """
    checked: JobSpec = _kind(spec.table_format).check_spec(spec)
    return checked


def build_families(spec: JobSpec) -> dict[str, str] | None:
    """What makes two builds of the spec's table the same index: column → family on kinds that key a column's
    indexes by family too (Paimon: a btree and a bitmap index on one column are two indexes, built and committed
    apart), None where a column has one index (a plain table: another family replaces it)."""
    return spec.families if _kind(spec.table_format).indexes_by_family else None


def remove_dead_build_files(catalog: Catalog, job_id: str | None = None) -> list[OrphanReport]:
    """For every build whose in-flight marker names a process that is gone (killed mid-build, a crashed runner
    or host) or says the build ended (it failed), or for job `job_id` only: remove the index files it left that
    nothing references (its table's kind knows how), then its marker. A table that cannot be read keeps the
    marker, so a later call tries again."""
    reports = []
    for marker in list_inflight(catalog.storage):
        if marker.alive or (job_id is not None and marker.job_id != job_id):
            continue
        try:
            report = _kind(marker.table_format).remove_dead_build_files(catalog, marker)
        except Exception:
            log.warning("could not clean up after dead build %s of %s", marker.job_id, marker.location,
                        exc_info=True)
            continue
        if report is None:
            continue   # its job turned out live after all (e.g. a record still queued): keep the marker
        reports.append(report)
        if report.removed:
            log.info("dead build %s: removed %d index file(s) (%d bytes) it left in %s", marker.job_id,
                     len(report.removed), report.bytes, report.location)
        if not report.failed:
            # its Spark tasks' progress reports too (a build that ends removes them itself)
            catalog.storage.delete(warehouse_layout.job_task_reports(marker.job_id), recursive=True)
            remove_inflight(catalog.storage, marker.job_id)
    return reports


def warm_up_table(warehouse: Any) -> tuple[Table, str]:
    """A tiny Paimon table written under the directory `warehouse` for a build runner's warm-up build: (its
    registration, the column to index)."""
    from service.tables.paimon.paimon_writes import WARM_UP_COLUMN, write_warm_up_table
    return Table(name="warm-up", location=write_warm_up_table(warehouse), format=PAIMON), WARM_UP_COLUMN


def load_task_readers() -> None:
    """Import what every kind's build tasks read with (pypaimon, pyarrow.parquet), e.g. in a process that forks
    the build's Python workers, so each starts with it loaded."""
    import pyarrow.parquet  # noqa: F401

    import service.tables.files.slice_reader  # noqa: F401
    import service.tables.paimon.paimon_source  # noqa: F401
