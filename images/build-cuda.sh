#!/usr/bin/env bash
# Build the CUDA probe image on a host that can pull from Docker Hub, push it, and pin the
# pushed image's registry digest as `cuda` in images/lock.json (commit that change).
#
#   images/build-cuda.sh REPOSITORY      e.g. ghcr.io/your-org/rig-dossier-probe-cuda
#
# The project's own machines cannot reach Docker Hub, so this is not part of `make images`.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
REPO="${1:?usage: $0 REPOSITORY (where to push the image, e.g. ghcr.io/ORG/rig-dossier-probe-cuda)}"
PYTHON="${PYTHON:-python3}"
CONTEXT="$ROOT/build/images/cuda"
TAG="$REPO:$(git -C "$ROOT" rev-parse --short HEAD)"

mkdir -p "$CONTEXT"
cp "$ROOT/images/cuda/Dockerfile" "$CONTEXT/Dockerfile"
"$ROOT/images/stage-probe.sh" "$CONTEXT/probe"

docker build -t "$TAG" "$CONTEXT"
docker push "$TAG"
ref=$(docker image inspect --format '{{range .RepoDigests}}{{println .}}{{end}}' "$TAG" | grep -F "$REPO@sha256:" | head -1)
[[ -n "$ref" ]] || { echo "build-cuda: no registry digest for $TAG after the push" >&2; exit 1; }
"$PYTHON" - "$ROOT/images/lock.json" "$ref" <<'PY'
import json, pathlib, sys
path, ref = pathlib.Path(sys.argv[1]), sys.argv[2]
lock = json.loads(path.read_text()) if path.exists() else {}
lock["cuda"] = ref
path.write_text(json.dumps(lock, indent=1, sort_keys=True) + "\n")
PY
echo "build-cuda: cuda -> $ref (in images/lock.json: commit it)" >&2
