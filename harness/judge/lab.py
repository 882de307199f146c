"""The lab's success criteria (lab-m1.txt) that report.md judges, from recomputed figures.

Each is a Criterion of the one engine (harness.judge.engine) with no thresholds of its own: the
lab's rules are constants of the analysis modules, with their source (harness.analysis.bandwidth
REPEAT_SPREAD_MAX, KNOWN_GOOD_TOLERANCE). A criterion whose evidence step did not run is
INCOMPLETE (SKIP where nothing here could show it: no device under load); one whose step failed, or completed with figures that do not meet the criterion or
cannot show it, is FAIL with the reason in its findings.
"""

from __future__ import annotations

import math
from typing import Any

from harness import catalogue
from harness.analysis.bandwidth import figures as bandwidth_rules
from harness.analysis import cross_checks
from harness.analysis.verdict import StepStatus, Verdict, parse
from harness.judge.engine import Criterion, Result
from harness.judge.facts import BundleFacts
from harness.analysis.units import figure, value_text

HEALTH_TEXT = ("health.json names the driver, framework CUDA build, visible devices, topology, active processes, "
               "clocks, power, and ECC state, or records why a field is unavailable.")
BANDWIDTH_TEXT = ("Three large-buffer bandwidth medians vary by less than 5% and the median is within 15% of a "
                  "known-good result from the same GPU SKU and form factor.")
ROOFLINE_TEXT = ("The roofline uses the measured bandwidth and matching dense-compute peak; every measured GEMM is "
                 "classified before the run and explained afterward.")
PRECISION_TEXT = ("The precision table includes three real checkpoint tensors and explains at least one range, "
                  "outlier, or scaling reversal.")
ALLREDUCE_TEXT = ("On a multi-GPU host, both normal and peer-to-peer-disabled all-reduce curves identify a "
                  "startup-to-bandwidth knee. On a one-GPU host, the limitation is recorded rather than simulated.")
IDLE_LOAD_TEXT = "(Step 7) Low idle clocks rise under work and no unexpected process shares the device."


def result(name: str, title: str, verdict: Verdict, findings: list[str], steps: tuple[str, ...]) -> list[Result]:
    """The one Result of a lab criterion (its findings are the report's evidence lines)."""
    return [Result(name, title, verdict, why=findings[-1] if findings else "", findings=tuple(findings),
                   steps=steps)]


def prerequisite(facts: BundleFacts, step: str) -> tuple[dict[str, Any], Verdict | None, list[str]]:
    """The step's figures, or (no figures) the verdict and the finding to give when they do not exist."""
    status = facts.status(step)
    if status != StepStatus.COMPLETED:
        entry = facts.view.step(step) or {}
        why = entry.get("why") or "the step is not in this run"
        verdict = Verdict.FAIL if status == StepStatus.FAILED else Verdict.INCOMPLETE
        return {}, verdict, [f"{step} {status.replace('_', ' ')}: {why}"]
    figures = facts.view.figures(step)
    if figures.values is None:
        return {}, Verdict.FAIL, [f"{step}: headline figures could not be recomputed: {figures.error}"]
    return figures.values, None, []


def judge_health(facts: BundleFacts, thresholds: Any = None) -> list[Result]:
    h, early, why = prerequisite(facts, "health")
    if early:
        return result("health", HEALTH_TEXT, early, why, ("health",))
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
    return result("health", HEALTH_TEXT, Verdict.PASS, evidence, ("health",))


