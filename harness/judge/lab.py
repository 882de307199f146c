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

from typing import Any

from harness.analysis.bandwidth import figures as bandwidth_rules
from harness.analysis.bandwidth.view import BandwidthFigures
from harness.analysis.health import figures as health_figures
from harness.analysis.health.view import HealthFigures
from harness.analysis.roofline import unexplained as unexplained_gemms
from harness.analysis.roofline.view import RooflineFigures
from harness.analysis.units import value_text
from harness.analysis.verdict import StepStatus, Verdict, parse
from harness.judge import disturbed, evidence, lab_roofs
from harness.judge.engine import Criterion, Result
from harness.judge.facts import BundleFacts
from harness.judge.lab_words import (
    ALLREDUCE_TEXT,
    BANDWIDTH_TEXT,
    HEALTH_TEXT,
    IDLE_LOAD_TEXT,
    LABELS,
    PRECISION_TEXT,
    ROOFLINE_TEXT,
)

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


def judge_health(facts: BundleFacts, thresholds: Any = None) -> list[Result]:
    values, early, why = prerequisite(facts, "health")
    if early:
        return result("health", HEALTH_TEXT, early, why, ("health",))
    h = HealthFigures.from_headlines(values, facts.document("health"))
    lines = evidence.health_lines(h.values, dict(h.unread))
    lines.append(
        'Every field is a value or {"unavailable": reason}: raw/health.json validates '
        "against schemas/health.schema.json."
    )
    lines.append(
        f"Toolchain contracts that failed: {', '.join(h.contracts_failed)} (each with its remedy in raw/health.json)."
        if h.contracts_failed
        else "No toolchain contract failed."
    )
    return result(
        "health",
        HEALTH_TEXT,
        Verdict.PASS,
        lines,
        ("health",),
        why=f"{h.device_count} device(s) named, every field a value or why it is unavailable",
    )


def judge_bandwidth(facts: BundleFacts, thresholds: Any = None) -> list[Result]:
    values, early, unmet = prerequisite(facts, "bandwidth")
    if early:
        return result("bandwidth", BANDWIDTH_TEXT, early, unmet, ("bandwidth",))
    b = BandwidthFigures.from_headlines(values)
    lines = evidence.bandwidth_lines(b.values)
    if b.plateau_gbps is None:
        lines.append(
            "No plateau: the largest sizes still differ by more than "
            f"{value_text('plateau_tolerance', b.plateau_tolerance)} (raw/bandwidth.json says why)."
        )
    spread = b.repeat_spread
    spread_ok = spread is not None and bandwidth_rules.repeats_agree(spread)
    lines.append(
        f"The repeats {bandwidth_rules.REPEAT_SPREAD_SCOPE} vary by less than "
        f"{bandwidth_rules.REPEAT_SPREAD_MAX:.0%}: {'yes' if spread_ok else 'no'} "
        "(the lab's rule, the catalogue's `repeat_spread_max`)."
    )
    spread_text = f"{spread:.1%}" if spread is not None else "not measured"
    ratio = b.known_good_ratio
    lines += disturbed.again_evidence(b.values)
    if not spread_ok:
        verdict, why, host = disturbed.repeats_disagree(facts, b.values, spread_text)
        lines += host
    elif ratio is not None:
        near = bandwidth_rules.within_known_good(ratio)
        lines.append(
            f"The catalogue's known-good for this SKU is {value_text('x_gbps', b.known_good_gbps)}: "
            f"this plateau is {ratio:.3f} of it, {'within' if near else 'not within'} "
            f"{bandwidth_rules.KNOWN_GOOD_TOLERANCE:.0%} either side (the lab's rule, the catalogue's "
            "`known_good_tolerance`)."
        )
        verdict = Verdict.PASS if near else Verdict.FAIL
        why = (
            f"{value_text('x_gbps', b.plateau_gbps)} is {ratio:.3f} of the known-good "
            f"{value_text('x_gbps', b.known_good_gbps)}"
            + ("" if near else f", outside the lab's {bandwidth_rules.KNOWN_GOOD_TOLERANCE:.0%}")
            + f"; the repeats agree within {spread_text}"
        )
    elif b.on_cpu:
        verdict, why = (
            Verdict.SKIP,
            (
                f"repeats within {spread_text}; no known-good bandwidth exists for a CPU's "
                "host memory, so the comparison with a GPU SKU's cannot be made here"
            ),
        )
        lines.append(why[0].upper() + why[1:] + ".")
    else:
        sku = f"SKU {b.sku_id}" if b.sku_id else "no SKU identified"
        verdict, why = (
            Verdict.INCOMPLETE,
            (
                f"no known-good result for this GPU ({sku}) in the catalogue, so the "
                f"{bandwidth_rules.KNOWN_GOOD_TOLERANCE:.0%} comparison cannot be made"
            ),
        )
        lines.append(why[0].upper() + why[1:] + ".")
    return result("bandwidth", BANDWIDTH_TEXT, verdict, lines, ("bandwidth",), why=why)


