#!/usr/bin/env bash
# Builds the compose stack's images on a machine with no image registry (as root, on Debian):
#   1. bgix-base:bookworm  Debian 12 bootstrapped from Debian's packages (debootstrap --variant=minbase, then
#                          `docker import`), with this machine's Debian mirror and apt proxy;
#   2. bgix:latest         docker/Dockerfile on that base: Java 17, a venv with bgix[s3,spark] from this checkout;
#   3. bgix-moto:latest    docker/moto.Dockerfile: moto's S3 server, the stack's object store.
# pip inside the builds uses this machine's pip settings (`pip config list`: index URLs, CA bundle, constraints),
# sent in the build context as docker/pip/ and used only by the venv stages, never copied into the images.
# An image whose inputs (files it is built from, base image, pip settings) are unchanged is reused.
#
#   bash docker/build-images.sh [--rebuild] [--rebuild-base]
# Env: BGIX_DEBIAN_SUITE (bookworm), BGIX_DEBIAN_MIRROR (default: this machine's apt source for that suite),
#      BGIX_MAVEN_REPO (unset: no S3A jars, see docker/Dockerfile), BGIX_IMAGE (bgix:latest),
#      BGIX_MOTO_IMAGE (bgix-moto:latest), BGIX_BASE_IMAGE (bgix-base:<suite>), BGIX_CACHE_IMAGE (bgix-build-cache).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
# shellcheck source=docker/lib.sh
. "$ROOT/docker/lib.sh"

REBUILD=0 REBUILD_BASE=0
for arg in "$@"; do
    case "$arg" in
        --rebuild) REBUILD=1 ;;
        --rebuild-base) REBUILD_BASE=1 REBUILD=1 ;;
        -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
        *) die "unknown argument $arg (--rebuild, --rebuild-base)" ;;
    esac
done

SUITE="${BGIX_DEBIAN_SUITE:-bookworm}"
BASE="${BGIX_BASE_IMAGE:-bgix-base:$SUITE}"
IMAGE="${BGIX_IMAGE:-bgix:latest}"
MOTO_IMAGE="${BGIX_MOTO_IMAGE:-bgix-moto:latest}"
CACHE_IMAGE="${BGIX_CACHE_IMAGE:-bgix-build-cache}"   # the venv stages, tagged :bgix and :moto (build cache)
WORK="$(mktemp -d "${TMPDIR:-/tmp}/bgix-images.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT

