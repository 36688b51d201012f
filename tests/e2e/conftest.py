"""Shared e2e fixtures: ONE local[2] Spark session for the whole test session, and a moto S3 server.

Spark start-up costs 7–13 s here, so every e2e test that needs Spark takes the `spark` fixture.
"""
from __future__ import annotations

import os
import socket
import sys
from collections.abc import Iterator
from typing import Any

import pytest

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    from pyspark.sql import SparkSession

    session = (SparkSession.builder.master("local[2]").appName("bgix-tests")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.default.parallelism", "2")
               .config("spark.driver.memory", "1g")
               .config("spark.sql.session.timeZone", "UTC")
               # the tests' jobs are small: the C2 compiler and a parallel collector would cost more CPU than
               # they save (as service.build_job.engines' light driver)
               .config("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def s3_server() -> Iterator[dict[str, Any]]:
    """A moto S3 server on a free loopback port; yields {endpoint_url, storage_options}."""
    from moto.server import ThreadedMotoServer

    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port)
    server.start()
    url = f"http://127.0.0.1:{port}"
    try:
        yield {"endpoint_url": url,
               "storage_options": {"key": "testing", "secret": "testing",
                                   "client_kwargs": {"endpoint_url": url, "region_name": "us-east-1"}}}
    finally:
        server.stop()


@pytest.fixture()
def s3_bucket(s3_server: dict[str, Any], request: pytest.FixtureRequest) -> str:
    """A fresh bucket per test; returns its name."""
    import boto3

    name = "bgix-" + "".join(c for c in request.node.name.lower() if c.isalnum())[:40]
    client = boto3.client("s3", endpoint_url=s3_server["endpoint_url"], region_name="us-east-1",
                          aws_access_key_id="testing", aws_secret_access_key="testing")
    client.create_bucket(Bucket=name)
    return name
