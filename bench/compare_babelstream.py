"""Print the comparison table for bench/bandwidth_vs_babelstream.sh (standard library only).

Reads OUT/bandwidth-KERNEL.json (our probe), OUT/bandwidth-KERNEL.wall_s and OUT/babelstream.csv
(BabelStream --csv: function,num_times,n_elements,sizeof,max_mbytes_per_sec,...; MB = 10^6 bytes).
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path

# Our kernel -> BabelStream's kernel with the same reads and writes (Dot reads two arrays, the
# nearest read-only kernel BabelStream has; it has no write-only kernel).
MATCHING = {"copy": "Copy", "triad": "Triad", "read": "Dot", "write": None}
ISSUE_SPREAD_MAX = 0.02  # issue 3: the three repeats vary by less than 2%
ISSUE_DEVICE_SECONDS = 30.0  # issue 3: sweep plus repeats under 30 s of device time


def babelstream(out: Path) -> dict[str, float]:
    path = out / "babelstream.csv"
    if not path.exists():
        return {}
    # BabelStream 5.0 prints its Init and Read phases first, under a header of their own
    # (phase,n_elements,sizeof,max_mbytes_per_sec,runtime): only the kernels' rows, under "function", count.
    rates, kernels = {}, False
    for row in csv.reader(path.read_text().splitlines()):
        if row[:1] in (["function"], ["phase"]):
            kernels = row[0] == "function"
        elif kernels and len(row) >= 5:
            rates[row[0]] = float(row[4]) / 1000.0  # MB/s -> GB/s
    return rates


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--babelstream-seconds", type=float)
    args = parser.parse_args(argv)
    bs = babelstream(args.out)
    best_name = max(bs, key=bs.get) if bs else None
    print("## BabelStream (fp64, best of --numtimes, GB/s)\n")
    print(" | ".join(f"{k} {v:.0f}" for k, v in bs.items()) if bs else "BabelStream did not run")
    if args.babelstream_seconds:
        print(f"\nBabelStream wall clock: {args.babelstream_seconds:.1f} s")
    print("\n## Our probe (fp32, torch) against BabelStream, same device call\n")
    print(
        "| kernel | plateau GB/s | plateau sizes MiB | vs BabelStream match | vs BabelStream best "
        f"({best_name or '-'}) | of spec | repeat medians GB/s | spread | <2% | probe wall s | <30 s |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for path in sorted(args.out.glob("bandwidth-*.json")):
        kernel = path.stem.removeprefix("bandwidth-")
        try:
            doc = json.loads(path.read_text())
        except json.JSONDecodeError:
            print(f"| {kernel} | probe output is not JSON: see {path.with_suffix('.stderr').name} |")
            continue
        plateau, repeats, ref = doc["plateau"], doc["repeats"], doc["reference"]
        wall_path = path.with_suffix(".wall_s")
        wall = float(wall_path.read_text()) if wall_path.exists() else None
        value = plateau["gbps"]
        match = MATCHING.get(kernel)
        vs_match = (
            f"{value / bs[match]:.3f} ({match} {bs[match]:.0f})"
            if value and match in bs
            else "- (no matching kernel)"
            if match is None
            else "-"
        )
        vs_best = f"{value / bs[best_name]:.3f}" if value and best_name else "-"
        spec = f"{ref['spec_ratio']:.1%}" if ref.get("spec_ratio") else "-"
        print(
            f"| {kernel} | {value:.0f} | {', '.join(f'{s:g}' for s in plateau['sizes_mib'])} | {vs_match} | "
            f"{vs_best} | {spec} | {', '.join(f'{m:.0f}' for m in repeats['medians_gbps'])} | "
            f"{repeats['spread']:.2%} | {'yes' if repeats['spread'] < ISSUE_SPREAD_MAX else 'NO'} | "
            f"{wall:.1f} | {'yes' if wall is not None and wall < ISSUE_DEVICE_SECONDS else 'NO'} |"
            if value is not None
            else f"| {kernel} | no plateau: {plateau['why']} | | | | | | {repeats['spread']:.2%} | | {wall} | |"
        )
    print("\nProbe wall clock includes Python start, torch import and CUDA initialisation.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
