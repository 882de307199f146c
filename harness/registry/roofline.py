"""Registry entry: the M1T2 roofline: GEMMs classified on the measured roofs, timed, explained."""

from __future__ import annotations

import argparse
import functools
import sys
from typing import Any

from harness.judge import lab
from harness.judge.acceptance import rates
from harness.probes import roofline as probe
from harness.registry.bandwidth import measured_device, sustained_bandwidth_gbps
from harness.registry.spec import CommandSpec, DiffField, DiffFigure, FleetMetric, ProbeSpec
from harness.registry.steps import NotReady, ProbeStep, RunState, StepArgs

# The shapes the established tool (mamf-finder) reported its best GEMMs at on the H200
# (bench/RESULTS.md): enough to judge each dtype against its known-good, in a few seconds each.
DTYPE_CHECK_SHAPES = ("4096x4096x8192", "4096x8192x8192", "8192x8192x8192")
DTYPE_CHECKS = ("fp8", "fp16", "tf32", "fp32")


def finish(args: argparse.Namespace, document: dict[str, Any]) -> None:
    """The best GEMM."""
    summary = document["summary"]
    if summary.get("burst_best_tflops") is not None:
        print(f"best {document['dtype']} GEMM burst: {summary['burst_best_tflops']:.4g} TFLOPS at "
              f"{summary['best_shape']} (a short timed window, not a sustained rate: `dossier stress`); "
              f"every shape explained: {summary['all_explained']}", file=sys.stderr)


COMMAND = CommandSpec(
    help="GEMMs classified on measured roofs, timed and explained (roofline.json + plot)",
    description="Write roofline.json (lab step M1T2) and roofline.png/.svg beside it. Every GEMM is classified "
                "(FLOPs, fewest bytes, intensity, bound, attainable rate) before any runs, then timed and "
                "explained from measured facts. On a GPU give --bandwidth-gbps (the bandwidth probe's sustained "
                "median); the dense peak comes from the catalogue unless --peak-tflops is given. On a CPU both "
                "roofs are measured by the probe.",
    output="roofline.json", timeout_s=900, finish=finish)

def roofline_arguments(state: RunState) -> StepArgs:
    """The roofline fed the bandwidth step's sustained median, in the device's tensor-core dtype."""
    bandwidth = sustained_bandwidth_gbps(state)
    device = measured_device(state)
    dtype = "bf16" if device == "cuda" else "fp32"
    return StepArgs(("--bandwidth-gbps", f"{bandwidth:.6g}", "--dtype", dtype),
                    inputs={"bandwidth_gbps": bandwidth,
                            "bandwidth_from": "median of the bandwidth step's three repeat medians",
                            "dtype_from": f"bandwidth ran on {device}: "
                                          + ("bf16 tensor cores" if dtype == "bf16" else "fp32 on the CPU")})


def dtype_check_arguments(state: RunState, dtype: str) -> StepArgs:
    """A short roofline in one more dtype (GPU only), so acceptance can judge every dtype's GEMM."""
    device = measured_device(state)
    if device != "cuda":
        raise NotReady(f"a GPU check: bandwidth ran on {device}, and the roofline step already "
                       f"measured this device's own dtype")
    bandwidth = sustained_bandwidth_gbps(state)
    return StepArgs(("--bandwidth-gbps", f"{bandwidth:.6g}", "--dtype", dtype, "--no-fusion",
                     "--no-default-shapes", "--shapes", *DTYPE_CHECK_SHAPES),
                    inputs={"bandwidth_gbps": bandwidth,
                            "shapes_from": "the shapes of mamf-finder's best results on the H200"})


STEPS = (
    ProbeStep("roofline", "roofline", "Roofline fed the sustained median", "4 (M1T2)", schema="roofline",
              analysis="roofline", plots="roofline", timeout_s=900, arguments=roofline_arguments, order=30),
    *(ProbeStep(f"roofline-{dtype}", "roofline", f"GEMM rate in {dtype} (for acceptance)", "4 (M1T2)",
                schema="roofline", analysis="roofline", plots=None, timeout_s=300,
                arguments=functools.partial(dtype_check_arguments, dtype=dtype), order=40 + i)
      for i, dtype in enumerate(DTYPE_CHECKS)),
)

BEST_GEMM = FleetMetric("gemm_best_tflops", "TFLOP/s", "burst: the best GEMM rate over the roofline's shapes, "
                        "each timed in a short window (the sustained rate is stress_steady_tflops)",
                        lambda heads: heads.get("burst_best_tflops"))

DIFF_FIGURES = (
    DiffFigure("roofline burst best (short window)", "TFLOPS", lambda heads: heads.get("burst_best_tflops")),
    DiffFigure("roofline ridge", "FLOP/byte", lambda heads: heads.get("ridge_flop_per_byte")),
    DiffFigure("roofline fusion speedup", "x", lambda heads: heads.get("fusion_speedup")),
)

SPEC = ProbeSpec(name="roofline", title="roofline", lab="M1T2", options=probe.OPTIONS, command=COMMAND,
                 analysis="roofline", plots="roofline", table="roofline", steps=STEPS, lab_criteria=(lab.ROOFLINE,),
                 acceptance_criteria=(rates.GEMM,), known_good=(rates.GEMM_KNOWN_GOOD,),
                 diff_fields=(DiffField("software", "roofline classifications",
                                        lambda heads: heads.get("classifications")),),
                 diff_figures=DIFF_FIGURES, fleet_metrics=(BEST_GEMM,))
