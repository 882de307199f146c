"""Registry entry: the stress probe (beyond lab M1): sustained GEMM with every result checked, a memory
test, power and thermal steady state and NVML error events, on every GPU at once."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from typing import Any

from harness.analysis.digests import stress_conditions
from harness.analysis.fleet import DIGEST_CONDITIONS
from harness.analysis.stress import figures as analysis
from harness.analysis.verdict import Verdict
from harness.errors import CheckFailed
from harness.judge import stress as report_criterion
from harness.judge.acceptance import digests, node
from harness.judge.acceptance import stress as criteria
from harness.probes import stress as probe
from harness.probes.contract import Option, real
from harness.registry.spec import CommandSpec, DiffFigure, FleetMetric, ProbeSpec
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


def stress_arguments(state: RunState) -> StepArgs:
    """The probe's own defaults (60 s on a GPU, 3 s on a CPU) unless `--stress-seconds` was given."""
    seconds = state.prepared.get("stress")
    if seconds is None:
        return StepArgs((), inputs={"seconds_from": "the probe's default: 60 s on a GPU, 3 s on a CPU (sized for CI)"})
    return StepArgs(("--seconds", f"{seconds:g}"), inputs={"seconds_from": "dossier run --stress-seconds"})


def prepare_run(args: argparse.Namespace) -> float | None:
    return args.stress_seconds


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


def _devices(heads: Mapping[str, Any]) -> list[dict[str, Any]]:
    return heads.get("devices") or []


def _sum_measured(heads: Mapping[str, Any], read) -> int | None:
    """The sum over devices of what READ finds, None when any device could not measure it."""
    values = [read(d) for d in _devices(heads)]
    return sum(values) if values and all(v is not None for v in values) else None


def _burst_over_steady(heads: Mapping[str, Any]) -> float | None:
    ratios = [d["burst_over_steady"] for d in _devices(heads) if d.get("burst_over_steady") is not None]
    return max(ratios) if ratios else None


def _mismatches(device: dict[str, Any]) -> int | None:
    check = device["result_check"]
    return check["mismatched_elements"] if check["enabled"] and check["iterations_checked"] else None


def _memory_errors(device: dict[str, Any]) -> int | None:
    return device["memory_test"]["mismatched_words"] if device["memory_test"] else None


def _events(device: dict[str, Any]) -> int | None:
    return device["nvml_events"]["events"] if device["nvml_events"] else None


# Each GPU's reference GEMM result digest (issue 24's stress probe: devices[i].gemm.reference_digest, what it is
# of in harness.analysis.digests), as `dossier fleet collect` compares it across nodes: "CONDITIONS | SHA256", the
# conditions (dtype, shape, seed, torch, cuBLAS) the bits hold for, so that only digests of the same call compare.


def _result_digest(document: Mapping[str, Any]) -> Any:
    """The node's result digest and what it holds for; GPUs that disagree within a node are reported as
    such (a value unlike every other node's)."""
    found = [(d.get("gemm") or {}).get("reference_digest") for d in document.get("devices") or []]
    records = [r for r in found if isinstance(r, dict) and isinstance(r.get("sha256"), str)]
    if not found or len(records) != len(found):
        return {
            "unavailable": "the stress document records no result digest (the stress probe records one per GPU, "
            "devices[].gemm.reference_digest; an older build's did not)"
        }
    conditions = ", ".join(f"{key} {value}" for key, value in stress_conditions(records[0]).items())
    digests = sorted({r["sha256"] for r in records})
    if len(digests) > 1:
        return f"{conditions}{DIGEST_CONDITIONS}the node's GPUs disagree: " + ", ".join(digests)
    return f"{conditions}{DIGEST_CONDITIONS}{digests[0]}"


