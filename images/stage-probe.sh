#!/usr/bin/env bash
# Copy the probe side of the package (what runs inside a probe container, nothing of the host
# side) into DEST: exactly the paths harness/probes/contract.py names in PROBE_SIDE (the probes,
# their stdlib-only analysis, the catalogue and its data), read from there, never listed twice.
#   images/stage-probe.sh DEST
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
DEST="${1:?usage: $0 DEST}"
PYTHON="${PYTHON:-python3}"
# contract.py is standard library only: any Python 3.11 reads it without the harness's dependencies.
SIDE="$(PYTHONPATH="$ROOT" "$PYTHON" -c 'from harness.probes.contract import PROBE_SIDE; print("\n".join(PROBE_SIDE))')"
rm -rf "$DEST"
while IFS= read -r path; do
    mkdir -p "$DEST/$(dirname "$path")"
    cp -r "$ROOT/$path" "$DEST/$path"
done <<<"$SIDE"
find "$DEST" -name __pycache__ -prune -exec rm -rf {} +
