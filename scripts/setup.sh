#!/usr/bin/env bash
# Idempotent machine + venv setup: Debian packages the tests start (chromium), the .venv at the repo root,
# and every pip package (runtime + test). Safe to run again; reuses what is present.
# Says what it does on stderr, a `[setup]` line per step (a first run spends about 2 minutes installing into .venv).
# `--with-browser`: also Debian's chromium. `--dry-run`: print the steps, run none of them.
set -euo pipefail
cd "$(dirname "$0")/.."

with_browser=0
dry_run=0
for arg in "$@"; do
  case "$arg" in
    --with-browser) with_browser=1 ;;
    --dry-run) dry_run=1 ;;
    *) echo "bgix setup: unknown argument $arg (known: --with-browser, --dry-run)" >&2; exit 2 ;;
  esac
done
say() { echo "[setup] $*" >&2; }   # stderr, as the other messages: stdout stays the caller's (the demo's)
run() { if [ "$dry_run" = 1 ]; then say "  would run: $*"; else "$@"; fi; }
run_quiet() { if [ "$dry_run" = 1 ]; then say "  would run: $*"; else "$@" >/dev/null; fi; }

if ! command -v java >/dev/null 2>&1; then
  echo "bgix: Java 17+ is required for Spark (install openjdk-17-jre-headless)." >&2
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    say "installing Debian's openjdk-17-jre-headless (Spark's JVM)"
    run apt-get update -qq
    run_quiet apt-get install -y -qq openjdk-17-jre-headless
  elif [ "$dry_run" != 1 ]; then
    exit 1
  fi
fi

if [ "${BGIX_SKIP_APT:-0}" != 1 ] && [ ! -x /usr/bin/chromium ] && [ "$with_browser" = 1 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    say "installing Debian's chromium for the browser tests"
    run apt-get update -qq
    run_quiet env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium
  else
    echo "bgix: /usr/bin/chromium missing and not root: install Debian's chromium package" >&2
  fi
fi

PY=${PYTHON:-python3}
EXTRAS=test   # the optional-dependency groups of pyproject.toml installed with bgix

# Names of what pyproject.toml lists: its dependencies (argument "-") or the packages of the extras named.
pyproject_names() {
  "$PY" - "$1" 2>/dev/null <<'PYTHON' || true
import re, sys, tomllib
project = tomllib.load(open("pyproject.toml", "rb"))["project"]
groups = sys.argv[1]
wanted = project["dependencies"] if groups == "-" else \
    [req for group in groups.split(",") for req in project["optional-dependencies"][group]]
print(", ".join(dict.fromkeys(re.split(r"[<>=!~;\[ ]", req, maxsplit=1)[0] for req in wanted)))
PYTHON
}

stamp=.venv/.bgix-installed
if [ ! -x .venv/bin/python ] || [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  say "installing bgix into .venv with its [$EXTRAS] extras (about 2 minutes on a first run)…"
  if [ ! -x .venv/bin/python ]; then
    say "creating .venv with $("$PY" --version 2>&1) ($PY)"
    run "$PY" -m venv .venv
  fi
  say "upgrading pip in .venv"
  run .venv/bin/python -m pip install -q --disable-pip-version-check -U pip
  say "pip install -e '.[$EXTRAS]': bgix's dependencies ($(pyproject_names -)) and its [$EXTRAS] extras ($(pyproject_names "$EXTRAS"))"
  # build-backend notices (editable-install advice) are not ours to act on; keep the install output readable
  run env PYTHONWARNINGS=ignore .venv/bin/python -m pip install -q --disable-pip-version-check -e ".[$EXTRAS]"
  run touch "$stamp"
  if [ "$dry_run" = 1 ]; then say "dry run: nothing was done"; else say ".venv ready"; fi
else
  say ".venv is up to date (bgix with its [$EXTRAS] extras); nothing to install"
fi
