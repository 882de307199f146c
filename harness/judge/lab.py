"""The lab's success criteria (lab-m1.txt) that report.md judges, from recomputed figures.

Each is a Criterion of the one engine (harness.judge.engine) with no thresholds of its own: the
lab's rules are constants of the analysis modules, with their source (harness.analysis.bandwidth
REPEAT_SPREAD_MAX, KNOWN_GOOD_TOLERANCE). In the one vocabulary (harness.analysis.verdict): a
criterion whose evidence step was left out with --skip is SKIP, one whose step did not run for
another reason is INCOMPLETE; one whose step failed, or completed with figures that do not meet
the criterion, is FAIL with the reason; what cannot be judged here (no known-good bandwidth for a
CPU, a GPU's causes for a CPU's GEMMs, no device under load) is SKIP on a CPU and INCOMPLETE on a
GPU, with why, never FAIL. Each Result's `why` is the one sentence the verdict block shows.
"""

from __future__ import annotations

import math
from typing import Any

from harness import catalogue
from harness.analysis import cross_checks
from harness.analysis.bandwidth import figures as bandwidth_rules
from harness.analysis.health import figures as health_figures
from harness.analysis.roofline import unexplained as unexplained_gemms
from harness.analysis.units import figure, value_text, without_empty
from harness.analysis.verdict import StepStatus, Verdict, parse
from harness.judge import disturbed
from harness.judge.engine import Criterion, Result
from harness.judge.facts import BundleFacts

HEALTH_TEXT = (
    "health.json names the driver, framework CUDA build, visible devices, topology, active processes, "
    "clocks, power, and ECC state, or records why a field is unavailable."
)
BANDWIDTH_TEXT = (
    "Three large-buffer bandwidth medians vary by less than 5% and the median is within 15% of a "
    "known-good result from the same GPU SKU and form factor."
)
ROOFLINE_TEXT = (
    "The roofline uses the measured bandwidth and matching dense-compute peak; every measured GEMM is "
    "classified before the run and explained afterward."
)
PRECISION_TEXT = (
    "The precision table includes three real checkpoint tensors and explains at least one range, "
    "outlier, or scaling reversal."
)
ALLREDUCE_TEXT = (
    "On a multi-GPU host, both normal and peer-to-peer-disabled all-reduce curves identify a "
    "startup-to-bandwidth knee. On a one-GPU host, the limitation is recorded rather than simulated."
)
IDLE_LOAD_TEXT = "(Step 7) Low idle clocks rise under work and no unexpected process shares the device."


SKIPPED_WITH = "skipped with --skip"  # how `dossier run` records a step the user left out


def result(
    name: str, title: str, verdict: Verdict, findings: list[str], steps: tuple[str, ...], why: str | None = None
) -> list[Result]:
    """The one Result of a lab criterion (its findings are the report's evidence lines; WHY, the one
    sentence the verdict block says, is the last finding unless given)."""
    return [
        Result(
            name,
            title,
            verdict,
            why=why if why is not None else (findings[-1] if findings else ""),
            findings=tuple(findings),
            steps=steps,
        )
    ]


def not_completed(facts: BundleFacts, step: str) -> tuple[Verdict, str]:
    """The verdict and the sentence for a criterion whose STEP did not complete: FAIL when it failed
    (crashed, killed, timed out, invalid output), SKIP when the user left it out, else INCOMPLETE."""
    status = facts.status(step)
    entry = facts.view.step(step) or {}
    why = entry.get("why") or "the step is not in this run"
    if status == StepStatus.FAILED:
        return Verdict.FAIL, f"the {step} step failed: {why}"
    if str(why).startswith(SKIPPED_WITH):
        return Verdict.SKIP, f"the {step} step was left out ({why})"
    return Verdict.INCOMPLETE, f"the {step} step did not run: {why}"


def prerequisite(facts: BundleFacts, step: str) -> tuple[dict[str, Any], Verdict | None, list[str]]:
    """The step's figures, or (no figures: {}) the verdict and the finding to give when they do not exist."""
    if facts.status(step) != StepStatus.COMPLETED:
        verdict, why = not_completed(facts, step)
        return {}, verdict, [why]
    figures = facts.view.figures(step)
    if figures.values is None:
        return {}, Verdict.FAIL, [f"{step}: headline figures could not be recomputed: {figures.error}"]
    return figures.values, None, []


