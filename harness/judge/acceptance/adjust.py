"""What a profile adds to a criterion's pass: a WARN band above the fail line, and what a pass that
needed a retest counts as.

WARN band (`thresholds.warn_band`, criterion name -> fraction b): a criterion held to a floor
that passes with a measured value under floor x (1 + b) is WARN: it passed, close enough to the
fail line that a buyer should look (Azure's GPU health checks warn within 5% above their
bandwidth threshold: Azure/azurehpc-health-checks customTests/azure_gpu_bandwidth.nhc). Only the
criteria that hold a figure to a floor take a band (LOWER_BOUND, the profile schema says the
same); `dossier baseline` sets each one's band to half its tolerance.

Retest (`dossier run --retest N`, commands.json steps[].attempts): a criterion that passed on a
step that failed first and passed on attempt k of N + 1 is WARN ("passed on attempt 2 of 3"), or
what the profile's `thresholds.retest_verdict` says ("pass": count it like a first-attempt pass,
as Azure's iterative check_cuda_bw does, Azure/azurehpc pull request 628; "fail": refuse it). A
criterion on a step that failed every attempt says so in its why.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from harness.analysis.units import number_or_none
from harness.analysis.verdict import Verdict
from harness.judge import action_words
from harness.judge.acceptance.profile import Profile
from harness.judge.engine import Result
from harness.judge.facts import BundleFacts

# Criteria that hold a measured figure to a floor (higher is better): the ones a WARN band applies to.
LOWER_BOUND = re.compile(
    r"^(bandwidth_plateau|gemm_[a-z0-9]+|stress_sustained_[a-z0-9]+|allreduce_busbw|"
    r"transfer_(h2d_pinned|d2h_pinned|bidirectional_pinned|peer_read))$"
)
RETEST_VERDICTS = {"warn": Verdict.WARN, "pass": Verdict.PASS, "fail": Verdict.FAIL}
DEFAULT_RETEST_VERDICT = "warn"


def warn_bands(results: Iterable[Result], profile: Profile) -> list[Result]:
    """A pass under floor x (1 + band) becomes WARN, naming the band and where it comes from."""
    bands = profile.threshold("warn_band") or {}
    out = []
    for r in results:
        band = number_or_none(bands.get(r.name))
        measured = number_or_none(r.measured.value) if r.measured else None
        floor = number_or_none(r.threshold.value) if r.threshold else None
        if (
            r.status != Verdict.PASS
            or band is None
            or measured is None
            or floor is None
            or r.threshold is None
            or not LOWER_BOUND.match(r.name)
        ):
            out.append(r)
            continue
        warn_line = floor * (1 + band)
        if measured < warn_line:
            out.append(
                replace(
                    r,
                    status=Verdict.WARN,
                    why=(
                        f"{r.why}; within the profile's {band:.1%} WARN band above the fail line "
                        f"(under {warn_line:.6g} {r.threshold.unit})"
                    ),
                )
            )
        else:
            out.append(r)
    return out


def _attempts(facts: BundleFacts, step: str) -> tuple[list[dict[str, Any]], int | None]:
    """(the step's earlier failed attempts, attempts the run allowed) from commands.json."""
    entry = facts.view.step(step) or {}
    earlier = [a for a in entry.get("attempts") or [] if isinstance(a, dict)]
    retest = (facts.view.commands.get("options") or {}).get("retest")
    allowed = retest + 1 if isinstance(retest, int) and not isinstance(retest, bool) else None
    return earlier, allowed


def retest_note(facts: BundleFacts, steps: Iterable[str]) -> tuple[str, bool]:
    """("passed on attempt 2 of 3 (attempt 1: ...)" for each retested step, whether any step
    passed only on a retest); ("", False) when no step was retested."""
    notes, passed_late = [], False
    for step in dict.fromkeys(steps):
        earlier, allowed = _attempts(facts, step)
        if not earlier:
            continue
        attempt = len(earlier) + 1
        of = f" of {allowed}" if allowed else ""
        failures = "; ".join(f"attempt {a.get('attempt')}: {a.get('why')}" for a in earlier)
        if facts.status(step) == "completed":
            passed_late = True
            notes.append(f"{step} passed on attempt {attempt}{of} ({failures})")
        else:
            notes.append(f"{step} failed on every attempt ({attempt}{of}; {failures})")
    return "; ".join(notes), passed_late


def retests(results: Iterable[Result], facts: BundleFacts, profile: Profile) -> list[Result]:
    """Each result on a retested step says so; a pass (or WARN) that needed the retest counts as
    the profile's retest_verdict (WARN unless it says otherwise)."""
    choice = profile.threshold("retest_verdict") or DEFAULT_RETEST_VERDICT
    verdict = RETEST_VERDICTS[choice]
    out = []
    for r in results:
        note, passed_late = retest_note(facts, r.steps)
        if not note:
            out.append(r)
        elif passed_late and r.status in (Verdict.PASS, Verdict.WARN):
            status = Verdict.WARN if r.status == Verdict.WARN and verdict == Verdict.PASS else verdict
            action = action_words.RETEST_REFUSED if status == Verdict.FAIL else None
            out.append(
                replace(
                    r,
                    status=status,
                    why=f"{r.why}; {note} (the profile counts a retest as {choice.upper()})",
                    action=action,
                )
            )
        else:
            out.append(replace(r, why=f"{r.why}; {note}"))
    return out
