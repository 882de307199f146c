#!/usr/bin/env bash
# One call of the false-alarm campaign (issue 34): RUNS clean `dossier run`s on the lent GPU, then,
# with COTENANT set, one more beside a co-tenant. Each call is one machine start; the campaign is many
# calls, judged pair by pair on the CPU machine afterwards (bench/campaign.py).
#
#   CALL=c1 RUNS=3 COTENANT=light OUT=$OUT bash bench/gpu_campaign.sh
#   CALL=c5 RUNS=3 COTENANT="heavy light" RETEST=light PHASES=1 OUT=$OUT bash bench/gpu_campaign.sh
#
# COTENANT:
#   light  four 4096^3 bf16 matmuls every 20 ms in another process on the same GPU (about 5% of it: the
#          issue measured 5.6% of the sustained GEMM rate with this load on 793590f)
#   heavy  8192^3 bf16 matmuls back to back in another process on the same GPU
#   cpu    16 busy host processes (pure Python loops), the GPU untouched
# Each co-tenant's dossier is CALL-KIND. RETEST="KIND ...": `dossier retest CALL-KIND --against CALL-r1`
# with the co-tenant kept, then once it is gone (issue 39: the retest of only what failed, judged against the
# same start's clean run); RETEST=1: every co-tenant's, once gone. CALL-KIND-retest-WHEN.tar.gz and its
# statement .intoto.json come back too. PHASES=1: the first clean run under bench/dossier_phases.py (the
# parent's own phases timed, nothing measured differently), its phases in CALL.log.
# carry: .whl (jsonschema, referencing, jsonschema-specifications, rpds-py, cryptography, cffi, pycparser,
# docker, orjson: python 3.12 wheels) and .gpu (keys/dossier.key, the campaign's signing key, and
# minilm-pos3.safetensors: all-MiniLM-L6-v2's position embeddings, layer 0's query projection and its
# MLP up-projection, sha256 2882fcdf..., 3.7 MB: the word-embedding matrix the earlier H200 bundles
# used is 47 MB, and with it the working tree no longer fits the device tool's 64 MiB carry).
# Back in $OUT: CALL-rN.tar.gz (each bundle, signed), CALL-cotenant.tar.gz, CALL.log (per run: rc, wall,
# the GPU's UUID and state before it, each step's time).
set -uo pipefail
cd "$(dirname "$0")/.."
CALL=${CALL:?set CALL, e.g. c1 (bundle names: CALL-r1 ...)}
RUNS=${RUNS:-3}
COTENANT=${COTENANT:-}
RETEST=${RETEST:-}
DEST=${OUT:?set OUT}
W=$(mktemp -d)
START=$(date +%s)
LOG="$DEST/$CALL.log"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
# As an installed package would be (pip compiles bytecode by default), once before the runs: a
# PYTHONDONTWRITEBYTECODE machine otherwise compiles the harness again in every probe process.
python3 -m compileall -q -j 0 /tmp/site harness >/dev/null 2>&1
D="python3 -m harness"
KEY=.gpu/keys/dossier.key PUB=.gpu/keys/dossier.pub
CKPT=.gpu/minilm-pos3.safetensors
CKPT_SHA=2882fcdf08bcabf9c637cc97b29c8d34d7eb5b6268503d7279e09979bef1da24
T=(--tensor embedding=embeddings.position_embeddings.weight
   --tensor attention_projection=encoder.layer.0.attention.self.query.weight
   --tensor mlp_projection=encoder.layer.0.intermediate.dense.weight)
log() { echo "== [$(( $(date +%s) - START )) s] $*" | tee -a "$LOG"; }

log "call $CALL: $(date -u +%FT%TZ), $(uname -r), $(nproc) cores, PYTHONDONTWRITEBYTECODE=${PYTHONDONTWRITEBYTECODE:-unset}"
nvidia-smi --query-gpu=name,uuid,serial,driver_version,clocks.sm,power.draw,temperature.gpu,memory.used \
  --format=csv >>"$LOG" 2>&1

dossier() {  # NAME [PHASES]: one `dossier run` with the 60 s stress, every step on the GPU, the local runner
  local name=$1 t0 rc cli=$D
  [ -n "${2:-}" ] && cli="python3 bench/dossier_phases.py --json $W/$name.phases.json --"
  nvidia-smi --query-gpu=uuid,clocks.sm,power.draw,temperature.gpu,memory.used --format=csv,noheader >>"$LOG" 2>&1
  t0=$(date +%s%N)
  $cli run --output-dir "$W" --name "$name" --signing-key "$KEY" --runner local \
    --checkpoint "$CKPT" "${T[@]}" --file-sha256 "$CKPT_SHA" >"$W/$name.stdout" 2>"$W/$name.stderr"
  rc=$?
  log "$name: dossier run rc=$rc wall $(( ($(date +%s%N) - t0) / 1000000 )) ms"
  tail -12 "$W/$name.stdout" >>"$LOG"
  [ "$rc" -ne 0 ] && tail -20 "$W/$name.stderr" >>"$LOG"
  python3 - "$W/$name.tar.gz" >>"$LOG" 2>&1 <<'PY'
import json, sys, tarfile
c = json.load(tarfile.open(sys.argv[1]).extractfile("commands.json"))
print(f"  record {c['duration_s']:.1f} s; steps: " + ", ".join(f"{s['step']} {s.get('duration_s') or 0:.1f}" for s in c["steps"]))
PY
  [ -n "${2:-}" ] && grep -h "^phases:" "$W/$name.stderr" >>"$LOG"
  cp "$W/$name.tar.gz" "$DEST/" 2>>"$LOG"
}

