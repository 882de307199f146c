#!/usr/bin/env bash
# The session's closing measurements on the lent H200, in two device calls on two machine starts
# (issue 30: five clean dossiers over at least two machine starts; issue 23: a clean pair and a
# contended pair; issue 27: the dossier's time and where it goes; issue 25: `dossier check` time;
# issue 24: the result digests). Every bundle is signed with ONE key carried in .gpu/keys (the private
# key never leaves the ignored folder; only dossier.pub is committed beside the fixtures).
#
#   PHASE=A OUT=$OUT bash bench/gpu_final.sh   # fresh machine: 3 clean dossiers, check speed, digests
#   PHASE=B OUT=$OUT bash bench/gpu_final.sh   # 2nd machine start: 2 clean dossiers, 1 under a co-tenant,
#                                              # reproduce on the pairs
# carry: .whl (jsonschema, referencing, cryptography, docker wheels for python 3.12) and .gpu (the
# three MiniLM tensors, minilm3.safetensors, sha256 26aeb714...; keys/). Everything comes back in
# $OUT/final-$PHASE.tar.gz; each dossier's bundle, run output, verify and accept outputs; a summary.
set -uo pipefail
cd "$(dirname "$0")/.."
PHASE=${PHASE:?set PHASE=A or B}
FINAL_OUT=${OUT:?set OUT}
W=$(mktemp -d); START=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
D="python3 -m harness"
KEY=.gpu/keys/dossier.key PUB=.gpu/keys/dossier.pub
CKPT=.gpu/minilm3.safetensors
CKPT_SHA=26aeb714c5ba3a7db1bc5c6c3a7c7060a1c79bbc909a3549fc11089c0d28ce88
T=(--tensor embedding=embeddings.word_embeddings.weight
   --tensor attention_projection=encoder.layer.0.attention.self.query.weight
   --tensor mlp_projection=encoder.layer.0.intermediate.dense.weight)
log() { echo "== [$(( $(date +%s) - START )) s] $*" | tee -a "$W/summary.log"; }
pack() { tar -czf "$FINAL_OUT/final-$PHASE.tar.gz" -C "$W" . ; cp "$W/summary.log" "$FINAL_OUT/summary-$PHASE.log"; }
trap pack EXIT
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu,memory.used --format=csv >>"$W/summary.log" 2>&1

dossier() {  # NAME: one `dossier run` with the 60 s stress, then verify and accept it here
  local name=$1; local t0; t0=$(date +%s%N)
  $D run --output-dir "$W" --name "$name" --signing-key "$KEY" --runner local \
    --checkpoint "$CKPT" "${T[@]}" --file-sha256 "$CKPT_SHA" >"$W/$name.run.stdout" 2>"$W/$name.run.stderr"
  local rc=$?
  echo "$name: dossier run rc=$rc wall $(( ($(date +%s%N) - t0) / 1000000 )) ms" | tee -a "$W/summary.log" "$W/walls.txt"
  tail -20 "$W/$name.run.stdout" >>"$W/summary.log"
  $D verify "$W/$name.tar.gz" --key "$PUB" >"$W/$name.verify.txt" 2>&1; echo "$name: verify rc=$?" | tee -a "$W/summary.log"
  $D accept "$W/$name.tar.gz" --profile h200-sxm-141gb --key "$PUB" >"$W/$name.accept.txt" 2>&1
  echo "$name: accept rc=$?" | tee -a "$W/summary.log"; tail -4 "$W/$name.accept.txt" >>"$W/summary.log"
  python3 - "$W/$name.tar.gz" >>"$W/summary.log" 2>&1 <<'PY'
import json, sys, tarfile
t = tarfile.open(sys.argv[1])
c = json.load(t.extractfile("commands.json"))
print("  steps: " + ", ".join(f"{s['step']} {s.get('duration_s') or 0:.1f}" for s in c["steps"]))
report = t.extractfile("report.md").read()
print(f"  report.md {len(report)} bytes")
PY
}

if [ "$PHASE" = A ]; then
  for i in 1 2 3; do log "clean dossier a$i"; dossier "h200-a$i"; done
  log "dossier check beside dossier health (issue 25)"
  mkdir -p "$W/check"; OUT="$W/check" SKU=h200-sxm-141gb bash bench/check_speed.sh >>"$W/summary.log" 2>&1
  log "result digests (issue 24)"
  OUT="$W" python3 bench/result_digests.py >"$W/digests.json" 2>"$W/digests.stderr"; echo "digests rc=$?" >>"$W/summary.log"
  python3 -c "import json; d=json.load(open('$W/digests.json')); print(json.dumps({k: d[k] for k in d if k != 'runs'}, default=str)[:1500])" >>"$W/summary.log" 2>&1
else
  for i in 1 2; do log "clean dossier b$i"; dossier "h200-b$i"; done
  log "a co-tenant: bf16 8192^3 matmuls back to back in another process, then a dossier beside it"
  python3 - >"$W/cotenant.log" 2>&1 <<'PY' &
import time, torch
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16); b = torch.randn_like(a); c = torch.empty_like(a)
t0 = time.time(); n = 0
while time.time() - t0 < 420:
    torch.mm(a, b, out=c); n += 1
    if n % 50 == 0: torch.cuda.synchronize()
print("co-tenant GEMMs:", n)
PY
  COTENANT=$!; sleep 8
  log "dossier check --no-gpu-processes beside the co-tenant (a prolog's question: is the GPU free?)"
  $D check --expect-gpus 1 --sku h200-sxm-141gb --no-gpu-processes --json --save-reading "$W/check-contended.reading.json" \
    >"$W/check-contended.json" 2>"$W/check-contended.err"; echo "check contended rc=$?" | tee -a "$W/summary.log"
  tail -5 "$W/check-contended.err" >>"$W/summary.log"
  dossier "h200-contended"
  kill "$COTENANT" 2>/dev/null; wait "$COTENANT" 2>/dev/null
  log "reproduce: b1 against b2 (clean pair, same machine start) and the contended run against b1"
  $D reproduce "$W/h200-b1.tar.gz" --key "$PUB" --against "$W/h200-b2.tar.gz" --key-mine "$PUB" \
    >"$W/reproduce.clean.txt" 2>&1; echo "reproduce clean rc=$?" | tee -a "$W/summary.log"
  $D reproduce "$W/h200-b1.tar.gz" --key "$PUB" --against "$W/h200-contended.tar.gz" --key-mine "$PUB" \
    >"$W/reproduce.contended.txt" 2>&1; echo "reproduce contended rc=$?" | tee -a "$W/summary.log"
  head -30 "$W/reproduce.contended.txt" >>"$W/summary.log"
fi
log "done"
cat "$W/walls.txt" >>"$W/summary.log"