def judge_roofline(facts: BundleFacts, thresholds: Any = None) -> list[Result]:
    values, early, why = prerequisite(facts, "roofline")
    if early:
        return result("roofline", ROOFLINE_TEXT, early, why, ("roofline",))
    r = RooflineFigures.from_headlines(values)
    roofs, problems = lab_roofs.checks(facts, r)
    lines = evidence.roofline_lines(r.values) + roofs
    left, by_size = unexplained_gemms.split(facts.document("roofline"), facts.document("bandwidth"))
    if r.all_explained is False and not left and not by_size:  # the model says so, its detail unread
        problems.append("not every GEMM is explained (raw/roofline.json names them)")
    lines += [entry["text"] for entry in by_size]
    lines += [f"Not explained: {unexplained_gemms.line(entry)}." for entry in left]
    lines += [f"{line[0].upper()}{line[1:]}." for line in unexplained_gemms.ruled_out(left)]
    if problems:
        return result("roofline", ROOFLINE_TEXT, Verdict.FAIL, lines, ("roofline",), why="; ".join(problems))
    if not left:
        explained = f" ({len(by_size)} by their transfer size, from the bandwidth sweep)" if by_size else ""
        lines.append(f"Every measured GEMM is explained{explained}.")
        return result(
            "roofline",
            ROOFLINE_TEXT,
            Verdict.PASS,
            lines,
            ("roofline",),
            why=f"{r.classified} GEMMs classified on the measured roofs, every one explained{explained}",
        )
    names = ", ".join(f"{e['label']} ({e['fraction']:.0%} of its roof)" for e in left)
    if r.on_cpu:
        return result(
            "roofline",
            ROOFLINE_TEXT,
            Verdict.SKIP,
            lines,
            ("roofline",),
            why=f"{len(left)} GEMM(s) below 80% of their roof cannot be explained on a CPU (the model's "
            f"causes are a GPU's tiles, waves, clocks and launches): {names}",
        )
    return result(
        "roofline",
        ROOFLINE_TEXT,
        Verdict.FAIL,
        lines,
        ("roofline",),
        why=f"{len(left)} GEMM(s) below 80% of their roof with no cause the model knows: {names}",
    )


