# Shared by docker/build-images.sh and scripts/docker-smoke.sh (sourced, not run): a running Docker engine and
# a compose command, installed from Debian's packages when missing (as root, on Debian).

log() { printf '[%s] %s\n' "$(date +%T)" "$*" >&2; }
die() { log "error: $*"; exit 1; }

# apt-get install, updating the package lists once if a package is not found.
apt_install() {
    command -v apt-get >/dev/null && [ "$(id -u)" = 0 ] || die "need $* (apt-get, as root) and cannot install it"
    log "installing Debian packages: $*"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@" >/dev/null \
        || { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@" >/dev/null; } \
        || die "apt-get install $* failed"
}

# A Docker engine answering on the default socket: reuse a running one, else start Debian's dockerd (installing
# docker.io first if needed) in the background, its log in $BGIX_DOCKERD_LOG. overlay2 is dockerd's default here.
ensure_docker() {
    if docker info >/dev/null 2>&1; then
        return 0
    fi
    command -v dockerd >/dev/null || apt_install docker.io
    command -v docker >/dev/null || die "no docker CLI"
    [ "$(id -u)" = 0 ] || die "no Docker engine is running and starting dockerd needs root"
    local logf="${BGIX_DOCKERD_LOG:-/var/log/bgix-dockerd.log}"
    log "no Docker engine running: starting dockerd in the background (log: $logf)"
    setsid nohup dockerd >"$logf" 2>&1 </dev/null &
    echo $! >/var/run/bgix-dockerd.pid
    local i
    for i in $(seq 1 60); do
        docker info >/dev/null 2>&1 && break
        sleep 1
    done
    docker info >/dev/null 2>&1 || die "dockerd did not come up in 60 s; see $logf"
    log "dockerd $(docker info --format '{{.ServerVersion}}') up, storage driver $(docker info --format '{{.Driver}}')"
}

# COMPOSE: the compose command as an array. `docker compose` (the v2 plugin) when the CLI has it, else Debian's
# `docker-compose` (v1, Python: the only one Debian 12 packages), installed when missing.
COMPOSE=()
ensure_compose() {
    if docker compose version >/dev/null 2>&1; then
        COMPOSE=(docker compose)
    else
        command -v docker-compose >/dev/null || apt_install docker-compose
        COMPOSE=(docker-compose)
    fi
    log "compose: ${COMPOSE[*]} ($("${COMPOSE[@]}" version --short 2>/dev/null || echo '?'))"
}
