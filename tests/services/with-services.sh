#!/usr/bin/env bash
# Start what the tests need (a Docker engine with a local registry and the CPU probe image,
# a 3-node Slurm cluster), run the given command, then stop exactly what was started.
# Used by `make test`; CI has no GPU and starts with nothing running.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
started=()

stop_all() {
  for ((i=${#started[@]}-1; i>=0; i--)); do
    bash "$here/${started[$i]}.sh" stop || true
  done
}
trap stop_all EXIT

if [ "${DOSSIER_SKIP_SERVICES:-0}" != "1" ]; then
  for service in docker slurm; do
    if [ -f "$here/$service.sh" ]; then
      echo "== starting $service"
      if bash "$here/$service.sh" start; then
        started+=("$service")
      else
        echo "!! $service did not start: its tests will fail and say why" >&2
      fi
    fi
  done
  if [[ " ${started[*]} " == *" docker "* ]] && [ -f "$root/images/build-cpu.sh" ]; then
    echo "== building the CPU probe image"
    bash "$root/images/build-cpu.sh" || echo "!! the CPU probe image did not build" >&2
  fi
  [ -f "${TMPDIR:-/tmp}/rig-dossier-slurm/env" ] && . "${TMPDIR:-/tmp}/rig-dossier-slurm/env"
fi

"$@"
