#!/usr/bin/env bash
# The stress probe beside gpu-burn (wilicc/gpu-burn, built here from source) in ONE device call on
# the GPU machine, in this order, on the same GPU(s):
#   1. build gpu-burn (make CUDAPATH=/usr/local/cuda COMPUTE=90, in a copy of .peers/gpu-burn);
#   2. is the probe's GEMM bit-for-bit repeatable here? (bench/gemm_repeatability.py, a few seconds);
#   3. NVML idle sample, then `gpu_burn -tc 60` run from its build folder (it needs compare.fatbin
#      beside it), with NVML sampled all the while (gpu-burn reports no power or clocks);
#   4. cool-down, sampled; our probe --dtype tf32 --seconds 60 (its default tf32 shape);
#   5. cool-down, sampled; our default bf16 60 s run (the fixture that shows the cap engaging);
#   6. our bf16 run with --no-check, 30 s: what checking costs, throughput against throughput;
#   7. if time is left: our tf32 30 s on gpu-burn's own shape (8192^3);
# then the comparison table, printed last (bench/compare_stress_gpu_burn.py).
#
#   OUT=$OUT bash bench/stress_vs_gpu_burn.sh        # carry: .peers (gpu-burn source) and .whl
#
# .peers/gpu-burn holds wilicc/gpu-burn's tree (never committed) and .peers/gpu-burn/COMMIT its
# commit; .whl the wheels the GPU image lacks (jsonschema, referencing, rpds-py: only for the schema
# check; the probe itself needs torch and nvidia-ml-py, both in the image). Budget: 9 minutes in all.
set -uo pipefail
cd "$(dirname "$0")/.."
FINAL_OUT=${OUT:?set OUT}
WORK=$(mktemp -d)
BUDGET_S=${BUDGET_S:-530}
COOL_S=${COOL_S:-25}
RUN_S=${RUN_S:-60}      # the 60 s runs (a CPU dry run of this script's plumbing shortens them)
BURN_S=${BURN_S:-$RUN_S} # gpu_burn -tc seconds
SHORT_S=${SHORT_S:-30}  # the two 30 s runs
START=$(date +%s)
if compgen -G ".whl/*.whl" >/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH=/tmp/site
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
step() { echo "== [$(( $(date +%s) - START )) s] $*" | tee -a "$WORK/session.log"; }
left() { echo $(( BUDGET_S - ($(date +%s) - START) )); }
pack() {
  tar -czf "$FINAL_OUT/session.tar.gz" -C "$WORK" . 2>/dev/null
  for f in session.log summary.md stress-bf16.json stress-tf32.json gpu_burn.log; do
    [ -f "$WORK/$f" ] && cp "$WORK/$f" "$FINAL_OUT/"
  done
}
trap pack EXIT
stress() {  # stress NAME TIMEOUT_S ARGS... : our probe, its document in $WORK/NAME.json
  local name=$1 limit=$2; shift 2
  local t0; t0=$(date +%s)
  timeout "$limit" python3 -m harness.probes.stress "$@" >"$WORK/$name.json" 2>"$WORK/$name.stderr"
  local rc=$?
  echo "$name rc=$rc wall_s=$(( $(date +%s) - t0 )) args: $*" | tee -a "$WORK/session.log"
  grep -v '^##progress' "$WORK/$name.stderr" | tail -5 >>"$WORK/session.log"
}
sample_nvml() { python3 bench/nvml_watch.py "$1" "$WORK/$2.json" --label "$2" --interval-s "${3:-0.5}" >>"$WORK/session.log" 2>&1; }

step "machine"
{ nvidia-smi --query-gpu=index,name,pci.device_id,power.limit,clocks.max.sm,temperature.gpu,memory.total --format=csv
  python3 -c "import torch, pynvml; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'gpus', torch.cuda.device_count())"
  echo "gpu-burn commit: $(cat .peers/gpu-burn/COMMIT 2>/dev/null || echo 'not recorded')"; } >>"$WORK/session.log" 2>&1

