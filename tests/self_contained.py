"""Guard: no test or fixture may read beside the repository (a fresh clone has nothing there).

An audit hook sees every `open`, `os.listdir` and `os.scandir` in the test process and records paths that
lie under the repository's parent folder but outside the repository; conftest fails the test that did it.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

_EVENTS = {"open", "os.listdir", "os.scandir"}
_WRITES = os.O_WRONLY | os.O_CREAT | os.O_APPEND
# temp folders the run makes (pytest's, tempfile's, the service's and tests' own): beside a clone that lies in the
# temp folder, and possibly gone by the time a late read of them is seen
_TEMP_PREFIXES = ("pytest-of-", "tmp", "bgix-")


class OutsideReads:
    """Collects paths read outside `repo` but under its parent (e.g. a shared folder next to a checkout)."""

    def __init__(self, repo: Path) -> None:
        self.repo = str(repo.resolve())
        self.parent = str(repo.resolve().parent)
        # What stood beside the repository before the tests ran. A clone directly in the temp folder (/tmp) has the
        # tests' own temp folders beside it (pytest's, and those made during the run): reading them is no read
        # "beside" the repository.
        try:
            self.siblings = set(os.listdir(self.parent))
        except OSError:
            self.siblings = set()
        self.seen: list[str] = []
        self.active = True

    def install(self) -> OutsideReads:
        sys.addaudithook(self._hook)  # hooks cannot be removed; `active` turns this one off
        return self

    def _hook(self, event: str, args: tuple[object, ...]) -> None:
        if not self.active or event not in _EVENTS or not args:
            return
        target = args[0]
        if not isinstance(target, (str, bytes, os.PathLike)):
            return  # a file descriptor
        if event == "open" and len(args) > 2 and isinstance(args[2], int) and args[2] & _WRITES:
            return  # writing (a screenshot, a temp file) is no read of what a clone lacks
        path = os.fsdecode(target)
        if not os.path.isabs(path):
            path = os.path.join(os.getcwd(), path)
        path = os.path.normpath(path)
        inside_parent = path == self.parent or path.startswith(self.parent + os.sep)
        inside_repo = path == self.repo or path.startswith(self.repo + os.sep)
        if inside_parent and not inside_repo:
            sibling = path[len(self.parent) + 1:].split(os.sep, 1)[0]
            made_by_tests = sibling.startswith(_TEMP_PREFIXES) or (
                sibling not in self.siblings and os.path.exists(os.path.join(self.parent, sibling)))
            if not made_by_tests:
                self.seen.append(path)

    def take(self) -> list[str]:
        seen, self.seen = self.seen, []
        return seen


# One guard per process: conftest may be imported under two module names, this module only under one.
OUTSIDE_READS = OutsideReads(Path(__file__).resolve().parents[1]).install()
