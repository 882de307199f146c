#!/usr/bin/env python3
"""Every read-kernel variant of the bandwidth probe, timed in one process, then the ratio table against
BabelStream's Dot (and our copy against its Copy) measured in the same device call.

    python3 bench/read_kernel_driver.py measure WORK [--variants A B ...] [--again N]
    python3 bench/read_kernel_driver.py table WORK [--json OUT.json]

`measure` runs the probe's own measure() (harness.probes.bandwidth: the same sweep, repeats, byte rule
and plateau as `python -m harness.probes.bandwidth --kernel read --read-kernel V`) for each variant, then
the copy kernel once, then the default and the best variant again (order and drift), writing one
document per run to WORK/docs/. `table` reads WORK/babelstream.*.csv (BabelStream --csv, run before and
after) and WORK/docs/, prints the table last and writes the summary JSON. Each variant's figures: the
plateau (the median of its plateau points' medians, the figure a document states), the largest size's repeat
median, and at Dot's own sizes (4096 MiB: one of Dot's arrays; 8192 MiB: the bytes one Dot reads) the
median and the best per-iteration rate (BabelStream states its best of 19 host-timed calls).
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

DOT_SIZES_MIB = (4096, 8192)


def measure(work: Path, variants: list[str], again: int) -> None:
    import torch

    from harness.probes.bandwidth import build_parser, read_kernels
    from harness.probes.bandwidth import measure as probe_measure

    docs = work / "docs"
    docs.mkdir(parents=True, exist_ok=True)
    runs = [("read", v, 1) for v in variants] + [("copy", None, 1)]
    for label, variant, round_ in runs:
        one(torch, build_parser, probe_measure, docs, label, variant, round_)
    done = [json.loads(p.read_text()) for p in sorted(docs.glob("read-*.json"))]
    ranked = sorted(
        (d for d in done if d.get("plateau", {}).get("gbps")), key=lambda d: d["plateau"]["gbps"], reverse=True
    )
    best = [d["byte_counting"]["read_kernel"]["variant"] for d in ranked[:1]]
    for round_ in range(2, again + 2):
        for variant in dict.fromkeys([read_kernels.DEFAULT, *best]):
            one(torch, build_parser, probe_measure, docs, "read", variant, round_)


def one(torch, build_parser, probe_measure, docs: Path, kernel: str, variant: str | None, round_: int) -> None:
    argv = ["--kernel", kernel, "--repeats", "3"] + (["--read-kernel", variant] if variant else [])
    name = f"{kernel}-{variant or 'default'}-r{round_}"
    torch.cuda.empty_cache()  # each run sizes its buffers from the memory free at its start
    started = time.perf_counter()
    try:
        document = probe_measure(build_parser().parse_args(argv))
    except Exception as exc:  # noqa: BLE001 - a variant that fails is reported, the others still run
        (docs / f"{name}.error.txt").write_text(f"{type(exc).__name__}: {exc}\n")
        print(f"{name}: FAILED {type(exc).__name__}: {exc}", flush=True)
        return
    document["bench"] = {"argv": argv, "wall_s": time.perf_counter() - started, "round": round_}
    (docs / f"{name}.json").write_text(json.dumps(document, sort_keys=True))
    print(f"{name}: plateau {document['plateau']['gbps']} GB/s in {document['bench']['wall_s']:.1f} s", flush=True)


def babelstream(path: Path) -> dict[str, float]:
    """BabelStream --csv: function,num_times,n_elements,sizeof,max_mbytes_per_sec,... (MB = 10^6 bytes)."""
    if not path.exists():
        return {}
    rows = [r for r in csv.reader(path.read_text().splitlines()) if len(r) >= 5 and r[0] in {"Copy", "Dot"}]
    return {r[0]: float(r[4]) / 1000.0 for r in rows}


def at_size(document: dict, size: float) -> dict:
    point = next((p for p in document["sweep"] if p["size_mib"] == size), None)
    if point is None:
        return {"median_gbps": None, "best_gbps": None}
    return {"median_gbps": point["median_gbps"], "best_gbps": point["bytes_per_iteration"] / point["min_s"] / 1e9}


def summary(document: dict) -> dict:
    rk = document["byte_counting"].get("read_kernel") or {}
    return {
        "kernel": document["kernel"],
        "variant": rk.get("variant"),
        "round": document["bench"]["round"],
        "plateau_gbps": document["plateau"]["gbps"],
        "plateau_sizes_mib": document["plateau"]["sizes_mib"],
        "repeat_median_gbps": statistics.median(document["repeats"]["medians_gbps"]),
        "repeat_spread": document["repeats"]["spread"],
        "at_mib": {str(s): at_size(document, s) for s in DOT_SIZES_MIB},
        "how": document["byte_counting"]["torch_op"],
        "nvrtc": {k: v for k, v in rk.items() if k != "variant"},
        "wall_s": document["bench"]["wall_s"],
    }


def fmt(x: float | None) -> str:
    return f"{x:.1f}" if x else "-"


def ratio(value: float | None, peer: float | None) -> str:
    return f"{value / peer:.3f}" if value and peer else "-"


def table(work: Path, out_json: Path | None) -> int:
    peers = [babelstream(p) for p in sorted(work.glob("babelstream.*.csv"))]
    dots = [p["Dot"] for p in peers if "Dot" in p]
    copies = [p["Copy"] for p in peers if "Copy" in p]
    dot, copy = (statistics.mean(dots) if dots else None), (statistics.mean(copies) if copies else None)
    rows = [summary(json.loads(p.read_text())) for p in sorted((work / "docs").glob("*.json"))]
    failed = {p.name.removesuffix(".error.txt"): p.read_text().strip() for p in (work / "docs").glob("*.error.txt")}
    result = {"babelstream": peers, "dot_mean_gbps": dot, "copy_mean_gbps": copy, "runs": rows, "failed": failed}
    if out_json:
        out_json.write_text(json.dumps(result, indent=1, sort_keys=True))
    print(
        f"\nBabelStream (fp64, 2^29, best of 19 per run): Dot {', '.join(f'{d:.1f}' for d in dots) or '-'} GB/s; "
        f"Copy {', '.join(f'{c:.1f}' for c in copies) or '-'} GB/s (ratios use the mean of the runs)"
    )
    spread = f"{(max(dots) - min(dots)) / statistics.mean(dots):.2%}" if len(dots) > 1 else "-"
    print(f"Dot's own spread between its runs: {spread}\n")
    print(
        "| kernel / variant | round | plateau GB/s | vs Dot | repeats (largest size) | 4096 MiB median / best | "
        "8192 MiB median / best | best@8192 vs Dot | spread | wall s |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in sorted(rows, key=lambda r: (r["kernel"] != "read", -(r["plateau_gbps"] or 0))):
        peer = dot if r["kernel"] == "read" else copy
        a, b = r["at_mib"]["4096"], r["at_mib"]["8192"]
        print(
            f"| {r['kernel']} {r['variant'] or ''} | {r['round']} | {fmt(r['plateau_gbps'])} | "
            f"{ratio(r['plateau_gbps'], peer)}{'' if r['kernel'] == 'read' else ' (vs Copy)'} | "
            f"{fmt(r['repeat_median_gbps'])} | {fmt(a['median_gbps'])} / {fmt(a['best_gbps'])} | "
            f"{fmt(b['median_gbps'])} / {fmt(b['best_gbps'])} | {ratio(b['best_gbps'], peer)} | "
            f"{r['repeat_spread']:.2%} | {r['wall_s']:.1f} |"
        )
    for name, why in failed.items():
        print(f"| {name} | FAILED: {why[:150]} |")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="what", required=True)
    m = sub.add_parser("measure")
    m.add_argument("work", type=Path)
    m.add_argument("--variants", nargs="+")
    m.add_argument("--again", type=int, default=1, help="rounds of the default and the best again (default 1)")
    t = sub.add_parser("table")
    t.add_argument("work", type=Path)
    t.add_argument("--json", type=Path)
    args = parser.parse_args()
    if args.what == "measure":
        from harness.probes.bandwidth import read_kernels

        measure(args.work, args.variants or list(read_kernels.NAMES), args.again)
        return 0
    return table(args.work, args.json)


if __name__ == "__main__":
    raise SystemExit(main())
