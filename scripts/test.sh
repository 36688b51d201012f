#!/usr/bin/env bash
# The README's test command: set up everything from scratch (or reuse), then run the whole suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --with-browser
export SPARK_LOCAL_IP=127.0.0.1
export PYSPARK_PYTHON="$PWD/.venv/bin/python"
export PYSPARK_DRIVER_PYTHON="$PWD/.venv/bin/python"
export PATH="$PWD/.venv/bin:$PATH"
.venv/bin/lint-imports --config pyproject.toml
exec .venv/bin/python -m pytest "$@"
