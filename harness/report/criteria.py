"""The lab's success criteria (lab-m1.txt), each judged pass / fail / not-run from recomputed figures.

A criterion whose evidence step did not complete is "not-run"; one that completed but whose
figures do not meet the criterion, or cannot show it, is "fail" with the reason in its evidence.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from harness import catalogue
from harness.analysis import bandwidth as bandwidth_rules
from harness.analysis import cross_checks
from harness.bundle.view import BundleView
from harness.report.figures import figure, value_text

PASS, FAIL, NOT_RUN = "pass", "fail", "not-run"


@dataclass
class Judgement:
    status: str
    evidence: list[str] = field(default_factory=list)
    steps: list[str] = field(default_factory=list)  # whose commands and plots are the evidence


@dataclass(frozen=True)
class Criterion:
    key: str
    text: str  # quoted from the lab
    steps: tuple[str, ...]
    judge: Callable[[BundleView], Judgement]


def _prerequisite(view: BundleView, step: str) -> tuple[dict[str, Any] | None, Judgement | None]:
    """The step's figures, or the judgement to give when they do not exist."""
    status = view.status(step)
    if status != "completed":
        entry = view.step(step) or {}
        why = entry.get("why") or "the step is not in this run"
        verdict = FAIL if status == "failed" else NOT_RUN
        return None, Judgement(verdict, [f"{step} {status.replace('_', ' ')}: {why}"], [step])
    figures = view.figures(step)
    if figures.values is None:
        return None, Judgement(FAIL, [f"{step}: headline figures could not be recomputed: {figures.error}"], [step])
    return figures.values, None


def judge_health(view: BundleView) -> Judgement:
    h, early = _prerequisite(view, "health")
    if early:
        return early
    devices = h.get("devices") or []
    evidence = [figure(k, h.get(k)) for k in ("driver_version", "cuda_driver_version", "torch_version",
                                              "torch_cuda_build", "device_count")]
    evidence += [f"device {d.get('index')}: {d.get('name')} (sku {d.get('sku_id')}, uuid {d.get('uuid')})"
                 for d in devices if isinstance(d, dict)]
    evidence.append("every field is a value or {\"unavailable\": reason}: raw/health.json validates "
                    "against schemas/health.schema.json")
    failed = h.get("contracts_failed") or []
    evidence.append(f"toolchain contracts failed: {', '.join(failed)} (remedies in raw/health.json)"
                    if failed else "toolchain contracts: none failed")
    return Judgement(PASS, evidence, ["health"])


def judge_bandwidth(view: BundleView) -> Judgement:
    b, early = _prerequisite(view, "bandwidth")
    if early:
        return early
    evidence = [figure(k, b.get(k)) for k in ("device", "kernel", "plateau_gbps", "plateau_sizes_mib",
                                              "repeat_size_mib", "repeat_medians_gbps", "repeat_spread",
                                              "spec_gbps", "known_good_gbps", "known_good_ratio")]
    spread = b.get("repeat_spread")
    spread_ok = isinstance(spread, (int, float)) and bandwidth_rules.repeats_agree(spread)
    evidence.append(f"three repeats vary by less than {bandwidth_rules.REPEAT_SPREAD_MAX:.0%}: "
                    f"{'yes' if spread_ok else 'no'} ({bandwidth_rules.REPEAT_SPREAD_SOURCE})")
    ratio = b.get("known_good_ratio")
    if isinstance(ratio, (int, float)):
        near = bandwidth_rules.within_known_good(ratio)
        evidence.append(f"median within {bandwidth_rules.KNOWN_GOOD_TOLERANCE:.0%} of the known-good result: "
                        f"{'yes' if near else 'no'} ({bandwidth_rules.KNOWN_GOOD_SOURCE})")
    else:
        near = False
        evidence.append(f"no known-good result for this SKU and form factor (sku {b.get('sku_id')}), "
                        "so the 15% comparison cannot be made")
    return Judgement(PASS if spread_ok and near else FAIL, evidence, ["bandwidth"])


def _peak_from_catalogue(view: BundleView, dtype: str) -> float | None:
    figures = view.figures("bandwidth").values or {}
    sku = catalogue.by_id(figures["sku_id"]) if figures.get("sku_id") else None
    if not sku:
        return None
    return sku.get("published", {}).get("dense_tflops", {}).get(dtype)


def judge_roofline(view: BundleView) -> Judgement:
    r, early = _prerequisite(view, "roofline")
    if early:
        return early
    evidence = [figure(k, r.get(k)) for k in ("device", "dtype", "bandwidth_gbps", "peak_tflops",
                                              "ridge_flop_per_byte", "classifications", "best_tflops",
                                              "best_shape", "all_explained", "fusion_speedup")]
    ok = bool(r.get("all_explained")) and bool(r.get("classifications"))
    median = (view.figures("bandwidth").values or {}).get("repeat_median_gbps")
    if isinstance(median, (int, float)):
        same = cross_checks.roof_is_sustained_median(r.get("bandwidth_gbps"), median)
        evidence.append(f"uses the measured sustained median {value_text('x_gbps', median)} (recomputed from the "
                        f"bandwidth step's repeat times): {'yes' if same else 'no'}")
    else:
        same = False
        evidence.append("the bandwidth step's sustained median is not in this bundle, so the memory roof cannot "
                        "be shown to be the measured one")
    ok = ok and same
    peak = _peak_from_catalogue(view, str(r.get("dtype")))
    if peak is not None and isinstance(r.get("peak_tflops"), (int, float)):
        same = math.isclose(peak, r["peak_tflops"], rel_tol=1e-6)
        evidence.append(f"dense peak matches the catalogue's {value_text('x_tflops', peak)} for "
                        f"{r.get('dtype')}: {'yes' if same else 'no'}")
        ok = ok and same
    else:
        evidence.append("no catalogue dense peak for this device; the peak used is the probe's own (see raw/roofline.json)")
    return Judgement(PASS if ok else FAIL, evidence, ["roofline"])


