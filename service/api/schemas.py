"""Request and response models of the HTTP API (v1), one model per direction.

Pydantic only: the Python client imports this module, so it must not import fastapi, starlette,
pyspark, the catalog or the query service.
"""
from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, PlainValidator, WithJsonSchema, model_validator
from pydantic_core import PydanticCustomError

from index_format.families import BUILT_NAMES

TABLE_NAME_PATTERN = r"^[A-Za-z0-9_][A-Za-z0-9_.\-]{0,127}$"
COLUMN_NAME_PATTERN = r"^[^/\\\x00]{1,256}$"
ResultKind = Literal["count", "row_ids", "ranges", "roaring", "global_index_result", "files"]
JobState = Literal["queued", "running", "succeeded", "failed", "cancelled"]
ROARING_MEDIA_TYPE = "application/vnd.bgix.roaring64"
# result "global_index_result": Paimon's GlobalIndexResultSerializer bytes, which Paimon gives no media type of its own
GLOBAL_INDEX_RESULT_MEDIA_TYPE = "application/octet-stream"
COUNT_HEADER = "X-Bgix-Count"
# a binary result's exactness, coverage and snapshots (its JSON fields `exact`, `coverage.complete`, `snapshots`)
EXACT_HEADER = "X-Bgix-Exact"
COVERAGE_COMPLETE_HEADER = "X-Bgix-Coverage-Complete"
SNAPSHOTS_HEADER = "X-Bgix-Snapshots"
MAX_LIMIT = 100_000
DEFAULT_LIMIT = 1000


INVALID_TEXT = "invalid_text"   # the validation error type of a string that cannot be encoded (the API's 400)


def lone_surrogate(value: Any, path: str = "$", skip: frozenset[str] = frozenset()) -> tuple[str, str, int] | None:
    """(what, JSON path, character) of the first string in `value` (dict keys included) that cannot be encoded
    as UTF-8, i.e. holds a lone surrogate ("\\ud800" in JSON); None when every string can. `what` is the path,
    or "a key of <path>" for a key. `skip`: top-level keys whose strings another reader checks. Iterative, so a
    deeply nested body cannot exhaust the stack."""
    stack: list[tuple[str, Any]] = [(path, value)]
    while stack:
        where, v = stack.pop()
        if isinstance(v, str):
            if not v.isascii():
                try:
                    v.encode("utf-8")
                except UnicodeEncodeError as e:
                    return where, where, e.start
        elif isinstance(v, dict):
            for k, item in v.items():
                if where == path and k in skip:
                    continue
                if isinstance(k, str) and not k.isascii():
                    try:
                        k.encode("utf-8")
                    except UnicodeEncodeError as e:
                        return f"a key of {where}", where, e.start
                stack.append((f"{where}.{k}", item))
        elif isinstance(v, (list, tuple)):
            stack.extend((f"{where}[{i}]", item) for i, item in enumerate(v))
    return None


class _Model(BaseModel):
    # strict: no lax coercion of request fields ('limit': true is not 1, 'explain': "yes" is not true)
    model_config = ConfigDict(extra="forbid", strict=True)
    # top-level fields whose strings a reader of their own checks (with its own 400), left out of the walk
    _text_checked_elsewhere: ClassVar[frozenset[str]] = frozenset()

    @model_validator(mode="before")
    @classmethod
    def _encodable(cls, data: Any) -> Any:
        """Every string of the request can be encoded as UTF-8: one that cannot (a lone surrogate) would
        fail where it is stored, logged or echoed in a response, so it is refused before anything uses it."""
        bad = lone_surrogate(data, skip=cls._text_checked_elsewhere)
        if bad is not None:
            raise PydanticCustomError(
                INVALID_TEXT, "{what} is not valid Unicode: lone surrogate at character {at}",
                {"what": bad[0], "where": bad[1], "at": bad[2]})
        return data


# ---- errors -------------------------------------------------------------------------------------
class ErrorBody(BaseModel):
    code: str = Field(description="Stable machine-readable code, e.g. unknown_column.")
    message: str
    details: dict[str, Any] = Field(default_factory=dict)


class ErrorEnvelope(BaseModel):
    error: ErrorBody


