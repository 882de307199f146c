#!/usr/bin/env bash
# Our roofline probe against stas00/ml-engineering's mamf-finder.py on the same GEMM shapes, bf16
# and fp8, in one call on the GPU machine; then one full default probe run, timed (target < 60 s).
#
#   bash bench/roofline_vs_mamf.sh          # from the repository root; raw outputs under $OUT
#
# Needs .peers/mamf-finder.py (ignored, carried by the lead; never committed). Order: mamf bf16,
# ours bf16, mamf fp8, ours fp8, so ours always runs on a card mamf's 30 s warm-up has heated.
# BANDWIDTH_GBPS is the bandwidth probe's sustained median (default: the 4 GiB copy median that
# /work/shared/reference/h200-baseline.md records for this H200, 4254 GB/s).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-bench/out}
PY=${PYTHON:-python3}
MAMF=${MAMF:-.peers/mamf-finder.py}
BW=${BANDWIDTH_GBPS:-4254}
M_SIZES=${M_SIZES:-"4096 8192"}; N_SIZES=${N_SIZES:-"4096 8192"}; K_SIZES=${K_SIZES:-"8192"}  # mamf: cartesian product
FULL_ARGS=${FULL_ARGS:-}  # extra arguments for the full run (a CPU dry run shrinks it)
mkdir -p "$OUT"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
[ -f "$MAMF" ] || { echo "no $MAMF: carry stas00/ml-engineering's mamf-finder.py there" >&2; exit 4; }

shapes=""
for m in $M_SIZES; do for n in $N_SIZES; do for k in $K_SIZES; do shapes+=" ${m}x${n}x${k}"; done; done; done

ours() {  # ours DTYPE FILE EXTRA... ; prints the probe's wall time in ms
  local dtype=$1 file=$2; shift 2
  local t0; t0=$(date +%s%N)
  echo "== ours $dtype $*" >>"$OUT/stderr.log"
  "$PY" -m harness.probes.roofline --dtype "$dtype" --bandwidth-gbps "$BW" "$@" \
    >"$OUT/$file" 2>>"$OUT/stderr.log" || echo "our probe failed ($dtype): see stderr.log" >&2
  echo $(( ($(date +%s%N) - t0) / 1000000 ))
}
mamf() {  # mamf TORCH_DTYPE FILE
  echo "== mamf-finder $1" >>"$OUT/stderr.log"
  "$PY" "$MAMF" --m $M_SIZES --n $N_SIZES --k $K_SIZES --dtype "$1" --output_file "$OUT/$2" \
    >/dev/null 2>>"$OUT/stderr.log" || echo "mamf-finder failed ($1): see stderr.log" >&2
}

nvidia-smi --query-gpu=name,pci.device_id,power.limit,clocks.max.sm,temperature.gpu --format=csv \
  >"$OUT/gpu.csv" 2>&1
mamf bfloat16 mamf-bf16.txt
t_bf16=$(ours bf16 ours-bf16.json --no-default-shapes --no-fusion --shapes $shapes)
mamf float8_e4m3fn mamf-fp8.txt
t_fp8=$(ours fp8 ours-fp8.json --no-default-shapes --no-fusion --shapes $shapes)
t_full=$(ours bf16 roofline-full-bf16.json $FULL_ARGS)

"$PY" - "$OUT" "$t_bf16" "$t_fp8" "$t_full" <<'PY' | tee "$OUT/summary.md"
import json, re, sys
from pathlib import Path
out = Path(sys.argv[1])
t_bf16, t_fp8, t_full = (float(v) / 1000 for v in sys.argv[2:])
ROW = re.compile(r"\|\s*([\d.]+)\(mean\)\s+([\d.]+)\(median\)\s+([\d.]+)\(max\) @ (\d+x\d+x\d+)")

def mamf(name):
    path = out / name
    text = path.read_text(errors="replace") if path.exists() else ""
    return {m.group(4): float(m.group(2)) for m in ROW.finditer(text.replace("\r", "\n"))}

def ours(name):
    try:
        doc = json.loads((out / name).read_text())
    except (OSError, ValueError):
        return {}, None
    preds = {p["label"]: p for p in doc["predictions"]["shapes"]}
    rates = {f"{preds[s['label']]['m']}x{preds[s['label']]['n']}x{preds[s['label']]['k']}":
             preds[s["label"]]["flops"] / s["median_s"] / 1e12
             for s in doc["measurements"]["shapes"] if s["status"] == "measured"}
    return rates, doc

print("| dtype | shape (MxNxK) | mamf-finder median TFLOPS | ours median TFLOPS | ours / mamf |")
print("| --- | --- | --- | --- | --- |")
best = {}
for dtype, mfile, ofile in (("bf16", "mamf-bf16.txt", "ours-bf16.json"), ("fp8", "mamf-fp8.txt", "ours-fp8.json")):
    theirs, (mine, _) = mamf(mfile), ours(ofile)
    for shape in sorted(set(theirs) | set(mine)):
        a, b = theirs.get(shape), mine.get(shape)
        print(f"| {dtype} | {shape} | {a if a is not None else 'n/a'} | {f'{b:.4g}' if b else 'n/a'} | "
              f"{f'{b / a:.3f}' if a and b else 'n/a'} |")
    best[dtype] = (max(theirs.items(), key=lambda kv: kv[1], default=(None, None)),
                   max(mine.items(), key=lambda kv: kv[1], default=(None, None)))
print()
for dtype, ((ts, tv), (os_, ov)) in best.items():
    ratio = f"{ov / tv:.3f}" if tv and ov else "n/a"
    print(f"- best {dtype}: mamf-finder {tv} TFLOPS @ {ts}; ours {f'{ov:.4g}' if ov else 'n/a'} TFLOPS @ {os_}; "
          f"ours / mamf = {ratio}")
_, full = ours("roofline-full-bf16.json")
print(f"- our probe's wall seconds on the device: bf16 comparison shapes {t_bf16:.1f} s, fp8 comparison shapes {t_fp8:.1f} s, "
      f"full default bf16 run (all shapes + fusion) {t_full:.1f} s (target < 60 s)")
if full:
    s = full["summary"]
    print(f"- full run: burst best {s.get('burst_best_tflops', s.get('best_tflops')):.4g} TFLOPS @ {s['best_shape']}, all explained: {s['all_explained']}, "
          f"fusion speedup: {s['fusion_speedup']}, limitations: {[l['what'] for l in full['limitations']]}")
PY
echo "raw outputs in $OUT: $(ls "$OUT" | tr '\n' ' ')"
