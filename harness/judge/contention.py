"""What the host did while a step ran, as evidence wherever a judgement is made (issue 35): the lab
verdict and acceptance name a busy host beside a criterion that failed on a step it disturbed, the
bandwidth repeats that disagree are told apart (the measurement was disturbed, or the hardware's rate
varies), `dossier diff`/`reproduce` set the host's contention side by side as a likely why of a rate,
and `dossier fleet collect` says it per node. Every figure is recomputed from host-contention.json's
readings (harness.analysis.contention); a bundle without them (an older format, a record re-made)
gives None and every judgement is what it was before.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from typing import Any

from harness.analysis import contention
from harness.analysis.actions import Action
from harness.analysis.timestamps import parse_timestamp
from harness.analysis.verdict import Verdict
from harness.bundle.view import BundleFormatError
from harness.judge.engine import Result
from harness.judge.facts import BundleFacts

ACTION = f"{Action.RERUN_IDLE}: {Action.RERUN_IDLE.what}"
NAMED = 3  # the other processes a verdict line names (the report and the bundle hold the rest)


def windows(facts: BundleFacts) -> dict[str, dict[str, Any]] | None:
    """step -> its window's figures recomputed from the readings; None when the bundle records none."""
    try:
        document = facts.view.contention
    except BundleFormatError:
        return None  # verify names it; a judgement reads nothing from it
    if document is None or contention.not_sampled_reason(document) is not None:
        return None
    try:
        return contention.summaries(document)
    except (KeyError, TypeError, ValueError, ZeroDivisionError):
        return None  # a document verify fails: no evidence either way


def _span(entry: dict[str, Any], figures: dict[str, Any]) -> tuple[float, float] | None:
    try:
        start = parse_timestamp(entry["started_at"]).timestamp()
    except (KeyError, TypeError, ValueError):
        return None
    return start, start + figures["window_s"]


def window_of(facts: BundleFacts, step: str) -> dict[str, Any] | None:
    """The figures of STEP's window, or of the window it ran inside (a step taken during another's load,
    health under load during the stress step: commands.json's start time within that window); None."""
    found = windows(facts)
    if not found:
        return None
    if step in found:
        return found[step]
    entry = facts.view.step(step) or {}
    try:
        started = parse_timestamp(entry["started_at"]).timestamp()
    except (KeyError, TypeError, ValueError):
        return None
    entries = {e.get("step"): e for e in (facts.view.contention or {}).get("steps") or [] if isinstance(e, dict)}
    for other, figures in found.items():
        span = _span(entries.get(other) or {}, figures)
        if span is not None and span[0] <= started <= span[1]:
            return figures
    return None


def short(figures: dict[str, Any]) -> str:
    """The window's other processes in a verdict line: their CPUs and the NAMED busiest, steal, load."""
    text = contention.describe({**figures, "top": (figures.get("top") or [])[:NAMED]})
    return text


def busy(facts: BundleFacts, steps: Iterable[str]) -> list[tuple[str, dict[str, Any]]]:
    """(step, its window's figures) for each of STEPS whose window was busy, each window once."""
    seen, found = set(), []
    for step in dict.fromkeys(steps):
        figures = window_of(facts, step)
        if figures is not None and figures["state"] == contention.BUSY and id(figures) not in seen:
            seen.add(id(figures))
            found.append((step, figures))
    return found


def busy_note(facts: BundleFacts, steps: Sequence[str]) -> str | None:
    """ "measured while the host was busy (STEP: ...); RERUN_IDLE: ..." for the busy windows of STEPS, or None."""
    found = busy(facts, steps)
    if not found:
        return None
    said = "; ".join(f"{step}: {short(figures)}" for step, figures in found)
    return f"measured while the host was busy ({said}); {ACTION}"


def beside(results: Iterable[Result], facts: BundleFacts) -> list[Result]:
    """RESULTS, each FAIL whose steps ran on a busy host saying so first (never a hardware FAIL without
    the load beside it), with every busy window's figures among its findings."""
    out = []
    for result in results:
        note = busy_note(facts, result.steps) if result.status == Verdict.FAIL else None
        if note is None:
            out.append(result)
            continue
        lines = tuple(f"host during the {step} step: {contention.describe(f)}" for step, f in busy(facts, result.steps))
        out.append(dataclasses.replace(result, why=f"{note}: {result.why}", findings=(*result.findings, *lines)))
    return out


# --- comparing two bundles, and a fleet's nodes ---------------------------------------------------

IDLE_TEXT = (
    f"idle: other processes under {contention.BUSY_OTHERS_SHARE:.0%} of the CPUs and steal under "
    f"{contention.BUSY_STEAL_SHARE:.0%} in every step sampled"
)


def host_state(facts: BundleFacts) -> str | None:
    """The host's contention in one value: IDLE_TEXT (the same for every idle run), "busy during STEP
    (figures); ..." or "unknown: why"; None when the bundle records no readings."""
    found = windows(facts)
    if found is None:
        return None
    loaded = [f"{step} ({short(figures)})" for step, figures in found.items() if figures["state"] == contention.BUSY]
    if loaded:
        return "busy during " + "; ".join(loaded)
    unknown = [f"{step}: {figures['why']}" for step, figures in found.items() if figures["state"] == contention.UNKNOWN]
    return f"unknown: {'; '.join(unknown)}" if unknown else IDLE_TEXT


def host_figures(facts: BundleFacts) -> dict[str, str] | None:
    """Each sampled step's window in words (its numbers, idle or busy); None without readings."""
    found = windows(facts)
    return None if found is None else {step: contention.describe(figures) for step, figures in found.items()}
