#!/usr/bin/env bash
# Build the CPU probe image without any image registry, push it to the loopback registry so it
# has a real registry digest, and record `cpu -> 127.0.0.1:PORT/rig-dossier/probe-cpu@sha256:...`
# in images/lock.local.json (git-ignored; the harness reads it on top of images/lock.json).
#
# Needs a running engine and registry: tests/services/docker.sh start.
# Cheap to repeat: the Debian base is made once (skipped while the image exists), the wheels
# and Python layers come from the build cache, and only the probe package layer is rebuilt.
#
# Environment: PYTHON (for pip download, default python3), DOSSIER_REGISTRY_PORT (5055),
# TORCH_SPEC (torch==2.13.0), NVML_SPEC (nvidia-ml-py==13.615.71), NUMPY_SPEC, DEBIAN_MIRROR (default:
# the first mirror apt already uses), REBUILD_BASE=1 to remake the Debian base.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PYTHON="${PYTHON:-python3}"
PORT="${DOSSIER_REGISTRY_PORT:-5055}"
TORCH_SPEC="${TORCH_SPEC:-torch==2.13.0}"
NVML_SPEC="${NVML_SPEC:-nvidia-ml-py==13.615.71}"
# numpy is not a torch dependency, but without it torch warns on every import; the PyTorch
# CUDA image and the host's venv have it, so the CPU image does too.
NUMPY_SPEC="${NUMPY_SPEC:-numpy==2.4.6}"
BASE=rig-dossier/debian-base:bookworm
LOCAL_TAG=rig-dossier/probe-cpu:dev
REPO="127.0.0.1:$PORT/rig-dossier/probe-cpu"
CONTEXT="$ROOT/build/images/cpu"
LOCK="$ROOT/images/lock.local.json"
export DOCKER_BUILDKIT=0  # the classic builder: the same on every docker.io this runs with

say() { echo "build-cpu: $*" >&2; }
step() {  # step NAME COMMAND...: run and time one step
    local name=$1 start=$SECONDS
    shift
    "$@"
    say "$name took $((SECONDS - start)) s"
}

apt_mirror() {  # the first Debian mirror apt uses (deb822 or one-line sources)
    if [[ -n "${DEBIAN_MIRROR:-}" ]]; then echo "$DEBIAN_MIRROR"; return; fi
    local found
    found=$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null \
        | awk '/^URIs:/ {print $2}' | grep -v -- '-security' | head -1 || true)
    [[ -n "$found" ]] || found=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null \
        | awk '$1 == "deb" {print $2}' | grep -v -- '-security' | head -1 || true)
    echo "${found:-http://deb.debian.org/debian}"
}

make_base() {
    if [[ -z "${REBUILD_BASE:-}" ]] && docker image inspect "$BASE" >/dev/null 2>&1; then
        say "base $BASE exists, kept"
        return
    fi
    command -v debootstrap >/dev/null || { say "debootstrap is missing: tests/services/docker.sh start installs it"; exit 4; }
    local rootfs mirror
    rootfs=$(mktemp -d)
    mirror=$(apt_mirror)
    say "debootstrap bookworm minbase from $mirror"
    debootstrap --variant=minbase bookworm "$rootfs" "$mirror" >"$rootfs.log" 2>&1 \
        || { tail -20 "$rootfs.log" >&2; rm -rf "$rootfs" "$rootfs.log"; exit 1; }
    rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
    tar --numeric-owner -C "$rootfs" -c . | docker import \
        --change 'CMD ["/bin/bash"]' --message "debootstrap --variant=minbase bookworm $mirror" - "$BASE" >/dev/null
    rm -rf "$rootfs" "$rootfs.log"
}

stage_context() {
    mkdir -p "$CONTEXT/wheels"
    cp "$ROOT/images/cpu/Dockerfile" "$CONTEXT/Dockerfile"
    # pip skips wheels already in the folder; the CPU torch lies on local disk (find-links).
    "$PYTHON" -m pip download -q --disable-pip-version-check -d "$CONTEXT/wheels" \
        --only-binary=:all: --python-version 3.11 --platform manylinux_2_28_x86_64 \
        --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
        "$TORCH_SPEC" "$NVML_SPEC" "$NUMPY_SPEC" 2> >(grep -v 'is ignored: it is neither' >&2)
    printf '%s\n' "$TORCH_SPEC" "$NVML_SPEC" "$NUMPY_SPEC" >"$CONTEXT/wheels/requirements.txt"
    "$ROOT/images/stage-probe.sh" "$CONTEXT/probe"
}

build_and_push() {
    # (the classic builder's deprecation notice is noise here: it is chosen on purpose)
    docker build -q -t "$LOCAL_TAG" --build-arg "BASE=$BASE" "$CONTEXT" >/dev/null \
        2> >(grep -v -E 'DEPRECATED: The legacy builder|BuildKit is currently disabled|DOCKER_BUILDKIT=0|environment-variable\.|^$' >&2)
    docker tag "$LOCAL_TAG" "$REPO:latest"
    docker push -q "$REPO:latest" >/dev/null
}

record_digest() {
    local ref
    ref=$(docker image inspect --format '{{range .RepoDigests}}{{println .}}{{end}}' "$REPO:latest" \
        | grep -F "$REPO@sha256:" | head -1)
    [[ -n "$ref" ]] || { say "no registry digest for $REPO after the push"; exit 1; }
    "$PYTHON" - "$LOCK" "$ref" <<'EOF'
import json, pathlib, sys
path, ref = pathlib.Path(sys.argv[1]), sys.argv[2]
lock = json.loads(path.read_text()) if path.exists() else {}
lock["cpu"] = ref
path.write_text(json.dumps(lock, indent=1, sort_keys=True) + "\n")
EOF
    say "cpu -> $ref (in ${LOCK#"$ROOT"/})"
}

docker info >/dev/null 2>&1 || { say "no Docker engine answers: run tests/services/docker.sh start"; exit 4; }
curl -fsS "http://127.0.0.1:$PORT/v2/" >/dev/null 2>&1 \
    || { say "no registry on 127.0.0.1:$PORT: run tests/services/docker.sh start"; exit 4; }
step "base image" make_base
step "build context" stage_context
step "build and push" build_and_push
record_digest
