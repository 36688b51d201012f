#!/usr/bin/env bash
# The Docker stack, end to end (issue 33): images built (or reused when up to date) by docker/build-images.sh,
# `compose up -d` of docker/compose.yaml (bgix, Spark master + worker, moto S3, the bucket set-up), every service
# started and bgix ready, then the demo against it, checked by scripts/docker_smoke_check.py from the host
# (this checkout's .venv python, through the ports published on 127.0.0.1): a Paimon table written to S3 by
# pypaimon, registered, indexes built on the Spark cluster through the API, queries equal to pyarrow's answers.
# Then `compose down -v`. Exits non-zero on any failure or mismatch. Needs root (or a running Docker engine).
#   bash scripts/docker-smoke.sh [--rebuild]       BGIX_SMOKE_KEEP=1: leave the stack up afterwards
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
# shellcheck source=docker/lib.sh
. docker/lib.sh

PROJECT="${BGIX_SMOKE_PROJECT:-bgix-smoke}"
PY="$ROOT/.venv/bin/python"
[ -x "$PY" ] || die "no .venv: run scripts/setup.sh first (the check runs pypaimon and bgix's client on the host)"
T0=$SECONDS
declare -a TIMES=()
timed() {  # timed NAME COMMAND...: run, and keep its duration for the summary
    local name="$1" t=$SECONDS
    shift
    "$@"
    TIMES+=("$(printf '%-34s %4d s' "$name" $((SECONDS - t)))")
}

free_port() {  # free_port PREFERRED: PREFERRED when nothing listens on 127.0.0.1 there, else a free one
    "$PY" - "$1" <<'EOF'
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)   # as docker-proxy binds: a port in TIME_WAIT is free
try:
    s.bind(("127.0.0.1", int(sys.argv[1])))
except OSError:
    s.close(); s = socket.socket(); s.bind(("127.0.0.1", 0))
print(s.getsockname()[1]); s.close()
EOF
}

log "== 1. images"
timed "images (build-images.sh)" bash docker/build-images.sh "$@"
ensure_compose
export BGIX_PORT BGIX_S3_PORT BGIX_SPARK_UI_PORT BGIX_TOKEN
BGIX_PORT="$(free_port "${BGIX_PORT:-8000}")"
BGIX_S3_PORT="$(free_port "${BGIX_S3_PORT:-5000}")"
BGIX_SPARK_UI_PORT="$(free_port "${BGIX_SPARK_UI_PORT:-8080}")"
BGIX_TOKEN="${BGIX_TOKEN:-smoke-$RANDOM$RANDOM}"
compose() { "${COMPOSE[@]}" -p "$PROJECT" -f docker/compose.yaml "$@"; }

finish() {
    local rc=$?
    if [ "$rc" != 0 ]; then
        log "FAILED (exit $rc): the services' last log lines"
        compose ps >&2 || true
        compose logs --no-color --tail=40 >&2 || true
    fi
    if [ "${BGIX_SMOKE_KEEP:-0}" = 1 ]; then
        log "BGIX_SMOKE_KEEP=1: the stack stays up (${COMPOSE[*]} -p $PROJECT -f docker/compose.yaml down -v)"
    else
        log "== 5. compose down -v"
        local t=$SECONDS
        compose down -v --remove-orphans >/dev/null 2>&1 || true
        log "stack removed in $((SECONDS - t)) s; containers left: $(docker ps -aq --filter "label=com.docker.compose.project=$PROJECT" | wc -l)"
    fi
    exit "$rc"
}
trap finish EXIT

log "== 2. compose up -d (project $PROJECT; 127.0.0.1 ports: bgix $BGIX_PORT, S3 $BGIX_S3_PORT, Spark UI $BGIX_SPARK_UI_PORT)"
compose down -v --remove-orphans >/dev/null 2>&1 || true   # a stack a killed run left behind
timed "compose up -d" compose up -d

log "== 3. waiting for every service"
wait_ready() {
    local id state health t=$SECONDS
    id="$(compose ps -q bgix)"
    while :; do
        health="$(docker inspect -f '{{.State.Health.Status}}' "$id" 2>/dev/null || echo gone)"
        [ "$health" = healthy ] && break
        state="$(docker inspect -f '{{.State.Status}}' "$id" 2>/dev/null || echo gone)"
        [ "$state" = running ] || die "bgix is $state"
        [ $((SECONDS - t)) -lt 300 ] || die "bgix not ready after 300 s"
        sleep 1
    done
    compose ps
    local svc
    for svc in s3 spark-master spark-worker bgix; do
        [ "$(docker inspect -f '{{.State.Status}}' "$(compose ps -q "$svc")")" = running ] || die "$svc is not running"
    done
    [ "$(docker inspect -f '{{.State.ExitCode}}' "$(compose ps -q create-bucket)")" = 0 ] || die "create-bucket failed"
    log "all services up; bgix /readyz: $(curl -s "http://127.0.0.1:$BGIX_PORT/readyz")"
}
timed "services ready (bgix /readyz 200)" wait_ready

log "== 4. the demo against the stack, checked against pyarrow"
timed "demo + check (docker_smoke_check.py)" env PYTHONPATH="$ROOT" "$PY" scripts/docker_smoke_check.py \
    --bgix "http://127.0.0.1:$BGIX_PORT" --s3 "http://127.0.0.1:$BGIX_S3_PORT" \
    --spark-ui "http://127.0.0.1:$BGIX_SPARK_UI_PORT" --token "$BGIX_TOKEN"
# The build's tasks ran in the executor on spark-worker (not in bgix's container): its own log says so.
tasks="$(docker exec "$(compose ps -q spark-worker)" sh -c \
    'cat /tmp/spark-worker/*/*/stderr 2>/dev/null | grep -c "Executor: Finished task"' || true)"
failed="$(docker exec "$(compose ps -q spark-worker)" sh -c \
    'cat /tmp/spark-worker/*/*/stderr 2>/dev/null | grep -c "ERROR Executor"' || true)"
log "spark-worker's executor log: ${tasks:-0} task(s) finished, ${failed:-0} failed"
[ "${tasks:-0}" -gt 0 ] && [ "${failed:-0}" = 0 ] || die "the build's tasks did not run (cleanly) on spark-worker"

log "timings:"
for t in "${TIMES[@]}"; do printf '    %s\n' "$t" >&2; done
log "OK: docker smoke passed in $((SECONDS - T0)) s (before compose down)"
