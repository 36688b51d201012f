"""The environment Spark is started with (service.build_job.engines.spark_process_env): bgix's interpreter and
source tree for Spark's Python workers unless the user chose otherwise (issue 23: `bgix build` from a plain
shell failed with "No module named 'service'")."""
from __future__ import annotations

import os
import sys
from pathlib import Path

from service.build_job.engines import spark_process_env

REPO = Path(__file__).resolve().parents[3]


def test_defaults_fill_a_plain_shell() -> None:
    env = spark_process_env({"PATH": "/usr/bin:/bin"})
    assert env["PYSPARK_PYTHON"] == env["PYSPARK_DRIVER_PYTHON"] == sys.executable
    assert env["SPARK_LOCAL_IP"] == "127.0.0.1"
    assert env["PYTHONPATH"] == str(REPO)   # the directory holding the service package


def test_what_the_user_set_is_kept() -> None:
    given = {"PYSPARK_PYTHON": "/opt/py/bin/python3", "PYSPARK_DRIVER_PYTHON": "/opt/py/bin/python3",
             "SPARK_LOCAL_IP": "10.0.0.5", "PYTHONPATH": os.pathsep.join(["/x", str(REPO)])}
    assert spark_process_env(dict(given)) == given
    env = spark_process_env({"PYTHONPATH": "/x"})
    assert env["PYTHONPATH"] == os.pathsep.join(["/x", str(REPO)])
