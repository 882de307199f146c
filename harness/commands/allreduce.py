"""`dossier allreduce`: the M1T4 collective probe, its plot, and a summary of its curves."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from harness.analysis import allreduce as ar
from harness.commands._probe import add_common_options, run_probe
from harness.errors import CheckFailed, UsageError


def add_parser(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "allreduce", help="all-reduce curves, P2P-disabled control, knees, topology evidence (allreduce.json)",
        description="Write allreduce.json (lab step M1T4): all-reduce time, algbw and busbw per buffer size "
                    "(nccl-tests' convention), the normal curve and an NCCL_P2P_DISABLE=1 control in fresh "
                    "processes, the alpha-beta knee and half-plateau size of each, the ring prediction for two "
                    "world sizes, and the topology evidence explaining the gap. With fewer than 2 GPUs or no NCCL "
                    "the limitation is recorded, never simulated; `--backend gloo` gives a real CPU curve. "
                    "Exits 1 when a curve stopped early (the points measured before are kept in the JSON).")
    parser.add_argument("--world-size", metavar="N[,N...]",
                        help="ranks per curve, or a list (default nccl: 2 and 4 with >= 4 GPUs, else all GPUs; gloo: 2)")
    parser.add_argument("--backend", choices=("nccl", "gloo"), help="default: nccl when CUDA is available, else gloo")
    parser.add_argument("--min-bytes", default="8", help="smallest buffer, a power of two (default 8)")
    parser.add_argument("--max-bytes", help="largest buffer, binary units: 64M, 1G (default 1G nccl, 32M gloo)")
    parser.add_argument("--time-budget-s", type=float, help="timed seconds per size (default 0.2 nccl, 0.05 gloo)")
    parser.add_argument("--size-timeout-s", type=float, help="kill the ranks after this long without progress "
                                                             "(default 120)")
    parser.add_argument("--no-nccl-log", action="store_true", help="do not record NCCL's algorithm choice")
    parser.add_argument("--no-plot", action="store_true", help="do not write allreduce.png/.svg beside the JSON")
    add_common_options(parser, default_output="allreduce.json", timeout_s=3600)
    parser.set_defaults(func=handle)


def probe_arguments(args: argparse.Namespace) -> list[str]:
    """The probe's own arguments; sizes are checked here first so a typo fails fast (exit 2)."""
    out = []
    for flag, value in (("--world-size", args.world_size), ("--backend", args.backend),
                        ("--min-bytes", args.min_bytes), ("--max-bytes", args.max_bytes),
                        ("--time-budget-s", args.time_budget_s), ("--size-timeout-s", args.size_timeout_s)):
        if value is not None:
            out += [flag, str(value)]
    try:
        for value in (args.min_bytes, args.max_bytes):
            if value is not None:
                ar.parse_size(value)
    except ValueError as exc:
        raise UsageError(str(exc), hint="sizes are bytes or binary units: 8, 64K, 64M, 1G") from None
    if args.no_nccl_log:
        out.append("--no-nccl-log")
    return out


def summary_lines(document: dict) -> list[str]:
    """One line per curve: its knee, half-plateau size and busbw at the largest size."""
    heads = ar.headlines(document)
    lines = []
    for world, curves in sorted(heads["curves_by_world_size"].items(), key=lambda kv: int(kv[0])):
        for curve, fig in sorted(curves.items()):
            knee = f"{fig['knee_bytes']:.3g} B" if fig["knee_bytes"] is not None else "no fit"
            half = f"{fig['half_plateau_bytes']} B" if fig["half_plateau_bytes"] is not None else "n/a"
            busbw = f"{fig['busbw_at_max_gbps']:.3g} GB/s" if fig["busbw_at_max_gbps"] is not None else "n/a"
            lines.append(f"{curve} n={world}: knee {knee}, half-plateau at {half}, busbw at max {busbw}")
    lines += [f"limitation: {what}" for what in heads["limitations"]]
    return lines


def handle(args: argparse.Namespace) -> int:
    outcome = run_probe("allreduce", probe_arguments(args), args)
    document = outcome.document
    if not args.no_plot and document.get("runs"):
        from harness.plots.allreduce import render  # matplotlib only when plotting

        for path in render(document, Path(args.output).with_suffix("")):
            print(f"wrote {path}", file=sys.stderr)
    for line in summary_lines(document):
        print(line, file=sys.stderr)
    failed = [run["failure"]["message"] for run in document.get("runs", []) if run.get("failure")]
    if failed:
        raise CheckFailed("all-reduce stopped early: " + "; ".join(failed),
                          hint=f"the points measured before the failure are kept in {args.output}")
    return 0
