"""The build runner's warm-up build runs only where the runner's executors can read its temporary table."""
from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest

from service.build_job import warm_up


@pytest.mark.parametrize(("master", "builds"), [("local[2]", 1), ("local", 1), ("spark://spark-master:7077", 0)])
def test_warm_up_build_only_on_a_local_master(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, master: str,
                                              builds: int) -> None:
    # A cluster's executors run on other hosts (docker/compose.yaml: spark-worker) and cannot read the runner's
    # temporary directory: every task of a warm-up build there failed, logged as executor errors at each start.
    ran: list[Any] = []
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))   # its tiny table, where this test may read
    monkeypatch.setattr(warm_up, "run_job", lambda spec, spark: ran.append(spec))
    warm_up.warm_up_build(object(), master)  # type: ignore[arg-type]  # run_job is replaced: no session used
    assert len(ran) == builds
    assert all(spec.spark_master == master and spec.engine == "spark" for spec in ran)