FLEET_METRICS = (
    FleetMetric(
        "stress_steady_tflops",
        "TFLOP/s",
        "sustained: the lowest steady-state GEMM rate over the node's "
        "GPUs (median of the second half of the stress run)",
        lambda heads: heads.get("min_steady_tflops"),
    ),
    FleetMetric(
        "stress_burst_over_steady",
        "ratio",
        "the highest first-second / steady-state rate over the node's "
        "GPUs (how far a burst overstates what the card sustains)",
        _burst_over_steady,
    ),
    FleetMetric(
        "stress_result_mismatches",
        "elements",
        "GEMM output elements that differed from the reference, summed over GPUs",
        lambda heads: _sum_measured(heads, _mismatches),
        kind="count",
    ),
    FleetMetric(
        "stress_memory_errors",
        "words",
        "memory-test words read back wrong, summed over GPUs",
        lambda heads: _sum_measured(heads, _memory_errors),
        kind="count",
    ),
    FleetMetric(
        "stress_xid_ecc_events",
        "events",
        "XID and ECC events NVML delivered during the stress run, summed over GPUs",
        lambda heads: _sum_measured(heads, _events),
        kind="count",
    ),
    FleetMetric(
        "stress_result_digest",
        "sha256",
        "the sha256 of the stress run's reference GEMM output with what it "
        "holds for (dtype, shape, seed, torch, cuBLAS), compared over the nodes of one SKU and software stack",
        _result_digest,
        kind="digest",
        source="document",
    ),
)


def _per_device(heads: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(gpuN, or cpu, the device's figures with the run's dtype and shape) for every device the run loaded."""
    conditions = {"dtype": heads.get("dtype"), "shape": heads.get("shape")}
    return [
        (f"gpu{d.get('index')}" if heads.get("device") == "cuda" else "cpu", {**d, "conditions": conditions})
        for d in _devices(heads)
        if isinstance(d, dict)
    ]


def _new_errors(device: dict[str, Any]) -> int | None:
    """New ECC errors and row remaps during the run (each raised flag counts one), None when not read."""
    counters = device.get("counters_new")
    if not isinstance(counters, dict):
        return None
    return sum(int(v) for v in counters.values() if isinstance(v, (int, bool)))


def _digests(document: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(gpuN or cpu, its reference GEMM result's digest record) for every device that recorded one."""
    found = []
    for device in document.get("devices") or []:
        gemm = device.get("gemm") if isinstance(device, dict) else None
        record = gemm.get("reference_digest") if isinstance(gemm, dict) else None
        if isinstance(record, dict):
            found.append((f"gpu{device.get('index')}" if document.get("device") == "cuda" else "cpu", record))
    return found


def _conditions(item: dict[str, Any]) -> Any:
    return item["conditions"]


# Rates per device (noise: the lowest GPU's figure id), the fault counts (equal only: both zero or equal) and
# the reference GEMM result's digest (equal only, under the same dtype, shape, seed and library build).
DIFF_FIGURES = (
    DiffFigure(
        "stress {} steady",
        "TFLOPS",
        lambda d: d.get("steady_tflops"),
        each=_per_device,
        figure="stress.{}.steady_tflops",
        kind="steady",
        noise="stress.steady_tflops",
        conditions=_conditions,
    ),
    DiffFigure(
        "stress {} burst",
        "TFLOPS",
        lambda d: d.get("burst_tflops"),
        each=_per_device,
        figure="stress.{}.burst_tflops",
        kind="burst",
        noise="stress.burst_tflops",
        conditions=_conditions,
    ),
    DiffFigure(
        "stress {} power median",
        "W",
        lambda d: (d.get("power") or {}).get("median_w"),
        each=_per_device,
        figure="stress.{}.power_median_w",
        kind="steady",
        noise="stress.power_median_w",
        conditions=_conditions,
    ),
    DiffFigure(
        "stress {} result mismatches",
        "elements",
        _mismatches,
        each=_per_device,
        figure="stress.{}.result_mismatches",
        kind="count",
    ),
    DiffFigure(
        "stress {} memory errors",
        "words",
        _memory_errors,
        each=_per_device,
        figure="stress.{}.memory_errors",
        kind="count",
    ),
    DiffFigure(
        "stress {} XID and ECC events",
        "events",
        _events,
        each=_per_device,
        figure="stress.{}.xid_ecc_events",
        kind="count",
    ),
    DiffFigure(
        "stress {} new ECC errors and row remaps",
        "errors",
        _new_errors,
        each=_per_device,
        figure="stress.{}.new_ecc_errors",
        kind="count",
    ),
    DiffFigure(
        "stress {} reference digest",
        "sha256",
        lambda record: record.get("sha256"),
        each=_digests,
        figure="stress.{}.reference_digest",
        kind="exact",
        conditions=stress_conditions,
        source="document",
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
    known_good=(criteria.SUSTAINED_GEMM,),
    diff_figures=DIFF_FIGURES,
    fleet_metrics=FLEET_METRICS,
    run_options=(STRESS_SECONDS,),
    prepare_run=prepare_run,
)