# ---- tables -------------------------------------------------------------------------------------
class TableCreate(_Model):
    location: str = Field(min_length=1, max_length=4096,
                          description="Absolute path or fsspec URL of the table's data files; for format "
                                      "'paimon' the table directory <warehouse>/<db>.db/<table>.")
    # Row ids of csv/json/orc rows are positions in the order pyarrow reads the file (issue 3);
    # a Paimon table's are its _ROW_IDs (it needs row-tracking.enabled=true).
    format: Literal["parquet", "orc", "csv", "json", "paimon"] = "parquet"
    partition_columns: list[str] = Field(default_factory=list)
    row_id_column: str | None = Field(None, description="Column holding stable row ids, if any.")


class PaimonFieldPublic(BaseModel):
    id: int = Field(description="Paimon field id (what index manifests name).")
    name: str
    type: str = Field(description="Paimon type, e.g. 'VARCHAR(20)' or 'INT NOT NULL'.")
    key_type: str | None = Field(
        None, description="Key type of a bitmap or btree index on this field; null when the type has none (an "
                          "ARRAY field: a multivalue index keys its elements, see the index's key_type).")


IndexOrigin = Literal["bgix", "paimon", "pypaimon", "unknown"]
KeyOrder = Literal["logical", "bytes", "mixed", "unknown"]   # IndexPublic.key_order


class PaimonIndexOriginPublic(BaseModel):
    origin: IndexOrigin = Field(
        description="Who wrote these files: 'bgix' (added by a snapshot with the bgix.job-id property), "
                    "'paimon' (DEIX source_meta: Paimon Java or another DEIX writer), 'pypaimon' (no "
                    "source_meta: pypaimon's or pypaimon-rust's create_global_index; the two are not told apart), "
                    "'unknown' (other source_meta).")
    job_id: str | None = Field(None, description="The bgix build job that committed them (origin 'bgix').")
    snapshot_id: int | None = Field(None, description="The Paimon snapshot that committed them, when known.")
    files: int
    rows: int
    row_ranges: list[list[int]] = Field(description="Merged inclusive [first, last] _ROW_ID ranges.")


class PaimonStaleFilePublic(BaseModel):
    index_file: str = Field(description="The stale index file (its name in the table's index manifest).")
    row_range: list[int] = Field(description="Its inclusive [first, last] _ROW_ID range, now uncovered.")
    reason: Literal["updated"] = Field(description="'updated': a data file updated the indexed column of some of "
                                                   "its rows after its build.")
    data_file: str = Field(description="The data file that did (the first one found).")
    sequence: int = Field(description="That data file's sequence number for the column (Paimon: the snapshot "
                                      "that committed it).")
    baseline: int = Field(description="The snapshot the index file is known to reflect: its build's scan (DEIX "
                                      "marker) or, with no marker, the newest commit that brought its rows.")
    baseline_from: Literal["deix", "anchor_files"]


class PaimonIndexPublic(BaseModel):
    column: str
    index_type: str = Field("bitmap", description="Paimon's index type: a family bgix serves (bitmap, btree, "
                                                  "multivalue, fm) or one it lists but does not read (full-text, "
                                                  "a vector type, es-index, pk-*, ...: `served` false). A column "
                                                  "may have one index of each type: key entries by (column, "
                                                  "index_type).")
    field_id: int
    key_type: str | None = Field(None, description="Type of the keys (a multivalue index: the array's element "
                                                   "type); null when bgix cannot read keys of this type.")
    files: int
    rows: int
    bytes: int
    row_ranges: list[list[int]] = Field(description="Merged inclusive [first, last] _ROW_ID ranges indexed.")
    origins: list[PaimonIndexOriginPublic] = Field(
        default_factory=list, description="The index's files grouped by writer (and bgix job).")
    stale: bool = Field(False, description="Some of its files were built before a data-evolution update of the "
                                           "column's rows (global-index.column-update-action=IGNORE): their rows "
                                           "are served as uncovered until an incremental build refreshes them.")
    stale_files: list[PaimonStaleFilePublic] = Field(default_factory=list)
    served: bool = Field(True, description="False for an index type bgix does not read: queries never use it "
                                           "(predicates on the column go to the scan step); `reason` says why.")
    reason: str | None = Field(None, description="Why an index is not served (null when it is).")


