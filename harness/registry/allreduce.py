"""Registry entry: the M1T4 all-reduce curves, the P2P-disabled control, knees and topology evidence."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from harness.analysis.allreduce import declared
from harness.analysis.allreduce import figures as ar
from harness.analysis.health import figures as health_figures
from harness.errors import CheckFailed
from harness.judge import lab
from harness.judge.acceptance import rates
from harness.probes import allreduce as probe
from harness.registry.bandwidth import measured_device
from harness.registry.spec import CommandSpec, ProbeSpec
from harness.registry.steps import NotReady, ProbeStep, RunState, StepArgs


def summary_lines(document: dict[str, Any]) -> list[str]:
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


def finish(args: argparse.Namespace, document: dict[str, Any]) -> None:
    """A line per curve; exit 1 when a curve stopped early."""
    for line in summary_lines(document):
        print(line, file=sys.stderr)
    failed = [run["failure"]["message"] for run in document.get("runs", []) if run.get("failure")]
    if failed:
        raise CheckFailed(
            "all-reduce stopped early: " + "; ".join(failed),
            hint=f"the points measured before the failure are kept in {args.output}",
        )


COMMAND = CommandSpec(
    help="all-reduce curves, P2P-disabled control, knees, topology evidence (allreduce.json)",
    description="Write allreduce.json (lab step M1T4): all-reduce time, algbw and busbw per buffer size "
    "(nccl-tests' convention), the normal curve and an NCCL_P2P_DISABLE=1 control in fresh "
    "processes, the alpha-beta knee and half-plateau size of each, the ring prediction for two "
    "world sizes, and the topology evidence explaining the gap. With fewer than 2 GPUs or no NCCL "
    "the limitation is recorded, never simulated; `--backend gloo` gives a real CPU curve. "
    "Exits 1 when a curve stopped early (the points measured before are kept in the JSON).",
    output="allreduce.json",
    timeout_s=3600,
    finish=finish,
)


def gpu_count(state: RunState) -> tuple[int, str]:
    """How many GPUs the probes saw, and from which document."""
    if "health" in state.documents:
        count = state.headlines("health", "the device count").get("device_count")
        if isinstance(count, int):
            return count, f"health found {count} device(s)"
    if "bandwidth" in state.documents:
        device = measured_device(state)
        return (1 if device == "cuda" else 0), f"bandwidth ran on {device}"
    return 0, "neither health nor bandwidth completed, so no GPU is assumed"


def allreduce_arguments(state: RunState) -> StepArgs:
    """NCCL over the GPUs health found; else two gloo processes on the CPU (a real curve). With exactly one
    GPU visible to CUDA the outcome is known from the health step's count: the limitation is recorded
    (the step not run, with why) and no probe process is started (its torch import and CUDA start cost
    ~5 s on the H200 to record what the count already says); the lab's criterion reads it so."""
    visible = health_figures.visible_gpus(state.documents["health"]) if "health" in state.documents else None
    if visible is not None and visible[0] == 1:
        raise NotReady(health_figures.ONE_GPU.format(source=visible[1]))
    count, evidence = gpu_count(state)
    if count >= 1:
        return StepArgs(("--backend", "nccl"), inputs={"backend_from": evidence})
    return StepArgs(
        ("--backend", "gloo", "--world-size", "2"),
        inputs={"backend_from": f"{evidence}: two gloo processes on the CPU"},
    )


SPEC = ProbeSpec(
    name="allreduce",
    title="all-reduce curves",
    lab="M1T4",
    options=probe.OPTIONS,
    command=COMMAND,
    analysis="allreduce",
    plots="allreduce",
    steps=(
        ProbeStep(
            "allreduce",
            "allreduce",
            "All-reduce curves",
            "6 (M1T4)",
            schema="allreduce",
            analysis="allreduce",
            plots="allreduce",
            timeout_s=900,
            arguments=allreduce_arguments,
            order=60,
            warm_imports=("torch",),  # imported by a process started ahead (harness.run.prestart)
            derived=("--backend",),
        ),
    ),
    lab_criteria=(lab.ALLREDUCE,),
    acceptance_criteria=(rates.ALLREDUCE_BUSBW,),
    figures=declared.FIGURES,
)