def present(values: dict[str, Any], keys: tuple[str, ...]) -> list[str]:
    """KEY: VALUE for each key with a value (a figure that is absent is said once, with why, by the judge)."""
    kept = {k: without_empty(values.get(k)) for k in keys}
    return [figure(k, v) for k, v in kept.items() if v not in (None, [], {})]


def on_cpu(values: dict[str, Any]) -> bool:
    return values.get("device") == "cpu"


def judge_health(facts: BundleFacts, thresholds: Any = None) -> list[Result]:
    h, early, why = prerequisite(facts, "health")
    if early:
        return result("health", HEALTH_TEXT, early, why, ("health",))
    devices = h.get("devices") or []
    keys = ("driver_version", "cuda_driver_version", "torch_version", "torch_cuda_build")
    evidence = present(h, keys) + [figure("device_count", h.get("device_count"))]
    software = (facts.document("health") or {}).get("software") or {}
    unread = {
        k: software.get(k, {}).get("unavailable")
        for k in keys
        if h.get(k) is None and isinstance(software.get(k), dict)
    }
    for reason in dict.fromkeys(unread.values()):
        evidence.append(f"{', '.join(k for k, r in unread.items() if r == reason)} recorded as unavailable: {reason}")
    evidence += [
        f"device {d.get('index')}: {d.get('name')} (sku {d.get('sku_id')}, uuid {d.get('uuid')})"
        for d in devices
        if isinstance(d, dict)
    ]
    evidence.append(
        'every field is a value or {"unavailable": reason}: raw/health.json validates '
        "against schemas/health.schema.json"
    )
    failed = h.get("contracts_failed") or []
    evidence.append(
        f"toolchain contracts failed: {', '.join(failed)} (remedies in raw/health.json)"
        if failed
        else "toolchain contracts: none failed"
    )
    return result(
        "health",
        HEALTH_TEXT,
        Verdict.PASS,
        evidence,
        ("health",),
        why=f"{len(devices)} device(s) named, every field a value or why it is unavailable",
    )


