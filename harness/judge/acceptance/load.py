"""Acceptance: idle versus load (derived/health-diff.json): clocks rise when work starts, and no
process the harness did not start shares a GPU."""

from __future__ import annotations

import statistics
from typing import Any

from harness.analysis.health import diff
from harness.analysis.health.diff import load_window_samples
from harness.analysis.units import number_or_none
from harness.analysis.verdict import Verdict
from harness.judge.acceptance.criteria import Judging, fmt
from harness.judge.acceptance.memory_health import gpus
from harness.judge.acceptance.profile import Profile
from harness.judge.engine import Criterion, Result, Value
from harness.judge.facts import BundleFacts


def _diff_checks(facts: BundleFacts, check: str) -> tuple[list[dict[str, Any]] | None, str]:
    """The health-diff's CHECK entries (one per GPU), or None and why they are absent."""
    document = facts.document("health-diff")
    if document is None:
        return None, facts.step_why("health-diff")
    checks = [c for c in document.get("checks") or [] if isinstance(c, dict)]
    load_ran = next((c for c in checks if c.get("name") == "load_ran"), None)
    if load_ran and load_ran.get("status") != Verdict.PASS:
        return None, f"no load was observed: {load_ran.get('evidence')}"
    found = [c for c in checks if c.get("name") == check]
    return (found, "") if found else (None, f"derived/health-diff.json has no {check} check")


def _under_load_clock(facts: BundleFacts) -> list[tuple[str, float | None, float | None]]:
    idle, active = facts.document("health") or {}, facts.document("health-load") or {}
    idle_by_uuid = {d.get("uuid"): d for d in gpus(idle)}
    rows = []
    for device in gpus(active):
        before = idle_by_uuid.get(device.get("uuid"), {}).get("clocks", {}).get("sm_current_mhz")
        clocks = [number_or_none(s.get("sm_clock_mhz")) for s in load_window_samples(active, device.get("nvml_index"))]
        samples = [s for s in clocks if s is not None]
        rows.append(
            (
                f"GPU{device.get('nvml_index')}",
                number_or_none(before),
                statistics.median(samples)
                if samples
                else number_or_none(device.get("clocks", {}).get("sm_current_mhz")),
            )
        )
    return rows


def clocks_rise_under_load(facts: BundleFacts, profile: Profile) -> list[Result]:
    name, title = "clocks_rise_under_load", "GPU clocks rise from idle when work starts (not stuck low)"
    threshold = Value(
        "rise", "MHz", "the SM clock under load (median of load samples) above the idle SM clock, every GPU"
    )
    evidence = (
        "derived/health-diff.json checks[clocks_rose], from raw/health.json devices[].clocks.sm_current_mhz "
        "and raw/health-load.json load.devices[].samples[].sm_clock_mhz"
    )
    judging = Judging(name, title, evidence)
    checks, why = _diff_checks(facts, "clocks_rose")
    if checks is None:
        return [judging.incomplete(why, threshold=threshold)]
    rows = _under_load_clock(facts)
    under = [u for _, _, u in rows if u is not None]
    measured = Value(
        min(under) if under else None,
        "MHz",
        "; ".join(
            f"{label} idle {fmt(i) if i is not None else '?'} MHz -> under load {fmt(u) if u is not None else '?'} MHz"
            for label, i, u in rows
        ),
    )
    statuses = {c.get("status") for c in checks}
    detail = "; ".join(f"{c.get('device')}: {c.get('evidence')}" for c in checks)
    if Verdict.FAIL in statuses:
        return [judging.failed(detail, measured, threshold)]
    if statuses != {Verdict.PASS}:
        return [judging.incomplete(detail, measured, threshold)]
    return [judging.passed(detail, measured, threshold)]


def foreign_processes(facts: BundleFacts) -> list[str]:
    """Distinct processes, idle or under load, that the harness did not start (per GPU)."""
    return diff.foreign_processes(facts.document("health") or {}, facts.document("health-load") or {})


def no_unexpected_process(facts: BundleFacts, profile: Profile) -> list[Result]:
    name, title = "no_unexpected_process", "Nothing else was running on the GPUs (idle or under load)"
    threshold = Value(0, "processes", "no process the harness did not start, idle or under load")
    evidence = (
        "derived/health-diff.json checks[no_unexpected_process], from raw/health.json devices[].processes "
        "and raw/health-load.json load.devices[].samples[].processes"
    )
    judging = Judging(name, title, evidence)
    checks, why = _diff_checks(facts, "no_unexpected_process")
    if checks is None:
        return [judging.incomplete(why, threshold=threshold)]
    failed = [c for c in checks if c.get("status") == Verdict.FAIL]
    foreign = foreign_processes(facts)
    measured = Value(
        len(foreign), "processes", "; ".join(foreign) if foreign else "only the harness's own processes were listed"
    )
    if failed:
        return [
            judging.failed("; ".join(f"{c.get('device')}: {c.get('evidence')}" for c in failed), measured, threshold)
        ]
    return [judging.passed("every listed process was the harness's own", measured, threshold)]


CLOCKS_RISE_UNDER_LOAD = Criterion(
    "clocks_rise_under_load",
    "GPU clocks rise from idle when work starts",
    ("health", "health-load", "health-diff"),
    clocks_rise_under_load,
)
NO_UNEXPECTED_PROCESS = Criterion(
    "no_unexpected_process",
    "Nothing else was running on the GPUs",
    ("health", "health-load", "health-diff"),
    no_unexpected_process,
)
