"""index_format.parallel.map_parts: results in part order, every part run once, a part's exception raised to the
caller after every part has finished, and workers again in a forked child. Ground truth: plain Python maps."""
from __future__ import annotations

import os
import sys
import threading
import time

import pytest

from index_format import parallel
from index_format.parallel import map_parts


def test_results_in_order_and_parts_off_the_calling_thread() -> None:
    seen: list[tuple[int, str]] = []

    def work(x: int) -> int:
        seen.append((x, threading.current_thread().name))
        time.sleep(0.01 * (5 - x))   # later parts finish first
        return x * x

    assert map_parts(work, list(range(6))) == [x * x for x in range(6)]
    assert sorted(x for x, _ in seen) == list(range(6))
    assert dict(seen)[0] == threading.current_thread().name
    assert map_parts(work, []) == [] and map_parts(work, [3]) == [9]


def test_a_failing_part_is_raised_after_all_parts_end() -> None:
    finished: list[int] = []

    def work(x: int) -> int:
        if x in (2, 4):
            raise ValueError(f"part {x}")
        time.sleep(0.02)
        finished.append(x)
        return x

    with pytest.raises(ValueError, match="part 2"):
        map_parts(work, list(range(6)))
    assert sorted(finished) == [0, 1, 3, 5]
    assert map_parts(lambda x: x + 1, [1, 2, 3]) == [2, 3, 4]   # the workers survived


@pytest.mark.skipif(not hasattr(os, "fork") or sys.platform == "darwin", reason="fork")
def test_a_forked_child_starts_its_own_workers() -> None:
    assert map_parts(lambda x: -x, [1, 2, 3]) == [-1, -2, -3]   # workers running in this process
    assert parallel.THREADS >= 1
    pid = os.fork()
    if pid == 0:   # pragma: no cover - the child reports through its exit code
        ok = map_parts(lambda x: x * 10, [1, 2, 3, 4]) == [10, 20, 30, 40]
        os._exit(0 if ok else 1)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            assert os.waitstatus_to_exitcode(status) == 0
            return
        time.sleep(0.05)
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    pytest.fail("the forked child's map_parts never returned")
