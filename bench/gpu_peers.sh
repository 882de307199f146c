#!/usr/bin/env bash
# Every peer of issue 40's table beside our probe in ONE device call (one machine start), each pair run
# back to back on the same GPU: BabelStream Copy and Dot against the bandwidth probe's copy and read
# kernels (bench/bandwidth_vs_babelstream.sh, KERNELS="copy read"); mamf-finder against the roofline on
# bf16 4096x4096x8192 (bench/roofline_vs_mamf.sh); nvbandwidth's copy-engine tests against the transfer
# probe (bench/transfer_vs_nvbandwidth.sh); gpu-burn -tc 45 against the stress probe's tf32 45 s
# (bench/stress_vs_gpu_burn.sh, WITH_BF16=0). Each part's own summary is printed last, in that order.
#
#   OUT=$OUT bash bench/gpu_peers.sh      # carry: .whl .peers (BabelStream, mamf-finder.py, nvbandwidth
#                                         # and its boost .debs, gpu-burn: never committed)
set -uo pipefail
cd "$(dirname "$0")/.."
FINAL_OUT=${OUT:?set OUT}
W=$(mktemp -d)
START=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
log() { echo "== [$(( $(date +%s) - START )) s] $*" | tee -a "$W/peers.log"; }
pack() {
  tar -czf "$FINAL_OUT/peers.tar.gz" -C "$W" . 2>/dev/null
  cp "$W/peers.log" "$FINAL_OUT/" 2>/dev/null
}
trap pack EXIT
log "peers: $(date -u +%FT%TZ); $(nvidia-smi --query-gpu=name,uuid,driver_version --format=csv,noheader 2>&1)"
for f in BabelStream gpu-burn nvbandwidth mamf-finder; do echo "$f commit: $(cat .peers/$f.commit 2>/dev/null)" >>"$W/peers.log"; done

log "bandwidth vs BabelStream"
mkdir -p "$W/bandwidth"
OUT="$W/bandwidth" KERNELS="copy read" timeout 170 bash bench/bandwidth_vs_babelstream.sh >"$W/bandwidth/console.log" 2>&1
log "rc=$?"
BW=$(python3 -c "
import json
from harness.analysis.bandwidth import headlines
h = headlines(json.load(open('$W/bandwidth/bandwidth-copy.json')))
m = sorted(h['repeat_medians_gbps']); print(round(m[len(m)//2], 1))" 2>>"$W/peers.log" || echo 4254)

log "roofline vs mamf-finder (memory roof $BW GB/s, our copy's sustained median)"
mkdir -p "$W/roofline"
OUT="$W/roofline" BANDWIDTH_GBPS="$BW" M_SIZES=4096 N_SIZES=4096 K_SIZES=8192 timeout 150 bash bench/roofline_vs_mamf.sh \
  >"$W/roofline/console.log" 2>&1
log "rc=$?"

log "transfer vs nvbandwidth"
mkdir -p "$W/transfer"
OUT="$W/transfer" timeout 170 bash bench/transfer_vs_nvbandwidth.sh >"$W/transfer/console.log" 2>&1
log "rc=$?"

LEFT=$(( 585 - ($(date +%s) - START) ))
log "stress vs gpu-burn, $LEFT s left"
mkdir -p "$W/stress"
OUT="$W/stress" BUDGET_S=$(( LEFT - 10 )) RUN_S=45 COOL_S=12 WITH_BF16=0 timeout "$LEFT" bash bench/stress_vs_gpu_burn.sh \
  >"$W/stress/console.log" 2>&1
log "rc=$?"

for part in bandwidth roofline transfer stress; do
  echo "### $part" >>"$W/peers.log"
  case $part in
    bandwidth) tail -25 "$W/bandwidth/console.log" ;;
    roofline) cat "$W/roofline/summary.md" ;;
    transfer) cat "$W/transfer/comparison.txt" ;;
    stress) cat "$W/stress/summary.md" ;;
  esac >>"$W/peers.log" 2>&1
done
log "done"
cat "$W/peers.log"
