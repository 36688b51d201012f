"""The query service: resolve a table's current snapshots, answer predicates by planning them over the indexes
(predicate.query_plan, which also computes coverage), reading what they leave unanswered from the data
(row_scan: exact by scan) and executing the plan (predicate.execute); merge value counts and stats across index
files, and cache readers, decoded blocks and scanned rows.

Imports index_format, service.catalog, service.tables (the seam), service.observability and this package
(never fastapi, service.api, service.build_job or pyspark); all file access goes through Storage, the table
sources and the index_format readers.
"""
from __future__ import annotations

import itertools
import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pyarrow as pa
from pyroaring import AbstractBitMap64, BitMap64, FrozenBitMap64

from index_format import errors as fmt
from index_format import ranges
from index_format.global_index.filemeta import parse_meta
from index_format.families import family
from index_format.global_index.reader import BitmapCache, BlockCache, IndexReader
from index_format.lru import ByteLRU
from index_format.memory_cost import bitmap_bytes, lru_entry_bytes
from index_format.options import parse_options
from index_format.predicate.answer import (
    Answer, ColumnIndex, IndexFileRef, QueryPlan, TableRows, plan_query, uncovered_rows,
)
from index_format.predicate.bind import bind
from index_format.predicate.execute import execute
from index_format.predicate.file_pruning import literal_memo
from index_format.predicate.json import from_json
from index_format.predicate.limits import DEFAULT_LIMITS, PredicateLimits
from index_format.predicate.visitors import referenced_columns
from index_format.storage import RangeSource, Storage
from index_format.types import KeyType, from_arrow, parse_type
from service.observability.metrics import Metrics
from service.query.parse_cache import ParseCache
from service.catalog import Catalog, warehouse_layout
from service.query import index_stats
from service.catalog.catalog_errors import (
    CorruptDocumentError, CorruptTableMetadataError, DataFileError, IndexNotFoundError,
)
from service.catalog.model import DataFile, Snapshot, Table
from service.query.range_sidecars import Sidecars
from service.query.row_scan import ScanCache, ScanNeed, ScanReport, scan_needs, unindexed_index, with_scanned
from service.tables import IndexViewSource, TableSources
from service.tables.build_tasks import ROW_ID
from service.tables.table_summary import TableSummary


log = logging.getLogger("bgix.query")
_VIEW_SERIALS = itertools.count()
_STATS_KEPT = 64          # stored-statistics handles kept in memory (small: counts and Parquet footers)


class _CountingSource:
    """RangeSource wrapper that adds every byte read to the bytes-read metric, and names a missing file: sources
    open lazily (a local file at its first read, an object per ranged GET), so a file deleted after the view
    listed it shows up here as FileNotFoundError."""

    def __init__(self, inner: RangeSource, metrics: Metrics, family: str | None = None) -> None:
        self._inner = inner
        self._metrics = metrics
        self._family = family
        self.name = inner.name
        self.size = inner.size

    def read(self, offset: int, length: int) -> bytes:
        try:
            data = self._inner.read(offset, length)
        except FileNotFoundError as exc:
            raise fmt.MissingIndexFileError(self.name, self._family) from exc
        self._metrics.bytes_read.inc(len(data))
        return data


@dataclass(frozen=True)
class ColumnView:
    """One column's current snapshot, its type and the ColumnIndex handed to answer_over_files."""

    snapshot: Snapshot
    kt: KeyType
    index: ColumnIndex
    more: tuple[ColumnView, ...] = ()   # the column's other indexes (other families), also in index.alternatives


