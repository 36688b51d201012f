"""How a build's plan tasks are dealt into one Spark task per slot (engines.deal): every task exactly once, at most
one share per slot, and the heaviest share no heavier than the best split found by trying every assignment."""
from __future__ import annotations

import itertools
import random

import pytest

from service.build_job.engines import deal


def _best_max(rows: list[int], slots: int) -> int:
    best = sum(rows)
    for assignment in itertools.product(range(slots), repeat=len(rows)):
        loads = [0] * slots
        for r, k in zip(rows, assignment, strict=True):
            loads[k] += r
        best = min(best, max(loads))
    return best


@pytest.mark.parametrize("seed", range(20))
def test_every_task_once_and_shares_near_the_best_split(seed: int) -> None:
    rng = random.Random(seed)
    rows = [rng.choice((1, 10, 100, 1000)) * rng.randint(1, 9) for _ in range(rng.randint(1, 8))]
    slots = rng.randint(1, 4)
    shares = deal(rows, slots)
    assert sorted(t for s in shares for t in s) == list(range(len(rows)))
    assert 1 <= len(shares) <= min(slots, len(rows)) and all(shares)
    heaviest = max(sum(rows[t] for t in s) for s in shares)
    assert heaviest <= _best_max(rows, slots) * 4 / 3   # the greedy rule's bound (Graham), tight enough here
    for s in shares:   # biggest first within a share: the last to finish is a small one
        assert [rows[t] for t in s] == sorted((rows[t] for t in s), reverse=True)


def test_sixteen_equal_tasks_on_two_slots_are_two_shares_of_eight() -> None:
    assert sorted(len(s) for s in deal([62_500] * 16, 2)) == [8, 8]