for i in $(seq 1 "$RUNS"); do
  log "clean dossier $CALL-r$i"
  if [ "$i" = 1 ] && [ -n "${PHASES:-}" ]; then dossier "$CALL-r$i" phases; else dossier "$CALL-r$i"; fi
done

start_cotenant() {  # KIND: the co-tenant's processes, their pids in PIDS
  case "$1" in
    light|heavy)
      setsid python3 - "$1" >"$W/cotenant-$1.log" 2>&1 <<'PY' &
import sys, time, torch
light = sys.argv[1] == "light"
n = 4096 if light else 8192
a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16); b = torch.randn_like(a); c = torch.empty_like(a)
t0 = time.time(); calls = 0; tick = t0
while time.time() - t0 < 400:
    if light:
        for _ in range(4):
            torch.mm(a, b, out=c)
        torch.cuda.synchronize(); calls += 4
        tick += 0.020
        time.sleep(max(0.0, tick - time.time()))
    else:
        torch.mm(a, b, out=c); calls += 1
        if calls % 50 == 0:
            torch.cuda.synchronize()
torch.cuda.synchronize()
print(f"co-tenant {sys.argv[1]}: {calls} matmuls of {n}^3 bf16 in {time.time() - t0:.1f} s")
PY
      PIDS=$! ;;
    cpu)
      PIDS=""
      for _ in $(seq 1 16); do setsid python3 -c 'import time; t=time.time()
while time.time()-t<400: pass' & PIDS="$PIDS $!"; done ;;
    *) log "unknown COTENANT $1"; exit 2 ;;
  esac
}

retest() {  # KIND WHEN: `dossier retest CALL-KIND --against CALL-r1`, WHEN kept or gone (the co-tenant)
  local kind=$1 when=$2 t0 rc
  [ -f "$W/$CALL-$kind.tar.gz" ] && [ -f "$W/$CALL-r1.tar.gz" ] || { log "no $CALL-$kind or $CALL-r1: no retest"; return; }
  log "retest $CALL-$kind against $CALL-r1, the co-tenant $when"
  t0=$(date +%s%N)
  $D retest "$W/$CALL-$kind.tar.gz" --key "$PUB" --against "$W/$CALL-r1.tar.gz" \
    --output-dir "$W" --name "$CALL-$kind-retest-$when" --signing-key "$KEY" --checkpoint "$CKPT" \
    >"$W/retest-$kind-$when.stdout" 2>"$W/retest-$kind-$when.stderr"
  rc=$?
  log "$CALL-$kind-retest-$when: dossier retest rc=$rc wall $(( ($(date +%s%N) - t0) / 1000000 )) ms"
  tail -15 "$W/retest-$kind-$when.stdout" >>"$LOG"; tail -15 "$W/retest-$kind-$when.stderr" >>"$LOG"
  cp "$W/$CALL-$kind-retest-$when.tar.gz" "$W/$CALL-$kind-retest-$when.intoto.json" "$DEST/" 2>>"$LOG"
}

# COTENANT: one or more of light, heavy, cpu, each its own dossier (CALL-KIND) beside that load; RETEST
# names those retested (kept: while the load still runs, then gone: once it has ended); RETEST=1 retests
# every one, once gone. LATEST_S: a co-tenant whose dossier would start after this many seconds of the call
# is left out (said in the log), so that the call ends within the device tool's 600 s.
for kind in $COTENANT; do
  if [ "$(( $(date +%s) - START ))" -gt "${LATEST_S:-430}" ]; then log "co-tenant $kind left out: past ${LATEST_S:-430} s"; continue; fi
  log "co-tenant: $kind"
  start_cotenant "$kind"
  sleep 8
  uptime >>"$LOG"
  dossier "$CALL-$kind"
  case " $RETEST " in *" $kind "*) retest "$kind" kept ;; esac
  for p in $PIDS; do kill -- -"$p" 2>/dev/null || kill "$p" 2>/dev/null; done
  sleep 2; cat "$W/cotenant-$kind.log" >>"$LOG" 2>/dev/null
  case " $RETEST " in *" $kind "*|" 1 ") retest "$kind" gone ;; esac
done
log "done"
