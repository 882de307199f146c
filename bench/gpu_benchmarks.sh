#!/usr/bin/env bash
# Every GPU-side check in ONE device call (device time is scarce): health idle and under load,
# bandwidth vs BabelStream, roofline vs mamf-finder, the one-GPU all-reduce limitation.
# Raw outputs are packed into $OUT/session.tar.gz (the device tool returns at most 8 files);
# summaries are printed last. Run from the repository root on the GPU machine:
#
#   OUT=$OUT bash bench/gpu_benchmarks.sh      # carry: .whl .peers
#
# .whl holds wheels the GPU image lacks (jsonschema, referencing, cryptography, docker...), made
# as the device README says; .peers holds BabelStream and mamf-finder.py (never committed).
set -uo pipefail
cd "$(dirname "$0")/.."
FINAL_OUT=${OUT:?set OUT}
WORK=$(mktemp -d)
BUDGET_S=${BUDGET_S:-540}
START=$(date +%s)
if compgen -G ".whl/*.whl" >/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH=/tmp/site
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
step() { echo "== [$(( $(date +%s) - START )) s] $*" | tee -a "$WORK/session.log"; }
left() { echo $(( BUDGET_S - ($(date +%s) - START) )); }
pack() { tar -czf "$FINAL_OUT/session.tar.gz" -C "$WORK" . ; cp "$WORK/session.log" "$FINAL_OUT/"; }
trap pack EXIT

step "health idle"
python3 -m harness.cli health -o "$WORK/health.idle.json" 2>"$WORK/health.idle.stderr"; echo "rc=$?" | tee -a "$WORK/session.log"
step "health idle again, timed"
/usr/bin/time -f 'health wall %e s' -a -o "$WORK/session.log" python3 -m harness.cli health -o "$WORK/health.idle2.json" 2>/dev/null

step "bandwidth vs BabelStream"
mkdir -p "$WORK/bandwidth"
OUT="$WORK/bandwidth" timeout "$(left)" bash bench/bandwidth_vs_babelstream.sh >"$WORK/bandwidth/run.log" 2>&1
tail -30 "$WORK/bandwidth/run.log" >>"$WORK/session.log"
BW=$(python3 -c "
import json, sys
from harness.analysis.bandwidth import headlines
h = headlines(json.load(open('$WORK/bandwidth/bandwidth-copy.json')))
m = sorted(h['repeat_medians_gbps']); print(round(m[len(m)//2], 1))" 2>>"$WORK/session.log" || echo 4254)
step "sustained copy median for the roofline: $BW GB/s"

step "roofline vs mamf-finder"
mkdir -p "$WORK/roofline"
OUT="$WORK/roofline" BANDWIDTH_GBPS="$BW" timeout "$(left)" bash bench/roofline_vs_mamf.sh >"$WORK/roofline/run.log" 2>&1
cat "$WORK/roofline/summary.md" >>"$WORK/session.log" 2>/dev/null

step "all-reduce on this host"
timeout 120 python3 -m harness.cli allreduce --backend nccl -o "$WORK/allreduce.json" 2>"$WORK/allreduce.stderr"; echo "rc=$?" | tee -a "$WORK/session.log"

step "health under load"
python3 -m harness.cli health --under-load 8 -o "$WORK/health.load.json" 2>"$WORK/health.load.stderr"; echo "rc=$?" | tee -a "$WORK/session.log"
python3 -m harness.cli health-diff "$WORK/health.idle.json" "$WORK/health.load.json" -o "$WORK/health-diff.json" >>"$WORK/session.log" 2>&1; echo "rc=$?" | tee -a "$WORK/session.log"
step "done"
cat "$WORK/session.log"