def judge_bandwidth(facts: BundleFacts, thresholds: Any = None) -> list[Result]:
    b, early, unmet = prerequisite(facts, "bandwidth")
    if early:
        return result("bandwidth", BANDWIDTH_TEXT, early, unmet, ("bandwidth",))
    evidence = present(
        b,
        (
            "device",
            "kernel",
            "plateau_gbps",
            "plateau_sizes_mib",
            "repeat_size_mib",
            "repeat_medians_gbps",
            "repeat_spread",
            "spec_gbps",
            "known_good_gbps",
            "known_good_ratio",
        ),
    )
    if b.get("plateau_gbps") is None:
        evidence.append(
            "no plateau: the largest sizes still differ by more than "
            f"{value_text('plateau_tolerance', b.get('plateau_tolerance'))} (raw/bandwidth.json says why)"
        )
    spread = b.get("repeat_spread")
    spread_ok = isinstance(spread, (int, float)) and bandwidth_rules.repeats_agree(spread)
    evidence.append(
        f"three repeats {bandwidth_rules.REPEAT_SPREAD_SCOPE} vary by less than "
        f"{bandwidth_rules.REPEAT_SPREAD_MAX:.0%}: {'yes' if spread_ok else 'no'} "
        f"({bandwidth_rules.REPEAT_SPREAD_SOURCE})"
    )
    spread_text = f"{spread:.1%}" if isinstance(spread, (int, float)) else "not measured"
    ratio = b.get("known_good_ratio")
    evidence += disturbed.again_evidence(b)
    if not spread_ok:
        verdict, why, host = disturbed.repeats_disagree(facts, b, spread_text)
        evidence += host
    elif isinstance(ratio, (int, float)):
        near = bandwidth_rules.within_known_good(ratio)
        evidence.append(
            f"median within {bandwidth_rules.KNOWN_GOOD_TOLERANCE:.0%} of the known-good result: "
            f"{'yes' if near else 'no'} ({bandwidth_rules.KNOWN_GOOD_SOURCE})"
        )
        verdict = Verdict.PASS if near else Verdict.FAIL
        why = (
            f"{value_text('x_gbps', b.get('plateau_gbps'))}, {ratio:.3f} of the known-good "
            f"{value_text('x_gbps', b.get('known_good_gbps'))}; repeats within {spread_text}"
        )
    elif on_cpu(b):
        verdict, why = (
            Verdict.SKIP,
            (
                f"repeats within {spread_text}; no known-good bandwidth exists for a CPU's "
                "host memory, so the comparison with a GPU SKU's cannot be made here"
            ),
        )
        evidence.append(why)
    else:
        sku = f"SKU {b['sku_id']}" if b.get("sku_id") else "no SKU identified"
        verdict, why = (
            Verdict.INCOMPLETE,
            (
                f"no known-good result for this GPU ({sku}) in the catalogue, so the "
                f"{bandwidth_rules.KNOWN_GOOD_TOLERANCE:.0%} comparison cannot be made"
            ),
        )
        evidence.append(why)
    return result("bandwidth", BANDWIDTH_TEXT, verdict, evidence, ("bandwidth",), why=why)


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
    evidence = present(r, ("device", "dtype", "bandwidth_gbps", "peak_tflops", "ridge_flop_per_byte"))
    bounds = list((r.get("classifications") or {}).values())
    if bounds:
        evidence.append(
            f"{len(bounds)} GEMMs classified before the run: {bounds.count('memory')} memory-bound, "
            f"{bounds.count('compute')} compute-bound (each in the roofline table)"
        )
    evidence += present(r, ("burst_best_tflops", "best_shape", "burst_best_window", "all_explained", "fusion_speedup"))
    if r.get("dtype_burst_best_tflops"):  # format 5 on: the other dtypes, timed in the same process
        evidence.append(figure("dtype_burst_best_tflops", r["dtype_burst_best_tflops"]))
    problems = [] if r.get("classifications") else ["no GEMM was classified"]
    median = (facts.view.figures("bandwidth").values or {}).get("repeat_median_gbps")
    if isinstance(median, (int, float)):
        same = cross_checks.roof_is_sustained_median(r.get("bandwidth_gbps"), median)
        evidence.append(
            f"uses the measured sustained median {value_text('x_gbps', median)} (recomputed from the "
            f"bandwidth step's repeat times): {'yes' if same else 'no'}"
        )
        problems += [] if same else ["the memory roof is not the measured sustained median"]
    else:
        evidence.append(
            "the bandwidth step's sustained median is not in this bundle, so the memory roof cannot "
            "be shown to be the measured one"
        )
        problems.append("the memory roof cannot be shown to be the measured one")
    peak = _peak_from_catalogue(facts, str(r.get("dtype")))
    if peak is not None and isinstance(r.get("peak_tflops"), (int, float)):
        same = math.isclose(peak, r["peak_tflops"], rel_tol=1e-6)
        evidence.append(
            f"dense peak matches the catalogue's {value_text('x_tflops', peak)} for "
            f"{r.get('dtype')}: {'yes' if same else 'no'}"
        )
        problems += [] if same else [f"the dense peak is not the catalogue's for {r.get('dtype')}"]
    else:
        evidence.append(
            "no catalogue dense peak for this device; the peak used is the probe's own (see raw/roofline.json)"
        )
    left, by_size = explained_gemms(facts)
    if r.get("all_explained") is False and not left and not by_size:  # the model says so, its detail unread
        problems.append("not every GEMM is explained (raw/roofline.json names them)")
    measured = len(bounds)
    evidence += [entry["text"] for entry in by_size]
    evidence += [f"unexplained: {unexplained_gemms.line(entry)}" for entry in left]
    evidence += unexplained_gemms.ruled_out(left)
    if problems:
        return result("roofline", ROOFLINE_TEXT, Verdict.FAIL, evidence, ("roofline",), why="; ".join(problems))
    if not left:
        explained = f" ({len(by_size)} by their transfer size, from the bandwidth sweep)" if by_size else ""
        evidence.append(f"every measured GEMM is explained{explained}")
        return result(
            "roofline",
            ROOFLINE_TEXT,
            Verdict.PASS,
            evidence,
            ("roofline",),
            why=f"{measured} GEMMs classified on the measured roofs, every one explained{explained}",
        )
    names = ", ".join(f"{e['label']} ({e['fraction']:.0%} of its roof)" for e in left)
    if on_cpu(r):
        return result(
            "roofline",
            ROOFLINE_TEXT,
            Verdict.SKIP,
            evidence,
            ("roofline",),
            why=f"{len(left)} GEMM(s) below 80% of their roof cannot be explained on a CPU (the model's "
            f"causes are a GPU's tiles, waves, clocks and launches): {names}",
        )
    return result(
        "roofline",
        ROOFLINE_TEXT,
        Verdict.FAIL,
        evidence,
        ("roofline",),
        why=f"{len(left)} GEMM(s) below 80% of their roof with no cause the model knows: {names}",
    )


