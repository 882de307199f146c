#!/usr/bin/env bash
# Three clean `dossier run`s (the 60 s stress included) in ONE device call, and where each run's wall time
# goes, from the bundles' own records (issue 40: each under 100 s on one H200). Then: each bundle verified,
# the figures the changes could have disturbed set beside the committed H200 runs' (bandwidth plateau,
# roofline bursts, pinned copies, stress), the precision figures compared bit for bit with a committed
# H200 bundle's (computed there on CUDA; here on the CPU beside the stress step).
#
#   OUT=$OUT bash bench/gpu_dossier_speed.sh     # carry: .whl (wheels for python 3.12) .gpu (minilm3.safetensors)
#
# As pip installs a package, the wheels' and the harness's bytecode is compiled once before the runs
# (pip install --no-compile then compileall; `dossier run` compiles nothing itself), and the time that saves
# the CLI is measured beside. Comes back: $OUT/speed.tar.gz (bundles, run logs, the step tables as JSON),
# $OUT/speed.log (the summary, the step tables last).
# Look for: `run N: rc=R wall W s` (goal: each W < 100), the `whole run` table (before 1st step, record,
# after record), `how` (precision: beside; bandwidth, roofline, transfer, stress: ahead), the figure lines
# beside the committed runs, and `precision vs committed H200 (CUDA): identical`.
set -uo pipefail
cd "$(dirname "$0")/.."
FINAL_OUT=${OUT:?set OUT}
RUNS=${RUNS:-3}
W=$(mktemp -d); START=$(date +%s)
if compgen -G ".whl/*.whl" >/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH=/tmp/site
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
D="python3 -m harness"
CKPT=.gpu/minilm3.safetensors
CKPT_SHA=${CKPT_SHA:-26aeb714c5ba3a7db1bc5c6c3a7c7060a1c79bbc909a3549fc11089c0d28ce88}
T=(--tensor embedding=embeddings.word_embeddings.weight
   --tensor attention_projection=encoder.layer.0.attention.self.query.weight
   --tensor mlp_projection=encoder.layer.0.intermediate.dense.weight)
log() { echo "== [$(( $(date +%s) - START )) s] $*" | tee -a "$W/speed.log"; }
pack() { tar -czf "$FINAL_OUT/speed.tar.gz" -C "$W" . ; cp "$W/speed.log" "$FINAL_OUT/speed.log"; }
trap pack EXIT
{ echo "PYTHONDONTWRITEBYTECODE=${PYTHONDONTWRITEBYTECODE:-unset} nproc=$(nproc)"
  nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu,memory.used --format=csv; } >>"$W/speed.log" 2>&1
cli() { local t0; t0=$(date +%s%N); python3 -c "import harness.cli"; echo "$(( ($(date +%s%N) - t0) / 1000000 ))"; }
log "the CLI's imports, before and after compiling bytecode (ms): $(cli) $(cli)"
python3 -m compileall -q -j 0 /tmp/site harness >/dev/null 2>&1
log "after compileall (ms): $(cli) $(cli)"
$D keygen --out "$W/keys" >>"$W/speed.log" 2>&1
for i in $(seq 1 "$RUNS"); do
  log "dossier run $i of $RUNS"
  t0=$(date +%s.%N)
  $D run --output-dir "$W" --name "speed-$i" --signing-key "$W/keys/dossier.key" --runner local \
    --checkpoint "$CKPT" "${T[@]}" --file-sha256 "$CKPT_SHA" >"$W/run.$i.stdout" 2>"$W/run.$i.stderr"
  rc=$?; t1=$(date +%s.%N)
  echo "speed-$i launched $t0 ended $t1" >>"$W/walls.txt"
  echo "run $i: rc=$rc wall $(python3 -c "print(f'{$t1 - $t0:.1f}')") s" | tee -a "$W/speed.log"
  tail -8 "$W/run.$i.stderr" >>"$W/speed.log"
done
for i in $(seq 1 "$RUNS"); do
  $D verify "$W/speed-$i.tar.gz" --key "$W/keys/dossier.pub" >"$W/verify.$i.txt" 2>&1
  echo "verify $i: rc=$? $(tail -1 "$W/verify.$i.txt")" | tee -a "$W/speed.log"
done
log "figures beside the committed H200 runs (tests/fixtures/h200/final: a1 a2 a3 b1 b2)"
python3 - "$W" "$RUNS" >>"$W/speed.log" 2>&1 <<'PY'
import json, sys, tarfile
from pathlib import Path
from harness.registry import analysis_module
work, runs = Path(sys.argv[1]), int(sys.argv[2])
def raw(path, step):
    with tarfile.open(path) as t:
        try:
            return json.load(t.extractfile(f"raw/{step}.json"))
        except KeyError:
            return None
def figures(path):
    out = {}
    b, r, x, s = (raw(path, n) for n in ("bandwidth", "roofline", "transfer", "stress"))
    if b: out["bandwidth plateau GB/s"] = analysis_module("bandwidth").headlines(b)["plateau_gbps"]
    if r: out["roofline bf16 burst best TFLOPS"] = analysis_module("roofline").headlines(r).get("burst_best_tflops")
    if x:
        h = next(iter(analysis_module("transfer").headlines(x)["per_gpu"].values()))
        for k in ("h2d_pinned_gbps", "d2h_pinned_gbps", "bidirectional_total_pinned_gbps", "device_local_gbps"):
            out[f"transfer {k}"] = h.get(k)
    if s:
        d = analysis_module("stress").headlines(s)["devices"][0]
        out["stress steady TFLOPS"], out["stress burst TFLOPS"] = d["steady_tflops"], d["burst_tflops"]
    return out
committed = [Path(f"tests/fixtures/h200/final/h200-{n}.tar.gz") for n in ("a1", "a2", "a3", "b1", "b2")]
mine = [work / f"speed-{i}.tar.gz" for i in range(1, runs + 1) if (work / f"speed-{i}.tar.gz").exists()]
theirs, ours = [figures(p) for p in committed], [figures(p) for p in mine]
for key in (ours[0] if ours else {}):
    a = [f.get(key) for f in theirs if isinstance(f.get(key), (int, float))]
    o = [f.get(key) for f in ours]
    print(f"{key}: committed {min(a):.4g}-{max(a):.4g}; these runs {', '.join(f'{v:.4g}' if isinstance(v, (int, float)) else str(v) for v in o)}")
def rows(doc):
    return {(t["role"], f["format"]): (f["relative_rmse"], f.get("output_sha256")) for t in doc["tensors"] for f in t["formats"]}
ref = raw(committed[0], "precision")
for p in mine:
    doc = raw(p, "precision")
    if doc is None:
        print(f"{p.name}: no precision document"); continue
    same = rows(doc) == rows(ref)
    print(f"{p.name}: precision on {doc['device']} vs committed H200 ({ref['device']}): {'identical' if same else 'DIFFERENT'} ({len(rows(doc))} figures)")
PY
log "where each run's time went (the bundles' records; walls from this script)"
python3 bench/dossier_steps.py "$W"/speed-*.tar.gz --walls "$W/walls.txt" --json "$W/steps.json" | tee -a "$W/speed.log"
