"""A build runner's warm-up: one real build of a tiny Paimon table in a temporary directory, run on the runner's
own session before its first real build, so that build finds pypaimon's planning and commit code loaded and its
Python workers past their first read and write (about 0.8 s of a 6M-row build's first run, measured).
"""
from __future__ import annotations

import logging
import shutil
import tempfile
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

from index_format.storage import Storage
from service.build_job.engines import local_cores
from service.build_job.main import run_job
from service.catalog.catalog import Catalog
from service.jobs.jobspec import JobSpec
from service.tables import warm_up_table

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger("bgix.build_runner")


def warm_up_build(spark: SparkSession, master: str) -> None:
    """Build and commit a bitmap index of the warm-up table; nothing of it outlives the call. Best effort: a
    failure is logged (the runner still serves builds, only the first one pays what the warm-up would have).

    Only on a local master: a cluster's executors run elsewhere and cannot read the runner's temporary directory
    (every task of the warm-up would fail, logged as executor errors on each start of a Spark cluster)."""
    if local_cores(master) is None:
        log.info("no warm-up build on cluster master %s (its executors cannot read a local table)", master)
        return
    root = Path(tempfile.mkdtemp(prefix="bgix-warm-up-"))
    try:
        table, column = warm_up_table(root / "data")
        catalog = Catalog(Storage(str(root / "warehouse"), [str(root)]))
        catalog.put_table(table)
        run_job(JobSpec(job_id=uuid.uuid4().hex, warehouse=str(root / "warehouse"), table=table.name,
                        index_column=column, allowed_roots=[str(root)], spark_master=master, engine="spark",
                        table_format=table.format), spark)
    except Exception:
        log.warning("the warm-up build failed; the first real build will start colder", exc_info=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