def judge_precision(facts: BundleFacts, thresholds: Any = None) -> list[Result]:
    p, early, why = prerequisite(facts, "precision")
    if early:
        return result("precision", PRECISION_TEXT, early, why, ("precision",))
    tensors = p.get("tensors") or {}
    explanations = p.get("explanations") or {}
    explained = sum(v for v in explanations.values() if isinstance(v, int))
    lines = evidence.precision_lines(p, (facts.document("precision") or {}).get("checkpoint"))
    counted = f"{len(tensors)} real checkpoint tensor(s), {explained} explained range/outlier/reversal finding(s)"
    lines.append(f"{counted} (each ranked and explained in the precision table).")
    verdict = Verdict.PASS if len(tensors) >= 3 and explained >= 1 else Verdict.FAIL
    return result(
        "precision",
        PRECISION_TEXT,
        verdict,
        lines,
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
            [
                "The one-GPU limitation is recorded (the Steps table says it whole).",
                "Not simulated: no all-reduce process was started.",
            ],
            ("allreduce",),
            why="one GPU: the limitation is recorded, not simulated",
        )
    a, early, why = prerequisite(facts, "allreduce")
    if early:
        return result("allreduce", ALLREDUCE_TEXT, early, why, ("allreduce",))
    curves = a.get("curves") or {}
    limitations = a.get("limitations") or []
    lines = evidence.allreduce_lines(a)
    lines += [f"Limitation recorded: {what}." for what in limitations]
    missing = [
        name
        for name in ("normal", "p2p_disabled")
        if not isinstance(curves.get(name), dict) or curves[name].get("knee_bytes") is None
    ]
    if not missing:
        lines.append("Both curves identify a startup-to-bandwidth knee.")
        return result(
            "allreduce",
            ALLREDUCE_TEXT,
            Verdict.PASS,
            lines,
            ("allreduce",),
            why="both curves identify a startup-to-bandwidth knee",
        )
    if limitations:
        lines.append(f"No knee for {', '.join(missing)}: the limitation is recorded, not simulated.")
        knees = [name for name in curves if name not in missing]
        return result(
            "allreduce",
            ALLREDUCE_TEXT,
            Verdict.PASS,
            lines,
            ("allreduce",),
            why=(f"knee of the {', '.join(knees)} curve identified; " if knees else "")
            + f"{', '.join(missing).replace('_', '-')}: limitation recorded, not simulated",
        )
    lines.append(f"No knee for {', '.join(missing)} and no limitation recorded.")
    return result("allreduce", ALLREDUCE_TEXT, Verdict.FAIL, lines, ("allreduce",))


def judge_idle_load(facts: BundleFacts, thresholds: Any = None) -> list[Result]:
    """From derived/health-diff.json (harness.analysis.health.diff): its checks and verdict."""
    if facts.status("health-diff") != StepStatus.COMPLETED:
        verdict, why = not_completed(facts, "health-diff")
        return result("idle-load", IDLE_LOAD_TEXT, verdict, [why], ("health-load",))
    document = facts.view.documents["health-diff"]
    checks = [c for c in (document.get("checks") or []) if isinstance(c, dict)]
    lines = [evidence.check_line(c) for c in checks]
    if not checks:
        return result(
            "idle-load", IDLE_LOAD_TEXT, Verdict.FAIL, ["derived/health-diff.json names no checks"], ("health-load",)
        )
    statuses = [parse(c.get("status")) for c in checks]  # health-diff.json records SKIP as "not-applicable"
    if Verdict.FAIL in statuses or document.get("verdict") != Verdict.PASS:
        failed = [evidence.failed_check(c) for c, s in zip(checks, statuses, strict=True) if s == Verdict.FAIL]
        return result(
            "idle-load",
            IDLE_LOAD_TEXT,
            Verdict.FAIL,
            lines,
            ("health-load",),
            why="; ".join(failed) or "the diff's verdict is not pass",
        )
    if all(s == Verdict.SKIP for s in statuses):
        lines.append("No device was under load, so nothing could rise.")
        return result(
            "idle-load",
            IDLE_LOAD_TEXT,
            Verdict.SKIP,
            lines,
            ("health-load",),
            why="no GPU was under load, so nothing could rise (a CPU run)",
        )
    return result(
        "idle-load",
        IDLE_LOAD_TEXT,
        Verdict.PASS,
        lines,
        ("health-load",),
        why="clocks and power rose under load, every clock-event reason named, no foreign process",
    )


# Each criterion once; the registry entries say which probe brings which, and
# harness.registry.lab_criteria() lists them in the order the run completes their evidence.
HEALTH = Criterion("health", HEALTH_TEXT, ("health",), judge_health, LABELS["health"])
BANDWIDTH = Criterion("bandwidth", BANDWIDTH_TEXT, ("bandwidth",), judge_bandwidth, LABELS["bandwidth"])
ROOFLINE = Criterion("roofline", ROOFLINE_TEXT, ("bandwidth", "roofline"), judge_roofline, LABELS["roofline"])
PRECISION = Criterion("precision", PRECISION_TEXT, ("precision",), judge_precision, LABELS["precision"])
ALLREDUCE = Criterion("allreduce", ALLREDUCE_TEXT, ("allreduce",), judge_allreduce, LABELS["allreduce"])
IDLE_LOAD = Criterion(
    "idle-load", IDLE_LOAD_TEXT, ("health", "health-load", "health-diff"), judge_idle_load, LABELS["idle-load"]
)
