"""The build-job spec: what one create_global_index job builds, validated once, and its JSON form.

The service builds it (service.server.job_runner) and writes `to_dict()` to the job's spec file; the job process
(service.build_job.main) parses it back with `from_dict()`. Imports index_format and
service.catalog (and this package) only: the web process and the build job both import it and never each other.
"""
from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

from index_format.errors import InvalidOptionError
from index_format.families import built_family
from index_format.options import OPTION_TABLE, IndexOptions, given_options, option_error, parse_options
from service.catalog import warehouse_layout
from service.jobs.partitions import parse_partitions

log = logging.getLogger("bgix.jobspec")
ENGINES = ("spark", "local")
SCANS = ("direct", "spark")
_REQUIRED = ("job_id", "warehouse", "table", "index_column")
_SECRETS = ("storage_options",)   # passed to the job in its spec file, never kept in job records
MAX_COLUMNS = 64                  # columns one build may index together
NOTHING_TO_BUILD = "index already up to date: nothing to build"


def check_index_type(index_type: str) -> str:
    """Lower-cased, trimmed index type (spec §7.2), or a comma list of them (one per column of index_column,
    e.g. "btree,multivalue" for "uid,tags"). Raises InvalidOptionError unless bgix builds each family."""
    if not isinstance(index_type, str):
        raise InvalidOptionError(f"index_type {index_type!r} is not a family name")
    return ",".join(built_family(t).name for t in index_type.split(","))


def column_families(index_column: str, index_type: str) -> dict[str, str]:
    """column → family of one request: one index_type for every column, or one per column in order.

    Raises:
        InvalidOptionError: a list of index types whose length is not the number of columns.
    """
    columns = index_column.split(",")
    types = index_type.split(",")
    if len(types) == 1:
        return dict.fromkeys(columns, types[0])
    if len(types) != len(columns):
        raise InvalidOptionError(f"index_type names {len(types)} families for {len(columns)} columns; give one "
                                 "family for all of index_column, or one per column in the same order")
    return dict(zip(columns, types, strict=True))


def check_column_names(column: str) -> str:
    """A plain column name, or a comma list of them (several columns built together), normalized to "a,b".

    Raises:
        InvalidOptionError: no column, a repeated name, more than MAX_COLUMNS, or a name that is not a plain token
            (a name also names a directory).
    """
    if not isinstance(column, str) or not column.strip():
        raise InvalidOptionError(f"index_column {column!r} names no column")
    names = [warehouse_layout.check_name("column", c.strip() if "," in column else c) for c in column.split(",")]
    if len(names) > MAX_COLUMNS:
        raise InvalidOptionError(f"index_column names {len(names)} columns; one build indexes at most "
                                 f"{MAX_COLUMNS}")
    if len(set(names)) != len(names):
        raise InvalidOptionError(f"index_column {column!r} names a column twice")
    return ",".join(names)


