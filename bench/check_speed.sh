#!/usr/bin/env bash
# `dossier check` wall time beside `dossier health` (issue 25: the check under 2 s on the H200; health
# takes 1.5-2.0 s there), five runs each, torch never imported by either (checked: the check's own
# process is asked whether torch got loaded). Also keeps one reading and the check's JSON, so the
# machine's answer can be judged again here with `dossier check --reading`.
#
#   OUT=$OUT bash bench/check_speed.sh          # on the GPU machine (carry: .whl), or here on a CPU
#   RUNS=10 SKU=h200-sxm-141gb GPUS=1 OUT=/tmp/check bash bench/check_speed.sh
set -uo pipefail
cd "$(dirname "$0")/.."
if compgen -G ".whl/*.whl" >/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH=/tmp/site
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
PY=${PYTHON:-python3}
OUT=${OUT:?set OUT}
RUNS=${RUNS:-5}
if [ -z "${GPUS:-}" ]; then  # what this machine has, as NVML says (0 without NVML): the check is told it
  GPUS=$($PY -c "import pynvml as p; p.nvmlInit(); print(p.nvmlDeviceGetCount())" 2>/dev/null || echo 0)
fi
EXPECT=(--expect-gpus "$GPUS")
[ -n "${SKU:-}" ] && EXPECT+=(--sku "$SKU")
echo "machine: $(hostname), $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg); expecting ${EXPECT[*]}"
for i in $(seq "$RUNS"); do
  /usr/bin/time -f "dossier check: %e s wall, %M KiB max RSS" $PY -m harness check "${EXPECT[@]}" \
    --json --save-reading "$OUT/reading.$i.json" >"$OUT/check.$i.json" 2>"$OUT/check.$i.err"
  code=$?
  grep wall "$OUT/check.$i.err"
  echo "  exit $code: $($PY -c "import json,sys; d=json.load(open(sys.argv[1])); print(d['summary']); print('  reading took', d['reading']['read_seconds'], 's')" "$OUT/check.$i.json")"
done
for i in $(seq "$RUNS"); do
  /usr/bin/time -f "dossier health: %e s wall" $PY -m harness health -o "$OUT/health.$i.json" 2>&1 | grep wall
done
$PY - "${EXPECT[@]}" <<'PY'
import subprocess, sys
# torch must stay out of the check's process: import the command as the CLI does, run it, and look.
code = ("import sys, contextlib, io; from harness.cli import main; "
        "out = io.StringIO(); ctx = contextlib.redirect_stdout(out)\n"
        "with ctx: main(['check', *sys.argv[1:]])\n"
        "print('torch imported by dossier check:', 'torch' in sys.modules)")
print(subprocess.run([sys.executable, "-c", code, *sys.argv[1:]], capture_output=True, text=True).stdout.strip())
PY
