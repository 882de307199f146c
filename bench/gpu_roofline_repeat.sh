#!/usr/bin/env bash
# Issue 30 (and issue 27 item 7) in ONE device call: does the windowed roofline repeat, and what does
# its one process cost?
#   1. the roofline probe as `dossier run` now calls it (bf16 sweep + fp8/fp16/tf32/fp32 burst-best
#      shapes in the same process, fusion included), three times in separate processes, the first on a
#      fresh machine (cold); the wall time of each;
#   2. bench/roofline_causes.py's per-call method (the probe before issue 30), three passes, the same
#      GEMMs, for the before/after table;
#   3. the ranges: per dtype and shape the three runs' headline TFLOPS (a launch-bound shape's kernel-only
#      rate from probe contract 4 on, its eager rate before), range over median, the spread across
#      windows, launch-bound shapes with their other rate (the eager rate, the host's launch rate, beside a
#      kernel-only headline; the kernel-only rate beside an eager one) and host launch cost, each run's
#      clock at the burst best, the empty kernel replayed from a CUDA graph (contract 4); the per-call
#      method's ranges beside; then the wall times.
# Everything under $OUT/roofline-repeat.tar.gz; the summary (the ranges) printed last.
#
#   OUT=$OUT bash bench/gpu_roofline_repeat.sh          # carry .whl when the machine's torch is missing
set -uo pipefail
cd "$(dirname "$0")/.."
FINAL_OUT=${OUT:?set OUT}
W=$(mktemp -d); START=$(date +%s%N)
if compgen -G ".whl/*.whl" >/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH=/tmp/site
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
BW=${BANDWIDTH_GBPS:-4232}   # the bandwidth step's sustained median on the lent H200 (bench/RESULTS.md)
log() { echo "== [$(( ($(date +%s%N) - START) / 1000000 )) ms] $*" | tee -a "$W/summary.log"; }
pack() { tar -czf "$FINAL_OUT/roofline-repeat.tar.gz" -C "$W" . ; cp "$W/summary.log" "$FINAL_OUT/"; }
trap pack EXIT
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv >>"$W/summary.log" 2>&1

for i in 1 2 3; do
  log "roofline probe, run $i ($([ $i = 1 ] && echo 'cold: first process on this machine' || echo warm))"
  s=$(date +%s%N)
  python3 -m harness.probes.roofline --bandwidth-gbps "$BW" --dtype bf16 --check-dtypes fp8 fp16 tf32 fp32 \
    >"$W/roofline.$i.json" 2>"$W/roofline.$i.stderr"
  rc=$?
  echo "run $i: rc=$rc wall $(( ($(date +%s%N) - s) / 1000000 )) ms" | tee -a "$W/summary.log" "$W/walls.txt"
done
log "the per-call method (before issue 30), three passes"
python3 bench/roofline_causes.py --passes 3 --methods per-call --no-state >"$W/per-call.json" 2>"$W/per-call.stderr"
echo "per-call rc=$?" >>"$W/summary.log"

log "ranges"
python3 - "$W" >>"$W/summary.log" 2>&1 <<'PY'
import json, statistics, sys
from pathlib import Path
from harness.analysis import timing
from harness.analysis.roofline import figures as rf

w = Path(sys.argv[1])
def spread(v):
    return (max(v) - min(v)) / statistics.median(v) if len(v) > 1 else float("nan")
runs = []
for i in (1, 2, 3):
    try:
        runs.append(json.loads((w / f"roofline.{i}.json").read_text()))
    except (OSError, ValueError) as exc:
        print(f"run {i}: no document ({exc})")
rows, clocks = {}, []
for doc in runs:
    for dtype, view in rf.dtype_documents(doc).items():
        head = rf.headlines(view)
        rows.setdefault((dtype, "burst best"), []).append((head["burst_best_tflops"], None, None, None))
        if dtype == doc["dtype"]:
            clocks.append((head["best_shape"], (head["burst_best_window"] or {}).get("sm_clock_mhz")))
        for r in rf.burst_windows(view):
            other = r.get("eager_tflops") if r.get("rate_basis") == "kernel_only" else r.get("kernel_tflops")
            rows.setdefault((dtype, r["label"]), []).append(
                (r["burst_tflops"], r.get("window_spread"), other if r.get("launch_bound") else None,
                 r.get("host_launch_us"), r.get("rate_basis")))
print(f"{'dtype/shape':<34}{'run1':>9}{'run2':>9}{'run3':>9}{'range%':>9}{'win%max':>9}  launch-bound: "
      "headline from, other rate TF (range%), host us")
for (dtype, label), got in rows.items():
    tf = [g[0] for g in got if g[0] is not None]
    wins = [g[1] for g in got if g[1] is not None]
    other = [g[2] for g in got if g[2] is not None]
    host = [g[3] for g in got if g[3] is not None]
    basis = "/".join(sorted({g[4] for g in got if g[2] is not None and g[4]}))
    extra = (f"  {basis}, {statistics.median(other):.4g} ({spread(other) * 100:.1f}%), {statistics.median(host):.3g}"
             if other else "")
    print(f"{dtype + '/' + label:<34}" + "".join(f"{v:9.1f}" for v in tf) + " " * 9 * (3 - len(tf))
          + f"{spread(tf) * 100:9.2f}" + (f"{max(wins) * 100:9.2f}" if wins else " " * 9) + extra)
print("burst best shape and SM clock per run:", clocks)
try:
    percall = json.loads((w / "per-call.json").read_text())
    print("\nper-call method (the probe before issue 30), 3 passes in one process:")
    for key in percall["passes"][0]:
        vals = [p[key]["tflops"] for p in percall["passes"] if key in p]
        print(f"{key:<34}" + "".join(f"{v:9.1f}" for v in vals) + f"{spread(vals) * 100:9.2f}")
except (OSError, ValueError, KeyError) as exc:
    print(f"per-call method: no result ({exc})")
for doc in runs:
    print("timeline:", "; ".join(f"{e['event']} {e['at'][11:23]}" for e in doc["timeline"]))
    print("empty kernel: eager", doc["device_facts"].get("launch_floor_s"), "s, replayed from a CUDA graph",
          doc["device_facts"].get("kernel_floor_s", "not measured (before contract 4)"))
print("walls:", (w / "walls.txt").read_text().replace("\n", "; "))
print("timing rule:", timing.RULE)
PY
log "done"
cat "$W/summary.log"
