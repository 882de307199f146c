#!/usr/bin/env bash
# After a FAIL, on the GPU machine (issue 39), in ONE device call: a dossier whose stress step injects a
# GEMM fault (`dossier run --stress-inject-fault gemm`: one bit flipped between a GEMM and its check, so
# the run FAILs on purpose), its evidence archive taken live on the node (`dossier evidence`: serials,
# VBIOS, InfoROM, ECC and row remaps, the kernel log's XIDs, nvidia-smi -q, nvidia-bug-report.sh), the
# archive verified with both keys, and `dossier check --npd` / `--mode epilog` timed on real NVML.
#
#   OUT=$OUT [KEYS=.gpu/keys] [BUG_REPORT_S=120] bash bench/gpu_evidence.sh   # carry: .whl (wheels), as bench/gpu_dossier.sh
#
# What to look for in $OUT/session.log:
#   `run: rc=1` and `FAIL stress: ... result_check: 1 of N iterations mismatched` (the fault was caught);
#   `evidence: rc=0`, then each piece: on the H200 gpu_identity_now (a serial, VBIOS 96.00.A5.00.1A, the
#   InfoROM versions), nvidia_smi_q and nvidia_bug_report must have members, not `unavailable` (if the
#   bug report says `did not finish within 300 s` or names root, that is the cause to record);
#   `verify-evidence: rc=0` with no NOT DONE line; the archive's size and the evidence's wall time;
#   `npd: rc=0 ... s` with its message (the idle H200 is healthy: expect `| PASS: healthy`) and its wall
#   time (NPD's default plugin timeout is 5 s); `epilog scope: ('0',) SLURM_JOB_GPUS=0 devices [0]`
#   and its verdicts (gpu_count pass); `npd past a 1 ms bound: rc=2`.
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
ms_since() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
pack() { cp "$WORK"/*.tar.gz "$FINAL_OUT/" 2>/dev/null; cp "$WORK/session.log" "$FINAL_OUT/"; }
trap pack EXIT

if [ -n "${KEYS:-}" ]; then  # KEYS=DIR: sign with that pair (the campaign's), else a throw-away one
  PUB="$KEYS/dossier.pub" KEY="$KEYS/dossier.key"
else
  step "keygen"
  $D keygen --out "$WORK/keys" >>"$WORK/session.log" 2>&1
  PUB="$WORK/keys/dossier.pub" KEY="$WORK/keys/dossier.key"
fi

step "dossier run with --stress-inject-fault gemm (precision left out: no checkpoint carried; stress 20 s)"
t0=$(date +%s%N)
$D run --output-dir "$WORK" --name h200-faulty --signing-key "$KEY" --runner local --skip precision \
  --stress-seconds 20 --stress-inject-fault gemm >"$WORK/run.stdout" 2>"$WORK/run.stderr"
echo "run: rc=$? wall $(ms_since "$t0") ms" | tee -a "$WORK/session.log"
grep -A12 "^verdict:" "$WORK/run.stderr" "$WORK/run.stdout" | tee -a "$WORK/session.log"

step "dossier evidence, live on this node (as $(id -un))"
t0=$(date +%s%N)
$D evidence "$WORK/h200-faulty.tar.gz" --key "$PUB" --signing-key "$KEY" \
  --bug-report-timeout "${BUG_REPORT_S:-120}" -o "$WORK/evidence-h200-faulty.tar.gz" \
  >"$WORK/evidence.stdout" 2>"$WORK/evidence.stderr"
echo "evidence: rc=$? wall $(ms_since "$t0") ms, $(stat -c %s "$WORK/evidence-h200-faulty.tar.gz" 2>/dev/null) bytes" \
  | tee -a "$WORK/session.log"
cat "$WORK/evidence.stdout" "$WORK/evidence.stderr" | tee -a "$WORK/session.log"

step "dossier verify-evidence --key --bundle-key"
$D verify-evidence "$WORK/evidence-h200-faulty.tar.gz" --key "$PUB" --bundle-key "$PUB" --all 2>&1 | tee -a "$WORK/session.log"
echo "verify-evidence: rc=${PIPESTATUS[0]}" | tee -a "$WORK/session.log"

step "what the archive says of each GPU now, and the failure's figures"
python3 - "$WORK/evidence-h200-faulty.tar.gz" 2>&1 <<'PY' | tee -a "$WORK/session.log"
import json, sys
from harness.bundle.read import read_all
files = read_all(sys.argv[1])
for name in ("live/gpu-identity.json", "failures.json"):
    print(name, json.dumps(json.loads(files[name]), indent=1)[:3000] if name in files else "absent")
log = json.loads(files.get("live/kernel-log.json", b"{}"))
print("kernel log window:", log.get("window"), "xids:", log.get("xids"))
print("members:", {n: len(d) for n, d in sorted(files.items())})
PY

step "dossier check --npd (NPD's protocol), and the epilog's scope, on real NVML"
t0=$(date +%s%N)
msg=$($D check --npd --expect-gpus 1 --profile h200-sxm-141gb 2>"$WORK/npd.stderr")
echo "npd: rc=$? wall $(ms_since "$t0") ms: $msg" | tee -a "$WORK/session.log"
python3 - 2>&1 <<'PY' | tee -a "$WORK/session.log"
from harness.check import scope
from harness.check.expectation import Expectation
from harness.check.judge import judge
from harness.probes.check import read
job = scope.job_gpus("epilog", {"SLURM_JOB_GPUS": "0"})
r, expect, job = scope.narrowed(read(), Expectation(gpus=1), job)
print("epilog scope:", job.gpus, job.source, "devices", [d.get("nvml_index") for d in r["devices"]] if isinstance(r["devices"], list) else r["devices"])
print("epilog verdicts:", {f.name: str(f.verdict) for f in judge(r, expect)})
PY
$D check --npd --expect-gpus 1 --timeout 0.001 >>"$WORK/session.log" 2>&1; echo "npd past a 1 ms bound: rc=$? (2 expected)" | tee -a "$WORK/session.log"
step "done"
