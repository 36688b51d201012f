"""The `bgix` command: one entry point, one module per sub-command (file, build, serve, demo)."""
from __future__ import annotations

import argparse
import gc
import importlib
import os
import sys

# Sub-command modules are imported lazily so `bgix file` never loads fastapi or pyspark.
_COMMANDS = {
    "file": ("service.cli.file_cmd", "inspect and build single index files"),
    "build": ("service.cli.build_cmd", "run create_global_index as a Spark job"),
    "serve": ("service.cli.serve_cmd", "run the HTTP service (uvicorn)"),
    "demo": ("service.cli.demo_cmd", "sample data -> Spark build -> service -> example queries"),
}


# Commands that run briefly in their own process (see main)
_SHORT_LIVED = frozenset({"file"})


def main(argv: list[str] | None = None) -> int:
    """Run one `bgix` command; argv None: this process is the command (sys.argv), not a caller's function call."""
    program = argv is None
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(prog="bgix", description="Paimon bitmap global index service")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (_, help_text) in _COMMANDS.items():
        sub.add_parser(name, help=help_text, add_help=False)
    if not argv or argv[0] not in _COMMANDS:
        args = parser.parse_args(argv)
        parser.print_help()
        return 2
    short = program and argv[0] in _SHORT_LIVED
    if short:
        # numpy's OpenBLAS starts a worker thread per core that spins for a while after numpy's import, taking
        # a core from a command that never multiplies a matrix; unless the user chose a count, it gets none
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
        # no cyclic garbage collection in a one-command process: numpy's and pyarrow's imports alone would
        # trigger passes over their 100k+ new objects (15-20 ms), and the command makes little cyclic garbage
        gc.disable()
    module = importlib.import_module(_COMMANDS[argv[0]][0])
    sub_parser = argparse.ArgumentParser(prog=f"bgix {argv[0]}", description=_COMMANDS[argv[0]][1])
    module.configure(sub_parser)
    args = sub_parser.parse_args(argv[1:])
    try:
        return int(module.run(args) or 0)
    finally:
        if short:
            # the process ends next: Python's collection at exit (disabled or not) would walk every object
            # numpy and pyarrow made (15-20 ms); frozen objects are skipped, and the OS frees the memory anyway
            gc.freeze()


if __name__ == "__main__":
    raise SystemExit(main())