def judge_bandwidth(facts: BundleFacts, thresholds: Any = None) -> list[Result]:
    b, early, why = prerequisite(facts, "bandwidth")
    if early:
        return result("bandwidth", BANDWIDTH_TEXT, early, why, ("bandwidth",))
    evidence = [figure(k, b.get(k)) for k in ("device", "kernel", "plateau_gbps", "plateau_sizes_mib",
                                              "repeat_size_mib", "repeat_medians_gbps", "repeat_spread",
                                              "spec_gbps", "known_good_gbps", "known_good_ratio")]
    spread = b.get("repeat_spread")
    spread_ok = isinstance(spread, (int, float)) and bandwidth_rules.repeats_agree(spread)
    evidence.append(f"three repeats {bandwidth_rules.REPEAT_SPREAD_SCOPE} vary by less than "
                    f"{bandwidth_rules.REPEAT_SPREAD_MAX:.0%}: {'yes' if spread_ok else 'no'} "
                    f"({bandwidth_rules.REPEAT_SPREAD_SOURCE})")
    ratio = b.get("known_good_ratio")
    if isinstance(ratio, (int, float)):
        near = bandwidth_rules.within_known_good(ratio)
        evidence.append(f"median within {bandwidth_rules.KNOWN_GOOD_TOLERANCE:.0%} of the known-good result: "
                        f"{'yes' if near else 'no'} ({bandwidth_rules.KNOWN_GOOD_SOURCE})")
    else:
        near = False
        sku = f"SKU {b['sku_id']}" if b.get("sku_id") else "no SKU identified"
        evidence.append(f"no known-good result for this SKU and form factor ({sku}), "
                        f"so the {bandwidth_rules.KNOWN_GOOD_TOLERANCE:.0%} comparison cannot be made")
    verdict = Verdict.PASS if spread_ok and near else Verdict.FAIL
    return result("bandwidth", BANDWIDTH_TEXT, verdict, evidence, ("bandwidth",))


def _peak_from_catalogue(facts: BundleFacts, dtype: str) -> float | None:
    figures = facts.view.figures("bandwidth").values or {}
    sku = catalogue.by_id(figures["sku_id"]) if figures.get("sku_id") else None
    if not sku:
        return None
    return sku.get("published", {}).get("dense_tflops", {}).get(dtype)


def judge_roofline(facts: BundleFacts, thresholds: Any = None) -> list[Result]:
    r, early, why = prerequisite(facts, "roofline")
    if early:
        return result("roofline", ROOFLINE_TEXT, early, why, ("roofline",))
    evidence = [figure(k, r.get(k)) for k in ("device", "dtype", "bandwidth_gbps", "peak_tflops",
                                              "ridge_flop_per_byte", "classifications", "burst_best_tflops",
                                              "best_shape", "burst_best_window", "all_explained", "fusion_speedup")]
    if r.get("dtype_burst_best_tflops"):  # format 5 on: the other dtypes, timed in the same process
        evidence.append(figure("dtype_burst_best_tflops", r["dtype_burst_best_tflops"]))
    ok = bool(r.get("all_explained")) and bool(r.get("classifications"))
    median = (facts.view.figures("bandwidth").values or {}).get("repeat_median_gbps")
    if isinstance(median, (int, float)):
        same = cross_checks.roof_is_sustained_median(r.get("bandwidth_gbps"), median)
        evidence.append(f"uses the measured sustained median {value_text('x_gbps', median)} (recomputed from the "
                        f"bandwidth step's repeat times): {'yes' if same else 'no'}")
    else:
        same = False
        evidence.append("the bandwidth step's sustained median is not in this bundle, so the memory roof cannot "
                        "be shown to be the measured one")
    ok = ok and same
    peak = _peak_from_catalogue(facts, str(r.get("dtype")))
    if peak is not None and isinstance(r.get("peak_tflops"), (int, float)):
        same = math.isclose(peak, r["peak_tflops"], rel_tol=1e-6)
        evidence.append(f"dense peak matches the catalogue's {value_text('x_tflops', peak)} for "
                        f"{r.get('dtype')}: {'yes' if same else 'no'}")
        ok = ok and same
    else:
        evidence.append("no catalogue dense peak for this device; the peak used is the probe's own (see raw/roofline.json)")
    return result("roofline", ROOFLINE_TEXT, Verdict.PASS if ok else Verdict.FAIL, evidence, ("roofline",))


