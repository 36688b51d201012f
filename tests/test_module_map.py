"""The layout cannot drift: docs/contracts.md's module map names every package and module of `index_format/`
and `service/` (none missing, none invented), and no module file name is used twice. (The import graph's
circles are tests/test_import_graph.py's.)"""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONTRACTS = ROOT / "docs" / "contracts.md"
PACKAGES = ("index_format", "service")
_ENTRY = re.compile(r"^\s*- `((?:index_format|service)/(?:[\w/]*?(?:\.py|/))?)`")


def _map_entries() -> list[str]:
    text = CONTRACTS.read_text(encoding="utf-8")
    section = text.split("## Module map", 1)[1].split("\n## ", 1)[0]
    return [m.group(1) for line in section.splitlines() if (m := _ENTRY.match(line))]


def _tree() -> set[str]:
    found: set[str] = set()
    for top in PACKAGES:
        for init in (ROOT / top).rglob("__init__.py"):
            pkg = init.parent
            found.add(pkg.relative_to(ROOT).as_posix() + "/")
            found.update(m.relative_to(ROOT).as_posix() for m in pkg.glob("*.py") if m.name != "__init__.py")
    return found


def test_module_map_lists_every_package_and_module_once() -> None:
    entries = _map_entries()
    assert len(entries) > 100, "docs/contracts.md has no '## Module map' section of `path` entries"
    assert sorted(e for e in set(entries) if entries.count(e) > 1) == [], "listed twice"
    tree = _tree()
    assert sorted(tree - set(entries)) == [], "in the tree but missing from the module map"
    assert sorted(set(entries) - tree) == [], "in the module map but not in the tree"


def test_no_module_file_name_is_used_twice() -> None:
    """Twin names make a reader guess which one a traceback or an import means."""
    names: dict[str, list[str]] = {}
    for path in _tree():
        if path.endswith(".py"):
            names.setdefault(path.rsplit("/", 1)[1], []).append(path)
    assert {n: sorted(p) for n, p in names.items() if len(p) > 1} == {}