def judge_precision(view: BundleView) -> Judgement:
    p, early = _prerequisite(view, "precision")
    if early:
        return early
    tensors = p.get("tensors") or {}
    explanations = p.get("explanations") or {}
    explained = sum(v for v in explanations.values() if isinstance(v, int))
    evidence = [figure(k, p.get(k)) for k in ("checkpoint", "file_sha256", "tensors", "ranks", "explanations")]
    evidence.append(f"{len(tensors)} real checkpoint tensor(s), {explained} explained range/outlier/reversal finding(s)")
    return Judgement(PASS if len(tensors) >= 3 and explained >= 1 else FAIL, evidence, ["precision"])


def judge_allreduce(view: BundleView) -> Judgement:
    a, early = _prerequisite(view, "allreduce")
    if early:
        return early
    curves = a.get("curves") or {}
    limitations = a.get("limitations") or []
    evidence = [figure(k, a.get(k)) for k in ("backend", "world_size")]
    evidence += [f"curve {name}: {value_text('curve', curve)}" for name, curve in sorted(curves.items())]
    evidence += [f"limitation recorded: {what}" for what in limitations]
    if a.get("medians_from"):
        evidence.append(f"per-rank medians: {a['medians_from']}")
    missing = [name for name in ("normal", "p2p_disabled")
               if not isinstance(curves.get(name), dict) or curves[name].get("knee_bytes") is None]
    if not missing:
        return Judgement(PASS, evidence + ["both curves identify a startup-to-bandwidth knee"], ["allreduce"])
    if limitations:
        return Judgement(PASS, evidence + [f"no knee for {', '.join(missing)}: the limitation is recorded, "
                                           "not simulated"], ["allreduce"])
    return Judgement(FAIL, evidence + [f"no knee for {', '.join(missing)} and no limitation recorded"],
                     ["allreduce"])


def judge_idle_load(view: BundleView) -> Judgement:
    """From derived/health-diff.json (harness.analysis.health_diff): its checks and verdict."""
    status = view.status("health-diff")
    if status != "completed":
        why = (view.step("health-diff") or {}).get("why") or "the step is not in this run"
        return Judgement(FAIL if status == "failed" else NOT_RUN, [f"health-diff {status.replace('_', ' ')}: {why}"],
                         ["health-load"])
    document = view.documents["health-diff"]
    checks = [c for c in (document.get("checks") or []) if isinstance(c, dict)]
    evidence = [f"{c.get('name')} ({c.get('device')}): {c.get('status')}: {c.get('evidence')}" for c in checks]
    if not checks:
        return Judgement(FAIL, ["derived/health-diff.json names no checks"], ["health-load"])
    if any(c.get("status") == "fail" for c in checks) or document.get("verdict") != "pass":
        return Judgement(FAIL, evidence, ["health-load"])
    if all(c.get("status") == "not-applicable" for c in checks):
        return Judgement(NOT_RUN, evidence + ["no device was under load, so nothing could rise"], ["health-load"])
    return Judgement(PASS, evidence, ["health-load"])


CRITERIA: tuple[Criterion, ...] = (
    Criterion("health", "health.json names the driver, framework CUDA build, visible devices, topology, "
              "active processes, clocks, power, and ECC state, or records why a field is unavailable.",
              ("health",), judge_health),
    Criterion("bandwidth", "Three large-buffer bandwidth medians vary by less than 5% and the median is within "
              "15% of a known-good result from the same GPU SKU and form factor.", ("bandwidth",), judge_bandwidth),
    Criterion("roofline", "The roofline uses the measured bandwidth and matching dense-compute peak; every "
              "measured GEMM is classified before the run and explained afterward.", ("roofline",), judge_roofline),
    Criterion("precision", "The precision table includes three real checkpoint tensors and explains at least "
              "one range, outlier, or scaling reversal.", ("precision",), judge_precision),
    Criterion("allreduce", "On a multi-GPU host, both normal and peer-to-peer-disabled all-reduce curves identify "
              "a startup-to-bandwidth knee. On a one-GPU host, the limitation is recorded rather than simulated.",
              ("allreduce",), judge_allreduce),
    Criterion("idle-load", "(Step 7) Low idle clocks rise under work and no unexpected process shares the device.",
              ("health", "health-load", "health-diff"), judge_idle_load),
)


def judge_all(view: BundleView) -> list[tuple[Criterion, Judgement]]:
    return [(criterion, criterion.judge(view)) for criterion in CRITERIA]