step "build gpu-burn"
BUILD=$(mktemp -d)/gpu-burn  # outside $WORK: its source and binary stay out of the packed outputs
cp -r .peers/gpu-burn "$BUILD" && (cd "$BUILD" && timeout 180 make CUDAPATH=/usr/local/cuda COMPUTE=90) \
  >"$WORK/gpu-burn-build.log" 2>&1
echo "build rc=$? binary: $(ls "$BUILD"/gpu_burn "$BUILD"/compare.fatbin 2>&1 | tr '\n' ' ')" | tee -a "$WORK/session.log"

step "GEMM repeatability (bf16, tf32)"
timeout 90 python3 bench/gemm_repeatability.py --iterations 30 --dtype bf16 tf32 >>"$WORK/session.log" 2>&1

step "idle sample, then gpu_burn -tc 60 with NVML sampled"
sample_nvml 5 nvml-idle
sample_nvml 150 nvml-gpu-burn 0.1 &  # stopped (SIGTERM) when gpu-burn ends; it writes what it has
WATCH_PID=$!
(cd "$BUILD" && timeout $(( BURN_S + 60 )) ./gpu_burn -tc "$BURN_S") >"$WORK/gpu_burn.log" 2>&1
echo "gpu_burn rc=$?" | tee -a "$WORK/session.log"
tail -c 600 "$WORK/gpu_burn.log" | tr '\r' '\n' | tail -6 >>"$WORK/session.log"
kill -TERM "$WATCH_PID" 2>/dev/null; wait "$WATCH_PID" 2>/dev/null

step "cool-down, then ours tf32 60 s"
sample_nvml "$COOL_S" nvml-cool-1
stress stress-tf32 150 --dtype tf32 --seconds "$RUN_S"

if [ "${WITH_BF16:-1}" = 1 ]; then  # WITH_BF16=0: gpu-burn's pair only (bench/gpu_peers.sh)
  step "cool-down, then ours bf16 60 s (default)"
  sample_nvml "$COOL_S" nvml-cool-2
  stress stress-bf16 150 --seconds "$RUN_S"
fi

step "ours bf16 30 s, results not checked"
[ "$(left)" -gt 70 ] && stress stress-bf16-nocheck 90 --seconds "$SHORT_S" --no-check --no-memory-test \
  || echo "skipped: $(left) s left" | tee -a "$WORK/session.log"

step "ours tf32 30 s on gpu-burn's shape"
[ "$(left)" -gt 70 ] && stress stress-tf32-square 90 --dtype tf32 --seconds "$SHORT_S" --shape 8192x8192x8192 --no-memory-test \
  || echo "skipped: $(left) s left" | tee -a "$WORK/session.log"

step "schema check, discrepancies, plots"
python3 - "$WORK" >>"$WORK/session.log" 2>&1 <<'PY'
import json, sys
from pathlib import Path
from harness.analysis.stress import discrepancies
work = Path(sys.argv[1])
for path in sorted(work.glob("stress-*.json")):
    try:
        doc = json.loads(path.read_text())
    except ValueError as exc:
        print(f"{path.name}: not JSON ({exc})"); continue
    try:
        from harness.schemas import violations
        found = violations("stress", doc)
        print(f"{path.name}: schema {'valid' if not found else f'{len(found)} violation(s), first {found[0]}'}")
    except ImportError as exc:
        print(f"{path.name}: schema check skipped ({exc})")
    print(f"{path.name}: discrepancies {discrepancies(doc) or 'none'}")
    try:
        from harness.present.plots.stress import render
        render(doc, work / "plots" / path.stem)
    except Exception as exc:  # noqa: BLE001 - the plot is a convenience here
        print(f"{path.name}: plot not rendered ({type(exc).__name__}: {exc})")
PY

step "comparison"
python3 bench/compare_stress_gpu_burn.py "$WORK" >"$WORK/summary.md" 2>&1
cat "$WORK/summary.md" >>"$WORK/session.log"
step "done"
cat "$WORK/session.log"
