#!/usr/bin/env bash
# Issue 39's H200 "Done when", the retest part, in one device call (about 7-8 minutes):
#   1. GOOD: a clean `dossier run` (60 s stress, local runner), nothing else on the GPU; its wall time is
#      "the full dossier's time";
#   2. FAILED: the same beside a heavy co-tenant (another process running bf16 8192^3 matmuls back to
#      back, as the committed h200-contended bundle was made): its verdict must FAIL with RERUN_IDLE;
#   3. `dossier retest FAILED --against GOOD` with the co-tenant kept: must say UNRESOLVED (exit 1);
#   4. the co-tenant gone, `dossier retest FAILED --against GOOD` again: must say RESOLVED (exit 0) in
#      under 20% of GOOD's wall time.
#
#   OUT=$OUT bash bench/gpu_retest.sh
#
# GOOD runs under bench/dossier_phases.py (the parent's own phases timed: the CLI's start, the record,
# assembly, the last verification), which measures nothing differently. EVIDENCE=1 then runs
# bench/gpu_evidence.sh in the same call (the injected GEMM fault and its evidence archive).
# carry: .whl (jsonschema, jsonschema-rs, referencing, cryptography, docker wheels for python 3.12) and .gpu
# (minilm-pos3.safetensors and keys/, as bench/gpu_campaign.sh says). Everything comes
# back in $OUT/retest.tar.gz (the four bundles, the two statements, every command's output) and
# $OUT/summary.log, which ends with one line per check: PASS or FAIL and the figures.
set -uo pipefail
cd "$(dirname "$0")/.."
RESULT_OUT=${OUT:?set OUT}
W=$(mktemp -d); START=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
python3 -m compileall -q -j 0 /tmp/site harness >/dev/null 2>&1  # as pip does at install (gpu_campaign.sh)
D="python3 -m harness"
KEY=.gpu/keys/dossier.key PUB=.gpu/keys/dossier.pub
CKPT=.gpu/minilm-pos3.safetensors
CKPT_SHA=2882fcdf08bcabf9c637cc97b29c8d34d7eb5b6268503d7279e09979bef1da24
T=(--tensor embedding=embeddings.position_embeddings.weight
   --tensor attention_projection=encoder.layer.0.attention.self.query.weight
   --tensor mlp_projection=encoder.layer.0.intermediate.dense.weight)
log() { echo "== [$(( $(date +%s) - START )) s] $*" | tee -a "$W/summary.log"; }
pack() { tar -czf "$RESULT_OUT/retest.tar.gz" -C "$W" . ; cp "$W/summary.log" "$RESULT_OUT/summary.log"; }
trap pack EXIT
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu,memory.used --format=csv >>"$W/summary.log" 2>&1

dossier() {  # NAME [PHASES]: one `dossier run` with the 60 s stress; its wall time in $W/NAME.wall_ms
  local name=$1 t0 cli=$D; t0=$(date +%s%N)
  [ -n "${2:-}" ] && cli="python3 bench/dossier_phases.py --json $W/$name.phases.json --"
  nvidia-smi --query-gpu=uuid,clocks.sm,power.draw,temperature.gpu,memory.used --format=csv,noheader >>"$W/summary.log" 2>&1
  $cli run --output-dir "$W" --name "$name" --signing-key "$KEY" --runner local \
    --checkpoint "$CKPT" "${T[@]}" --file-sha256 "$CKPT_SHA" >"$W/$name.run.stdout" 2>"$W/$name.run.stderr"
  local rc=$?; ms "$t0" >"$W/$name.wall_ms"
  echo "$name: dossier run rc=$rc wall $(cat "$W/$name.wall_ms") ms" | tee -a "$W/summary.log"
  grep -A12 '^verdict:' "$W/$name.run.stderr" >>"$W/summary.log"
  python3 - "$W/$name.tar.gz" >>"$W/summary.log" 2>&1 <<'PY'
import json, sys, tarfile
c = json.load(tarfile.open(sys.argv[1]).extractfile("commands.json"))
print(f"  record {c['duration_s']:.1f} s; steps: " + ", ".join(f"{s['step']} {s.get('duration_s') or 0:.1f}" for s in c["steps"]))
PY
  cp "$W/$name.tar.gz" "$RESULT_OUT/" 2>/dev/null
}

