"""Registry entry: the M1T2 roofline: GEMMs classified on the measured roofs, timed, explained."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from harness.probes import roofline as probe
from harness.registry.spec import CommandSpec, ProbeSpec


def finish(args: argparse.Namespace, document: dict[str, Any]) -> None:
    """The plot beside the JSON, and the best GEMM."""
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


COMMAND = CommandSpec(
    help="GEMMs classified on measured roofs, timed and explained (roofline.json + plot)",
    description="Write roofline.json (lab step M1T2) and roofline.png/.svg beside it. Every GEMM is classified "
                "(FLOPs, fewest bytes, intensity, bound, attainable rate) before any runs, then timed and "
                "explained from measured facts. On a GPU give --bandwidth-gbps (the bandwidth probe's sustained "
                "median); the dense peak comes from the catalogue unless --peak-tflops is given. On a CPU both "
                "roofs are measured by the probe.",
    output="roofline.json", timeout_s=900, finish=finish)

SPEC = ProbeSpec(name="roofline", title="roofline", lab="M1T2", options=probe.OPTIONS, command=COMMAND)