class PaimonTablePublic(BaseModel):
    snapshot_id: int | None = Field(description="The Paimon snapshot served (null before the first commit).")
    fields: list[PaimonFieldPublic]
    partition_keys: list[str]
    row_count: int = Field(description="_ROW_IDs the data files hold, deleted rows included.")
    deleted_rows: int = 0
    options: dict[str, str] = Field(default_factory=dict)
    indexes: list[PaimonIndexPublic] = Field(
        default_factory=list, description="Every global index in the snapshot (bitmap, btree, multivalue), whoever "
                                          "built it: one entry per (column, index_type).")


class TablePublic(BaseModel):
    name: str
    location: str
    format: str
    partition_columns: list[str] = Field(description="The partition columns: a Paimon table's partition keys, "
                                                     "else those registered.")
    row_id_column: str | None
    created_at: str | None = None
    paimon: PaimonTablePublic | None = Field(None, description="Paimon tables only: the served snapshot.")


class TableErrorPublic(BaseModel):
    name: str
    error: ErrorBody = Field(description="Why the table cannot be shown, e.g. corrupt_catalog_document.")


class TablesPublic(BaseModel):
    tables: list[TablePublic]
    count: int
    errors: list[TableErrorPublic] = Field(
        default_factory=list, description="Registered tables that cannot be read or shown, each with its error "
                                          "(left out of `tables` and `count`); DELETE /v1/tables/{name} still "
                                          "drops them.")


class DataFilePublic(BaseModel):
    path: str
    first_row_id: int
    row_count: int
    size: int | None = None
    partition: dict[str, str] = Field(default_factory=dict)
    write_cols: list[str] | None = Field(
        default=None, description="Paimon data-evolution files: the columns this file writes (null: all).")
    max_sequence_number: int | None = Field(
        default=None, description="Paimon files: where files share row ids, each column's current value is in "
                                  "the file with the highest max_sequence_number that writes it.")


class FileErrorPublic(BaseModel):
    path: str
    reason: str = Field(description="Why the file cannot be read (empty, not the table's format, not a regular "
                                    "file, outside the partition layout).")


class FilesPublic(BaseModel):
    table: str
    files: list[DataFilePublic]
    total_rows: int
    errors: list[FileErrorPublic] = Field(
        default_factory=list, description="Data files the last scan could not read: they have no row ids (no "
                                          "query returns their rows) until a scan reads them.")


# ---- jobs ---------------------------------------------------------------------------------------
# A family bgix builds, or a comma list of them (case and blanks as Paimon's option values allow).
_FAMILY = "|".join(BUILT_NAMES)
INDEX_TYPE_PATTERN = rf"^(?i:\s*({_FAMILY})\s*)(,(?i:\s*({_FAMILY})\s*))*$"
class CreateIndexRequest(_Model):
    table: str = Field(pattern=TABLE_NAME_PATTERN)
    index_column: str = Field(min_length=1, max_length=256)
    index_type: str = Field(
        "bitmap", pattern=INDEX_TYPE_PATTERN, max_length=2048,
        description="The index family: " + ", ".join(BUILT_NAMES) + " (multivalue: ARRAY columns; fm: STRING "
                    "columns). With several columns in index_column, one family for all or one per column in order, e.g. "
                    "index_column 'uid,tags' with index_type 'btree,multivalue' (built from one scan).")
    partitions: str | list[dict[str, str]] | None = Field(
        None, description="Paimon spec 'k=v,k=v;k=v' or a list of {column: value} objects.")
    options: dict[str, str | int | float | bool] | str | None = Field(
        None, description="Index options (spec §7.1) as an object or Paimon's 'k=v,k=v' string.")


class DropIndexRequest(_Model):
    table: str = Field(pattern=TABLE_NAME_PATTERN)
    index_column: str = Field(min_length=1, max_length=256)


