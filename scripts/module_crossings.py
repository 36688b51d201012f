"""Which of bgix's own modules one warm query and one Paimon build run code in (issue 35's before/after).

Writes a small Paimon table with pypaimon, builds a bitmap index on it in process (`bgix build --engine local`),
then serves it with the app in process and queries it twice; the second (warm) query and the build are traced
with sys.setprofile on every thread. Prints the modules each crossed, by package.

    .venv/bin/python scripts/module_crossings.py
"""
from __future__ import annotations

import os
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
os.environ.setdefault("BGIX_BUILD_PREWARM", "false")
sys.path.insert(0, str(ROOT))
_seen: set[str] = set()
_on = False


def _profile(frame: FrameType, event: str, arg: Any) -> None:
    if _on and event == "call":
        name = frame.f_code.co_filename
        if name.startswith(str(ROOT)) and not any(p in name for p in ("/tests/", "/.venv/", "/scripts/")):
            _seen.add(os.path.relpath(name, ROOT))


@contextmanager
def traced() -> Iterator[set[str]]:
    global _on
    _seen.clear()
    _on = True
    found: set[str] = set()
    try:
        yield found
    finally:
        _on = False
        found.update(_seen)


def show(title: str, files: set[str]) -> None:
    print(f"{title}: {len(files)} modules")
    by_pkg: dict[str, list[str]] = {}
    for f in sorted(files):
        by_pkg.setdefault(os.path.dirname(f), []).append(os.path.basename(f))
    for pkg, mods in sorted(by_pkg.items()):
        print(f"  {pkg}/ ({len(mods)}): {' '.join(mods)}")


def main() -> int:
    sys.setprofile(_profile)
    threading.setprofile(_profile)
    from fastapi.testclient import TestClient

    from service.cli import main as bgix
    from service.tables.paimon.paimon_writes import write_warm_up_table
    try:
        from service.server.settings import Settings
    except ImportError:   # before issue 35
        from service.server.settings import Settings  # type: ignore[no-redef]
    from service.api.app import create_app

    with tempfile.TemporaryDirectory() as tmp:
        loc = write_warm_up_table(Path(tmp) / "paimon")
        wh = str(Path(tmp) / "wh")
        args = ["build", "--warehouse", wh, "--table", "t", "--location", loc, "--format", "paimon",
                "--column", "s", "--engine", "local", "--allowed-root", tmp]
        with traced() as build:
            assert bgix(args) == 0
        app = create_app(Settings(warehouse=wh, allowed_roots=[tmp]))
        with TestClient(app) as client:
            body = {"where": "s = 'v3' OR s LIKE 'v1%'", "result": "row_ids"}
            first = client.post("/v1/tables/t/query", json=body)
            assert first.status_code == 200, first.text
            with traced() as query:
                again = client.post("/v1/tables/t/query", json=body)
            assert again.json()["row_ids"] == first.json()["row_ids"]
    show("a warm query", query)
    show("a Paimon build (bgix build --engine local)", build)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
