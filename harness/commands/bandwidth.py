"""`dossier bandwidth`: the M1T1 memory bandwidth sweep, plateau and repeats."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from harness import paths
from harness.analysis.bandwidth import KERNELS
from harness.analysis.verdict import Verdict
from harness.catalogue import by_id, skus
from harness.commands._probe import add_common_options, run_probe
from harness.errors import CheckFailed, UsageError


def add_parser(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "bandwidth", help="memory bandwidth sweep, plateau and repeats (bandwidth.json)",
        description="Write bandwidth.json (lab step M1T1): sweep buffer sizes, name the plateau (never the "
                    "maximum) and why small sizes differ (cache-resident, launch-bound), repeat the largest "
                    "safe size with NVML telemetry during the middle repeat, and compare with the "
                    "catalogue's published peak and known-good result for the same SKU. Exits 1 when the "
                    "repeats vary by more than 5%.")
    parser.add_argument("--size-mib", type=float, nargs="+", metavar="N",
                        help="buffer sizes in MiB (default: 4 64 256 1024 and larger powers of two up to the "
                             "largest safe size; 1 4 16 64 128 on the CPU)")
    parser.add_argument("--repeats", type=int, default=3, help="runs of the largest size (default: 3)")
    parser.add_argument("--spec-gbps", type=float, metavar="GBPS",
                        help="published peak bandwidth in GB/s (overrides the catalogue's figure)")
    parser.add_argument("--kernel", choices=sorted(KERNELS), default="copy",
                        help="access pattern: " + "; ".join(
                            f"{k} reads {v['reads']} writes {v['writes']}" for k, v in sorted(KERNELS.items()))
                        + " (default: copy)")
    parser.add_argument("--device", choices=["auto", "cuda", "cpu"], default="auto",
                        help="auto: the GPU when torch sees one, else host memory (default: auto)")
    parser.add_argument("--device-index", type=int, default=0, help="CUDA device index (default: 0)")
    parser.add_argument("--point-budget-s", type=float, metavar="SECONDS",
                        help="timed seconds per sweep point (default: 0.3 on a GPU, 0.1 on the CPU)")
    parser.add_argument("--compare-sku", metavar="SKU_ID",
                        help="compare with this catalogue SKU's known-good result; refused unless it is the "
                             "device's own SKU, capacity and form factor")
    parser.add_argument("--plot", type=Path, metavar="STEM",
                        help="also render the sweep to STEM.png and STEM.svg")
    add_common_options(parser, default_output="bandwidth.json", timeout_s=600)
    parser.set_defaults(func=handle)


def probe_arguments(args: argparse.Namespace) -> list[str]:
    """Check what can be checked here and translate the options for the probe."""
    argv = ["--kernel", args.kernel, "--device", args.device, "--repeats", str(args.repeats),
            "--device-index", str(args.device_index)]
    if args.size_mib:
        bad = [s for s in args.size_mib if not s > 0]
        if bad:
            raise UsageError(f"--size-mib {bad[0]:g}: sizes must be positive (MiB per buffer)",
                             hint="e.g. --size-mib 4 64 256 1024")
        argv += ["--size-mib", *(f"{s:g}" for s in args.size_mib)]
    if args.repeats < 1:
        raise UsageError(f"--repeats {args.repeats}: at least 1", hint="the lab asks for 3")
    for name in ("spec_gbps", "point_budget_s"):
        value = getattr(args, name)
        if value is not None:
            if not value > 0:
                raise UsageError(f"--{name.replace('_', '-')} {value:g}: must be positive")
            argv += [f"--{name.replace('_', '-')}", f"{value!r}"]
    if args.compare_sku is not None:
        if by_id(args.compare_sku) is None:
            raise UsageError(f"--compare-sku {args.compare_sku}: not in the catalogue",
                             hint="known SKUs: " + ", ".join(s["id"] for s in skus()))
        argv += ["--compare-sku", args.compare_sku]
    return argv


def handle(args: argparse.Namespace) -> int:
    argv = probe_arguments(args)
    if args.plot is not None:  # checked before the sweep, not after it
        paths.output_files([("--plot", Path(f"{args.plot}{suffix}")) for suffix in (".png", ".svg")])
    outcome = run_probe("bandwidth", argv, args)
    document = outcome.document
    print(summary(document), file=sys.stderr)
    if args.plot is not None:
        from harness.plots.bandwidth import render  # matplotlib only when asked
        for path in render(document, args.plot):
            print(f"wrote {path}", file=sys.stderr)
    repeats = document["repeats"]
    if repeats["verdict"] == Verdict.FAIL:
        diagnosis = repeats["diagnosis"] or {}
        raise CheckFailed(f"the {repeats['count']} repeats at {repeats['size_mib']:g} MiB vary by "
                          f"{repeats['spread']:.1%} (> {repeats['spread_max']:.0%}): not a number to trust",
                          hint=f"diagnosis: {diagnosis.get('summary', 'none')}")
    return 0


def summary(document: dict[str, Any]) -> str:
    plateau, ref = document["plateau"], document["reference"]
    lines = [f"{document['kernel']} on {document['device']} ({document['device_name']})"]
    if plateau["reached"]:
        lines.append(f"plateau {plateau['gbps']:.1f} GB/s over {', '.join(f'{s:g}' for s in plateau['sizes_mib'])} "
                     f"MiB (within {plateau['tolerance']:.0%})")
    else:
        lines.append(f"no plateau: {plateau['why']}")
    repeats = document["repeats"]
    lines.append(f"repeats at {repeats['size_mib']:g} MiB: "
                 + ", ".join(f"{m:.1f}" for m in repeats["medians_gbps"])
                 + f" GB/s, spread {repeats['spread']:.2%}: {repeats['verdict']}")
    if ref.get("spec_ratio") is not None:
        lines.append(f"{ref['spec_ratio']:.1%} of the published {ref['spec_gbps']:g} GB/s ({ref['spec_source']})")
    if ref.get("known_good_ratio") is not None:
        lines.append(f"{ref['known_good_ratio']:.1%} of the known-good {ref['known_good_gbps']:g} GB/s")
    else:
        lines.append(f"no known-good comparison: {ref['why']}")
    return "\n".join(lines)