@dataclass(frozen=True)
class TableView:
    """What one request sees of a table: immutable, so a half-committed snapshot is never visible."""

    table: Table
    columns: dict[str, ColumnView]
    data_files: list[DataFile]
    total_rows: int
    loaded_at: float = field(default_factory=time.monotonic)
    # Ids that name no row any more (data files removed or rewritten since they got their ids; rows a
    # Paimon deletion vector removes): an index must not return them. None when there are none.
    retired: BitMap64 | None = None
    retired_ranges: tuple[tuple[int, int], ...] = ()   # retired files' ids as inclusive [first, last] ranges
    live_ranges: tuple[tuple[int, int], ...] | None = None   # ids holding rows; None: all below total_rows
    # Sparse ids (a plain table's own id column): the ids its data files hold (QueryService._sparse_ids).
    live_ids: AbstractBitMap64 | None = None
    version: int | None = None        # the source's cheap change token (Paimon snapshot id), if any
    summary: TableSummary | None = None   # the source's own description of this version (IndexViewSource.summary)
    records_key_order: bool = True    # snapshots record their key order (IndexViewSource.records_key_order)
    # Indexed columns whose current snapshot document is corrupt: left out of `columns`, named when asked for.
    broken_columns: Mapping[str, CorruptDocumentError] = field(default_factory=dict)
    # Names these snapshots in the parse cache's bound trees (ParseCache.bound); kept by dataclasses.replace.
    serial: int = field(default_factory=lambda: next(_VIEW_SERIALS), compare=False)

    def check_not_broken(self, names: Iterable[str]) -> None:
        """Raises CorruptDocumentError (naming the document) for a name that means a broken column."""
        for name in names:
            if name in self.columns:
                continue
            for broken, exc in self.broken_columns.items():
                if broken.lower() == name.lower():
                    raise CorruptDocumentError(str(exc), exc.path)   # a fresh instance per request

    # row_ranges(), worked out once per view (every query of it asks)
    _row_ranges: tuple[tuple[int, int], ...] | None = field(default=None, init=False, repr=False, compare=False)

    def row_ranges(self) -> list[tuple[int, int]]:
        """Inclusive [first, last] ranges of the ids that hold rows (retired ids hold none)."""
        if self._row_ranges is None:
            if self.live_ranges is not None:
                rs = list(self.live_ranges)
            elif self.live_ids is not None:
                rs = ranges.of_bitmap(self.live_ids)
            else:
                rs = ranges.complement(list(self.retired_ranges), self.total_rows)
            object.__setattr__(self, "_row_ranges", tuple(rs))   # a memo of a frozen view
        assert self._row_ranges is not None
        return list(self._row_ranges)

    def table_rows(self) -> TableRows:
        """The ids that hold rows as coverage compares them: ranges, or with sparse ids the ids themselves."""
        return self.live_ids if self.live_ids is not None else self.row_ranges()

    def uncovered(self, index: ColumnIndex) -> list[list[int]]:
        """Inclusive [first, last] ranges of live row ids `index` does not cover (predicate.answer.uncovered_rows,
        the rule a query's coverage follows; retired ids hold no row to cover)."""
        return [list(r) for r in uncovered_rows([index], self.table_rows())]


@dataclass(frozen=True)
class QueryOutcome:
    answer: Answer
    view: TableView
    used: dict[str, int]                 # column -> snapshot id
    uncovered: list[list[int]]           # inclusive [first, last] row ranges not covered
    scan: ScanReport | None = None       # the exact-by-scan step (None: not asked of this answer)


@dataclass(frozen=True)
class _Bound:
    """A tree bound to a view: the indexed columns it uses, and the table columns it names that no index covers
    (their key types; `arrays`: which of every column it uses are ARRAY columns)."""

    tree: Any
    used: list[str]
    unindexed: dict[str, KeyType]
    arrays: frozenset[str]


