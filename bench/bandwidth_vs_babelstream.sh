#!/usr/bin/env bash
# Our bandwidth probe against BabelStream, in one device call (issue 3, performance criterion).
#
#   OUT=/some/dir bench/bandwidth_vs_babelstream.sh
#
# Builds BabelStream's CUDA model from .peers/BabelStream (never committed; override with
# BABELSTREAM_SRC), runs it (fp64, 2^29 elements, 20 times), runs our probe with its default sweep
# and 3 repeats for each kernel (copy, triad, read, write), times each probe's wall clock, and
# prints a comparison table. Raw outputs land under $OUT. Needs: nvcc, cmake (or nvcc alone),
# python3 with torch and nvidia-ml-py. No network.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
OUT="${OUT:-$ROOT/bench-out}"
SRC="${BABELSTREAM_SRC:-$ROOT/.peers/BabelStream}"
ARRAYSIZE="${ARRAYSIZE:-536870912}"   # 2^29 doubles = 4.3 GB per array, as in h200-baseline.md
NUMTIMES="${NUMTIMES:-20}"
KERNELS="${KERNELS:-copy triad read write}"
ARCH="${CUDA_ARCH:-}"
PY="${PYTHON:-python3}"
mkdir -p "$OUT"
seconds_since() { local ms=$(( ($(date +%s%N) - $1) / 1000000 )); printf "%d.%03d" $((ms / 1000)) $((ms % 1000)); }
NVCC="$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)"
if [ -z "$ARCH" ]; then  # sm_XY from the device itself (sm_90 on an H200)
  ARCH="sm_$("$PY" -c 'import torch; m, n = torch.cuda.get_device_capability(); print(f"{m}{n}")')"
fi
echo "== environment" | tee "$OUT/environment.txt"
{ nvidia-smi --query-gpu=name,pci.device_id,memory.total,power.limit,clocks.max.sm,clocks.max.mem --format=csv || true
  "$NVCC" --version | tail -2; cmake --version | head -1 || true
  "$PY" -c 'import torch, sys; print("python", sys.version.split()[0], "torch", torch.__version__)'
  echo "arch $ARCH arraysize $ARRAYSIZE numtimes $NUMTIMES kernels $KERNELS"; } 2>&1 | tee -a "$OUT/environment.txt"

echo "== build BabelStream ($SRC, CUDA model, $ARCH)"
BUILD="$(mktemp -d)"
BIN=""
if [ ! -d "$SRC" ]; then
  echo "BabelStream source not found at $SRC (carry .peers/BabelStream or set BABELSTREAM_SRC)" | tee "$OUT/babelstream.build.log"
else
  if cmake -S "$SRC" -B "$BUILD" -DMODEL=cuda -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_COMPILER="$NVCC" \
       -DCUDA_ARCH="$ARCH" >"$OUT/babelstream.build.log" 2>&1 \
     && cmake --build "$BUILD" -j >>"$OUT/babelstream.build.log" 2>&1; then
    BIN="$(find "$BUILD" -maxdepth 2 -type f -name 'cuda-stream' | head -1)"
  fi
  if [ -z "$BIN" ]; then  # the same compile by hand, as the CUDA model's CMake does it
    echo "cmake build failed; trying nvcc directly" | tee -a "$OUT/babelstream.build.log"
    CUDA_HOME="$(dirname "$(dirname "$NVCC")")"
    "$NVCC" -O3 -std=c++17 -arch="$ARCH" --extended-lambda -DCUDA -DDEFAULT -DGRID_STRIDE -DUNROLL_FACTOR=4 \
      -I"$SRC/src" -I"$SRC/src/cuda" "$SRC/src/main.cpp" "$SRC/src/cuda/CUDAStream.cu" -x none \
      -L"$CUDA_HOME/lib64/stubs" -L"$CUDA_HOME/targets/x86_64-linux/lib/stubs" -lnvidia-ml \
      -o "$BUILD/cuda-stream" >>"$OUT/babelstream.build.log" 2>&1 && BIN="$BUILD/cuda-stream"
  fi
fi
BS_SECONDS=""
if [ -n "$BIN" ]; then
  echo "== BabelStream --arraysize $ARRAYSIZE --numtimes $NUMTIMES (fp64)"
  t0=$(date +%s%N)
  "$BIN" --arraysize "$ARRAYSIZE" --numtimes "$NUMTIMES" --csv >"$OUT/babelstream.csv" 2>"$OUT/babelstream.stderr" || true
  BS_SECONDS=$(seconds_since "$t0")
  cat "$OUT/babelstream.csv"
else
  echo "BabelStream did not build: see $OUT/babelstream.build.log" | tee "$OUT/babelstream.csv.missing"
fi

for kernel in $KERNELS; do
  echo "== our probe: --kernel $kernel (default sweep, 3 repeats)"
  t0=$(date +%s%N)
  PYTHONPATH="$ROOT" "$PY" -m harness.probes.bandwidth --kernel "$kernel" --repeats 3 \
    >"$OUT/bandwidth-$kernel.json" 2>"$OUT/bandwidth-$kernel.stderr" || echo "probe failed: see $OUT/bandwidth-$kernel.stderr"
  seconds_since "$t0" >"$OUT/bandwidth-$kernel.wall_s"
done

"$PY" "$ROOT/bench/compare_babelstream.py" "$OUT" ${BS_SECONDS:+--babelstream-seconds "$BS_SECONDS"} | tee "$OUT/comparison.md"
rm -rf "$BUILD"