class RemoveOrphanFilesRequest(_Model):
    table: str = Field(pattern=TABLE_NAME_PATTERN)
    older_than_s: float = Field(
        3600.0, ge=0, le=10 * 365 * 86400,
        description="Files bgix cannot attribute to a build of its own that is over (another writer's, or "
                    "unknown) go only when older than this many seconds (Paimon's older_than; default one hour).")
    dry_run: bool = Field(False, description="List what would be removed; remove nothing.")


class OrphanFilePublic(BaseModel):
    path: str
    file_name: str
    bytes: int
    age_s: float
    job_id: str | None = Field(None, description="The bgix build that wrote it, over without committing it; "
                                                 "null: removed for its age alone.")
    reason: str


class OrphanFilesKept(BaseModel):
    referenced: int = Field(description="Named by a snapshot, tag, changelog or branch of the table.")
    in_flight: int = Field(description="Written by a bgix build still running (it may commit them).")
    young: int = Field(description="Not attributable to a finished bgix build and younger than older_than_s.")


class OrphanFilesRemoved(BaseModel):
    table: str
    dry_run: bool
    older_than_s: float
    files: int = Field(description="How many files were removed (dry_run: would be).")
    bytes: int
    removed: list[OrphanFilePublic]
    kept: OrphanFilesKept
    failed: list[str] = Field(description="Orphans whose removal failed (left in place; a later call retries).")
    metadata_scanned: int = Field(description="Snapshot, tag and changelog files whose index manifests were read.")


class JobCreated(BaseModel):
    job_id: str


class JobProgress(BaseModel):
    fraction: float = 0.0
    rows_indexed: int = Field(0, description="Rows indexed so far, counted once per indexed column: a build of 3 "
                                             "columns over 2,000,000 rows ends at 6,000,000.")
    ranges_done: int = 0
    ranges_total: int = 0
    phases: dict[str, float] | None = Field(
        None, description="A succeeded build's seconds per phase: `open and plan`, `Spark session` (0 on a warm "
        "runner), `tasks` (read, sort, write), `commit` (null for builds recorded before phases were kept).")


class JobPublic(BaseModel):
    id: str
    table: str
    index_column: str
    index_type: str = "bitmap"
    state: JobState
    progress: JobProgress
    error: str | None = None
    snapshot_id: int | None = None
    created_at: str | None = None
    started_at: str | None = None
    finished_at: str | None = None
    duration_s: float | None = Field(
        None, description="Seconds the build ran: finished_at - started_at once it is over, the time so far while "
                          "it runs; null while queued and for a job that ended before it started.")
    message: str | None = Field(
        None, description="What a succeeded job did when it built nothing, e.g. 'index already up to date: "
                          "nothing to build' (the job record's progress.message).")


class JobsPublic(BaseModel):
    jobs: list[JobPublic]


class Dropped(BaseModel):
    table: str
    index_column: str | None = None
    dropped: bool = True


# ---- indexes and values -------------------------------------------------------------------------
class IndexPublic(BaseModel):
    column: str
    index_type: str = Field(description="The index family: bitmap (any predicate; low and medium cardinality), "
                                        "btree (sorted keys: seeks for =, IN, ranges, prefixes, nulls; high "
                                        "cardinality) or multivalue (ARRAY columns: array_contains, "
                                        "arrays_overlap, array_contains_all). A column with indexes of several "
                                        "families is listed once per family.")
    key_type: str = Field(description="Type of the keys; a multivalue index's are the array's elements.")
    snapshot_id: int
    files: int
    bytes: int
    covered_ranges: list[list[int]]
    uncovered_ranges: list[list[int]]
    distinct_values: int | None = Field(None, description="Distinct keys (a multivalue index: distinct elements).")
    null_rows: int | None = Field(
        None, description="Live rows of the covered ranges whose value is NULL (a multivalue index: whose array is "
                          "NULL, counted from the table's rows: its files record none).")
    built_at: str | None = Field(
        None, description="When the index was built: its snapshot's commit (a Paimon table: the commit that added "
                          "its newest file, not the table's latest snapshot).")
    stale: bool = False
    options: dict[str, str] = Field(default_factory=dict)
    key_order: KeyOrder | None = Field(
        None, description="Key order of numeric, date, time and timestamp keys (spec §2.7): recorded at the "
                          "build (bgix.key-order) or, for Paimon tables, read from the files; 'mixed' when "
                          "files differ; null when not known or when the order does not matter (strings).")