class QueryService:
    """Answers predicates and value look-ups against the current snapshots of a table."""

    def __init__(self, catalog: Catalog, storage: Storage, metrics: Metrics, *,
                 cache_bytes: int, snapshot_ttl: float, limits: PredicateLimits = DEFAULT_LIMITS,
                 parse_cache_bytes: int = 16 << 20, max_open_files: int = 256,
                 scan_max_rows: int = 2_000_000, max_groups: int = 100_000) -> None:
        self.catalog = catalog
        # Opens each table's source (service.tables); keeps what sources share, e.g. Paimon index origins.
        self.sources = TableSources(catalog)
        self.limits = limits
        # Parsed SQL predicates by text, budgeted in bytes (a tree costs several times its text); short texts'
        # trees bound to a view's snapshots, by (view serial, text), in the other half of the budget.
        self.parse_cache = ParseCache(parse_cache_bytes - parse_cache_bytes // 2, limits,
                                      bound_budget_bytes=parse_cache_bytes // 2)
        self.storage = storage
        self.metrics = metrics
        self.snapshot_ttl = snapshot_ttl
        # The cache budget, every entry charged what it keeps resident (index_format.memory_cost), the shares
        # summing to the whole: 3/8 for decoded dictionary / data blocks (point look-ups at high cardinality
        # decode one per query when they do not fit), 1/4 for decoded bitmaps (a warm query then reads and
        # decodes no bitmap it has seen), 1/8 for open readers, 1/8 for range sidecars, 1/16 for the id columns
        # of row_id_column tables, 1/16 for rows scanned and indexed in memory (row_scan). Open readers and
        # sidecars hold a file descriptor each: their count is bounded too (a table gains files with every
        # build).
        self.readers: ByteLRU[IndexReader] = ByteLRU(cache_bytes // 8, _reader_cost, metrics.record_cache,
                                                     max_entries=max_open_files)
        self.blocks = BlockCache(cache_bytes * 3 // 8)
        self.bitmaps: BitmapCache = ByteLRU(cache_bytes // 4)
        self.sidecars = Sidecars(storage, cache_bytes // 8, max_open=max(4, max_open_files // 2))
        # row_id_column tables: files' id columns kept for result "files".
        self._file_ids: ByteLRU[tuple[np.ndarray, BitMap64]] = ByteLRU(cache_bytes // 16, _file_ids_cost)
        # Rows no index covers (and columns of declined leaves), read and indexed in memory per row range.
        self.scan_max_rows = scan_max_rows
        self.max_groups = max_groups    # groups one aggregate may make (BGIX_AGGREGATE_MAX_GROUPS)
        self.scans = ScanCache(cache_bytes // 16, self._open_scanned)
        self._table_types: dict[int, tuple[dict[str, KeyType], frozenset[str], pa.Schema]] = {}
        # Read at scrape time, so the gauge always equals what the caches under BGIX_CACHE_BYTES hold.
        metrics.cache_bytes.set_function(
            lambda: float(self.readers.bytes + self.blocks.bytes + self.bitmaps.bytes + self.sidecars.readers.bytes
                          + self._file_ids.bytes + self.scans.bytes))
        self._views: dict[str, TableView] = {}
        self._stats: dict[tuple[Any, ...], index_stats.IndexStats] = {}
        # One statistics computation at a time: each holds every (key, rows) of an index in memory.
        self._stats_compute = threading.Lock()
        self._lock = threading.Lock()

    # ---- snapshot resolution --------------------------------------------------------------
    def invalidate(self, table: str | None = None) -> None:
        """Forget cached snapshot pointers (after a commit or drop in this process)."""
        with self._lock:
            if table is None:
                self._views.clear()
            else:
                self._views.pop(table, None)

    def note_snapshot(self, table: str, column: str, snapshot_id: int | None) -> None:
        """A job reported `snapshot_id`: drop a cached view that predates it (read-your-writes)."""
        if snapshot_id is None:
            return
        with self._lock:
            cached = self._views.get(table)
            cv = cached.columns.get(column) if cached is not None else None
            if cached is not None and (cv is None or cv.snapshot.id < snapshot_id):
                del self._views[table]

    def forget_table(self, table: str, location: str | None = None) -> None:
        """Drop cached snapshots, rankings, stats and readers of a table whose indexes were dropped.
        `location`: the table's (resolved) location, whose index files a table kind may keep there (a Paimon
        table's index/ directory): their readers, with the open files they hold, go too."""
        self.invalidate(table)
        self.scans.discard_table(table)
        with self._lock:
            for key in [k for k in self._stats if k[0] == table]:
                del self._stats[key]
        prefixes = [self.storage.resolve(warehouse_layout.indexes_dir(table)).rstrip("/") + "/"]
        if location:
            prefixes.append(location.rstrip("/") + "/")
        for prefix in prefixes:
            self.readers.discard_prefix(prefix)
            self.blocks.discard_prefix(prefix)
            self.bitmaps.discard_prefix(prefix)
            self.sidecars.discard_prefix(prefix)

    def view(self, table: str) -> TableView:
        """The table's current snapshots, re-resolved after `snapshot_ttl` seconds (cheap pointer cache)."""
        now = time.monotonic()
        with self._lock:
            cached = self._views.get(table)
        if cached is not None and now - cached.loaded_at < self.snapshot_ttl:
            return cached
        if cached is not None and cached.version is not None \
                and self.sources.open(cached.table).version() == cached.version:
            view = replace(cached, loaded_at=now)   # unchanged: rebuilding would only cost
        else:
            view = self._load_view(table)
        with self._lock:
            self._views[table] = view
        return view

    def _load_view(self, table: str) -> TableView:
        src = self.sources.open(table).view()
        live_ids, held = self._sparse_ids(src) if src.sparse else (None, {})
        columns = {}
        for c, s in src.columns.items():
            more = tuple(self._column_view(m, src.sparse) for m in src.more_indexes.get(c, ()))
            columns[c] = self._column_view(s, src.sparse, more, held=held.get(c))
        return TableView(table=src.table, columns=columns, data_files=src.data_files, total_rows=src.total_rows,
                         retired=src.gone, retired_ranges=src.retired_ranges, live_ranges=src.live_ranges,
                         live_ids=live_ids, version=src.version, summary=src.summary,
                         records_key_order=src.records_key_order, broken_columns=src.broken_columns)

    def _sparse_ids(self, src: IndexViewSource) -> tuple[FrozenBitMap64, dict[str, FrozenBitMap64]]:
        """Sparse ids (a row_id_column table): the ids of its data files, and per indexed column those of the files
        its index holds (IndexViewSource.held_files), from the files' id columns (file_row_ids: read once per file
        version). A file whose ids cannot be read now (gone since the scan, broken) has no row to cover."""
        by_file: dict[tuple[str, int, float], BitMap64] = {}
        for f in src.data_files:
            if not f.row_count:
                continue
            try:
                by_file[(f.path, f.size, f.mtime)] = self.file_row_ids(src.table, f)[1]
            except (DataFileError, FileNotFoundError) as exc:
                log.warning("table %r: ids of data file %r not read: %s", src.table.name, f.path, exc)

        def union(files: Iterable[DataFile]) -> FrozenBitMap64:
            parts = [ids for f in files if (ids := by_file.get((f.path, f.size, f.mtime))) is not None]
            return FrozenBitMap64(BitMap64.union(*parts)) if parts else FrozenBitMap64()

        return union(src.data_files), {c: union(files) for c, files in src.held_files.items()}

    def _column_view(self, snap: Snapshot, sparse: bool, more: tuple[ColumnView, ...] = (),
                     held: AbstractBitMap64 | None = None) -> ColumnView:
        kt = parse_type(snap.key_type)
        try:
            options = parse_options(dict(snap.options))
        except fmt.InvalidOptionError:
            # Written before today's option ranges (or by another writer): the index stays queryable with
            # the defaults.
            options = parse_options({})
        budget = options.fallback_scan_max_size
        fam = family(snap.index_type)
        refs = []
        for e in snap.files:
            opener = self._opener(e.path, e.file_size, kt, fam.open_reader, fam.name)
            sidecar = None
            if fam.sidecars:
                sidecar = self.sidecars.opener(
                    e.path, e.file_size, kt, e.range_end - e.range_start + 1, beside_size=e.sidecar_size,
                    chunk_size=options.range_sidecar_chunk_size, enabled=options.range_sidecar,
                    open_index=opener)
            refs.append(IndexFileRef(
                path=e.path, range_start=e.range_start, range_end=e.range_end,
                meta=parse_meta(kt, bytes.fromhex(e.meta_hex)), file_size=e.file_size, open=opener,
                open_sidecar=sidecar.open if sidecar else None, sidecar_failed=sidecar.failed if sidecar else None,
                peek_sidecar=sidecar.peek if sidecar else None, is_open=self._is_open(e.path, e.file_size)))
        index = ColumnIndex(column=snap.column, kt=kt, files=refs, fallback_scan_max_size=budget, sparse=sparse,
                            answers=fam.answers, family=fam.name, seeks=fam.seeks, rank=fam.rank,
                            alternatives=tuple(m.index for m in more), held=held)
        return ColumnView(snapshot=snap, kt=kt, index=index, more=more)

    def _opener(self, path: str, size: int, kt: KeyType, open_index: Callable[..., IndexReader],
                family_name: str | None = None) -> Callable[[], IndexReader]:
        resolved: list[str] = []  # resolve (realpath, root checks) once per view, not per query

        def load() -> IndexReader:
            try:
                source = self.storage.open_source(resolved[0], size)
            except FileNotFoundError as exc:
                raise fmt.MissingIndexFileError(resolved[0], family_name) from exc
            return open_index(_CountingSource(source, self.metrics, family_name), kt, cache=self.blocks,
                              bitmap_cache=self.bitmaps)

        def open_reader() -> IndexReader:
            if not resolved:
                resolved.append(self.storage.resolve(path))
            return self.readers.get_or_load((resolved[0], size), load)

        return open_reader

    def _is_open(self, path: str, size: int) -> Callable[[], bool]:
        """Whether `path`'s reader is in the reader cache now (explain's files_cached), without opening it."""
        return lambda: (self.storage.resolve(path), size) in self.readers

    # ---- queries ----------------------------------------------------------------------------
    def parse(self, where: str | None, predicate: Mapping[str, Any] | None, deadline: float | None = None) -> Any:
        """Unbound tree from SQL text (cached) or the JSON wire form. Raises ParseError; QueryTimeoutError when
        reading SQL text passes `deadline` (time.monotonic())."""
        if where is not None:
            return self.parse_cache.parse(where, deadline)
        return from_json(dict(predicate or {}), limits=self.limits)

    def query(self, table: str, node: Any, *, explain: bool = False, deadline: float | None = None,
              text: str | None = None, count_only: bool = False, scan: str = "auto") -> QueryOutcome:
        """Rows where `node` is TRUE: the indexes of the current snapshots, and (`scan` "auto") the rows they leave
        unanswered read from the table's data within the scan budget (row_scan), so the answer is exact; past the
        budget, or with `scan` "never", the indexes' answer with its `exact` and coverage.

        `deadline` (time.monotonic() seconds, None = no limit) is checked between reads.
        Raises:
            TableNotFoundError; UnknownColumnError listing the table's columns; BindError for a literal
            the column type cannot hold; IndexFormatError naming the file and block; DataFileError naming a data
            file a scan could not read; QueryTimeoutError once `deadline` has passed.
        """
        view = self.view(table)
        b = self._bind(view, node, text)
        columns = self._columns(view, b)
        rows = view.table_rows()
        with literal_memo():   # one sort of each IN list for pruning (plan) and narrowing (execution)
            plan = plan_query(b.tree, columns, with_unknown=False, count_only=count_only, explain=explain,
                              deleted=view.retired, table_ranges=rows)
            report, plan = self._scan(view, b, plan, rows, mode=scan, count_only=count_only, explain=explain)
            answer = execute(plan, explain=explain, deleted=view.retired, deadline=deadline)
        answer.explain["scan"] = report.to_json()
        # the table's rows outside the answer's coverage: what no index used (nor the scan) covers (for a constant
        # predicate, which names no column, what not every index covers)
        uncovered = [list(r) for r in answer.table_uncovered or ()]
        used = {c: view.columns[c].snapshot.id for c in b.used}
        return QueryOutcome(answer=answer, view=view, used=used, uncovered=uncovered, scan=report)

    def _scan(self, view: TableView, b: _Bound, plan: QueryPlan, rows: TableRows, *, mode: str,
              count_only: bool, explain: bool) -> tuple[ScanReport, QueryPlan]:
        """The scan step (row_scan): what `plan` leaves unanswered read (or found cached) within the budget, and
        the plan again over the indexes and the scanned files; `plan` itself when nothing is read."""
        needs = scan_needs(plan, rows, b.arrays)
        if not needs:
            return ScanReport(mode, self.scan_max_rows, "not_needed"), plan
        source = self.sources.open(view.table)

        def read(columns: list[str], row_ranges: list[tuple[int, int]]) -> pa.Table:
            return source.read_rows(columns, row_ranges, version=view.version, data_files=view.data_files)

        sparse = view.table.row_id_column is not None
        try:
            report, files = self.scans.run(view.table.name, needs, mode=mode, max_rows=self.scan_max_rows,
                                           sparse=sparse, data_files=view.data_files, read=read)
        except (DataFileError, CorruptTableMetadataError) as exc:
            # One data file that does not read must not take every query of the table down: the answer is the
            # indexes', its coverage naming the rows not read, and explain.scan says which file failed.
            return ScanReport(mode, self.scan_max_rows, "failed", rows_needed=sum(n.rows for n in needs),
                              reason=str(exc)[:1000]), plan
        if not files:
            return report, plan
        self.metrics.scanned_rows.inc(report.rows_scanned)
        columns = with_scanned(plan.columns, needs, files, sparse=sparse)
        return report, plan_query(b.tree, columns, with_unknown=False, count_only=count_only, explain=explain,
                                  deleted=view.retired, table_ranges=rows)

    def plan(self, table: str, node: Any, *, text: str | None = None, count_only: bool = False
             ) -> tuple[QueryPlan, list[ScanNeed], dict[str, int]]:
        """How `node` would be answered over the current snapshots (index per leaf, files after pruning, reads,
        coverage with the rows no index covers) and what its scan step would read (row_scan.scan_needs), from
        manifest metadata alone: no index or data file is opened. Returns (the plan, the scan needs, column →
        snapshot id of the indexed columns used). Raises as query."""
        view = self.view(table)
        b = self._bind(view, node, text)
        rows = view.table_rows()
        plan = plan_query(b.tree, self._columns(view, b), with_unknown=False, count_only=count_only,
                          deleted=view.retired, table_ranges=rows)
        return plan, scan_needs(plan, rows, b.arrays), {c: view.columns[c].snapshot.id for c in b.used}

    def _columns(self, view: TableView, b: _Bound) -> dict[str, ColumnIndex]:
        """The indexes a tree runs over: each indexed column's, and an index of no files for each table column it
        names that no index covers (its rows uncovered until a scan fills it)."""
        columns = {c: cv.index for c, cv in view.columns.items()}
        sparse = view.table.row_id_column is not None
        for c, kt in b.unindexed.items():
            columns[c] = unindexed_index(c, kt, array=c in b.arrays, sparse=sparse)
        return columns

    def _bind(self, view: TableView, node: Any, text: str | None) -> _Bound:
        """The tree bound to the view's column types: the indexed columns', and for a column no index covers the
        type the table's data has (cached per view and text when every column it names is indexed)."""
        short = text if text is not None and len(text) <= _BOUND_TEXT_MAX else None
        hit = self.parse_cache.bound(view.serial, short) if short is not None else None
        if hit is not None:
            bound, used_cols = hit
            return _Bound(bound, used_cols, {}, self._index_arrays(view))
        view.check_not_broken(referenced_columns(node))
        types = {name: cv.kt for name, cv in view.columns.items()}
        # a multivalue index's column is an ARRAY of its key type: only the array operators apply
        arrays = self._index_arrays(view)
        try:
            bound = bind(node, types, arrays=arrays)
            unindexed: dict[str, KeyType] = {}
        except fmt.UnknownColumnError:
            table_types, table_arrays = self._types_of_table(view)
            extra = {c: kt for c, kt in table_types.items() if c not in types}
            if not extra:
                raise
            arrays = arrays | (table_arrays & set(extra))
            try:
                bound = bind(node, {**extra, **types}, arrays=arrays)
            except fmt.UnknownColumnError as exc:   # named among the table's columns, not the indexed ones
                unreadable = self._unreadable_types(view).get(exc.column)
                if unreadable is not None:
                    raise fmt.BindError(f"column {exc.column!r} is {unreadable}: no index family holds that type, "
                                        "so a predicate on it can neither be indexed nor evaluated") from None
                names = {*types, *self._table_schema(view)[2].names}
                raise fmt.UnknownColumnError(exc.column, list(names), "columns of the table") from None
            unindexed = {c: extra[c] for c in referenced_columns(bound) if c in extra}
        # Canonical names from the bound tree: `S` binds to the indexed `s`, whose snapshot the cursor checks.
        used_cols = sorted(referenced_columns(bound) & set(view.columns))
        if short is not None and not unindexed:
            self.parse_cache.keep_bound(view.serial, short, bound, used_cols)
        return _Bound(bound, used_cols, unindexed, arrays)

    @staticmethod
    def _index_arrays(view: TableView) -> frozenset[str]:
        return frozenset(name for name, cv in view.columns.items() if family(cv.snapshot.index_type).element_keys)

    def table_columns(self, view: TableView) -> set[str]:
        """Every column name of the table's data (indexed or not), read once per view."""
        return set(self._table_schema(view)[2].names)

    def _types_of_table(self, view: TableView) -> tuple[dict[str, KeyType], frozenset[str]]:
        types, arrays, _ = self._table_schema(view)
        return types, arrays

    def _table_schema(self, view: TableView) -> tuple[dict[str, KeyType], frozenset[str], pa.Schema]:
        """Key types of the table's columns as its data holds them (ARRAY columns: the element type), read once per
        view; columns of a type no index holds are left out."""
        with self._lock:
            hit = self._table_types.get(view.serial)
        if hit is not None:
            return hit
        schema = self.sources.open(view.table).arrow_schema()
        types: dict[str, KeyType] = {}
        arrays: set[str] = set()
        for f in schema:
            t = f.type
            is_list = pa.types.is_list(t) or pa.types.is_large_list(t)
            try:
                types[f.name] = from_arrow(t.value_type if is_list else t)
            except fmt.UnsupportedTypeError:
                continue
            if is_list:
                arrays.add(f.name)
        out = (types, frozenset(arrays), schema)
        with self._lock:
            if len(self._table_types) > 64:
                self._table_types.clear()
            self._table_types[view.serial] = out
        return out

    def _unreadable_types(self, view: TableView) -> dict[str, str]:
        """The table's columns of a type no index holds (a struct, a map, bytes), case-folded, with their type."""
        types, _, schema = self._table_schema(view)
        return {k: str(f.type) for f in schema if f.name not in types for k in (f.name, f.name.lower())}

    def _open_scanned(self, source: Any, kt: KeyType) -> IndexReader:
        """A reader of rows indexed in memory, sharing the block and bitmap caches (its name is unique)."""
        return family("bitmap").open_reader(source, kt, cache=self.blocks, bitmap_cache=self.bitmaps)

    def file_row_ids(self, table: Table, f: DataFile) -> tuple[np.ndarray, BitMap64]:
        """A row_id_column table's ids of one data file, in file order, and as a set (cached by the
        file's fingerprint, so a rewritten file is read again)."""
        assert table.row_id_column is not None

        def load() -> tuple[np.ndarray, BitMap64]:
            ids = self.sources.open(table).row_id_values(f)
            return ids, BitMap64(ids.astype(np.uint64))

        # The mtime is part of the key, so a file rewritten in place (same size) is read again.
        return self._file_ids.get_or_load((f"{f.path}@{f.mtime!r}", f.size), load)

    # ---- value look-ups ---------------------------------------------------------------------
    def column(self, table: str, column: str) -> ColumnView:
        return self._column_of(self.view(table), column)

    @staticmethod
    def resolve_column(view: TableView, column: str) -> str:
        """The indexed column `column` names: exact, else case-insensitive when unambiguous (as bind)."""
        if column in view.columns:
            return column
        folded = [c for c in view.columns if c.lower() == column.lower()]
        if len(folded) == 1:
            return folded[0]
        view.check_not_broken([column])
        raise IndexNotFoundError(
            f"table {view.table.name!r} has no index on column {column!r}; indexed columns: "
            f"{', '.join(sorted(view.columns)) or '(none)'}")

    @classmethod
    def _column_of(cls, view: TableView, column: str) -> ColumnView:
        return view.columns[cls.resolve_column(view, column)]

    def stored_stats(self, cv: ColumnView, view: TableView, *, force: bool = False) -> index_stats.IndexStats:
        """The column's statistics document (service.query.index_stats), read or computed once per index
        files and dead rows; handles are kept in memory by snapshot, files and retired set."""
        files = [index_stats.StatsFile(path=r.path, size=r.file_size, range_start=r.range_start,
                                       range_end=r.range_end, open=r.open) for r in cv.index.files]
        memo = (cv.snapshot.table, cv.snapshot.column, cv.snapshot.id,
                tuple((f.path, f.size, f.range_start, f.range_end) for f in files), view.retired_ranges,
                view.version)
        with self._lock:
            hit = self._stats.get(memo)
        if hit is not None and not force:
            return hit
        with self._stats_compute:
            with self._lock:
                hit = self._stats.get(memo)
            if hit is not None and not force:
                return hit
            stats = index_stats.load_or_compute(self.storage, cv.snapshot.table, cv.snapshot.column, cv.kt,
                                                files, view.retired, force=force,
                                                count_nulls=self._null_counter(cv, view))
        if stats.null_rows is None:
            return stats   # its null rows did not read: counted again next time
        with self._lock:
            self._stats[memo] = stats
            while len(self._stats) > _STATS_KEPT:
                self._stats.pop(next(iter(self._stats)))
        return stats

    def _null_counter(self, cv: ColumnView, view: TableView) -> Callable[[], int | None] | None:
        """For an index whose files record no null rows (multivalue: its null bitmaps are empty, spec §8), what
        counts them: the live rows of its row ranges whose value is NULL, read from the table (None when a data
        file or the table's metadata does not read: the other statistics still answer). None otherwise."""
        if not family(cv.index.family).element_keys:
            return None
        column, held = cv.index.column, cv.index.held

        def count() -> int | None:
            try:
                return read_count()
            except (DataFileError, CorruptTableMetadataError) as exc:
                log.warning("null rows of %s.%s not counted: %s", view.table.name, column, exc)
                return None

        def read_count() -> int:
            source = self.sources.open(view.table)
            nulls = 0
            for part in _read_batches(cv.index.merged_ranges(), sparse=view.table.row_id_column is not None):
                rows = source.read_rows([column], part, version=view.version, data_files=view.data_files)
                values = rows.column(column)
                if held is None:
                    nulls += values.null_count
                else:   # sparse ids: only the rows the index was built from
                    ids = rows.column(ROW_ID).filter(values.is_null()).to_numpy()
                    nulls += BitMap64(ids.astype(np.uint64)).intersection_cardinality(held)
            return nulls

        return count

    def value_page(self, table: str, column: str, prefix: str | None, order: str, offset: int,
                   limit: int) -> tuple[ColumnView, list[tuple[object, int]]]:
        """(value, rows) at [offset, offset + limit) of the column's values, from the stored statistics.

        order='value' is logical key order; order='count' is rows descending, then value. The same key in
        several files (row ranges) is summed; rows of retired data files and deleted rows are left out.
        """
        view = self.view(table)
        cv = self._column_of(view, column)
        if prefix is not None and cv.kt.name != "string":
            raise fmt.BindError(f"prefix look-up needs a string column; {cv.index.column!r} is {cv.kt.spelling}")
        stats = self.stored_stats(cv, view)
        try:
            return cv, index_stats.page(self.storage, stats, cv.kt, order, prefix, offset, limit)
        except (FileNotFoundError, OSError, pa.ArrowException):
            # pruned or damaged since it was opened: compute it again, once
            stats = self.stored_stats(cv, view, force=True)
            return cv, index_stats.page(self.storage, stats, cv.kt, order, prefix, offset, limit)

    def value_counts(self, table: str, column: str, prefix: str | None,
                     order: str) -> tuple[ColumnView, Iterator[tuple[object, int]]]:
        """Every (value, rows) of the look-up in `order`, streamed a page at a time (see value_page)."""
        cv, first = self.value_page(table, column, prefix, order, 0, index_stats.ROW_GROUP)

        def rest() -> Iterator[tuple[object, int]]:
            page, offset = first, 0
            while page:
                yield from page
                offset += len(page)
                if len(page) < index_stats.ROW_GROUP:
                    return
                page = self.value_page(table, column, prefix, order, offset, index_stats.ROW_GROUP)[1]

        return cv, rest()

    def index_stats(self, cv: ColumnView, view: TableView) -> dict[str, int | None]:
        """Distinct values and null rows of a column's snapshot, without rows of retired data files or
        deleted rows. One file and no dead rows: its footer and null bitmap; else the stored statistics."""
        files = cv.index.files
        if len(files) == 1 and not family(cv.index.family).element_keys and index_stats.dead_in_file(
                index_stats.StatsFile(files[0].path, files[0].file_size, files[0].range_start,
                                      files[0].range_end, files[0].open), view.retired) is None:
            reader = files[0].open()
            return {"distinct_values": int(reader.value_count), "null_rows": len(reader.null_rows())}
        if not files:
            return {"distinct_values": 0, "null_rows": 0}
        stats = self.stored_stats(cv, view)
        return {"distinct_values": stats.distinct_values, "null_rows": stats.null_rows}


_READ_IDS = 1 << 20   # ids per read when counting a column's nulls from the table's rows: bounded memory


def _read_batches(covered: list[tuple[int, int]], *, sparse: bool) -> Iterator[list[tuple[int, int]]]:
    """`covered` (inclusive id ranges) in reads of at most _READ_IDS ids (sparse ids: all in one read, their spans
    say nothing of the rows they hold)."""
    if sparse:
        if covered:
            yield covered
        return
    part: list[tuple[int, int]] = []
    size = 0
    for start, end in covered:
        while start <= end:
            stop = min(end, start + _READ_IDS - size - 1)
            part.append((start, stop))
            size += stop - start + 1
            start = stop + 1
            if size >= _READ_IDS:
                yield part
                part, size = [], 0
    if part:
        yield part


def _file_ids_cost(value: tuple[np.ndarray, BitMap64]) -> int:
    return lru_entry_bytes(value[0].nbytes) + bitmap_bytes(value[1])


# Bound trees are cached per view for SQL texts up to this long (point and range queries).
_BOUND_TEXT_MAX = 2048


def _reader_cost(reader: IndexReader) -> int:
    """Approximate bytes a cached reader holds, as its family's reader reckons them."""
    return int(reader.cache_cost())