retest() {  # NAME: `dossier retest` of the FAILED bundle against GOOD; its wall time in $W/NAME.wall_ms
  local name=$1 t0; t0=$(date +%s%N)
  $D retest "$W/failed.tar.gz" --key "$PUB" --against "$W/good.tar.gz" --output-dir "$W" --name "$name" \
    --signing-key "$KEY" --checkpoint "$CKPT" --statement "$W/$name.intoto.json" --json \
    >"$W/$name.json" 2>"$W/$name.stderr"
  local rc=$?; ms "$t0" >"$W/$name.wall_ms"; echo "$rc" >"$W/$name.rc"
  echo "$name: dossier retest rc=$rc wall $(cat "$W/$name.wall_ms") ms" | tee -a "$W/summary.log"
  tail -6 "$W/$name.stderr" >>"$W/summary.log"
}

log "GOOD: a clean dossier (its phases timed)"
dossier good phases
grep -h "^phases:" "$W/good.run.stderr" >>"$W/summary.log"
log "a co-tenant: bf16 8192^3 matmuls back to back in another process"
setsid python3 - >"$W/cotenant.log" 2>&1 <<'PY' &
import time, torch
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16); b = torch.randn_like(a); c = torch.empty_like(a)
t0 = time.time(); n = 0
while time.time() - t0 < 480:
    torch.mm(a, b, out=c); n += 1
    if n % 50 == 0: torch.cuda.synchronize()
print("co-tenant GEMMs:", n)
PY
COTENANT=$!; sleep 8
log "FAILED: a dossier beside the co-tenant"
dossier failed
log "retest with the co-tenant kept"
retest kept
kill -- -"$COTENANT" 2>/dev/null || kill "$COTENANT" 2>/dev/null; wait "$COTENANT" 2>/dev/null; sleep 3
cat "$W/cotenant.log" >>"$W/summary.log"
log "retest with the co-tenant gone"
retest gone
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu,memory.used --format=csv >>"$W/summary.log" 2>&1

log "checks"
python3 - "$W" >>"$W/summary.log" 2>&1 <<'PY'
import json, sys, tarfile
from pathlib import Path
w = Path(sys.argv[1])
def wall(name): return int((w / f"{name}.wall_ms").read_text()) / 1000
def said(name):
    text = (w / f"{name}.json").read_text()
    return json.loads(text[text.index("{"):]) if "{" in text else {}
failed_report = tarfile.open(w / "failed.tar.gz").extractfile("report.md").read().decode()
verdict = failed_report.split("## Criteria", 1)[0]
checks = [
    ("FAILED's verdict is FAIL with RERUN_IDLE", "## Verdict: FAIL" in verdict and "action: RERUN_IDLE" in verdict,
     " | ".join(l for l in verdict.splitlines() if l.startswith("- ")))]
kept, gone = said("kept"), said("gone")
checks.append(("retest beside the co-tenant: UNRESOLVED (exit 1)",
               kept.get("verdict") == "UNRESOLVED" and (w / "kept.rc").read_text().strip() == "1",
               f"{kept.get('verdict')}: {kept.get('why')}; action {kept.get('action')}"))
share = wall("gone") / wall("good")
checks.append(("retest with the co-tenant gone: RESOLVED (exit 0)",
               gone.get("verdict") == "RESOLVED" and (w / "gone.rc").read_text().strip() == "0",
               f"{gone.get('verdict')}: {gone.get('why')}; steps {gone.get('steps')}"))
checks.append((f"the RESOLVED retest under 20% of the full dossier's time", share < 0.20,
               f"retest {wall('gone'):.1f} s / dossier {wall('good'):.1f} s = {share:.1%} "
               f"(recorded runs: {gone.get('durations_s')})"))
for what, ok, figures in checks:
    print(f"{'PASS' if ok else 'FAIL'} {what}: {figures}")
PY
log "done"
if [ "${EVIDENCE:-}" = 1 ]; then
  pack
  mkdir -p "$W/evidence"
  log "the injected GEMM fault and its evidence (bench/gpu_evidence.sh)"
  OUT="$W/evidence" KEYS=.gpu/keys timeout "${EVIDENCE_S:-200}" bash bench/gpu_evidence.sh >"$W/evidence/console.log" 2>&1
  log "evidence rc=$?"; cat "$W/evidence/session.log" >>"$W/summary.log" 2>/dev/null
  cp "$W"/evidence/*.tar.gz "$RESULT_OUT/" 2>/dev/null
fi
