#!/usr/bin/env bash
# Issue 35 on the lent H200: one `dossier run` (every step, the 60 s stress; local runner) beside SPINNERS
# (default 16) busy host processes that never touch the GPU: `setsid` python spin loops named
# cotenant-spin, started before the run and killed in a trap whatever happens. The bundle must record
# them (host-contention.json: each by pid and name with its share, every step's window busy), name them
# beside any criterion that fails, and its GPU figures that decide the verdict still reproduce against a
# clean run (issue 31's rule). With CLEAN=1 a clean dossier is made first in the same call (same machine
# start), and the loaded one is judged against it; AGAINST=PATH judges it against another clean bundle
# too (the committed tests/fixtures/h200/final/h200-b1.tar.gz is format 5: --allow-format 5 is given).
#
#   OUT=$OUT bash bench/gpu_cpu_cotenant.sh              # carry: .whl (wheels), .gpu (tensors, keys/)
#   OUT=$OUT CLEAN=1 bash bench/gpu_cpu_cotenant.sh      # a clean dossier first, then the loaded one
#   OUT=$OUT AGAINST=tests/fixtures/h200/final/h200-b1.tar.gz bash bench/gpu_cpu_cotenant.sh   # its key:
#                                                  # AGAINST_KEY (default tests/fixtures/h200/final/h200-final.pub)
#
# Signed with the key in .gpu/keys (the private key never leaves the ignored folder; dossier.pub may be
# committed beside a fixture). Everything comes back in $OUT: the bundles, each run's output, verify,
# accept and reproduce outputs, cotenant-session.tar.gz, and summary.log, whose lines to look for are
#   loaded: dossier run rc=R wall W ms        (rc: 0 PASS/WARN, 1 FAIL, 5 INCOMPLETE)
#   loaded host: STEP busy: cotenant-spin xK in the top; ... other processes used C of N CPUs (S%): ...
#                                             (every window busy, our spinners named, the readings' cost)
#   reproduce loaded-vs-clean rc=R            the GPU figures that decide the verdict reproduced; any that
#                                             did not with host contention among its likely whys
set -uo pipefail
cd "$(dirname "$0")/.."
FINAL_OUT=${OUT:?set OUT}
SPINNERS=${SPINNERS:-16}
W=$(mktemp -d); START=$(date +%s)
if compgen -G ".whl/*.whl" >/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH=/tmp/site
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
D="python3 -m harness"
KEY=.gpu/keys/dossier.key PUB=.gpu/keys/dossier.pub
if [ ! -f "$KEY" ]; then mkdir -p .gpu/keys && $D keygen --out .gpu/keys >/dev/null 2>&1; fi
CKPT=.gpu/minilm3.safetensors
CKPT_SHA=26aeb714c5ba3a7db1bc5c6c3a7c7060a1c79bbc909a3549fc11089c0d28ce88
T=(--tensor embedding=embeddings.word_embeddings.weight
   --tensor attention_projection=encoder.layer.0.attention.self.query.weight
   --tensor mlp_projection=encoder.layer.0.intermediate.dense.weight)