def explained_gemms(facts: BundleFacts) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(the GEMMs left unexplained, the explanations by transfer size) of the roofline step, the
    bandwidth sweep's fixed cost per kernel applied to the memory-bound ones the model leaves."""
    document = facts.document("roofline")
    if document is None or not isinstance(document.get("measurements"), dict):
        return [], []  # no timed GEMM in the document: nothing to explain
    bandwidth = facts.document("bandwidth")
    cost = bandwidth_rules.kernel_fixed_cost(bandwidth) if bandwidth is not None else None
    left, by_size = [], []
    for entry in unexplained_gemms.unexplained(document):
        found = unexplained_gemms.at_transfer_size(entry, cost)
        if found is None:
            left.append(entry)
        else:
            by_size.append(found)
    return left, by_size


def judge_precision(facts: BundleFacts, thresholds: Any = None) -> list[Result]:
    p, early, why = prerequisite(facts, "precision")
    if early:
        return result("precision", PRECISION_TEXT, early, why, ("precision",))
    tensors = p.get("tensors") or {}
    explanations = p.get("explanations") or {}
    explained = sum(v for v in explanations.values() if isinstance(v, int))
    evidence = present(p, ("checkpoint", "file_sha256", "tensors", "ranks", "explanations"))
    counted = f"{len(tensors)} real checkpoint tensor(s), {explained} explained range/outlier/reversal finding(s)"
    evidence.append(counted)
    verdict = Verdict.PASS if len(tensors) >= 3 and explained >= 1 else Verdict.FAIL
    return result(
        "precision",
        PRECISION_TEXT,
        verdict,
        evidence,
        ("precision",),
        why=counted + ("" if verdict == Verdict.PASS else ": the lab asks for 3 and at least 1"),
    )


def one_gpu(facts: BundleFacts) -> bool:
    """Whether the health step counted exactly one GPU visible to CUDA (what `dossier run` then records
    as the all-reduce's limitation, starting no probe: harness.registry.allreduce)."""
    document = facts.document("health")
    visible = health_figures.visible_gpus(document) if document is not None else None
    return visible is not None and visible[0] == 1