@dataclass(frozen=True)
class JobSpec:
    """One build job, validated on construction (so a spec that exists is one the job can start on).

    Fields as in the spec JSON:
      job_id, warehouse, table, index_column   required; the job's record is <warehouse>/jobs/<job_id>.json
                       (the job creates it when the service did not)
      index_type       an index family bgix builds (index_format.families; "bitmap"), or one per column of
                       index_column, comma-separated ("btree,multivalue")
      options          IndexOptions; given as a dict or Paimon's "k=v,k=v" (spec §7.1, plus `rebuild`)
      partitions       [{column: value}]; given as Paimon's "dt=1,hh=0;dt=2,hh=1" or a list of objects
      storage_options  fsspec options of the warehouse (credentials: kept out of job records)
      allowed_roots    extra roots data files may live under (table locations)
      spark_master, spark_conf   the Spark session of a new job ("local[*]" by default)
      engine           "spark" or "local" (same plan and worker code, in-process, no Spark)
      scan             Spark engine only: "direct" (default): one Spark task per row range (capped by
                       max-parallelism) whose Python worker reads its file slices with pyarrow through
                       Storage; "spark": Spark scans the files (Parquet: _metadata.file_path/row_index, or
                       the row_id_column) and streams (key, row id) batches into mapInArrow
      table_format     the registered table's format (data: service.tables picks the table's source by it,
                       and the kind's spec rules: service.tables.check_spec); Paimon tables build the
                       table's own global indexes (one Paimon snapshot), plain tables bgix's catalog
                       snapshots (one per column); both take a comma list of columns
      test_hooks       tests only: {"fail_after_files": n} makes a worker raise after writing n index
                       files (with {"crash": true} its process exits at once); {"sleep_per_batch": s} slows every batch down; {"skip_active_check": true}
                       lets two jobs race to the commit (CAS tests);
                       {"pause_before_commit": DIR} writes DIR/ready before the commit, then waits for DIR/go

    Raises (on construction):
        InvalidOptionError: a required field is missing, or any field is invalid (the rules of the table's
            kind are service.tables.check_spec's).
    """

    job_id: str
    warehouse: str
    table: str
    index_column: str
    index_type: str = "bitmap"
    options: IndexOptions = field(default_factory=IndexOptions)
    partitions: list[dict[str, str]] = field(default_factory=list)
    storage_options: dict[str, Any] = field(default_factory=dict)
    allowed_roots: list[str] = field(default_factory=list)
    spark_master: str = "local[*]"
    spark_conf: dict[str, str] = field(default_factory=dict)
    engine: str = "spark"
    scan: str = "direct"
    table_format: str = ""
    test_hooks: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        missing = [k for k in _REQUIRED if not getattr(self, k)]
        if missing:
            raise InvalidOptionError(f"job spec lacks {missing}")
        warehouse_layout.check_name("job", self.job_id)
        options = parse_options(self.options)
        options.writable_compression()  # lzo is read-only (spec §7.1): refuse now, not mid-build
        normalized = {
            "index_type": check_index_type(self.index_type),
            "index_column": check_column_names(self.index_column),
            "options": options,
            "partitions": parse_partitions(self.partitions),
            "storage_options": dict(self.storage_options or {}),
            "allowed_roots": list(self.allowed_roots or ()),
            "spark_conf": dict(self.spark_conf or {}),
            "test_hooks": dict(self.test_hooks or {}),
        }
        for name, value in normalized.items():
            object.__setattr__(self, name, value)
        column_families(self.index_column, self.index_type)   # one family, or one per column
        if self.engine not in ENGINES:
            raise InvalidOptionError(f"engine {self.engine!r} is not one of {list(ENGINES)}")
        if self.scan not in SCANS:
            raise InvalidOptionError(f"scan {self.scan!r} is not one of {list(SCANS)}")

    @property
    def columns(self) -> list[str]:
        """The indexed columns (one, or where the table kind allows, several)."""
        return self.index_column.split(",")

    @property
    def families(self) -> dict[str, str]:
        """column → the index family built on it (index_format.families)."""
        return column_families(self.index_column, self.index_type)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> JobSpec:
        """Parse the spec JSON (as written by `to_dict()`, or by hand); null values take defaults.

        Unknown keys are ignored with a warning: a newer service may add keys the job need not fail on.
        Raises:
            InvalidOptionError: as the constructor.
        """
        known = {f.name for f in fields(cls)}
        unknown = set(data) - known
        if unknown:
            log.warning("job spec: ignoring unknown keys %s", sorted(unknown))
        values: dict[str, Any] = {k: "" for k in _REQUIRED}  # a missing one is reported by the constructor
        values.update((k, v) for k, v in data.items() if k in known and v is not None)
        return cls(**values)

    def to_dict(self) -> dict[str, Any]:
        """The spec JSON the job process reads (with credentials: write it to a private file only)."""
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["options"] = self.options.to_dict()
        out["partitions"] = [dict(p) for p in self.partitions]
        return out

    def public_dict(self) -> dict[str, Any]:
        """`to_dict()` without credentials: what a job record keeps."""
        return {k: v for k, v in self.to_dict().items() if k not in _SECRETS}


