#!/usr/bin/env bash
# The verify fuzz (bench/fuzz_verify.py: byte mutations and the re-signing layer) on the GPU machine's
# CPUs, which a 2-core VM would need about 45 minutes for: 100,000 mutants as two runs of 50,000
# (seeds 1 and 2), each its own JSON, so a run cut short by the call's limit loses only itself.
# Run it AFTER the dossiers of a call, never beside them (it loads every CPU).
#
#   OUT=$OUT bash bench/gpu_fuzz.sh        # carry: .whl (jsonschema, cryptography, orjson ... for python 3.12)
#   OUT=$OUT PROCESSES=15 MUTANTS=50000 SEEDS="1 2" bash bench/gpu_fuzz.sh
#
# What to look for: each run's last lines, `crashes ... 0`, `ACCEPTED CHANGE ... 0`, exit 0.
set -uo pipefail
cd "$(dirname "$0")/.."
FINAL_OUT=${OUT:?set OUT}
PROCESSES=${PROCESSES:-$(( $(nproc) - 1 ))}
MUTANTS=${MUTANTS:-50000}
SEEDS=${SEEDS:-1 2}
if compgen -G ".whl/*.whl" >/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH=/tmp/site
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2), python $(python3 -V 2>&1)"
for seed in $SEEDS; do
  t0=$(date +%s)
  python3 bench/fuzz_verify.py --mutants "$MUTANTS" --processes "$PROCESSES" --seed "$seed" \
    --json "$FINAL_OUT/fuzz-seed$seed.json" >"$FINAL_OUT/fuzz-seed$seed.txt" 2>&1
  echo "seed $seed: rc=$? wall $(( $(date +%s) - t0 )) s"
  tail -25 "$FINAL_OUT/fuzz-seed$seed.txt"
done