# ---- this machine's apt settings: the mirror debootstrap fetches from, and a proxy if apt has one --------------
apt_mirror() {
    # The URI of the first apt source (deb822 or one-line) that lists $SUITE itself as a suite.
    cat /etc/apt/sources.list.d/*.sources 2>/dev/null | awk -v s="$SUITE" 'BEGIN{RS=""} /(^|\n)Types:[^\n]*deb/ {
        uri=""; ok=0; n=split($0, l, "\n")
        for (i=1;i<=n;i++) { if (l[i] ~ /^URIs:/) {split(l[i], u, " "); uri=u[2]}
                             if (l[i] ~ /^Suites:/) {m=split(l[i], x, " "); for (j=2;j<=m;j++) if (x[j]==s) ok=1} }
        if (ok && uri != "" && !found) {print uri; found=1}
    }'
    cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null \
        | awk -v s="$SUITE" '$1=="deb" && !found {u=2; if ($2 ~ /^\[/) u=3; if ($(u+1)==s) {print $u; found=1}}'
    true   # no such source: debootstrap's default mirror
}
MIRROR="${BGIX_DEBIAN_MIRROR:-$(apt_mirror | sed -n 1p)}"
APT_PROXY="$({ apt-config shell P Acquire::http::Proxy 2>/dev/null || true; } | sed -n "s/^P='\(.*\)'$/\1/p")"
PROXY_ARGS=()
if [ -n "$APT_PROXY" ]; then
    # http_proxy is one of Docker's predefined build args: used by RUN, kept out of the image's history.
    PROXY_ARGS=(--build-arg "http_proxy=$APT_PROXY")
fi

# ---- 1. the base image ---------------------------------------------------------------------------------------
build_base() {
    command -v debootstrap >/dev/null || apt_install debootstrap
    local rootfs="$WORK/rootfs"
    log "debootstrap $SUITE (minbase) from ${MIRROR:-the default mirror of debootstrap}"
    http_proxy="${APT_PROXY:-${http_proxy:-}}" debootstrap --variant=minbase --include=ca-certificates \
        "$SUITE" "$rootfs" ${MIRROR:+"$MIRROR"} >"$WORK/debootstrap.log" 2>&1 \
        || { tail -n 20 "$WORK/debootstrap.log" >&2; die "debootstrap failed"; }
    # The image's apt sources: this machine's own when it runs the same suite (its updates and security
    # suites too), else debootstrap's one line.
    local host_sources=/etc/apt/sources.list.d/debian.sources
    if [ -f "$host_sources" ] && grep -qE "^Suites:.*\\b$SUITE\\b" "$host_sources"; then
        rm -f "$rootfs/etc/apt/sources.list"
        grep -v '^#' "$host_sources" >"$rootfs/etc/apt/sources.list.d/debian.sources"
    fi
    # As Debian's official images: no recommends, no translations, no package cache kept in layers.
    printf 'APT::Install-Recommends "false";\nAPT::Install-Suggests "false";\n' >"$rootfs/etc/apt/apt.conf.d/90bgix-no-recommends"
    printf 'Acquire::Languages "none";\n' >"$rootfs/etc/apt/apt.conf.d/90bgix-no-languages"
    printf 'DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/*.bin || true"; };\n' \
        >"$rootfs/etc/apt/apt.conf.d/90bgix-clean"
    rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/*.bin "$rootfs"/var/cache/apt/archives/*.deb \
           "$rootfs"/var/log/* "$rootfs"/tmp/*
    log "docker import → $BASE ($(du -sh "$rootfs" | cut -f1))"
    tar -C "$rootfs" --numeric-owner -c . | docker import \
        --change 'ENV LANG=C.UTF-8 PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
        --change 'CMD ["bash"]' \
        --change "LABEL org.bgix.base.suite=$SUITE org.bgix.base.built=$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
        - "$BASE" >/dev/null
    rm -rf "$rootfs"
}

# ---- pip settings for the builds -----------------------------------------------------------------------------
# Writes $WORK/ctx/docker/pip/{pip.conf,ca.crt,constraints.txt} from this machine's pip configuration. file://
# indexes and local find-links are left out (paths of this machine, not of the build); the CA bundle is pip's
# `cert`, else the system bundle.
pip_settings() {
    local pip out="$WORK/ctx/docker/pip"
    mkdir -p "$out"
    for pip in pip3 pip "$ROOT/.venv/bin/pip"; do
        command -v "$pip" >/dev/null && break
    done
    local said
    said="$({ "$pip" config list 2>/dev/null || true; } | python3 - "$out" <<'EOF'
import re, shutil, sys
from pathlib import Path
from urllib.parse import urlsplit

out = Path(sys.argv[1])
opts: dict[str, str] = {}
for line in sys.stdin:
    m = re.match(r"^(\S*?)\.?([\w-]+)='(.*)'$", line.strip())
    if m:  # `global.cert='…'` from a file, `:env:.cert='…'` from PIP_CERT (pip lists env last: it wins)
        opts[m.group(2)] = m.group(3)
conf = {}
for key in ("index-url", "extra-index-url"):
    urls = [u for u in opts.get(key, "").split() if not u.startswith("file:")]
    if urls:
        conf[key] = " ".join(urls)
for key in ("trusted-host", "default-timeout", "retries", "proxy"):
    if opts.get(key):
        conf[key] = opts[key]
cert = opts.get("cert") or "/etc/ssl/certs/ca-certificates.crt"
if Path(cert).is_file():
    shutil.copyfile(cert, out / "ca.crt")
    conf["cert"] = "/etc/bgix-build/pip/ca.crt"
if opts.get("constraint") and Path(opts["constraint"]).is_file():
    shutil.copyfile(opts["constraint"], out / "constraints.txt")
    conf["constraint"] = "/etc/bgix-build/pip/constraints.txt"
(out / "pip.conf").write_text("[global]\n" + "".join(f"{k} = {v}\n" for k, v in conf.items()))

def shown(value: str) -> str:  # never print credentials in an index URL
    return " ".join(u.replace(urlsplit(u).netloc, urlsplit(u).netloc.rpartition("@")[2])
                    if "://" in u else u for u in value.split())
print("pip settings for the builds: " + (", ".join(f"{k}={shown(v)}" for k, v in conf.items()) or "pip's defaults"))
EOF
)"
    log "$said"
}

# ---- 2./3. the images, from a context of exactly the files they are built from ----------------------------------
CONTEXT_FILES=(pyproject.toml README.md index_format service docker/Dockerfile docker/moto.Dockerfile)

inputs_hash() {  # inputs_hash FILE...: what an image is built from: its files, base image, pip settings, build args
    {
        (cd "$ROOT" && find "$@" -type f ! -path '*/__pycache__/*' ! -name '*.pyc' -print0 \
            | sort -z | xargs -0 sha256sum)
        (cd "$WORK/ctx" && find docker/pip -type f -print0 | sort -z | xargs -0 sha256sum)
        image_id "$BASE"
        echo "maven=${BGIX_MAVEN_REPO:-}"
    } | sha256sum | cut -c1-16
}

label_of() { docker image inspect --format '{{index .Config.Labels "org.bgix.inputs"}}' "$1" 2>/dev/null || true; }

image_id() { docker image inspect --format '{{.Id}}' "$1" 2>/dev/null || true; }

build_image() {  # build_image TAG DOCKERFILE HASH CACHE_TAG
    local tag="$1" dockerfile="$2" hash="$3" cache="$4" t0=$SECONDS
    if [ "$REBUILD" = 0 ] && [ "$(label_of "$tag")" = "$hash" ]; then
        log "$tag is up to date (inputs $hash): reused"
        return 0
    fi
    local logf="${TMPDIR:-/tmp}/bgix-build-${tag//[:\/]/_}.log" old=("$(image_id "$tag")" "$(image_id "$cache")")
    log "docker build $tag ($dockerfile, inputs $hash); its output: $logf"
    local args=(-f "$dockerfile" --force-rm --build-arg "BASE=$BASE" ${BGIX_MAVEN_REPO:+--build-arg "MAVEN_REPO=$BGIX_MAVEN_REPO"}
                ${PROXY_ARGS[@]+"${PROXY_ARGS[@]}"})
    # The venv stage is tagged too ($cache): kept, its layers are the cache that lets a change of bgix's code
    # reuse the installed dependencies (untagged, they would go with the next `docker image prune`).
    if ! { docker build "${args[@]}" --target venv -t "$cache" - <"$WORK/context.tar" \
           && docker build "${args[@]}" -t "$tag" --label "org.bgix.inputs=$hash" - <"$WORK/context.tar"; } \
           >"$logf" 2>&1; then
        tail -n 40 "$logf" >&2
        die "docker build $tag failed (whole log: $logf)"
    fi
    # The images this build replaced, now untagged: removed (unless a container still uses them).
    local id
    for id in "${old[@]}"; do
        if [ -n "$id" ] && [ "$(docker image inspect --format '{{len .RepoTags}}' "$id" 2>/dev/null)" = 0 ]; then
            docker rmi "$id" >/dev/null 2>&1 || true
        fi
    done
    log "built $tag in $((SECONDS - t0)) s ($(docker image inspect --format '{{.Size}}' "$tag" \
        | awk '{printf "%.0f MB", $1/1e6}'))"
}

main() {
    local t0=$SECONDS
    ensure_docker
    # The legacy builder where the CLI has no buildx (Debian's docker.io): the Dockerfiles need nothing newer.
    if ! docker buildx version >/dev/null 2>&1; then
        export DOCKER_BUILDKIT=0
        log "builder: the legacy builder (no buildx plugin)"
    fi
    if [ "$REBUILD_BASE" = 1 ] || ! docker image inspect "$BASE" >/dev/null 2>&1; then
        build_base
    else
        log "$BASE exists: reused (--rebuild-base to bootstrap it again)"
    fi
    pip_settings
    tar -C "$ROOT" -cf "$WORK/context.tar" --exclude=__pycache__ --exclude='*.pyc' "${CONTEXT_FILES[@]}"
    tar -C "$WORK/ctx" -rf "$WORK/context.tar" docker/pip
    build_image "$MOTO_IMAGE" docker/moto.Dockerfile "$(inputs_hash docker/moto.Dockerfile)" "$CACHE_IMAGE:moto"
    build_image "$IMAGE" docker/Dockerfile "$(inputs_hash "${CONTEXT_FILES[@]}")" "$CACHE_IMAGE:bgix"
    log "images ready in $((SECONDS - t0)) s:"
    docker image ls --format '{{.Repository}}:{{.Tag}}  {{.ID}}  {{.Size}}' \
        | grep -E "^(${BASE%%:*}|${IMAGE%%:*}|${MOTO_IMAGE%%:*}|$CACHE_IMAGE):" | sed 's/^/    /' >&2 || true
}

main
