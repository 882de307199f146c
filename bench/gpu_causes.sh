#!/usr/bin/env bash
# Issue 30, item 1, in ONE device call: where the roofline's run-to-run variation comes from.
# On a fresh machine (the first probe process after the machine started), then warm:
#   1. the node's state as a quick check reads it (bench/capture_node_state.py), idle;
#   2. start-up costs: python, import torch, first CUDA touch, the torch-free health probe;
#   3. the bf16 roofline probe as it is (per-call timing), twice, cold then warm;
#   4. bench/roofline_causes.py: the same shapes by per-call, windowed, long-window and graph timing,
#      three passes, clocks and power per window; the clock ramp from idle; the power cap's onset;
#   5. the roofline probe once more; pageable vs pinned copies, fresh vs reused host buffers.
# Everything under $OUT/causes.tar.gz; a summary last.
#
#   OUT=$OUT bash bench/gpu_causes.sh
set -uo pipefail
cd "$(dirname "$0")/.."
W=$(mktemp -d); START=$(date +%s%N)
export PYTHONPATH="$PWD" PYTHONUNBUFFERED=1
log() { echo "== [$(( ($(date +%s%N) - START) / 1000000 )) ms] $*" | tee -a "$W/summary.log"; }
pack() { tar -czf "$OUT/causes.tar.gz" -C "$W" . ; cp "$W/summary.log" "$OUT/"; }
trap pack EXIT
log "node state, idle"
python3 bench/capture_node_state.py "$W/node-idle.json" 2>>"$W/summary.log"
nvidia-smi -q >"$W/nvidia-smi-q.idle.txt" 2>&1
nvidia-smi -q -x >"$W/nvidia-smi-q.idle.xml" 2>&1
t() { local s=$(date +%s%N); "$@"; local rc=$?; echo "$(( ($(date +%s%N) - s) / 1000000 )) ms rc=$rc: $*" | tee -a "$W/summary.log"; }
log "start-up costs"
t python3 -c "pass"
t python3 -c "import torch"
t python3 -c "import torch; torch.zeros(1, device='cuda'); torch.cuda.synchronize()"
t python3 -c "import pynvml; pynvml.nvmlInit(); pynvml.nvmlDeviceGetHandleByIndex(0)"
t python3 -m harness.probes.health -o "$W/health.json" 2>"$W/health.stderr" >/dev/null
for i in 1 2; do
  log "roofline probe as it is, run $i"
  t python3 -m harness.probes.roofline --bandwidth-gbps 4232 --no-fusion >"$W/roofline.$i.json" 2>"$W/roofline.$i.stderr"
done
log "timing methods, three passes"
t python3 bench/roofline_causes.py --passes 3 >"$W/causes.json" 2>"$W/causes.stderr"
cat "$W/causes.stderr" >>"$W/summary.log"
log "roofline probe as it is, run 3"
t python3 -m harness.probes.roofline --bandwidth-gbps 4232 --no-fusion >"$W/roofline.3.json" 2>"$W/roofline.3.stderr"
log "pageable vs pinned host copies"
python3 - >>"$W/summary.log" 2>&1 <<'PY'
import statistics, time, torch
n = 256 * 2**20 // 4
dev = torch.empty(n, device="cuda")
def h2d(src):
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record(); dev.copy_(src); e.record(); e.synchronize()
    return 4 * n / (s.elapsed_time(e) / 1e3) / 1e9
def d2h(dst):
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record(); dst.copy_(dev); e.record(); e.synchronize()
    return 4 * n / (s.elapsed_time(e) / 1e3) / 1e9
reused = torch.randn(n)
pinned = torch.randn(n).pin_memory()
rows = {
  "h2d pageable, one touched buffer x8": [h2d(reused) for _ in range(8)],
  "h2d pageable, a fresh untouched torch.empty each x6": [h2d(torch.empty(n)) for _ in range(6)],
  "h2d pageable, a fresh written buffer each x6": [h2d(torch.randn(n)) for _ in range(6)],
  "h2d pinned x8": [h2d(pinned) for _ in range(8)],
  "d2h pageable, one touched buffer x8": [d2h(reused) for _ in range(8)],
  "d2h pageable, a fresh torch.empty each x6": [d2h(torch.empty(n)) for _ in range(6)],
  "d2h pinned x8": [d2h(pinned) for _ in range(8)],
}
for k, v in rows.items():
    print(f"{k:<55} median {statistics.median(v):6.2f} GB/s, range {min(v):6.2f}-{max(v):6.2f}: {[round(x, 1) for x in v]}")
PY
log "roofline runs: per shape TFLOPS (run 1 cold, 2, 3) and clocks"
python3 - "$W" >>"$W/summary.log" 2>&1 <<'PY'
import json, sys
runs = [json.load(open(f"{sys.argv[1]}/roofline.{i}.json")) for i in (1, 2, 3)]
rows = {}
for i, r in enumerate(runs):
    for s in r["measurements"]["shapes"]:
        if s.get("status") == "measured":
            c = s.get("clocks", {})
            rows.setdefault(s["label"], []).append((s["achieved_tflops"], s["median_s"] * 1e6, c.get("sm_clock_mhz_median") if isinstance(c, dict) else None))
for label, v in rows.items():
    tf = [x[0] for x in v]
    print(f"{label:<24} " + "  ".join(f"{x[0]:8.1f} TF {x[1]:9.1f} us {x[2]} MHz" for x in v) + f"   range {(max(tf)-min(tf))/sorted(tf)[len(tf)//2]*100:.1f}%")
PY
log "node state after"
python3 bench/capture_node_state.py "$W/node-after.json" 2>>"$W/summary.log"
log "done"
