#!/usr/bin/env bash
# The README's test command: set up everything from scratch (or reuse), then run the whole suite on parallel
# workers (pyproject.toml's pytest options; docs/testing.md). Arguments go on to pytest.
# `--quick`: the unit layer only (no server, Spark or browser, nothing marked slow), for the inner loop: two workers,
# Hypothesis's `quick` profile (unless BGIX_HYPOTHESIS_PROFILE names one).
set -euo pipefail
cd "$(dirname "$0")/.."
quick=0
args=()
for arg in "$@"; do
  if [ "$arg" = --quick ]; then quick=1; else args+=("$arg"); fi
done
if [ "$quick" = 1 ]; then bash scripts/setup.sh; else bash scripts/setup.sh --with-browser; fi
# Bytecode caches on, whatever the machine's environment says: with PYTHONDONTWRITEBYTECODE set, every pytest
# worker re-rewrites the asserts of ~480 test modules and every subprocess a test starts (servers, build jobs,
# CLI runs) compiles bgix's modules again; about 7 of a worker's 12 s of collection (docs/testing.md).
unset PYTHONDONTWRITEBYTECODE
# Compiled once here, on both cores, rather than by each of the workers that import a module first at once (and by
# the servers and jobs the first tests start) in a fresh clone.
.venv/bin/python -m compileall -q -j 2 index_format service tests > /dev/null
# Likewise numba's cache of the fm writer's compiled loops (index_format/fm/lz4_native.py, wavelet_native.py): a few
# CPU-s to compile, paid by every process that writes an fm file before the cache exists.
.venv/bin/python -c "from index_format.fm.fm_writer import write_fm_bytes; write_fm_bytes(['ab' * 20] * 50)"
export SPARK_LOCAL_IP=127.0.0.1
export PYSPARK_PYTHON="$PWD/.venv/bin/python"
export PYSPARK_DRIVER_PYTHON="$PWD/.venv/bin/python"
export PATH="$PWD/.venv/bin:$PATH"
.venv/bin/lint-imports --config pyproject.toml
.venv/bin/mypy   # strict over index_format and service (pyproject.toml [tool.mypy]); 0 errors or the run fails
if [ "$quick" = 1 ]; then
  # Two workers, not four: the unit layer is all CPU (no subprocess waits to overlap) and every worker pays its
  # own collection. Hypothesis's `quick` profile: the fixed examples, a quarter as many (docs/testing.md).
  export BGIX_HYPOTHESIS_PROFILE="${BGIX_HYPOTHESIS_PROFILE:-quick}"
  exec .venv/bin/python -m pytest -m "not slow" --ignore=tests/api --ignore=tests/browser --ignore=tests/e2e \
    -n 2 ${args[@]+"${args[@]}"}
fi
exec .venv/bin/python -m pytest ${args[@]+"${args[@]}"}