class IndexErrorPublic(BaseModel):
    column: str
    index_type: str | None = Field(None, description="The family whose index file does not read (its entry in "
                                                     "`indexes` then has no statistics); null when the column's "
                                                     "snapshot itself cannot be read.")
    error: ErrorBody = Field(description="Why the index cannot be shown, e.g. corrupt_catalog_document, or "
                                         "corrupt_index_file naming the file and the block.")


class IndexesPublic(BaseModel):
    table: str
    indexes: list[IndexPublic] = Field(description="One entry per (column, index_type).")
    errors: list[IndexErrorPublic] = Field(
        default_factory=list, description="Indexed columns whose current snapshot cannot be read (left out of "
                                          "`indexes`; drop_global_index still drops them), and indexes one of "
                                          "whose files does not read (listed in `indexes` without statistics; "
                                          "queries that need the file fail naming it, the others answer).")


class ValueCount(BaseModel):
    value: Any = Field(description="A key: a value of the column, or an element of a multivalue (ARRAY) column.")
    rows: int = Field(description="Rows holding it (a multivalue index: rows whose array holds the element).")


class ValuesPublic(BaseModel):
    column: str
    values: list[ValueCount]
    next_cursor: str | None = None
    snapshot_id: int
    null_rows: int | None = Field(
        None, description="Rows whose value is NULL (a multivalue index: whose array is NULL), never listed in "
                          "`values`; given on the first page (no cursor), null on later pages.")


# ---- query --------------------------------------------------------------------------------------
def _explain_mode(value: object) -> bool | Literal["plan"]:
    """true, false or "plan", strictly ("yes" and 1 are refused, as the other strict fields refuse them); one
    validator so a refusal names the field once."""
    if isinstance(value, bool) or value == "plan":
        return value  # type: ignore[return-value]  # mypy cannot narrow `value == "plan"` to the literal
    raise ValueError('explain is true, false or "plan"')


ExplainMode = Annotated[bool | Literal["plan"], PlainValidator(_explain_mode),
                        WithJsonSchema({"anyOf": [{"type": "boolean"}, {"const": "plan", "type": "string"}],
                                        "default": False})]


class QueryOrder(_Model):
    column: str = Field(max_length=1000, description="An indexed scalar column.")
    direction: Literal["asc", "desc"] = "asc"


class QueryRequest(_Model):
    # the predicate readers refuse its strings that are not valid Unicode (400 invalid_predicate), naming them
    _text_checked_elsewhere: ClassVar[frozenset[str]] = frozenset({"predicate"})
    where: str | None = Field(None, max_length=1_000_000,
                              description="SQL WHERE text, e.g. status IN ('vip') AND NOT country = 'US', "
                                          "uid BETWEEN 100 AND 200, array_contains(tags, 'vip').")
    predicate: dict[str, Any] | None = Field(
        None, description="JSON predicate tree (docs/predicates.md); ARRAY columns take array_contains "
                          "{column, value}, arrays_overlap {column, values}, array_contains_all {column, values} "
                          "(docs/index-families.md).")
    result: ResultKind = "row_ids"
    limit: int = Field(DEFAULT_LIMIT, ge=1, le=MAX_LIMIT)
    cursor: str | None = Field(None, max_length=4096)
    explain: ExplainMode = Field(
        False, description="true: the answer with how it was reached (`explain`: the plan and what was read); "
                           "\"plan\": only the plan (a QueryPlanResponse: index per leaf, files after pruning, how each "
                           "range would be read, coverage and the rows no index covers), made from manifest "
                           "metadata without opening any index file, so no rows and no count.")
    order_by: QueryOrder | None = Field(
        None, description="With result row_ids: the matching rows ordered by one indexed column (ORDER BY c "
                          "ASC|DESC; ties by row id; NULLS FIRST ascending, NULLS LAST descending, as Paimon), "
                          "`limit` rows a page, each row's value in `order_values`; answered from the column's "
                          "btree or bitmap index in key order, stopping after `limit` rows. Another `result`: 400 "
                          "invalid_order_by; the answer stays JSON even when the client accepts roaring.")
    scan: Literal["auto", "never"] = Field(
        "auto", description="\"auto\": rows no index covers (appends since the last build, stale files, a column "
                            "with no index) and leaves the indexes decline are read from the table's data and "
                            "evaluated, within BGIX_QUERY_SCAN_MAX_ROWS rows per query, so the answer is exact; "
                            "past that budget the answer is the indexes' (`exact`, `coverage` say what is missing). "
                            "\"never\": the indexes' answer only. `explain` reports the scan (`explain.scan`).")

    @model_validator(mode="after")
    def _exactly_one(self) -> QueryRequest:
        if (self.where is None) == (self.predicate is None):
            raise ValueError("give exactly one of 'where' or 'predicate'")
        return self


