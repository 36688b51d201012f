"""Spark's Python daemon for build runners: it imports the build worker's modules once, then forks workers
that start with them loaded (Spark runs `python -m <spark.python.daemon.module>`).

pyspark's own daemon forks a fresh interpreter state per worker too, but every worker then imports pyarrow,
numpy, pypaimon and bgix itself: about a second of CPU per worker on this kind of machine.
"""
from __future__ import annotations

import gc
import os

# A forked child must not inherit a BLAS thread pool it cannot use; the build never calls BLAS anyway.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import service.build_job.worker  # noqa: E402,F401  (pyarrow, numpy, index_format, every family's writer)
from pyspark.daemon import manager  # noqa: E402
from service.tables import load_task_readers  # noqa: E402

load_task_readers()
# The loaded modules' objects live as long as the workers: keep them out of every collection the workers run
# (without this each reused worker's per-task collections scan them, measured at ~15 ms a task).
gc.freeze()

if __name__ == "__main__":
    manager()
