"""`bgix serve`: run the HTTP service with uvicorn; configuration comes from BGIX_* environment variables.

`--workers N` (default: the machine's cores) runs N uvicorn worker processes on one port, each on its own
SO_REUSEPORT socket (service.cli.serve_workers); they share a private group directory
(service.api.worker_group) through which exactly one of them runs the build jobs.
`--workers 1` is the single process of before (no group). Imports uvicorn and the app factory only when
run; never pyspark.
"""
from __future__ import annotations

import argparse
import logging
import os

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


def run(args: argparse.Namespace) -> int:
    import uvicorn

    from service.api.settings import Settings

    if args.workers == 1:
        from service.api.app import create_app

        from service.api.gc_tuning import tune_for_serving

        app = create_app()  # Settings() reads BGIX_* once, here
        tune_for_serving()
        uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level,
                    access_log=not args.no_access_log)
        return 0

    from service.api.worker_group import ENV_VAR, WorkerGroup
    from service.cli.serve_workers import supervise

    Settings()  # fail here on a bad BGIX_* value, not in every worker (each worker reads them again)
    group = WorkerGroup.create()
    os.environ[ENV_VAR] = str(group.path)  # the workers (spawned processes) inherit it
    try:
        supervise(args.host, args.port, args.workers,
                  {"log_level": args.log_level, "access_log": not args.no_access_log})
    finally:
        os.environ.pop(ENV_VAR, None)
        if not group.remove():
            log.warning("kept %s: a build still runs from a spec file in it", group.path)
    return 0