class Coverage(BaseModel):
    complete: bool
    uncovered_ranges: list[list[int]]


class FileMatch(BaseModel):
    path: str
    partition: dict[str, str] = Field(
        default_factory=dict, description="The file's partition values (column → value as text); {} when the "
                                          "table is unpartitioned.")
    first_row_id: int
    row_count: int
    matches: int = Field(description="The page's matching rows in this file (= len(positions)). A page lists only "
                                     "the files holding its rows, so summed over the pages a file's matches are "
                                     "the answer's rows in it.")
    positions: list[int] = Field(description="This page's matching row positions inside the file (0-based).")


MAX_GROUP_COLUMNS = 3


class AggregateMetric(_Model):
    op: Literal["count", "sum", "min", "max", "avg"] = Field(
        "count", description="count: rows (with a column: its non-null values); sum / avg: of a numeric column; "
                             "min / max: of any scalar column, in its key order. NULLs are skipped; over no "
                             "non-null value sum, min, max and avg are NULL (SQL).")
    column: str | None = Field(None, max_length=1000, description="An indexed scalar column (none: count rows).")
    name: str | None = Field(None, max_length=200, description="The metric's key in each group's `metrics` "
                                                              "(default: `count`, or `<op>_<column>`).")


class AggregateOrder(_Model):
    by: str = Field(max_length=1000, description="A metric's name or a group_by column.")
    direction: Literal["asc", "desc"] = Field(
        "asc", description="asc: NULLS FIRST; desc: NULLS LAST. Ties: the group keys ascending.")


class AggregateRequest(_Model):
    _text_checked_elsewhere: ClassVar[frozenset[str]] = frozenset({"predicate"})
    where: str | None = Field(None, max_length=1_000_000,
                              description="SQL WHERE text, as in a query; with neither `where` nor `predicate` "
                                          "every live row.")
    predicate: dict[str, Any] | None = Field(None, description="JSON predicate tree, as in a query.")
    group_by: list[str] = Field(
        default_factory=list, max_length=MAX_GROUP_COLUMNS,
        description="Up to 3 indexed columns of any family. NULL is a group (SQL GROUP BY); for an ARRAY "
                    "(multivalue) column each distinct non-null element of a row's array is a group. Empty: one "
                    "group of every row.")
    metrics: list[AggregateMetric] = Field(default_factory=lambda: [AggregateMetric()], min_length=1,
                                           max_length=16)
    order_by: list[AggregateOrder] = Field(default_factory=list, max_length=MAX_GROUP_COLUMNS + 16,
                                           description="Default: the group keys ascending (NULLS FIRST).")
    limit: int = Field(DEFAULT_LIMIT, ge=1, le=MAX_LIMIT, description="Groups per page.")
    cursor: str | None = Field(None, max_length=4096, description="`next_cursor` of the previous page.")
    explain: ExplainMode = Field(
        False, description="true: with how it was answered (the filter's explain, the index per group and metric "
                           "column, intersections made, the scan step). \"plan\": only the plan (an "
                           "AggregatePlanResponse), from manifest metadata: no index file opened, no group.")
    scan: Literal["auto", "never"] = Field(
        "auto", description="As in a query: rows no index covers (the filter's, a group or metric column's) are "
                            "read from the table's data within BGIX_QUERY_SCAN_MAX_ROWS; \"never\": indexes only, "
                            "the rest named in `coverage`.")

    @model_validator(mode="after")
    def _at_most_one(self) -> AggregateRequest:
        if self.where is not None and self.predicate is not None:
            raise ValueError("give at most one of 'where' or 'predicate'")
        return self