RequestedOptions = Mapping[str, Any] | str | IndexOptions | None   # a build request's options, as given


def index_options_of(recorded: Mapping[str, Any], column: str) -> IndexOptions:
    """The options an existing index was built with (its snapshot's `options`).

    Raises:
        InvalidOptionError: they do not parse any more (e.g. out of today's ranges): only a rebuild helps.
    """
    try:
        return parse_options(dict(recorded))
    except InvalidOptionError as exc:
        raise option_error("rebuild", f"the index on column {column!r} was built with options bgix no longer "
                                      f"accepts ({exc}); pass rebuild=true to rebuild it") from exc


def resolve_options(raw: RequestedOptions, recorded: Mapping[str, Any] | None,
                    column: str, family: str | None = None) -> IndexOptions:
    """The options of a build of `column` whose index was built with `recorded` (None: no index yet).

    Without `rebuild`, an incremental build writes files like the index's own: options the request leaves
    out are the index's, and a given option that shapes index files and differs is refused (it would take
    effect on the new rows only, and the index would claim it for all); with the index's `family`, only the
    options that shape its files count. With `rebuild`, or without an index, the request's options (and the
    defaults) apply.

    Raises:
        InvalidOptionError: as parse_options; an option differing from the index's without `rebuild`
            (the message names each, the index's value and the requested one, and says to pass rebuild).
    """
    given = raw.to_dict() if isinstance(raw, IndexOptions) else raw
    fields_given = given_options(given)
    requested = IndexOptions(**fields_given)  # type: ignore[arg-type]  # given_options' values are the fields' types
    if recorded is None or requested.rebuild:
        return requested
    current = index_options_of(recorded, column)
    wanted = replace(current, **{**fields_given, "rebuild": False})  # type: ignore[arg-type]  # as above
    check_options_match(current, wanted, column, family)
    return wanted


def one_set_of_options(resolved: Mapping[str, tuple[str, IndexOptions]]) -> IndexOptions:
    """The one set of options a build of several columns writes with, from each column's family and options
    (resolve_options): a family's own options come from the columns of that family, the options of every family
    (records per range, key order, …) from all, so those must agree.

    Raises:
        InvalidOptionError: two columns' options differ where both apply (their indexes were built with other
            options, and the request leaves those out): naming the columns and the options.
    """
    merged: dict[str, tuple[object, str]] = {}   # field → (value, the column it came from)
    for column, (fam, options) in resolved.items():
        for spec in OPTION_TABLE:
            if spec.family not in (None, fam):
                continue
            value = getattr(options, spec.field)
            seen = merged.setdefault(spec.field, (value, column))
            if seen[0] != value:
                raise option_error(spec.key, f"columns {seen[1]!r} and {column!r} would be built with other values of "
                                             f"option {spec.key!r} ({spec.render(seen[0])!r} and "
                                             f"{spec.render(value)!r}: their indexes' own, as the request leaves it "
                                             "out); one build writes every column with one set of options: give the "
                                             "option in the request, or build the columns apart")
    first = next(iter(resolved.values()))[1]
    return replace(first, **{f: v for f, (v, _) in merged.items()})  # type: ignore[arg-type]  # each field's own value


def check_options_match(current: IndexOptions, wanted: IndexOptions, column: str, family: str | None = None) -> None:
    """Raises InvalidOptionError when `wanted` differs from the index's `current` in an option that shapes
    index files (of the index's `family`, when given): an incremental build cannot apply it."""
    diffs = current.differences(wanted, family)
    if diffs:
        listed = "; ".join(f"{k}: index has {a!r}, request asks {b!r}" for k, a, b in diffs)
        raise option_error(diffs[0][0], f"the index on column {column!r} was built with other options ({listed}); "
                                        "an incremental build cannot change them: pass rebuild=true to rebuild "
                                        "the index with the new options, or leave them out to keep the index's")
