#!/usr/bin/env bash
# README command 1: set up, generate a sample table, start the service, build indexes through the API, query.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export SPARK_LOCAL_IP=127.0.0.1
export PYSPARK_PYTHON="$PWD/.venv/bin/python"
export PYSPARK_DRIVER_PYTHON="$PWD/.venv/bin/python"
exec .venv/bin/bgix demo "$@"