class AggregateGroup(BaseModel):
    key: dict[str, Any] = Field(description="Group column → its value (null: the NULL group).")
    metrics: dict[str, Any] = Field(description="Metric name → value (decimals and integers past 64 bits as "
                                                "text; NaN and infinities as text).")


class AggregateResponse(BaseModel):
    group_by: list[str]
    metrics: list[str]
    groups: list[AggregateGroup] = Field(description="This page of groups, in the asked order.")
    total_groups: int = Field(description="Groups in the whole answer.")
    rows: int = Field(description="Rows where the filter is TRUE (the indexes' answer).")
    exact: bool = Field(description="false when any row the answer should hold is left out: the filter not "
                                    "exact, or rows no index covers past the scan budget (`coverage`).")
    snapshots: dict[str, int] = Field(default_factory=dict)
    coverage: Coverage
    next_cursor: str | None = None
    explain: dict[str, Any] | None = None


class QueryResponse(BaseModel):
    result: ResultKind
    count: int = Field(description="Rows where the predicate is TRUE (whole result, not this page).")
    exact: bool = True
    row_ids: list[int] | None = None
    ranges: list[list[int]] | None = Field(None, description="Inclusive [first, last] runs of matching row ids.")
    files: list[FileMatch] | None = None
    order_values: list[Any] | None = Field(None, description="With `order_by`: each row's value of the order "
                                                              "column, beside `row_ids`.")
    next_cursor: str | None = None
    snapshots: dict[str, int] = Field(default_factory=dict, description="Snapshot id used per column.")
    coverage: Coverage
    explain: dict[str, Any] | None = None


class QueryPlanResponse(BaseModel):
    """How a query would be answered (`"explain": "plan"`, or GET /v1/tables/{name}/plan): nothing read."""

    result: Literal["plan"] = "plan"
    snapshots: dict[str, int] = Field(default_factory=dict, description="Snapshot id per column the plan uses.")
    coverage: Coverage = Field(description="The rows the plan's indexes cover; uncovered_ranges: the table's rows "
                                           "no index used covers.")
    plan: dict[str, Any] = Field(description="The plan: `tree` (NOT pushed down, comparisons merged), `leaves` "
                                             "(per leaf: the index chosen and those considered, or why it is "
                                             "declined; per row range the files, the candidates after pruning "
                                             "and how they would be read), `count` and `coverage`.")
    scan: dict[str, Any] | None = Field(
        None, description="What the scan step would read to make the answer exact: `decision` (not_needed, scan, "
                          "off, over_budget), `rows_needed`, `max_rows` and per column the row ranges and why.")


class AggregatePlanResponse(QueryPlanResponse):
    """How an aggregate would be answered (`"explain": "plan"`): nothing read, no group made. `plan`: `filter`,
    the filter's query plan (null without one); `group_by` and `metrics`, per column the index (`index_type`), its
    files, `covered_rows` and `uncovered_ranges`; `grouping`: none, key_counts, row_codes or intersections.
    `coverage`: the table's rows the filter's, group and metric columns' indexes do not cover (the aggregate
    scans them or names them). `scan`: the filter's scan step."""

    group_by: list[str]
    metrics: list[str]


class IndexFamilyPublic(BaseModel):
    name: str = Field(description="Paimon's index_type (create_global_index's `index_type`).")
    description: str
    builds: bool = Field(description="bgix builds this family (false: served only).")
    answers: list[str] | None = Field(description="The predicate operators its files answer (null: every one).")
    key_types: list[str] | None = Field(None, description="The key types (a column's `key_type`) this family "
                                        "holds, e.g. ['string'] for fm; null: every scalar key type.")


class IndexFamiliesPublic(BaseModel):
    families: list[IndexFamilyPublic]


# ---- ops ----------------------------------------------------------------------------------------
class Health(BaseModel):
    status: Literal["ok"] = "ok"


class Ready(BaseModel):
    status: Literal["ready", "not_ready"]
    warehouse: str
    checks: dict[str, str] = Field(default_factory=dict)
