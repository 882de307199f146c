#!/usr/bin/env bash
# `dossier health` wall time on the GPU machine (issue 2: under 5 s), three times, and the idle
# probe's driver-API facts against torch's own answer (`--torch`), which must agree.
#
#   OUT=$OUT bash bench/health_speed.sh        # carry: .whl
set -uo pipefail
cd "$(dirname "$0")/.."
if compgen -G ".whl/*.whl" >/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH=/tmp/site
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
OUT=${OUT:?set OUT}
for i in 1 2 3; do
  /usr/bin/time -f "dossier health: %e s wall" python3 -m harness health -o "$OUT/health.$i.json" 2>&1 | grep wall
done
/usr/bin/time -f "dossier health --torch: %e s wall" python3 -m harness health --torch -o "$OUT/health.torch.json" 2>&1 | grep wall
python3 - "$OUT/health.1.json" "$OUT/health.torch.json" <<'PY'
import json, sys
fast, slow = (json.load(open(p)) for p in sys.argv[1:3])
print("device view:", fast.get("device_view_source"))
for key in ("torch_devices", "device_mapping", "torch_device_count"):
    print(f"{key}: {'same' if fast.get(key) == slow.get(key) else 'DIFFERENT'}")
for key in ("torch_version", "torch_cuda_build", "cudnn_version", "nccl_version", "cuda_driver_api_version",
            "cudnn_library", "nccl_library"):
    print(f"software.{key}: {fast['software'].get(key)!r} vs torch {slow['software'].get(key)!r}")
print("failed contracts:", [c["name"] for c in fast["contracts"] if c["status"] == "fail"])
PY
