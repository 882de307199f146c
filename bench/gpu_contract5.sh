#!/usr/bin/env bash
# Probe contract 5 on the lent H200 (2026-12-01): one `dossier run` of the steps the roofline criterion
# reads (health, bandwidth, roofline; the rest skipped, so the run's verdict is INCOMPLETE by design),
# verified here with the carried key, and the roofline criterion's line from its report.
#   OUT=$OUT bash bench/gpu_contract5.sh      # carry: .whl .gpu
set -uo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl
export PYTHONPATH="$PWD:/tmp/site" PYTHONUNBUFFERED=1
W=${OUT:?set OUT}; t0=$(date +%s%N)
python3 -m harness run --output-dir "$W" --name h200-contract5 --signing-key .gpu/keys/dossier.key --runner local \
  --skip stress --skip transfer --skip precision --skip allreduce >"$W/run.stdout" 2>"$W/run.stderr"
echo "dossier run rc=$? wall $(( ($(date +%s%N) - t0) / 1000000 )) ms"
python3 -m harness verify "$W/h200-contract5.tar.gz" --key .gpu/keys/dossier.pub >"$W/verify.txt" 2>&1; echo "verify rc=$?"
tail -3 "$W/verify.txt"
python3 - "$W/h200-contract5.tar.gz" <<'PY'
import json, sys, tarfile
t = tarfile.open(sys.argv[1])
report = t.extractfile("report.md").read().decode()
print("\n".join(l for l in report.splitlines() if "roofline" in l.lower() and ("PASS" in l or "FAIL" in l))[:3000])
r = json.load(t.extractfile("raw/roofline.json"))
print("contract", r["contract_version"])
for part in [r, *r.get("dtype_checks", [])]:
    for s in part["measurements"]["shapes"]:
        e = s.get("explanation") or {}
        causes = [c["cause"] for c in e.get("causes", [])]
        if causes or not e.get("explained", True):
            print(part["dtype"], s["label"], causes, e.get("explained"))
PY
