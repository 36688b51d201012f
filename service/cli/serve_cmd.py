"""`bgix serve`: run the HTTP service with uvicorn; configuration comes from BGIX_* environment variables.

`--workers N` (default: the machine's cores) runs N uvicorn worker processes on one port, each on its own
SO_REUSEPORT socket (service.cli.serve_workers); they share a private group directory
(service.server.worker_group) through which exactly one of them runs the build jobs.
`--workers 1` is the single process of before (no group). Imports uvicorn and the app factory only when
run; never pyspark.
"""
from __future__ import annotations

import argparse
import logging
import os
import sys

log = logging.getLogger("bgix.serve")


def _workers(value: str) -> int:
    n = int(value)
    if n < 1:
        raise argparse.ArgumentTypeError("--workers must be at least 1")
    return n


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default="127.0.0.1", help="bind address (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="TCP port (default 8000)")
    parser.add_argument("--workers", type=_workers, default=os.cpu_count() or 1,
                        help="worker processes answering requests on the same port (default: the machine's "
                             "cores; 1 runs a single process)")
    parser.add_argument("--log-level", default="info",
                        choices=["critical", "error", "warning", "info", "debug"])
    parser.add_argument("--no-access-log", action="store_true", help="disable per-request access logs")


def warehouse_notes(warehouse: str, from_env: bool) -> list[tuple[int, str]]:
    """Start-up lines (log level, text) naming the warehouse served, with a warning when it is likely not the
    one meant: a relative default (the ./warehouse of whatever directory the command ran in), or a local
    directory that does not exist or holds no table."""
    from index_format.storage import Storage, is_absolute_location
    from service.catalog.catalog import Catalog

    if "://" in warehouse:
        return [(logging.INFO, f"warehouse {warehouse}")]
    full = os.path.abspath(warehouse)
    origin = "BGIX_WAREHOUSE" if from_env else "the default, BGIX_WAREHOUSE being unset"
    lines = [(logging.INFO, f"warehouse {full}"
              + ("" if is_absolute_location(warehouse) else f" ({warehouse!r}, {origin}, in the current directory)"))]
    if not from_env:
        lines.append((logging.WARNING, f"BGIX_WAREHOUSE is not set: serving ./warehouse of {os.getcwd()}; "
                      "set BGIX_WAREHOUSE=/path/to/warehouse to serve another"))
    if not os.path.isdir(full):
        lines.append((logging.WARNING, f"warehouse directory {full} does not exist: no tables to serve "
                      "until one is registered"))
    else:
        try:
            count = len(Catalog(Storage(full)).list_tables())
        except Exception:   # an unreadable warehouse is the service's to report; this is only a hint
            count = -1
        if count == 0:   # a warning where it was likely not meant; a chosen, new warehouse is only noted
            lines.append((logging.INFO if from_env else logging.WARNING, f"warehouse {full} has no tables"))
    return lines


def run(args: argparse.Namespace) -> int:
    import uvicorn

    from service.server.settings import Settings

    try:
        settings = Settings()  # fail here on a bad BGIX_* value (the app and every worker read them again)
    except ValueError as exc:   # pydantic's ValidationError: names the setting, the value and what it must be
        print(f"bgix serve: bad BGIX_* setting: {exc}", file=sys.stderr)
        return 2
    from service.observability.log_format import configure_logging

    # start-up lines go through logging: in BGIX_LOG_FORMAT=json every line of the service is JSON, these too
    configure_logging(settings.log_format, logging.getLevelName(args.log_level.upper()))
    from_env = any(k.upper() == "BGIX_WAREHOUSE" for k in os.environ)
    for level, line in warehouse_notes(settings.warehouse, from_env):
        log.log(level, line)
    from service.cli.slow_clients import fitted_limits, install

    client_limits = fitted_limits(settings.header_timeout_s, settings.body_timeout_s, settings.max_connections,
                                  settings.max_open_files)
    if args.workers == 1:
        from service.api.app import create_app

        from service.server.gc_tuning import tune_for_serving

        app = create_app()  # Settings() reads BGIX_* once, here
        tune_for_serving()
        uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level,
                    access_log=not args.no_access_log,
                    timeout_keep_alive=settings.keep_alive_s,  # type: ignore[arg-type]  # seconds for call_later: a float works
                    http=install(client_limits))
        return 0

    from service.server.worker_group import ENV_VAR, WorkerGroup
    from service.cli.serve_workers import supervise

    group = WorkerGroup.create()
    os.environ[ENV_VAR] = str(group.path)  # the workers (spawned processes) inherit it
    try:
        supervise(args.host, args.port, args.workers,
                  {"log_level": args.log_level, "access_log": not args.no_access_log,
                   "timeout_keep_alive": settings.keep_alive_s}, client_limits)
    finally:
        os.environ.pop(ENV_VAR, None)
        if not group.remove():
            log.warning("kept %s: a build still runs from a spec file in it", group.path)
    return 0
