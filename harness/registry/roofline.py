"""Registry entry: the M1T2 roofline: GEMMs classified on the measured roofs, timed, explained."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from harness.analysis.roofline import declared, unexplained
from harness.analysis.roofline import figures as rf
from harness.judge import lab
from harness.judge.acceptance import rates
from harness.probes import roofline as probe
from harness.registry.bandwidth import measured_device, sustained_bandwidth_gbps
from harness.registry.spec import CommandSpec, DiffField, ProbeSpec
from harness.registry.steps import ProbeStep, RunState, StepArgs

# The dtypes `dossier run` also times on a GPU, in the roofline's own process (--check-dtypes): the fixed
# burst-best shapes in each, enough to judge every dtype's GEMM burst against its known-good. One
# process instead of one per dtype saves a torch import and CUDA start each (~3.5 s on the H200).
DTYPE_CHECKS = ("fp8", "fp16", "tf32", "fp32")


def finish(args: argparse.Namespace, document: dict[str, Any]) -> None:
    """The best GEMM burst, and each dtype check's."""
    summary = document["summary"]
    if summary.get("burst_best_tflops") is not None:
        print(
            f"best {document['dtype']} GEMM burst: {summary['burst_best_tflops']:.4g} TFLOPS at "
            f"{summary['best_shape']} (short timed windows, not a sustained rate: `dossier stress`); "
            f"every shape explained: {'yes' if summary['all_explained'] else 'no'}",
            file=sys.stderr,
        )
    for entry in unexplained.unexplained(document):
        print(f"  unexplained: {unexplained.line(entry)}; ruled out: {entry['checked']}", file=sys.stderr)
    for dtype, figures in rf.dtype_headlines(document).items():
        best = figures.get("burst_best_tflops")
        if dtype != document["dtype"]:
            print(
                f"best {dtype} GEMM burst: "
                + (f"{best:.4g} TFLOPS at {figures['best_shape']}" if best is not None else "none timed"),
                file=sys.stderr,
            )


COMMAND = CommandSpec(
    help="GEMMs classified on measured roofs, timed and explained (roofline.json + plot)",
    description="Write roofline.json (lab step M1T2) and roofline.png/.svg beside it. Every GEMM is classified "
    "(FLOPs, fewest bytes, intensity, bound, attainable rate) before any runs, then timed and "
    "explained from measured facts. On a GPU give --bandwidth-gbps (the bandwidth probe's sustained "
    "median); the dense peak comes from the catalogue unless --peak-tflops is given. On a CPU both "
    "roofs are measured by the probe.",
    output="roofline.json",
    timeout_s=900,
    finish=finish,
)


def roofline_arguments(state: RunState) -> StepArgs:
    """The roofline fed the bandwidth step's sustained median, in the device's tensor-core dtype; on a GPU
    the other dtypes' burst-best shapes in the same process."""
    bandwidth = sustained_bandwidth_gbps(state)
    device = measured_device(state)
    dtype = "bf16" if device == "cuda" else "fp32"
    checks = ("--check-dtypes", *DTYPE_CHECKS) if device == "cuda" else ()
    return StepArgs(
        ("--bandwidth-gbps", f"{bandwidth:.6g}", "--dtype", dtype, *checks),
        inputs={
            "bandwidth_gbps": bandwidth,
            "bandwidth_from": "median of the bandwidth step's three repeat medians",
            "dtype_from": f"bandwidth ran on {device}: "
            + ("bf16 tensor cores" if dtype == "bf16" else "fp32 on the CPU"),
            "check_dtypes_from": (
                "every dtype acceptance judges a GEMM burst in, timed in this process"
                if checks
                else "a CPU run: its own dtype only"
            ),
        },
    )


STEPS = (
    ProbeStep(
        "roofline",
        "roofline",
        "GEMM roofline",
        "4 (M1T2)",
        schema="roofline",
        analysis="roofline",
        plots="roofline",
        timeout_s=900,
        arguments=roofline_arguments,
        order=30,
        warm_imports=("torch",),  # imported by a process started ahead (harness.run.prestart)
        derived=("--bandwidth-gbps",),
    ),
)

SPEC = ProbeSpec(
    name="roofline",
    title="roofline",
    lab="M1T2",
    options=probe.OPTIONS,
    command=COMMAND,
    analysis="roofline",
    plots="roofline",
    table="roofline",
    steps=STEPS,
    lab_criteria=(lab.ROOFLINE,),
    acceptance_criteria=(rates.GEMM,),
    diff_fields=(DiffField("software", "roofline classifications", lambda heads: heads.get("classifications")),),
    figures=declared.FIGURES,
)
