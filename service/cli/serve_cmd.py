"""`bgix serve`: run the HTTP service with uvicorn; configuration comes from BGIX_* environment variables.

Imports uvicorn and the app factory only when run; never pyspark.
"""
from __future__ import annotations

import argparse


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default="127.0.0.1", help="bind address (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="TCP port (default 8000)")
    parser.add_argument("--log-level", default="info",
                        choices=["critical", "error", "warning", "info", "debug"])
    parser.add_argument("--no-access-log", action="store_true", help="disable per-request access logs")


def run(args: argparse.Namespace) -> int:
    import uvicorn

    from service.api.app import create_app

    app = create_app()  # Settings() reads BGIX_* once, here
    uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level,
                access_log=not args.no_access_log)
    return 0
