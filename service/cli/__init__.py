"""The `bgix` command: one entry point, one module per sub-command (file, build, serve, demo)."""
from __future__ import annotations

import argparse
import importlib
import sys

# Sub-command modules are imported lazily so `bgix file` never loads fastapi or pyspark.
_COMMANDS = {
    "file": ("service.cli.file_cmd", "inspect and build single index files"),
    "build": ("service.cli.build_cmd", "run create_global_index as a Spark job"),
    "serve": ("service.cli.serve_cmd", "run the HTTP service (uvicorn)"),
    "demo": ("service.cli.demo_cmd", "sample data -> Spark build -> service -> example queries"),
}


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(prog="bgix", description="Paimon bitmap global index service")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (_, help_text) in _COMMANDS.items():
        sub.add_parser(name, help=help_text, add_help=False)
    if not argv or argv[0] not in _COMMANDS:
        args = parser.parse_args(argv)
        parser.print_help()
        return 2
    module = importlib.import_module(_COMMANDS[argv[0]][0])
    sub_parser = argparse.ArgumentParser(prog=f"bgix {argv[0]}", description=_COMMANDS[argv[0]][1])
    module.configure(sub_parser)
    args = sub_parser.parse_args(argv[1:])
    return int(module.run(args) or 0)


if __name__ == "__main__":
    raise SystemExit(main())