def judge_allreduce(facts: BundleFacts, thresholds: Any = None) -> list[Result]:
    status = facts.status("allreduce")
    if status == StepStatus.NOT_RUN and one_gpu(facts):  # recorded from health's count, no probe started
        why = (facts.view.step("allreduce") or {}).get("why") or "1 GPU"
        return result(
            "allreduce",
            ALLREDUCE_TEXT,
            Verdict.PASS,
            [f"limitation recorded: {why}", "not simulated: no all-reduce process was started"],
            ("allreduce",),
            why="one GPU: the limitation is recorded, not simulated",
        )
    a, early, why = prerequisite(facts, "allreduce")
    if early:
        return result("allreduce", ALLREDUCE_TEXT, early, why, ("allreduce",))
    curves = a.get("curves") or {}
    limitations = a.get("limitations") or []
    evidence = present(a, ("backend", "world_size", "curves"))
    evidence += [f"limitation recorded: {what}" for what in limitations]
    if a.get("medians_from"):
        evidence.append(f"per-rank medians: {a['medians_from']}")
    missing = [
        name
        for name in ("normal", "p2p_disabled")
        if not isinstance(curves.get(name), dict) or curves[name].get("knee_bytes") is None
    ]
    if not missing:
        evidence.append("both curves identify a startup-to-bandwidth knee")
        return result(
            "allreduce",
            ALLREDUCE_TEXT,
            Verdict.PASS,
            evidence,
            ("allreduce",),
            why="both curves identify a startup-to-bandwidth knee",
        )
    if limitations:
        evidence.append(f"no knee for {', '.join(missing)}: the limitation is recorded, not simulated")
        knees = [name for name in curves if name not in missing]
        return result(
            "allreduce",
            ALLREDUCE_TEXT,
            Verdict.PASS,
            evidence,
            ("allreduce",),
            why=(f"knee of the {', '.join(knees)} curve identified; " if knees else "")
            + f"{', '.join(missing).replace('_', '-')}: limitation recorded, not simulated",
        )
    evidence.append(f"no knee for {', '.join(missing)} and no limitation recorded")
    return result("allreduce", ALLREDUCE_TEXT, Verdict.FAIL, evidence, ("allreduce",))


def judge_idle_load(facts: BundleFacts, thresholds: Any = None) -> list[Result]:
    """From derived/health-diff.json (harness.analysis.health.diff): its checks and verdict."""
    if facts.status("health-diff") != StepStatus.COMPLETED:
        verdict, why = not_completed(facts, "health-diff")
        return result("idle-load", IDLE_LOAD_TEXT, verdict, [why], ("health-load",))
    document = facts.view.documents["health-diff"]
    checks = [c for c in (document.get("checks") or []) if isinstance(c, dict)]
    evidence = [f"{c.get('name')} ({c.get('device')}): {c.get('status')}: {c.get('evidence')}" for c in checks]
    if not checks:
        return result(
            "idle-load", IDLE_LOAD_TEXT, Verdict.FAIL, ["derived/health-diff.json names no checks"], ("health-load",)
        )
    statuses = [parse(c.get("status")) for c in checks]  # health-diff.json records SKIP as "not-applicable"
    if Verdict.FAIL in statuses or document.get("verdict") != Verdict.PASS:
        failed = [
            f"{c.get('name')} ({c.get('device')})" for c, s in zip(checks, statuses, strict=True) if s == Verdict.FAIL
        ]
        return result(
            "idle-load",
            IDLE_LOAD_TEXT,
            Verdict.FAIL,
            evidence,
            ("health-load",),
            why="failed: " + (", ".join(failed) or "the diff's verdict is not pass"),
        )
    if all(s == Verdict.SKIP for s in statuses):
        evidence.append("no device was under load, so nothing could rise")
        return result(
            "idle-load",
            IDLE_LOAD_TEXT,
            Verdict.SKIP,
            evidence,
            ("health-load",),
            why="no GPU was under load, so nothing could rise (a CPU run)",
        )
    return result(
        "idle-load",
        IDLE_LOAD_TEXT,
        Verdict.PASS,
        evidence,
        ("health-load",),
        why="clocks and power rose under load, every clock-event reason named, no foreign process",
    )


# Each criterion once; the registry entries say which probe brings which, and
# harness.registry.lab_criteria() lists them in the order the run completes their evidence.
HEALTH = Criterion("health", HEALTH_TEXT, ("health",), judge_health)
BANDWIDTH = Criterion("bandwidth", BANDWIDTH_TEXT, ("bandwidth",), judge_bandwidth)
ROOFLINE = Criterion("roofline", ROOFLINE_TEXT, ("bandwidth", "roofline"), judge_roofline)
PRECISION = Criterion("precision", PRECISION_TEXT, ("precision",), judge_precision)
ALLREDUCE = Criterion("allreduce", ALLREDUCE_TEXT, ("allreduce",), judge_allreduce)
IDLE_LOAD = Criterion("idle-load", IDLE_LOAD_TEXT, ("health", "health-load", "health-diff"), judge_idle_load)
