#!/usr/bin/env bash
# The full dossier on the GPU machine in ONE device call: `dossier run` (every step, local runner,
# there is no Docker engine there), then verify and accept it there, plus the cross-checks that
# need the GPU: precision on CUDA vs CPU (same numbers), the bandwidth read kernel, and the time
# `dossier health` takes. Outputs packed into $OUT/session.tar.gz; a summary printed last.
#
#   OUT=$OUT bash bench/gpu_dossier.sh        # carry: .whl (wheels) .gpu (checkpoint tensors)
#
# .gpu/minilm3.safetensors holds all-MiniLM-L6-v2's three measured tensors (same bytes and
# per-tensor sha256 as model.safetensors; the whole 90.9 MB file is over the device tool's carry
# limit), so the precision step gets --checkpoint with its own --file-sha256.
set -uo pipefail
cd "$(dirname "$0")/.."
FINAL_OUT=${OUT:?set OUT}
WORK=$(mktemp -d)
START=$(date +%s)
if compgen -G ".whl/*.whl" >/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH=/tmp/site
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
D="python3 -m harness"
step() { echo "== [$(( $(date +%s) - START )) s] $*" | tee -a "$WORK/session.log"; }
pack() { tar -czf "$FINAL_OUT/session.tar.gz" -C "$WORK" . ; cp "$WORK/session.log" "$FINAL_OUT/"; }
trap pack EXIT
CKPT=.gpu/minilm3.safetensors
CKPT_SHA=${CKPT_SHA:-26aeb714c5ba3a7db1bc5c6c3a7c7060a1c79bbc909a3549fc11089c0d28ce88}
T="--tensor embedding=embeddings.word_embeddings.weight --tensor attention_projection=encoder.layer.0.attention.self.query.weight --tensor mlp_projection=encoder.layer.0.intermediate.dense.weight"

step "keygen"
$D keygen --out "$WORK/keys" >>"$WORK/session.log" 2>&1
step "dossier run (every step)"
t0=$(date +%s%N)
$D run --output-dir "$WORK" --name h200-dossier --key "$WORK/keys/dossier.key" --runner local \
  --checkpoint "$CKPT" $T --file-sha256 "$CKPT_SHA" >"$WORK/run.stdout" 2>"$WORK/run.stderr"
echo "run rc=$? wall_s=$(( ($(date +%s%N) - t0) / 1000000 ))e-3" | tee -a "$WORK/session.log"
tail -25 "$WORK/run.stderr" >>"$WORK/session.log"
step "verify"
$D verify "$WORK/h200-dossier.tar.gz" --key "$WORK/keys/dossier.pub" >"$WORK/verify.txt" 2>&1; echo "verify rc=$?" | tee -a "$WORK/session.log"
tail -3 "$WORK/verify.txt" >>"$WORK/session.log"
step "report.md size and longest line outside tables (issue 18: under 20 KB, at most 200)"
python3 - "$WORK/h200-dossier.tar.gz" 2>&1 <<'PY' | tee -a "$WORK/session.log"
import sys, tarfile
report = tarfile.open(sys.argv[1]).extractfile("report.md").read()
lines = [line for line in report.decode().splitlines() if not line.startswith("|")]
print(f"report.md: {len(report)} bytes, longest line outside tables {max(map(len, lines))} characters")
PY
step "accept against the H200 SXM profile"
$D accept "$WORK/h200-dossier.tar.gz" --profile h200-sxm-141gb --key "$WORK/keys/dossier.pub" \
  --signing-key "$WORK/keys/dossier.key" --junit "$WORK/accept.junit.xml" --attestation "$WORK/accept.intoto.json" \
  --summary "$WORK/accept.md" --html "$WORK/accept.html" >"$WORK/accept.txt" 2>&1; echo "accept rc=$?" | tee -a "$WORK/session.log"
cat "$WORK/accept.txt" >>"$WORK/session.log"
step "harness overhead from the bundle's own records"
python3 - "$WORK/h200-dossier.tar.gz" "$WORK/run.stderr" >>"$WORK/session.log" 2>&1 <<'PY'
import json, sys, tarfile, datetime as dt
t = tarfile.open(sys.argv[1])
c = json.load(t.extractfile("commands.json"))
steps = c.get("steps", c) if isinstance(c, dict) else c
def ts(s): return dt.datetime.fromisoformat(s.replace("Z", "+00:00"))
total = 0.0
for s in steps if isinstance(steps, list) else steps.values():
    if isinstance(s, dict) and s.get("started_at") and s.get("finished_at"):
        d = (ts(s["finished_at"]) - ts(s["started_at"])).total_seconds(); total += d
        print(f"  {s.get('step', s.get('probe'))}: {d:.2f} s")
print(f"sum of probe processes: {total:.2f} s")
PY
step "precision probe on CUDA and on CPU (same numbers?)"
for d in cuda cpu; do python3 -m harness.probes.precision --file "$CKPT" $T --device $d >"$WORK/precision.$d.json" 2>"$WORK/precision.$d.stderr"; echo "precision $d rc=$?" | tee -a "$WORK/session.log"; done
python3 -c "
import json; from harness.analysis.precision import compare_measurements as c
print('precision cuda vs cpu:', c(json.load(open('$WORK/precision.cuda.json')), json.load(open('$WORK/precision.cpu.json'))) or 'identical')" >>"$WORK/session.log" 2>&1
step "bandwidth read kernel"
python3 -m harness.probes.bandwidth --kernel read --repeats 3 >"$WORK/bandwidth-read.json" 2>"$WORK/bandwidth-read.stderr"; echo "read rc=$?" | tee -a "$WORK/session.log"
python3 -c "
import json; from harness.analysis.bandwidth import headlines as h
x = h(json.load(open('$WORK/bandwidth-read.json'))); print('read plateau', x['plateau_gbps'], x['plateau_sizes_mib'], 'repeats', x['repeat_medians_gbps'], 'spread', x['repeat_spread'])" >>"$WORK/session.log" 2>&1
step "dossier health wall time, three times"
for i in 1 2 3; do /usr/bin/time -f "health wall %e s" -a -o "$WORK/session.log" $D health -o "$WORK/health.$i.json" 2>/dev/null; done
step "done"
cat "$WORK/session.log"
