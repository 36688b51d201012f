"""Service configuration: the single pydantic-settings class (env prefix BGIX_).

The only module that reads environment variables; built once in `create_app()` and passed down.
Must not import fastapi, pyspark or anything from service.build_job.
"""
from __future__ import annotations

import json
import os
from typing import Annotated, Literal

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict


class Settings(BaseSettings):
    """Every knob of the HTTP service. Tests construct `Settings(...)` directly."""

    model_config = SettingsConfigDict(
        env_prefix="BGIX_", env_file=None, extra="ignore", validate_default=True
    )

    warehouse: str = Field("./warehouse", description="Warehouse root: a path or fsspec URL.")
    allowed_roots: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="Comma-separated roots table locations must lie under "
        "(default: the warehouse's parent directory).",
    )
    spark_master: str = Field("local[*]", description="Spark master URL for build jobs.")
    token: SecretStr | None = Field(None, description="API token; when set, mutating endpoints need it.")
    read_token_required: bool = Field(False, description="Require the token on read endpoints too.")
    cache_bytes: int = Field(
        256 * 1024 * 1024, ge=0, description="Byte budget of the caches (decoded blocks and bitmaps, open readers, range sidecars, "
        "id columns), each entry charged the memory it keeps resident."
    )
    max_open_files: int = Field(
        256, ge=8, description="Most index files the reader cache keeps open (range sidecars: half as many more); "
        "a least recently used one is closed to open another.",
    )
    build_engine: Literal["spark", "local"] = Field(
        "spark", description="Build engine: a Spark job or the in-process local engine."
    )
    storage_options: Annotated[dict[str, object], NoDecode] = Field(
        default_factory=dict, description="JSON object of fsspec storage options."
    )
    snapshot_ttl_seconds: float = Field(
        1.0, ge=0, description="How long a resolved current-snapshot pointer is reused."
    )
    log_format: Literal["text", "json"] = Field(
        "text", description="Service log lines: `text` (human-readable) or `json` (one JSON object per line: "
        "timestamp, level, logger, message, and a job line's fields: event, job_id, table, index_column, family, "
        "state, rows, duration_s, snapshot_id, error).",
    )
    job_poll_seconds: float = Field(0.2, gt=0, description="Build-job watcher poll interval.")
    build_runner: Literal["warm", "process"] = Field(
        "warm", description="Where builds run: `warm`, one long-lived build runner whose Spark session and Python "
        "workers stay up between builds; `process`, a new runner process (and Spark session) per build.",
    )
    build_idle_s: float = Field(
        600.0, ge=0, description="A warm build runner idle this many seconds exits and gives its memory back; the "
        "next build starts a new one (cold).",
    )
    build_prewarm: bool = Field(
        True, description="Start the warm build runner (with the Spark engine: its session and Python workers) "
        "with the service; /readyz answers 503 until it is warm, at most build_warmup_s.",
    )
    build_warmup_s: float = Field(
        120.0, ge=0, description="Longest time /readyz waits for the warm build runner at start-up.",
    )
    query_timeout_s: float = Field(
        30.0, gt=0, description="Time budget of one query in seconds; a query over it gets 503 query_timeout."
    )
    query_scan_max_rows: int = Field(
        2_000_000, ge=0, description="Data rows one query may read to answer exactly what no index covers (rows "
        "appended since the last build, stale files, columns with no index) or answers (leaves the indexes "
        "decline); past it the answer is the indexes' with `exact`/`coverage` saying what is missing. 0: never "
        "scan. Scanned rows are indexed in memory and kept in the cache (a repeated query reads nothing).",
    )
    aggregate_max_groups: int = Field(
        100_000, ge=1, le=10_000_000, description="Groups one aggregate may make (each holds its keys and metrics "
        "while the answer is built); past it 400 too_many_groups, found by counting keys among the filter before "
        "any group's rows are built.",
    )
    query_threads: int = Field(
        8, ge=1, description="Threads that evaluate queries (off the event loop); more queries wait for one."
    )

    keep_alive_s: float = Field(
        75.0, gt=0,
        description="Seconds an idle keep-alive connection stays open. Longer than clients' own idle expiry "
        "(httpx: 5 s) so a client never reuses a connection the server is closing at that moment.",
    )
    header_timeout_s: float = Field(
        10.0, gt=0,
        description="Seconds a client has to send a request's whole header section (from connecting, or from the "
        "request's first byte on a keep-alive connection); slower gets 408 and the connection closed.",
    )
    body_timeout_s: float = Field(
        30.0, gt=0,
        description="Longest pause, in seconds, between two pieces of a request body being received; longer gets "
        "408 and the connection closed (a big body on a slow link is fine as long as it keeps coming).",
    )
    max_connections: int = Field(
        1024, ge=1,
        description="Most open client connections per worker process; one more is answered 503 and closed at "
        "once. The soft open-file limit is raised to hold it (up to the hard limit; else the cap is lowered).",
    )

    # Hardening limits (issue 10): every request's memory and work is bounded; over a limit is a clean 4xx.
    max_body_bytes: int = Field(
        8 * 1024 * 1024, ge=1024, description="Largest request body in bytes; a larger one gets 413 body_too_large."
    )
    body_drain_bytes: int = Field(
        16 * 1024 * 1024, ge=0,
        description="After a 413, up to this many bytes of the refused body are read and discarded (for at most 5 "
        "s) so a client that sends its whole body before reading gets the answer; past it the connection is closed.",
    )
    max_predicate_depth: int = Field(
        64, ge=4, le=10_000,
        description="Deepest nesting of a SQL or JSON predicate (parentheses, NOT, AND/OR); deeper gets 400 "
        "predicate_limit. Flat AND/OR chains and NOT chains do not count as nesting.",
    )
    max_in_values: int = Field(
        100_000, ge=1, description="Most literals in one IN / NOT IN list; more gets 400 predicate_limit."
    )
    max_literal_bytes: int = Field(
        65_536, ge=16, description="Largest single literal (UTF-8 bytes or digits); larger gets 400 predicate_limit."
    )
    max_predicate_tokens: int = Field(
        10_000, ge=16,
        description="Most SQL tokens outside IN lists of literals in a predicate read by the general parser; more "
        "gets 400 predicate_limit after reading only that many. AND/OR chains of `column op literal` and `column "
        "IN (literals)` terms are read without it, whatever their length.",
    )
    parse_cache_bytes: int = Field(
        16 * 1024 * 1024, ge=0,
        description="Byte budget of the predicate caches, counted as the memory each text and its tree hold: half "
        "for parsed texts, half for short texts' trees bound to a table's snapshots; 0 turns both off.",
    )

    @field_validator("allowed_roots", mode="before")
    @classmethod
    def _split_roots(cls, value: object) -> object:
        if isinstance(value, str):
            return [part.strip() for part in value.split(",") if part.strip()]
        return value

    @field_validator("storage_options", mode="before")
    @classmethod
    def _parse_storage_options(cls, value: object) -> object:
        if isinstance(value, str):
            return json.loads(value) if value.strip() else {}
        return value

    @field_validator("token", mode="before")
    @classmethod
    def _empty_token_is_none(cls, value: object) -> object:
        return None if value == "" else value

    def effective_allowed_roots(self) -> list[str]:
        """Allowed roots, defaulting to the warehouse's parent directory (issue: BGIX_ALLOWED_ROOTS)."""
        if self.allowed_roots:
            return list(self.allowed_roots)
        wh = self.warehouse.rstrip("/")
        if "://" in wh:
            scheme, rest = wh.split("://", 1)
            parent = rest.rsplit("/", 1)[0] if "/" in rest else rest
            return [f"{scheme}://{parent}"]
        return [os.path.dirname(os.path.abspath(wh))]
