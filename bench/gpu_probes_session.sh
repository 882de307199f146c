#!/usr/bin/env bash
# The stress and transfer probes beside their established tools in ONE device call (device time is
# scarce): bench/transfer_vs_nvbandwidth.sh, then bench/stress_vs_gpu_burn.sh with 45 s runs.
# Everything comes back packed in $OUT/all.tar.gz, the two summaries beside it.
#
#   OUT=$OUT bash bench/gpu_probes_session.sh        # carry: .peers .whl
set -uo pipefail
cd "$(dirname "$0")/.."
FINAL_OUT=${OUT:?set OUT}
WORK=$(mktemp -d)
START=$(date +%s)
pack() {
  tar -czf "$FINAL_OUT/all.tar.gz" -C "$WORK" . 2>/dev/null
  cp "$WORK/transfer/comparison.txt" "$FINAL_OUT/transfer-comparison.txt" 2>/dev/null
  cp "$WORK/stress/summary.md" "$FINAL_OUT/stress-summary.md" 2>/dev/null
  cp "$WORK/stress/session.log" "$FINAL_OUT/stress-session.log" 2>/dev/null
}
trap pack EXIT
mkdir -p "$WORK/transfer" "$WORK/stress"
echo "== [0 s] transfer vs nvbandwidth"
OUT="$WORK/transfer" timeout 230 bash bench/transfer_vs_nvbandwidth.sh > "$WORK/transfer/console.log" 2>&1
echo "transfer bench rc=$? after $(( $(date +%s) - START )) s"
tail -40 "$WORK/transfer/console.log"
LEFT=$(( 560 - ($(date +%s) - START) ))
echo "== [$(( $(date +%s) - START )) s] stress vs gpu-burn, budget $LEFT s"
OUT="$WORK/stress" BUDGET_S=$(( LEFT - 15 )) RUN_S=${RUN_S:-45} SHORT_S=${SHORT_S:-20} COOL_S=${COOL_S:-12} \
  timeout "$LEFT" bash bench/stress_vs_gpu_burn.sh > "$WORK/stress/console.log" 2>&1
echo "stress bench rc=$? after $(( $(date +%s) - START )) s"
cat "$WORK/stress/summary.md" 2>/dev/null || tail -30 "$WORK/stress/console.log"
