"""Acceptance: GPU against GPU within one node.

GPUs of one SKU in one node, loaded the same way, should measure alike; one that falls short of
its neighbours is named even when every GPU clears the SKU's absolute floor (DCGM's diagnostic
plugin flags cross-GPU outliers in throughput and power the same way; docs.nvidia.com/datacenter/
dcgm/latest/reference/diagnostics/plugins/diagnostic.html). With two or more GPUs, each GPU's
figure must be at least (1 - tolerance) x the node's median of that figure, the tolerance being the
profile's `thresholds.gpu_vs_node_tolerance`. The figures, each measured on every GPU:

- device-local copy bandwidth (the transfer probe's copy within each GPU's memory; the bandwidth
  probe's sweep runs on one GPU only),
- sustained GEMM (the stress run's steady state per GPU),
- power reached under the stress load (median board power per GPU),
- pinned host-to-device and device-to-host plateaus (the transfer probe, per GPU).

With one GPU there is nothing to compare: not measured, saying so.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from typing import Any

from harness.analysis.units import number_or_none
from harness.judge.acceptance.criteria import Judging, fmt
from harness.judge.acceptance.profile import Profile
from harness.judge.engine import Criterion, Result, Value
from harness.judge.facts import BundleFacts

TOLERANCE_KEY = "gpu_vs_node_tolerance"


def _stress(field: Callable[[dict[str, Any]], Any]) -> Callable[[BundleFacts], tuple[dict[str, float] | None, str]]:
    def read(facts: BundleFacts) -> tuple[dict[str, float] | None, str]:
        figures = facts.figures("stress")
        if figures.values is None:
            return None, figures.why or "no stress figures"
        if figures.values.get("device") != "cuda":
            return None, "the stress step ran on the CPU: no GPU to compare"
        values = {f"GPU{d['index']}": number_or_none(field(d)) for d in figures.values.get("devices") or []}
        return {k: v for k, v in values.items() if v is not None}, ""

    return read


def _transfer(key: str) -> Callable[[BundleFacts], tuple[dict[str, float] | None, str]]:
    def read(facts: BundleFacts) -> tuple[dict[str, float] | None, str]:
        figures = facts.figures("transfer")
        if figures.values is None:
            return None, figures.why or "no transfer figures"
        if figures.values.get("device") != "cuda":
            return None, "the transfer step copied host memory on the CPU: no GPU to compare"
        values = {
            f"GPU{gpu}": number_or_none(per.get(key))
            for gpu, per in sorted((figures.values.get("per_gpu") or {}).items())
            if gpu != "host"
        }
        return {k: v for k, v in values.items() if v is not None}, ""

    return read


# criterion name -> (what, unit, reader, evidence)
FIGURES: dict[str, tuple[str, str, Callable, str]] = {
    "gpu_vs_node_device_local_copy": (
        "device-local copy bandwidth",
        "GB/s",
        _transfer("device_local_gbps"),
        "raw/transfer.json series[] device_local (plateaus recomputed)",
    ),
    "gpu_vs_node_sustained_gemm": (
        "sustained GEMM (stress steady state)",
        "TFLOPS",
        _stress(lambda d: d.get("steady_tflops")),
        "raw/stress.json devices[].gemm.buckets (steady state recomputed)",
    ),
    "gpu_vs_node_power": (
        "board power under the stress load (median)",
        "W",
        _stress(lambda d: (d.get("power") or {}).get("median_w")),
        "raw/stress.json devices[].telemetry.samples (power recomputed)",
    ),
    "gpu_vs_node_h2d_pinned": (
        "pinned host-to-device plateau",
        "GB/s",
        _transfer("h2d_pinned_gbps"),
        "raw/transfer.json series[] (plateaus recomputed)",
    ),
    "gpu_vs_node_d2h_pinned": (
        "pinned device-to-host plateau",
        "GB/s",
        _transfer("d2h_pinned_gbps"),
        "raw/transfer.json series[] (plateaus recomputed)",
    ),
}


def _one(name: str, facts: BundleFacts, profile: Profile) -> Result:
    what, unit, read, evidence = FIGURES[name]
    title = f"GPU against GPU: every GPU's {what} is within the tolerance of the node's median"
    judging = Judging(name, title, evidence)
    tolerance = number_or_none(profile.threshold(TOLERANCE_KEY))
    threshold = (
        Value(
            1 - tolerance,
            "fraction of the node median",
            f"every GPU at least {1 - tolerance:.0%} of the node's median {what}",
        )
        if tolerance is not None
        else None
    )
    values, why = read(facts)
    if values is None:
        return judging.incomplete(why, threshold=threshold)
    if len(values) < 2:
        return judging.incomplete(
            f"{len(values)} GPU measured: nothing to compare it with within the node", threshold=threshold
        )
    if tolerance is None:
        return judging.incomplete(f"the profile for {profile.sku_id} states no {TOLERANCE_KEY}")
    median = statistics.median(values.values())
    ratios = {gpu: value / median for gpu, value in values.items()} if median else {}
    listed = ", ".join(f"{gpu} {fmt(value)}" for gpu, value in values.items())
    lowest = min(ratios, key=ratios.__getitem__) if ratios else None
    measured = Value(
        ratios.get(lowest),
        "fraction of the node median",
        f"{listed} {unit}; node median {fmt(median)} {unit}"
        + (f"; lowest {lowest} at {ratios[lowest]:.1%}" if lowest else ""),
    )
    short = [gpu for gpu, ratio in ratios.items() if ratio < 1 - tolerance] if median else list(values)
    if short:
        return judging.failed(
            "; ".join(
                f"{gpu} {fmt(values[gpu])} {unit} is {ratios[gpu]:.1%} of the node median {fmt(median)} {unit}, "
                f"under {1 - tolerance:.0%}"
                if median
                else f"{gpu}: the node median is 0"
                for gpu in short
            ),
            measured,
            threshold,
        )
    return judging.passed(
        f"every GPU within {tolerance:.0%} of the node median {fmt(median)} {unit}", measured, threshold
    )


def gpu_vs_node(facts: BundleFacts, profile: Profile) -> list[Result]:
    return [_one(name, facts, profile) for name in FIGURES]


GPU_VS_NODE = Criterion("gpu_vs_node", "GPU against GPU within the node", ("transfer", "stress"), gpu_vs_node)