def judge_precision(facts: BundleFacts, thresholds: Any = None) -> list[Result]:
    p, early, why = prerequisite(facts, "precision")
    if early:
        return result("precision", PRECISION_TEXT, early, why, ("precision",))
    tensors = p.get("tensors") or {}
    explanations = p.get("explanations") or {}
    explained = sum(v for v in explanations.values() if isinstance(v, int))
    evidence = [figure(k, p.get(k)) for k in ("checkpoint", "file_sha256", "tensors", "ranks", "explanations")]
    evidence.append(f"{len(tensors)} real checkpoint tensor(s), {explained} explained range/outlier/reversal finding(s)")
    verdict = Verdict.PASS if len(tensors) >= 3 and explained >= 1 else Verdict.FAIL
    return result("precision", PRECISION_TEXT, verdict, evidence, ("precision",))


def judge_allreduce(facts: BundleFacts, thresholds: Any = None) -> list[Result]:
    a, early, why = prerequisite(facts, "allreduce")
    if early:
        return result("allreduce", ALLREDUCE_TEXT, early, why, ("allreduce",))
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
        evidence.append("both curves identify a startup-to-bandwidth knee")
        return result("allreduce", ALLREDUCE_TEXT, Verdict.PASS, evidence, ("allreduce",))
    if limitations:
        evidence.append(f"no knee for {', '.join(missing)}: the limitation is recorded, not simulated")
        return result("allreduce", ALLREDUCE_TEXT, Verdict.PASS, evidence, ("allreduce",))
    evidence.append(f"no knee for {', '.join(missing)} and no limitation recorded")
    return result("allreduce", ALLREDUCE_TEXT, Verdict.FAIL, evidence, ("allreduce",))


def judge_idle_load(facts: BundleFacts, thresholds: Any = None) -> list[Result]:
    """From derived/health-diff.json (harness.analysis.health.diff): its checks and verdict."""
    status = facts.status("health-diff")
    if status != StepStatus.COMPLETED:
        why = (facts.view.step("health-diff") or {}).get("why") or "the step is not in this run"
        verdict = Verdict.FAIL if status == StepStatus.FAILED else Verdict.INCOMPLETE
        return result("idle-load", IDLE_LOAD_TEXT, verdict, [f"health-diff {status.replace('_', ' ')}: {why}"],
                      ("health-load",))
    document = facts.view.documents["health-diff"]
    checks = [c for c in (document.get("checks") or []) if isinstance(c, dict)]
    evidence = [f"{c.get('name')} ({c.get('device')}): {c.get('status')}: {c.get('evidence')}" for c in checks]
    if not checks:
        return result("idle-load", IDLE_LOAD_TEXT, Verdict.FAIL, ["derived/health-diff.json names no checks"],
                      ("health-load",))
    statuses = [parse(c.get("status")) for c in checks]  # health-diff.json records SKIP as "not-applicable"
    if Verdict.FAIL in statuses or document.get("verdict") != Verdict.PASS:
        return result("idle-load", IDLE_LOAD_TEXT, Verdict.FAIL, evidence, ("health-load",))
    if all(s == Verdict.SKIP for s in statuses):
        evidence.append("no device was under load, so nothing could rise")
        return result("idle-load", IDLE_LOAD_TEXT, Verdict.SKIP, evidence, ("health-load",))
    return result("idle-load", IDLE_LOAD_TEXT, Verdict.PASS, evidence, ("health-load",))


# Each criterion once; the registry entries say which probe brings which, and
# harness.registry.lab_criteria() lists them in the order the run completes their evidence.
HEALTH = Criterion("health", HEALTH_TEXT, ("health",), judge_health)
BANDWIDTH = Criterion("bandwidth", BANDWIDTH_TEXT, ("bandwidth",), judge_bandwidth)
ROOFLINE = Criterion("roofline", ROOFLINE_TEXT, ("bandwidth", "roofline"), judge_roofline)
PRECISION = Criterion("precision", PRECISION_TEXT, ("precision",), judge_precision)
ALLREDUCE = Criterion("allreduce", ALLREDUCE_TEXT, ("allreduce",), judge_allreduce)
IDLE_LOAD = Criterion("idle-load", IDLE_LOAD_TEXT, ("health", "health-load", "health-diff"), judge_idle_load)
