"""Shared test configuration: where the reference vectors live (inside the repo), Spark environment,
Hypothesis profiles (docs/testing.md)."""
from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, is_hypothesis_test, settings

from tests.data import GLOBAL_INDEX
from tests.self_contained import OUTSIDE_READS

REPO = Path(__file__).resolve().parents[1]
pytest_plugins = ["tests.scheduling"]  # how the tests are spread over parallel workers

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
# Apps and servers in tests start their build runner on the first build, not with the app (a JVM per app
# would load CI's two cores); tests of the warm start set BGIX_BUILD_PREWARM=true themselves.
os.environ.setdefault("BGIX_BUILD_PREWARM", "false")

# Hypothesis profiles, chosen by BGIX_HYPOTHESIS_PROFILE. `ci` (the default, so CI=true and a bare clone
# run the same cases): derandomized, each test's examples follow from the test itself, no example database.
# `dev`: fresh random examples each run, failures kept in .hypothesis/ and replayed first. `nightly`: fresh
# random examples, NIGHTLY_FACTOR times as many per test. `quick` (what `scripts/test.sh --quick` picks unless a
# profile is named): `ci`'s fixed examples, a QUICK_DIVISOR-th as many per test (at least QUICK_MIN), for the inner
# loop only; the full suite and CI keep each test's own count. No deadline anywhere and no timing health check:
# on a shared machine with parallel workers, wall-clock limits would make the result depend on the load.
NIGHTLY_FACTOR = 10
QUICK_DIVISOR = 4
QUICK_MIN = 10
_TIMING = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow]}
settings.register_profile("ci", derandomize=True, database=None, print_blob=True, **_TIMING)
settings.register_profile("quick", derandomize=True, database=None, print_blob=True, **_TIMING)
settings.register_profile("dev", **_TIMING)
settings.register_profile("nightly", database=None, print_blob=True, **_TIMING)
HYPOTHESIS_PROFILE = os.environ.get("BGIX_HYPOTHESIS_PROFILE", "ci")
settings.load_profile(HYPOTHESIS_PROFILE)
if HYPOTHESIS_PROFILE == "nightly":
    # The corrupt-file fuzzer draws inside each test, with its own knobs (tests/property/test_corrupt_files.py).
    os.environ.setdefault("BGIX_FUZZ_EXAMPLES", str(30 * NIGHTLY_FACTOR))
    os.environ.setdefault("BGIX_FUZZ_RANDOM", "1")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if HYPOTHESIS_PROFILE == "nightly":
        _scale_hypothesis(items, lambda n: n * NIGHTLY_FACTOR)
    elif HYPOTHESIS_PROFILE == "quick":
        _scale_hypothesis(items, lambda n: min(n, max(QUICK_MIN, n // QUICK_DIVISOR)))


def _scale_hypothesis(items: list[pytest.Item], scale: Callable[[int], int]) -> None:
    """Every @given test runs `scale(its own max_examples)` examples: NIGHTLY_FACTOR times as many under
    `nightly`, a QUICK_DIVISOR-th under `quick` (a profile alone cannot change a count a test's @settings
    names)."""
    done: set[int] = set()
    for item in items:
        obj = getattr(item, "obj", None)
        test = getattr(obj, "__func__", obj)
        if test is None or not is_hypothesis_test(test) or id(test) in done:
            continue
        done.add(id(test))
        own = test._hypothesis_internal_use_settings  # set by @given / @settings on every Hypothesis test
        test._hypothesis_internal_use_settings = settings(own, max_examples=scale(own.max_examples))


@pytest.fixture(scope="session")
def vectors_dir() -> Path:
    assert GLOBAL_INDEX.is_dir(), f"reference vectors not found at {GLOBAL_INDEX}"
    return GLOBAL_INDEX


@pytest.fixture(autouse=True)
def _reads_stay_in_repo() -> object:
    """Fail any test (or its fixtures) that read beside the repository: a clone has nothing there."""
    OUTSIDE_READS.take()
    yield
    seen = OUTSIDE_READS.take()
    assert not seen, f"test read outside the repository (a fresh clone lacks these): {sorted(set(seen))[:5]}"


# BGIX_TEST_TIMELINE=<file>: each test's worker, start and end (epoch seconds) and id, one line each, appended by
# every xdist worker: where a run's wall time goes (which worker ends last, and with what), docs/testing.md.
_TIMELINE = os.environ.get("BGIX_TEST_TIMELINE")
_STARTED: dict[str, float] = {}
_RECORDS = [True]   # False in xdist's controller, which is told of every worker's tests as well


def pytest_configure(config: pytest.Config) -> None:
    # a worker has `workerinput`; the controller of a parallel run has workers to start (`-n`), and does not
    _RECORDS[0] = hasattr(config, "workerinput") or not getattr(config.option, "numprocesses", None)


def pytest_runtest_logstart(nodeid: str, location: object) -> None:
    if _TIMELINE and _RECORDS[0]:
        import time
        _STARTED[nodeid] = time.time()


def pytest_runtest_logfinish(nodeid: str, location: object) -> None:
    if _TIMELINE and _RECORDS[0]:
        import time
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        with open(_TIMELINE, "a", encoding="utf-8") as fh:
            fh.write(f"{worker}\t{_STARTED.pop(nodeid, time.time()):.3f}\t{time.time():.3f}\t{nodeid}\n")
