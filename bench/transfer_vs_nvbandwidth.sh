#!/usr/bin/env bash
# Our transfer probe beside nvbandwidth (NVIDIA/nvbandwidth, built here from source), same GPU(s),
# same call (issue 17, item 5: each of our figures at least 0.98x the matching nvbandwidth test).
#
#     OUT=/some/dir bash bench/transfer_vs_nvbandwidth.sh
#
# Needs, carried to the GPU machine in the ignored .peers/ folder (never committed):
#   .peers/nvbandwidth/        nvbandwidth's source tree (git archive of NVIDIA/nvbandwidth)
#   .peers/nvbandwidth.commit  the commit it was archived from
#   .peers/boost-debs/*.deb    Debian's libboost-program-options1.74.0, libboost-program-options1.74-dev
#                              and libboost1.74-dev (`apt-get download ...`): each is unpacked with
#                              dpkg -x and cmake finds Boost there (-DCMAKE_PREFIX_PATH); no install.
# Builds nvbandwidth for this GPU's architecture only (about a minute), runs its copy engine tests
# (the peer and all-GPU ones too with 2+ GPUs) and our probe, then prints ours / nvbandwidth.
# Writes at most 8 files under $OUT: comparison.txt, transfer.json, transfer.stderr, transfer.png
# (and transfer-peer.png with 2+ GPUs), nvbandwidth.json, nvbandwidth-build.log, run-info.txt
# (versions, commands, wall times, nvbandwidth's stderr, `nvidia-smi topo -m`).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
PY=${PYTHON:-python3}
SRC=${NVBANDWIDTH_SRC:-.peers/nvbandwidth}
DEBS=${BOOST_DEBS:-.peers/boost-debs}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
INFO="$OUT/run-info.txt"
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
since() { local ms=$(( $(now_ms) - $1 )); printf '%d.%03d' $((ms / 1000)) $((ms % 1000)); }
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)

{
  echo "date: $(date -u +%FT%TZ)"
  echo "nvbandwidth commit: $(cat .peers/nvbandwidth.commit 2>/dev/null || echo unknown)"
  echo "driver: $(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1)"
  echo "torch: $($PY -c 'import torch; print(torch.__version__, torch.version.cuda)' 2>&1)"
  echo "nvcc: $("$NVCC" --version 2>&1 | tail -1)"
  echo "== nvidia-smi topo -m"
  nvidia-smi topo -m 2>&1
} > "$INFO"
GPUS=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
echo "== $GPUS visible GPU(s); raw output in $OUT" | tee -a "$INFO"

# --- build nvbandwidth ---------------------------------------------------------------------------
NVB=""
build_nvbandwidth() {
  [ -f "$SRC/CMakeLists.txt" ] || { echo "no nvbandwidth source at $SRC: carry .peers/nvbandwidth"; return 4; }
  ls "$DEBS"/*.deb > /dev/null 2>&1 || { echo "no boost .debs in $DEBS: carry .peers/boost-debs"; return 4; }
  for deb in "$DEBS"/*.deb; do dpkg -x "$deb" "$WORK/boost" || return 4; done
  local arch
  arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d '. ')
  cmake -S "$SRC" -B "$WORK/build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_COMPILER="$NVCC" \
    -DCMAKE_CUDA_ARCHITECTURES="${arch:-90}" -DCMAKE_PREFIX_PATH="$WORK/boost/usr" || return 4
  cmake --build "$WORK/build" -j "$(nproc)" || return 4
}
echo "== building nvbandwidth" | tee -a "$INFO"
started=$(now_ms)
if build_nvbandwidth > "$OUT/nvbandwidth-build.log" 2>&1; then
  NVB="$WORK/build/nvbandwidth"
else
  tail -5 "$OUT/nvbandwidth-build.log" | tee -a "$INFO"
  echo "nvbandwidth did not build: our probe still runs, with nothing to compare" | tee -a "$INFO"
fi
echo "build wall s: $(since "$started")" >> "$INFO"

# --- nvbandwidth ---------------------------------------------------------------------------------
TESTS="host_to_device_memcpy_ce device_to_host_memcpy_ce host_to_device_bidirectional_memcpy_ce"
TESTS="$TESTS device_to_host_bidirectional_memcpy_ce device_local_copy"
if [ "${GPUS:-0}" -ge 2 ]; then
  TESTS="$TESTS device_to_device_memcpy_read_ce device_to_device_memcpy_write_ce"
  TESTS="$TESTS device_to_device_bidirectional_memcpy_read_ce device_to_device_bidirectional_memcpy_write_ce"
  TESTS="$TESTS host_to_all_memcpy_ce all_to_host_memcpy_ce"
fi
if [ -n "$NVB" ]; then
  echo "== nvbandwidth -j -t $TESTS" | tee -a "$INFO"
  started=$(now_ms)
  LD_LIBRARY_PATH="$WORK/boost/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    "$NVB" -j -t $TESTS > "$OUT/nvbandwidth.json" 2>> "$INFO"
  echo "nvbandwidth exit code $?, wall s: $(since "$started")" | tee -a "$INFO"
fi

# --- our probe -----------------------------------------------------------------------------------
echo "== python -m harness.probes.transfer (defaults: every part, every GPU)" | tee -a "$INFO"
started=$(now_ms)
$PY -m harness.probes.transfer > "$OUT/transfer.json" 2> "$OUT/transfer.stderr"
echo "probe exit code $?, wall s: $(since "$started")" | tee -a "$INFO"
$PY - "$OUT" >> "$INFO" 2>&1 <<'PYEOF'
import json, pathlib, sys
out = pathlib.Path(sys.argv[1])
from harness.present.plots.transfer import render
for path in render(json.loads((out / "transfer.json").read_text()), out / "transfer"):
    if path.suffix == ".svg":
        path.unlink()  # the PNGs are enough here: at most 8 files come back
print("plots:", ", ".join(sorted(p.name for p in out.glob("transfer*.png"))))
PYEOF

$PY bench/compare_transfer_nvbandwidth.py "$OUT" | tee "$OUT/comparison.txt"
