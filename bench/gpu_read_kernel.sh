#!/usr/bin/env bash
# The HBM read kernel against BabelStream's Dot, in ONE device call (issue 40): BabelStream built from
# source here and run (fp64, 2^29 elements, 20 times: Copy ... Dot), then every read-kernel variant of
# the bandwidth probe (harness/probes/bandwidth/read_kernels.py: torch's sum, torch.mv, the NVRTC
# kernels) with the probe's own sweep and repeats, the copy kernel once, the default and the best
# variant again, then BabelStream again (its own drift), and the ratio table last.
#
#   OUT=$OUT bash bench/gpu_read_kernel.sh      # carry: .peers  (BabelStream's source in .peers/BabelStream)
#
# Needs there: nvcc and cmake (or nvcc alone), python3 with torch and nvidia-ml-py (the image's). No
# network, no wheels. About 3 minutes: the build ~40 s, each BabelStream run ~10 s, each variant ~6 s.
# Comes back: $OUT/read-kernels.json (every run's figures, BabelStream's CSVs), $OUT/read-kernels.tar.gz
# (every probe document, the build log, BabelStream's output), $OUT/table.md (the table printed last).
# Look for: the `vs Dot` column of each read variant (plateau over the mean of the two Dot runs) and
# `best@8192 vs Dot` (the best call at Dot's own bytes per call, as BabelStream states its best of 19);
# `Dot's own spread` says how far apart its two runs were. Switching the default is the line
# `DEFAULT = ...` in harness/probes/bandwidth/read_kernels.py.
set -uo pipefail
cd "$(dirname "$0")/.."
FINAL_OUT=${OUT:?set OUT}
SRC="${BABELSTREAM_SRC:-$PWD/.peers/BabelStream}"
ARRAYSIZE="${ARRAYSIZE:-536870912}"   # 2^29 doubles = 4.3 GB per array, as in h200-baseline.md
W=$(mktemp -d); START=$(date +%s)
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
log() { echo "== [$(( $(date +%s) - START )) s] $*"; }
pack() { tar -czf "$FINAL_OUT/read-kernels.tar.gz" -C "$W" . ; }
trap pack EXIT
NVCC="$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)"
ARCH="${CUDA_ARCH:-sm_$(python3 -c 'import torch; m, n = torch.cuda.get_device_capability(); print(f"{m}{n}")')}"
{ nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv; "$NVCC" --version | tail -2
  python3 -c 'import torch, sys; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda)'
} >"$W/environment.txt" 2>&1; cat "$W/environment.txt"

log "build BabelStream ($SRC, CUDA model, $ARCH)"
BUILD="$W/babelstream-build"; BIN=""
if [ ! -d "$SRC" ]; then
  echo "BabelStream source not found at $SRC (carry .peers/BabelStream or set BABELSTREAM_SRC)" | tee "$W/babelstream.build.log"
else
  if cmake -S "$SRC" -B "$BUILD" -DMODEL=cuda -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_COMPILER="$NVCC" \
       -DCUDA_ARCH="$ARCH" >"$W/babelstream.build.log" 2>&1 && cmake --build "$BUILD" -j >>"$W/babelstream.build.log" 2>&1; then
    BIN="$(find "$BUILD" -maxdepth 2 -type f -name 'cuda-stream' | head -1)"
  fi
  if [ -z "$BIN" ]; then  # the same compile by hand, as the CUDA model's CMake does it
    echo "cmake build failed; trying nvcc directly" | tee -a "$W/babelstream.build.log"
    CUDA_HOME="$(dirname "$(dirname "$NVCC")")"
    "$NVCC" -O3 -std=c++17 -arch="$ARCH" --extended-lambda -DCUDA -I"$SRC/src" -I"$SRC/src/cuda" \
      "$SRC/src/main.cpp" "$SRC/src/cuda/CUDAStream.cu" -o "$BUILD/cuda-stream" >>"$W/babelstream.build.log" 2>&1 \
      && BIN="$BUILD/cuda-stream"
  fi
fi
stream() {  # N: one BabelStream run, its CSV kept as babelstream.N.csv
  [ -n "$BIN" ] || { echo "BabelStream did not build: see babelstream.build.log"; return; }
  log "BabelStream run $1: --arraysize $ARRAYSIZE --numtimes 20 --csv (fp64)"
  "$BIN" --arraysize "$ARRAYSIZE" --numtimes 20 --csv >"$W/babelstream.$1.csv" 2>"$W/babelstream.$1.stderr"
  grep -E '^(Copy|Dot),' "$W/babelstream.$1.csv"
}
stream 1
log "every read-kernel variant, the probe's own sweep and 3 repeats each; copy once; default and best again"
python3 bench/read_kernel_driver.py measure "$W" 2>"$W/driver.stderr"
stream 2
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv >>"$W/environment.txt" 2>&1
log "table"
python3 bench/read_kernel_driver.py table "$W" --json "$FINAL_OUT/read-kernels.json" | tee "$FINAL_OUT/table.md"
