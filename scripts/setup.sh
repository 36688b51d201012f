#!/usr/bin/env bash
# Idempotent machine + venv setup: Debian packages the tests start (chromium), the .venv at the repo root,
# and every pip package (runtime + test). Safe to run again; reuses what is present.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v java >/dev/null 2>&1; then
  echo "bgix: Java 17+ is required for Spark (install openjdk-17-jre-headless)." >&2
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    apt-get update -qq && apt-get install -y -qq openjdk-17-jre-headless >/dev/null
  else
    exit 1
  fi
fi

if [ "${BGIX_SKIP_APT:-0}" != 1 ] && [ ! -x /usr/bin/chromium ] && [ "${1:-}" = "--with-browser" ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "bgix: installing Debian chromium for browser tests" >&2
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  else
    echo "bgix: /usr/bin/chromium missing and not root: install Debian's chromium package" >&2
  fi
fi

PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
stamp=.venv/.bgix-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  .venv/bin/python -m pip install -q --disable-pip-version-check -U pip
  # build-backend notices (editable-install advice) are not ours to act on; keep the install output readable
  PYTHONWARNINGS=ignore .venv/bin/python -m pip install -q --disable-pip-version-check -e ".[test]"
  touch "$stamp"
fi