log() { echo "== [$(( $(date +%s) - START )) s] $*" | tee -a "$W/summary.log"; }
PIDS=()
stop_spinners() {
  for pid in "${PIDS[@]}"; do kill -- "-$pid" 2>/dev/null; kill "$pid" 2>/dev/null; done
  PIDS=()
}
finish() {
  stop_spinners
  cp "$W"/*.tar.gz "$FINAL_OUT/" 2>/dev/null
  tar -czf "$FINAL_OUT/cotenant-session.tar.gz" -C "$W" . ; cp "$W/summary.log" "$FINAL_OUT/"
}
trap finish EXIT
trap 'exit 130' INT TERM
nproc >>"$W/summary.log"; cat /proc/loadavg >>"$W/summary.log"
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu,memory.used --format=csv >>"$W/summary.log" 2>&1

dossier() {  # NAME: one `dossier run` with the 60 s stress, then verify and accept it here
  local name=$1; local t0; t0=$(date +%s%N)
  $D run --output-dir "$W" --name "$name" --signing-key "$KEY" --runner local \
    --checkpoint "$CKPT" "${T[@]}" --file-sha256 "$CKPT_SHA" >"$W/$name.run.stdout" 2>"$W/$name.run.stderr"
  local rc=$?
  echo "$name: dossier run rc=$rc wall $(( ($(date +%s%N) - t0) / 1000000 )) ms" | tee -a "$W/summary.log"
  grep -A20 "^verdict:" "$W/$name.run.stderr" >>"$W/summary.log"
  $D verify "$W/$name.tar.gz" --key "$PUB" >"$W/$name.verify.txt" 2>&1; echo "$name: verify rc=$?" | tee -a "$W/summary.log"
  $D accept "$W/$name.tar.gz" --profile h200-sxm-141gb --key "$PUB" >"$W/$name.accept.txt" 2>&1
  echo "$name: accept rc=$?" | tee -a "$W/summary.log"; tail -6 "$W/$name.accept.txt" >>"$W/summary.log"
  python3 - "$W/$name.tar.gz" "$name" >>"$W/summary.log" 2>&1 <<'PY'
import json, sys, tarfile
from harness.analysis import contention
t, name = tarfile.open(sys.argv[1]), sys.argv[2]
c = json.load(t.extractfile("commands.json"))
print(f"{name} steps: " + ", ".join(f"{s['step']} {s.get('duration_s') or 0:.1f}" for s in c["steps"]))
for entry in json.load(t.extractfile("host-contention.json"))["steps"]:
    s = entry["summary"]
    spin = sum(p["comm"] == "cotenant-spin" for p in s["top"]) if isinstance(s["top"], list) else 0
    print(f"{name} host: {entry['step']} {s['state']}: cotenant-spin x{spin} in the top; readings "
          f"{entry['sampler_cpu_s']:.3f} s CPU over {s['window_s']:.1f} s; {contention.describe(s)}")
PY
}

reproduce() {  # THEIRS MINE LABEL [extra args]: MINE judged against THEIRS, offline
  local theirs=$1 mine=$2 label=$3; shift 3
  $D reproduce "$theirs" --key "$PUB" --against "$mine" --key-mine "$PUB" --output-dir "$W/reproduction-$label" \
    --signing-key "$KEY" "$@" >"$W/reproduce.$label.txt" 2>&1
  echo "reproduce $label rc=$?" | tee -a "$W/summary.log"
  head -40 "$W/reproduce.$label.txt" >>"$W/summary.log"
}

if [ "${CLEAN:-0}" = 1 ]; then log "a clean dossier first (same machine start)"; dossier clean; fi

log "$SPINNERS busy host processes (setsid python spin loops named cotenant-spin; the GPU untouched)"
for _ in $(seq 1 "$SPINNERS"); do
  setsid python3 -c 'open("/proc/self/comm", "w").write("cotenant-spin")
import time
t = time.monotonic()
while time.monotonic() - t < 900: pass' &
  PIDS+=($!)
done
sleep 3; cat /proc/loadavg >>"$W/summary.log"
log "a dossier beside them"
dossier loaded
stop_spinners
log "spinners stopped"; cat /proc/loadavg >>"$W/summary.log"

if [ "${CLEAN:-0}" = 1 ]; then reproduce "$W/clean.tar.gz" "$W/loaded.tar.gz" "loaded-vs-clean"; fi
if [ -n "${AGAINST:-}" ]; then
  AGAINST_KEY=${AGAINST_KEY:-tests/fixtures/h200/final/h200-final.pub}
  $D reproduce "$AGAINST" --key "$AGAINST_KEY" --against "$W/loaded.tar.gz" --key-mine "$PUB" --allow-format 5 \
    --output-dir "$W/reproduction-against" --signing-key "$KEY" >"$W/reproduce.loaded-vs-against.txt" 2>&1
  echo "reproduce loaded vs $AGAINST rc=$?" | tee -a "$W/summary.log"
  head -40 "$W/reproduce.loaded-vs-against.txt" >>"$W/summary.log"
fi
log "done"
