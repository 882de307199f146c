"""`dossier roofline`: the M1T2 roofline probe, and its plot beside the JSON."""

from __future__ import annotations

import argparse
import sys

from harness.commands._probe import add_common_options, run_probe
from harness.probes import roofline as probe


def add_parser(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "roofline", help="GEMMs classified on measured roofs, timed and explained (roofline.json + plot)",
        description="Write roofline.json (lab step M1T2) and roofline.png/.svg beside it. Every GEMM is "
                    "classified (FLOPs, fewest bytes, intensity, bound, attainable rate) before any runs, "
                    "then timed and explained from measured facts. On a GPU give --bandwidth-gbps (the "
                    "bandwidth probe's sustained median); the dense peak comes from the catalogue unless "
                    "--peak-tflops is given. On a CPU both roofs are measured by the probe.")
    probe.add_arguments(parser)
    add_common_options(parser, default_output="roofline.json", timeout_s=900)
    parser.set_defaults(func=handle)


def probe_args(args: argparse.Namespace) -> list[str]:
    """The probe's command line: every probe option the user set, as they set it."""
    argv: list[str] = []
    for action in probe.build_parser()._actions:
        if not action.option_strings or action.dest == "help":
            continue
        value = getattr(args, action.dest)
        if value == action.default:
            continue
        flag = action.option_strings[0]
        if isinstance(action, argparse._StoreTrueAction):
            argv.append(flag)
        elif isinstance(value, list):
            argv += [flag, *map(str, value)]
        else:
            argv += [flag, str(value)]
    return argv


def handle(args: argparse.Namespace) -> int:
    outcome = run_probe("roofline", probe_args(args), args)
    document = outcome.document
    try:
        from harness.plots import roofline as plot  # matplotlib only when rendering

        written = plot.render(document, args.output.with_suffix(""))
    except ValueError as exc:
        print(f"no plot: {exc}", file=sys.stderr)
    else:
        print("wrote " + ", ".join(map(str, written)), file=sys.stderr)
    summary = document["summary"]
    if summary.get("best_tflops") is not None:
        print(f"best {document['dtype']} GEMM: {summary['best_tflops']:.4g} TFLOPS at {summary['best_shape']}; "
              f"every shape explained: {summary['all_explained']}", file=sys.stderr)
    return 0
