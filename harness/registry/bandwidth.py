"""Registry entry: the M1T1 memory bandwidth sweep, plateau and repeats."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from harness.analysis.bandwidth import declared
from harness.analysis.bandwidth import figures as rules
from harness.analysis.verdict import Verdict
from harness.errors import CheckFailed
from harness.judge import lab
from harness.judge.acceptance import rates
from harness.probes import bandwidth as probe
from harness.registry.spec import CommandSpec, DiffField, ProbeSpec
from harness.registry.steps import NotReady, ProbeStep, RunState, StepArgs


def finish(args: argparse.Namespace, document: dict[str, Any]) -> None:
    """The summary; exit 1 when the repeats do not agree (the lab's rule)."""
    print(summary(document), file=sys.stderr)
    repeats = document["repeats"]
    if repeats["verdict"] == Verdict.FAIL:
        diagnosis = repeats["diagnosis"] or {}
        raise CheckFailed(
            f"the {repeats['count']} repeats at {repeats['size_mib']:g} MiB vary by "
            f"{repeats['spread']:.1%}, not under {repeats['spread_max']:.0%} "
            f"({rules.REPEAT_SPREAD_SOURCE}): not a number to trust",
            hint=f"diagnosis: {diagnosis.get('summary', 'none')}",
        )


def summary(document: dict[str, Any]) -> str:
    plateau, ref = document["plateau"], document["reference"]
    lines = [f"{document['kernel']} on {document['device']} ({document['device_name']})"]
    if plateau["reached"]:
        lines.append(
            f"plateau {plateau['gbps']:.1f} GB/s over {', '.join(f'{s:g}' for s in plateau['sizes_mib'])} "
            f"MiB (within {plateau['tolerance']:.0%})"
        )
    else:
        lines.append(f"no plateau: {plateau['why']}")
    repeats = document["repeats"]
    lines.append(
        f"repeats at {repeats['size_mib']:g} MiB: "
        + ", ".join(f"{m:.1f}" for m in repeats["medians_gbps"])
        + f" GB/s, spread {repeats['spread']:.2%}: {repeats['verdict']}"
    )
    if ref.get("spec_ratio") is not None:
        lines.append(f"{ref['spec_ratio']:.1%} of the published {ref['spec_gbps']:g} GB/s ({ref['spec_source']})")
    if ref.get("known_good_ratio") is not None:
        lines.append(f"{ref['known_good_ratio']:.1%} of the known-good {ref['known_good_gbps']:g} GB/s")
    else:
        lines.append(f"no known-good comparison: {ref['why']}")
    return "\n".join(lines)


COMMAND = CommandSpec(
    help="memory bandwidth sweep, plateau and repeats (bandwidth.json)",
    description="Write bandwidth.json (lab step M1T1): sweep buffer sizes, name the plateau (never the maximum) "
    "and why small sizes differ (cache-resident, launch-bound), repeat the largest safe size with "
    "NVML telemetry during the middle repeat, and compare with the catalogue's published peak and "
    "known-good result for the same SKU. Exits 1 unless the repeats vary by less than "
    f"{rules.REPEAT_SPREAD_MAX:.0%}.",
    output="bandwidth.json",
    timeout_s=600,
    finish=finish,
)


def sustained_bandwidth_gbps(state: RunState) -> float:
    """The sustained median later steps are fed (the roofline's memory roof): the median of the
    three repeat medians, recomputed from the bandwidth step's raw times."""
    median = state.headlines("bandwidth", "the sustained bandwidth median").get("repeat_median_gbps")
    if not isinstance(median, (int, float)):
        raise NotReady("the bandwidth step recorded no repeat medians")
    return float(median)


def measured_device(state: RunState) -> str:
    """Where the bandwidth step ran (cuda or cpu): later steps size themselves to it."""
    return str(state.headlines("bandwidth", "the device the bandwidth ran on").get("device", "cpu"))


SPEC = ProbeSpec(
    name="bandwidth",
    title="HBM bandwidth sweep",
    lab="M1T1",
    options=probe.OPTIONS,
    command=COMMAND,
    analysis="bandwidth",
    plots="bandwidth",
    steps=(
        ProbeStep(
            "bandwidth",
            "bandwidth",
            "HBM bandwidth",
            "2-3 (M1T1)",
            schema="bandwidth",
            analysis="bandwidth",
            plots="bandwidth",
            timeout_s=900,
            arguments=lambda state: StepArgs(("--repeats", "3")),
            order=20,
            warm_imports=("torch",),  # imported by a process started ahead (harness.run.prestart)
        ),
    ),
    lab_criteria=(lab.BANDWIDTH,),
    acceptance_criteria=(rates.BANDWIDTH_PLATEAU, rates.REPEAT_SPREAD),
    diff_fields=(DiffField("hardware", "bandwidth sku_id", lambda heads: heads.get("sku_id")),),
    figures=declared.FIGURES,
)
