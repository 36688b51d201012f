"""How the suite is spread over pytest-xdist workers (docs/testing.md): which tests share a worker, and in
what order the work is handed out. Loaded by tests/conftest.py as a plugin.

`--dist loadgroup` keeps tests with one `xdist_group` name on one worker. xdist 3.8 passes the group to the
controller by renaming the test (`nodeid@group`), which pytest 9.2 no longer allows (pytest-xdist#1386: the
groups are silently ignored), so each worker writes its groups to a file and the controller's scheduler
reads them from there.
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
from xdist.scheduler import LoadGroupScheduling

# Session fixtures too costly to start on every worker: every module that uses one runs on the same
# worker, which starts it once. The longer group first.
SHARED_SESSION_FIXTURES = {"spark": "spark", "service": "browser"}  # service: the browser tests' `bgix serve`
GROUP_ORDER = ["spark", "browser"]
# Modules with a test carrying one of these marks are handed out early, so the longest work does not
# start last and finish alone.
EXPENSIVE_MARKS = ("slow", "spark", "browser")
# Within each of those ranks, the layers whose tests start processes (JVMs, servers) go first.
HEAVY_LAYERS = ("tests/e2e/", "tests/browser/", "tests/api/")
_GROUPS_DIR = pytest.StashKey[Path]()


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Give tests that share something an xdist group: a test asking for one of SHARED_SESSION_FIXTURES joins
    the group of that name; a test asking for a module- or class-scoped fixture joins its module's group (the
    fixture is built once, and the module's tests run in file order on one worker) — or the module's shared
    group when it has one. Then put the modules holding shared groups first (GROUP_ORDER), other modules
    with EXPENSIVE_MARKS next and the rest last, each rank in HEAVY_LAYERS order, keeping each module's tests
    together (a module fixture is torn down when the next test comes from another module)."""
    modules: dict[str, list[pytest.Item]] = {}
    for item in items:
        modules.setdefault(_module(item), []).append(item)
    rank: dict[str, tuple[int, int]] = {}
    for path, members in modules.items():
        requested = {item.nodeid: _requested_fixtures(item) for item in members}
        own = {nodeid: _shared_group(fixtures) for nodeid, fixtures in requested.items()}
        shared = sorted({group for group in own.values() if group is not None}, key=GROUP_ORDER.index)
        for item in members:
            fixtures = requested[item.nodeid]
            scoped = any(scope in ("module", "class", "package") for scope in fixtures.values())
            group = own[item.nodeid]
            if group is None and scoped:
                group = shared[0] if shared else path
            if group is not None and item.get_closest_marker("xdist_group") is None:
                item.add_marker(pytest.mark.xdist_group(group))
        expensive = any(item.get_closest_marker(mark) for item in members for mark in EXPENSIVE_MARKS)
        layer = next((i for i, top in enumerate(HEAVY_LAYERS) if path.startswith(top)), len(HEAVY_LAYERS))
        rank[path] = (0, GROUP_ORDER.index(shared[0])) if shared else (1, layer) if expensive else (2, layer)
    items.sort(key=lambda item: rank[_module(item)])  # stable: the order within a rank stays


def _shared_group(fixtures: dict[str, str]) -> str | None:
    groups = [SHARED_SESSION_FIXTURES[name] for name, scope in fixtures.items()
              if scope == "session" and name in SHARED_SESSION_FIXTURES]
    return min(groups, key=GROUP_ORDER.index) if groups else None


def _module(item: pytest.Item) -> str:
    return item.nodeid.split("::")[0]


def _requested_fixtures(item: pytest.Item) -> dict[str, str]:
    """Name → scope of the fixtures a test asks for, directly or through other fixtures (autouse ones
    only when asked for: those are set up wherever the test runs anyway)."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return {}
    out: dict[str, str] = {}
    stack = list(info.argnames) + [name for mark in item.iter_markers("usefixtures") for name in mark.args]
    while stack:
        name = stack.pop()
        defs = info.name2fixturedefs.get(name)
        if name in out or not defs:
            continue
        out[name] = defs[-1].scope
        stack.extend(defs[-1].argnames)
    return out


# ---------------------------------------------------------------- the groups' way to the controller

def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("dist", "no") == "loadgroup" and not hasattr(config, "workerinput"):
        config.stash[_GROUPS_DIR] = Path(tempfile.mkdtemp(prefix="bgix-xdist-groups-"))


def pytest_unconfigure(config: pytest.Config) -> None:
    if _GROUPS_DIR in config.stash:
        shutil.rmtree(config.stash[_GROUPS_DIR], ignore_errors=True)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    if _GROUPS_DIR in node.config.stash:
        node.workerinput["bgix_groups_dir"] = str(node.config.stash[_GROUPS_DIR])


@pytest.hookimpl(tryfirst=True)  # written before the worker reports its collection, so before scheduling
def pytest_collection_finish(session: pytest.Session) -> None:
    """On a worker: write {test id: group} for every grouped test (the ids the controller will see)."""
    where = getattr(session.config, "workerinput", {}).get("bgix_groups_dir")
    if where is None:
        return
    groups = {item.nodeid: "_".join(sorted({str(m.args[0] if m.args else m.kwargs.get("name", "default"))
                                             for m in item.iter_markers("xdist_group")}))
              for item in session.items if item.get_closest_marker("xdist_group") is not None}
    worker = session.config.workerinput["workerid"]
    tmp = Path(where) / f"{worker}.tmp"
    tmp.write_text(json.dumps(groups))
    os.replace(tmp, Path(where) / f"{worker}.json")  # the controller never sees half a file


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    if _GROUPS_DIR in config.stash:
        return _FileGroupScheduling(config, log, config.stash[_GROUPS_DIR])
    return None


class _FileGroupScheduling(LoadGroupScheduling):
    """loadgroup with the groups read from the workers' files (every worker collects the same tests, and
    scheduling starts only once all of them have finished collecting)."""

    def __init__(self, config: pytest.Config, log: Any, where: Path) -> None:
        super().__init__(config, log)
        self._where = where
        self._groups: dict[str, str] | None = None

    def _split_scope(self, nodeid: str) -> str:
        if self._groups is None:
            files = sorted(self._where.glob("*.json"))
            self._groups = json.loads(files[0].read_text()) if files else {}
        group = self._groups.get(nodeid)
        return group if group is not None else super()._split_scope(nodeid)
