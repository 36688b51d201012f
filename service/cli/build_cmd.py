"""`bgix build`: register a table (when given a location), run the create_global_index job, print the snapshot.

Runs the job in this process (pyspark is imported only when engine is spark); no fastapi imports.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import uuid
from typing import cast

from index_format.errors import BgixError
from index_format.options import check_families
from index_format.storage import Storage, is_absolute_location
from service.catalog.catalog import Catalog
from service.catalog.catalog_errors import LocationNotFoundError
from service.catalog.model import FORMATS, Table
from service.jobs.jobspec import column_families
from service.tables import open_source, register_table


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--warehouse", required=True, help="catalog root: local directory or s3://bucket/prefix")
    parser.add_argument("--table", required=True, help="table name")
    parser.add_argument("--location", help="register the table at this data location first")
    parser.add_argument("--format", default="parquet", choices=FORMATS, help="data file format (default parquet)")
    parser.add_argument("--partition-columns", default="", help="hive partition columns, e.g. dt,hh")
    parser.add_argument("--row-id-column", help="column holding stable non-negative int64 row ids")
    parser.add_argument("--column", required=True, help="column to index, or a comma list of them (uid,tags)")
    parser.add_argument("--index-type", default="bitmap",
                        help="index family: bitmap, btree or multivalue (ARRAY columns); with several columns one "
                             "family for all, or one per column in order (\"btree,multivalue\")")
    parser.add_argument("--partitions", help="partitions to index: 'dt=2026-06-18,hh=0;dt=2026-06-19,hh=1'")
    parser.add_argument("--options", default="",
                        help="index options 'k=v,k=v' or 'k=v;k=v' (e.g. rebuild=true); a comma not followed by "
                             "k= stays in the value")
    parser.add_argument("--master", default="local[*]", help="Spark master (default local[*])")
    parser.add_argument("--engine", default="spark", choices=("spark", "local"),
                        help="spark (default) or local: in-process with pyarrow, for small tables")
    parser.add_argument("--storage-option", action="append", default=[], metavar="K=V",
                        help="fsspec storage option (repeatable), e.g. client_kwargs.endpoint_url=http://…")
    parser.add_argument("--drop", action="store_true",
                        help="drop_global_index: remove the index on --column and its files, then exit")
    parser.add_argument("--allowed-root", action="append", default=[], help="extra root for data locations")


def _storage_options(pairs: list[str]) -> dict[str, object]:
    out: dict[str, object] = {}
    for pair in pairs:
        key, _, value = pair.partition("=")
        target = out
        *parents, leaf = key.split(".")
        for p in parents:
            target = cast("dict[str, object]", target.setdefault(p, {}))   # parents are the dicts this loop makes
        target[leaf] = value
    return out


def run(args: argparse.Namespace) -> int:
    from service.build_job.main import parse_spec, run_job  # after argument parsing: keeps `--help` light

    options = _storage_options(args.storage_option)
    if args.location and not is_absolute_location(args.location):
        # a path typed in a shell means "from here"; the catalog itself accepts only absolute locations
        args.location = os.path.abspath(args.location)
    roots = list(args.allowed_root)
    if args.location and args.location not in roots:
        roots.append(args.location)
    try:
        if not args.drop:   # as the service refuses them, and before anything is registered
            check_families(args.options or None, column_families(args.column, args.index_type).values())
        catalog = Catalog(Storage(args.warehouse, roots, options))
        if args.location:
            parts = [c.strip() for c in args.partition_columns.split(",") if c.strip()]
            try:
                register_table(catalog, Table(args.table, args.location, args.format, parts, args.row_id_column))
            except LocationNotFoundError:   # a mistyped location: the service's rule, the CLI's usage error
                print(f"error: --location {args.location} does not exist; nothing was registered", file=sys.stderr)
                return 2
        table = catalog.get_table(args.table)
        if args.drop:
            open_source(catalog, table).drop_index(args.column)
            print(json.dumps({"dropped": f"{table.name}.{args.column}"}))
            return 0
        if table.location not in roots:
            roots.append(table.location)
        spec = parse_spec({
            "job_id": f"cli-{uuid.uuid4().hex[:12]}", "warehouse": args.warehouse, "storage_options": options,
            "allowed_roots": roots, "table": args.table, "index_column": args.column,
            "index_type": args.index_type, "partitions": args.partitions, "options": args.options or None,
            "spark_master": args.master, "engine": args.engine,
        })
        snap = run_job(spec)
    except (BgixError, OSError, ModuleNotFoundError) as exc:   # the last: Spark builds without the spark extra
        print(f"error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(snap.summary() if snap else {"snapshot_id": None, "message": "nothing to index"}, indent=1))
    return 0
