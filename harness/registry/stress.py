"""Registry entry: the stress probe (beyond lab M1): sustained GEMM with every result checked, a memory
test, power and thermal steady state and NVML error events, on every GPU at once."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from typing import Any

from harness.analysis.stress import declared
from harness.analysis.stress import figures as analysis
from harness.analysis.verdict import Verdict
from harness.errors import CheckFailed
from harness.judge import stress as report_criterion
from harness.judge.acceptance import digests, node
from harness.judge.acceptance import stress as criteria
from harness.probes import stress as probe
from harness.probes.contract import Option, real
from harness.registry.spec import CommandSpec, ProbeSpec
from harness.registry.steps import ProbeStep, RunState, StepArgs

# The probe ends itself after --seconds plus at most DEADLINE_EXTRA_S (start-up, memory test,
# counters); the step's timeout leaves room for the longest run the probe accepts.
TIMEOUT_S = probe.MAX_SECONDS + probe.DEADLINE_EXTRA_S + 300.0

# `dossier run`'s name for the probe's --seconds: the same limit, declared once (the probe's check).
STRESS_SECONDS = Option(
    ("--stress-seconds",),
    dict(
        type=real,
        metavar="S",
        help="length of the stress step's GEMM phase (default: the probe's, 60 s on a GPU, 3 s on "
        f"a CPU, sized for CI; at most {probe.MAX_SECONDS:g}, as `dossier stress --seconds`). An "
        "acceptance profile asks for a longer run with its stress_min_seconds threshold "
        "(docs/stress.md)",
    ),
    check=probe.seconds_problem,
)

# `dossier run`'s name for the probe's --inject-fault: a bundle that fails on purpose, to try what comes
# after a FAIL (`dossier evidence`, a drain, a retest) on a healthy machine (bench/gpu_evidence.sh).
STRESS_INJECT_FAULT = Option(
    ("--stress-inject-fault",),
    dict(
        choices=("gemm", "memory"),
        help="self-test: the stress step flips one bit between compute and check (as `dossier stress "
        "--inject-fault`), so its result check and the run FAIL on purpose; recorded",
    ),
)


def who(document: dict[str, Any], device: dict[str, Any]) -> str:
    return f"GPU{device['index']}" if document["device"] == "cuda" else "CPU"


def summary(document: dict[str, Any]) -> list[str]:
    """One line per device: burst, steady, ratio, cap time, power, temperatures, checks."""
    heads = analysis.headlines(document)
    lines = [
        f"stress: {heads['dtype']} {'x'.join(str(heads['shape'][d]) for d in 'mnk')} for "
        f"{heads['seconds']:g} s on {document['device']}"
    ]
    for d in heads["devices"]:
        power, cap = d["power"], d["power_cap"]
        rate = (
            f"burst {d['burst_tflops']:.4g}, steady {d['steady_tflops']:.4g} TFLOPS "
            f"(burst/steady {d['burst_over_steady']:.3f})"
            if d["steady_tflops"] is not None
            else "no steady rate"
        )
        capped = (
            f"power cap after {cap['engaged_after_s']:g} s"
            if cap["engaged_after_s"] is not None
            else f"power cap never engaged ({cap['why_never']})"
        )
        watts = (
            f"power median {power['median_w']:.4g} W / max {power['max_w']:.4g} W of {power['limit_w']:g} W"
            if power.get("max_w") is not None and power.get("limit_w") is not None
            else "no power samples"
        )
        checks = ", ".join(f"{c['name']} {c['status']}" for c in d["checks"])
        lines.append(f"  {who(document, d)} ({d['name']}): {rate}; {capped}; {watts}; {checks}")
    verdict = heads["verdict"]
    lines.append(
        f"verdict: {verdict['status']}"
        + (f" (not measured: {', '.join(verdict['not_measured'])})" if verdict["not_measured"] else "")
    )
    return lines


def finish(args: argparse.Namespace, document: dict[str, Any]) -> None:
    """The summary, and exit 1 naming each failed check."""
    print("\n".join(summary(document)), file=sys.stderr)
    verdict = analysis.headlines(document)["verdict"]
    if verdict["status"] == Verdict.FAIL:
        raise CheckFailed(
            f"stress: {len(verdict['failures'])} check(s) failed: " + "; ".join(verdict["failures"]),
            hint="the JSON holds each device's buckets, samples and evidence",
        )


COMMAND = CommandSpec(
    help="sustained GEMM with every result checked, memory test, power, thermals, XID/ECC (stress.json + plot)",
    description="Write stress.json and stress.png/.svg beside it. Every visible GPU at once, one worker process "
    "each: the GEMM back to back for --seconds (60 on a GPU; 3 on a CPU, sized for CI) in one-second "
    "buckets, every result compared bit for bit with a fixed-seed reference; then a memory test "
    "(four patterns over a share of free device memory); NVML telemetry, XID/ECC events and ECC/row-"
    "remap counters throughout. Reports burst (first second) and steady (median of the second half) "
    "rates, when the power cap engaged, power against the limit and each check. Exits 1 when a "
    "check fails (a result mismatch, a memory error, an XID, new ECC errors or row remaps, a HW "
    "slowdown, thermal or power-brake event, power target not reached), naming the device and check.",
    output="stress.json",
    timeout_s=TIMEOUT_S,
    finish=finish,
)


@dataclass(frozen=True)
class StressRun:
    """What `dossier run` was asked of the stress step: its length, and a fault to inject (a self-test)."""

    seconds: float | None = None
    inject_fault: str | None = None


def stress_arguments(state: RunState) -> StepArgs:
    """The probe's own defaults (60 s on a GPU, 3 s on a CPU) unless `--stress-seconds` was given;
    `--inject-fault` when `--stress-inject-fault` was (the run then fails on purpose)."""
    asked = state.prepared.get("stress") or StressRun()
    argv: tuple[str, ...] = ()
    inputs = {"seconds_from": "the probe's default: 60 s on a GPU, 3 s on a CPU (sized for CI)"}
    if asked.seconds is not None:
        argv, inputs = ("--seconds", f"{asked.seconds:g}"), {"seconds_from": "dossier run --stress-seconds"}
    if asked.inject_fault is not None:
        argv += ("--inject-fault", asked.inject_fault)
        inputs["fault_injected_by"] = "dossier run --stress-inject-fault: a self-test, the run fails on purpose"
    return StepArgs(argv, inputs=inputs)


def prepare_run(args: argparse.Namespace) -> StressRun:
    return StressRun(args.stress_seconds, args.stress_inject_fault)


# Last in the plan: every other probe runs on a cool card, and the long load ends the run.
STEPS = (
    ProbeStep(
        "stress",
        "stress",
        "Sustained GEMM and memory test (stress)",
        "beyond lab M1",
        schema="stress",
        analysis="stress",
        plots="stress",
        timeout_s=TIMEOUT_S,
        arguments=stress_arguments,
        order=90,
    ),
)


SPEC = ProbeSpec(
    name="stress",
    title="sustained load with result, memory and error checks",
    lab="beyond lab M1",
    options=probe.OPTIONS,
    command=COMMAND,
    analysis="stress",
    plots="stress",
    table="stress",
    steps=STEPS,
    lab_criteria=(report_criterion.STRESS,),
    acceptance_criteria=(*criteria.CRITERIA, node.GPU_VS_NODE, digests.STRESS_AGREE, digests.STRESS_EXPECTED),
    figures=declared.FIGURES,
    run_options=(STRESS_SECONDS, STRESS_INJECT_FAULT),
    prepare_run=prepare_run,
)
