"""Peak resident memory of a process and all its descendants, sampled from /proc in a background thread.

    from _tree_rss import TreeRss   # bench/ is on sys.path when a bench script runs

    with TreeRss(root=server.pid) as mem:   # root: this process when not given
        ...
    print(mem.peak / 2**20, "MiB")

The figure is the sum of the tree's RSS at the sampled instant with the highest sum: pages that processes share
(a forked worker's copy-on-write pages, shared libraries) count once per process, so it overstates real use a
little; a spike shorter than the interval can be missed.
"""
from __future__ import annotations

import os
import threading


def tree_pids(root: int) -> set[int]:
    """`root` and every process descending from it, from /proc/<pid>/stat's parent ids."""
    parents: dict[int, int] = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as fh:
                    parents[int(d)] = int(fh.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
    children: dict[int, list[int]] = {}
    for child, parent in parents.items():
        children.setdefault(parent, []).append(child)
    tree, frontier = {root}, [root]
    while frontier:
        for c in children.get(frontier.pop(), ()):
            if c not in tree:
                tree.add(c)
                frontier.append(c)
    return tree


def tree_rss(root: int, descendants: bool = True) -> int:
    """Bytes resident now in `root`'s process tree, or in `root` alone (0 once it is gone)."""
    page = os.sysconf("SC_PAGE_SIZE")
    total = 0
    for p in tree_pids(root) if descendants else (root,):
        try:
            with open(f"/proc/{p}/statm") as fh:
                total += int(fh.read().split()[1]) * page
        except (OSError, ValueError, IndexError):
            continue
    return total


def tree_cpu(root: int) -> float:
    """CPU seconds (user + system) `root`'s process tree has used so far, children it reaped included; a process
    that exits takes its share along unless its parent in the tree reaped it."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for p in tree_pids(root):
        try:
            with open(f"/proc/{p}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
            total += sum(int(f) for f in fields[11:15])   # utime, stime, cutime, cstime (proc(5) fields 14–17)
        except (OSError, ValueError, IndexError):
            continue
    return total / tick


class TreeRss:
    """Peak of tree_rss(root, descendants) over the `with` block, sampled every `interval` seconds (`peak`, bytes)."""

    def __init__(self, root: int | None = None, interval: float = 0.25, descendants: bool = True) -> None:
        self.root = os.getpid() if root is None else root
        self.descendants = descendants
        self.interval = interval
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.peak = max(self.peak, tree_rss(self.root, self.descendants))

    def __enter__(self) -> TreeRss:
        self.peak = tree_rss(self.root, self.descendants)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self.peak = max(self.peak, tree_rss(self.root, self.descendants))
