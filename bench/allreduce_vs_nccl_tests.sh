#!/usr/bin/env bash
# Our all-reduce probe beside nccl-tests' all_reduce_perf, on the same host, in the same call.
#
# Multi-GPU only (issue 6, item 8: busbw at 1 GiB within 5% of all_reduce_perf at the same world
# size). Run from the repository root on a GPU machine:
#
#     OUT=/some/dir bench/allreduce_vs_nccl_tests.sh
#
# Needs the nccl-tests source at .peers/nccl-tests (an ignored folder: fetch NVIDIA/nccl-tests
# there and carry it to the GPU machine; it is never committed). Builds it against the NCCL inside
# the PyTorch environment (package nvidia-nccl-cu13), as /work/shared/recipes/nccl-tests-on-gpu-machine.md.
# Writes raw outputs under $OUT: nvidia-smi-topo-m.txt, allreduce.json (+ .stderr),
# all_reduce_perf.gN.txt, nccl-tests-build.log, comparison.txt.
# NVLink multicast stays off everywhere: NCCL_NVLS_ENABLE=0 (our probe forces it in its workers too).
# On one GPU it says so and runs only the topology capture and our probe (which records the limitation).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
PY=${PYTHON:-python3}
SRC=${NCCL_TESTS_SRC:-.peers/nccl-tests}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
unset NCCL_P2P_DISABLE
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"

echo "== nvidia-smi topo -m"
nvidia-smi topo -m 2>&1 | tee "$OUT/nvidia-smi-topo-m.txt"
GPUS=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
echo "== $GPUS visible GPU(s); NCCL_NVLS_ENABLE=$NCCL_NVLS_ENABLE; raw output in $OUT"

if [ "${GPUS:-0}" -lt 2 ]; then
  echo "$GPUS visible GPU(s): all-reduce needs at least 2, so there is nothing to compare with nccl-tests."
  echo "Running only our probe, which records the limitation (never a simulated curve)."
  $PY -m harness.probes.allreduce --backend nccl > "$OUT/allreduce.json" 2> "$OUT/allreduce.stderr"
  echo "probe exit code $?"
  $PY - "$OUT/allreduce.json" <<'PYEOF'
import json, sys
doc = json.load(open(sys.argv[1]))
for item in doc["limitations"]:
    print(f"limitation: {item['what']} ({item['why']})")
PYEOF
  exit 0
fi

WORLD_SIZES=2
[ "$GPUS" -ge 4 ] && WORLD_SIZES=2,4

if [ ! -f "$SRC/Makefile" ]; then
  echo "nccl-tests source not found at $SRC: fetch NVIDIA/nccl-tests there and carry it to this machine" >&2
  exit 4
fi
NCCL_DIR=$($PY -c "import nvidia.nccl, os; print(list(nvidia.nccl.__path__)[0])") || {
  echo "the PyTorch environment has no nvidia.nccl package to build nccl-tests against" >&2; exit 4; }
[ -e "$NCCL_DIR/lib/libnccl.so" ] || ln -sf "$NCCL_DIR/lib/libnccl.so.2" "$NCCL_DIR/lib/libnccl.so"
ARCH=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d '. ')
ARCH=${ARCH:-90}
echo "== building nccl-tests (sm_$ARCH) against $NCCL_DIR"
if ! make -C "$SRC" -j16 NCCL_HOME="$NCCL_DIR" CUDA_HOME="${CUDA_HOME:-/usr/local/cuda}" \
     NVCC_GENCODE="-gencode=arch=compute_$ARCH,code=sm_$ARCH" > "$OUT/nccl-tests-build.log" 2>&1; then
  tail -20 "$OUT/nccl-tests-build.log" >&2
  exit 4
fi

echo "== our probe: world sizes $WORLD_SIZES, 8 B .. 1 GiB, normal and NCCL_P2P_DISABLE=1"
$PY -m harness.probes.allreduce --backend nccl --world-size "$WORLD_SIZES" --min-bytes 8 --max-bytes 1G \
  > "$OUT/allreduce.json" 2> "$OUT/allreduce.stderr"
echo "probe exit code $?"

for n in ${WORLD_SIZES//,/ }; do
  echo "== all_reduce_perf -b 8 -e 1G -f 2 -g $n"
  LD_LIBRARY_PATH="$NCCL_DIR/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    "$SRC/build/all_reduce_perf" -b 8 -e 1G -f 2 -g "$n" 2>&1 | tee "$OUT/all_reduce_perf.g$n.txt"
done

$PY - "$OUT" "$WORLD_SIZES" <<'PYEOF' | tee "$OUT/comparison.txt"
import json, pathlib, sys
out, worlds = pathlib.Path(sys.argv[1]), [int(n) for n in sys.argv[2].split(",")]
GIB = 2**30
doc = json.loads((out / "allreduce.json").read_text())

def ours(n, curve="normal"):
    for run in doc["runs"]:
        if run["world_size"] == n and run["curve"] == curve:
            for point in run["points"]:
                if point["bytes"] == GIB:
                    return point["busbw_gbps"]
    return None

def theirs(n):
    # all_reduce_perf rows: size count type redop root | out-of-place time algbw busbw #wrong | in-place ...
    for line in (out / f"all_reduce_perf.g{n}.txt").read_text().splitlines():
        fields = line.split()
        if fields and fields[0] == str(GIB) and len(fields) >= 12:
            return float(fields[7]), float(fields[11])
    return None

print(f"busbw at 1 GiB (GB/s), NCCL_NVLS_ENABLE=0, same host, same call")
print(f"{'n':>3} {'ours':>10} {'nccl-tests oop':>15} {'in-place':>10} {'ours/oop':>9}  within 5%")
for n in worlds:
    mine, ref = ours(n), theirs(n)
    if mine is None or ref is None:
        print(f"{n:>3} {'-' if mine is None else f'{mine:.2f}':>10} {'-' if ref is None else f'{ref[0]:.2f}':>15}"
              "  (missing: see the raw files)")
        continue
    ratio = mine / ref[0]
    print(f"{n:>3} {mine:>10.2f} {ref[0]:>15.2f} {ref[1]:>10.2f} {ratio:>9.3f}  {'yes' if abs(ratio - 1) <= 0.05 else 'NO'}")
    control = ours(n, "p2p_disabled")
    if control is not None:
        print(f"    ours with NCCL_P2P_DISABLE=1: {control:.2f} GB/s (normal/control {mine / control:.2f}x)")
for item in doc["limitations"]:
    print(f"limitation: {item['what']} ({item['why']})")
PYEOF
