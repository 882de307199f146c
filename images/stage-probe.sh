#!/usr/bin/env bash
# Copy the probe package (what runs inside a probe container, nothing of the host side) into
# DEST/harness: the probes, their stdlib-only analysis, the catalogue and its data.
#   images/stage-probe.sh DEST
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
DEST="${1:?usage: $0 DEST}"
rm -rf "$DEST"
mkdir -p "$DEST/harness"
cp "$ROOT/harness/__init__.py" "$ROOT/harness/catalogue.py" "$DEST/harness/"
for sub in probes analysis data; do
    cp -r "$ROOT/harness/$sub" "$DEST/harness/$sub"
done
find "$DEST" -name __pycache__ -prune -exec rm -rf {} +
