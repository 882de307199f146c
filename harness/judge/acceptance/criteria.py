"""The acceptance criteria's shared part: figures as text, the share-of-known-good threshold, and
judging them all (harness.judge.engine) with the profile's required ones applied.

The criteria themselves are small functions of a verified bundle's facts and a profile, by area:
`identity`, `rates`, `memory_health`, `load`, `config`, `node`, `digests`. Each gives one or more
Results: pass, fail or incomplete (not measured), the measured value with its unit, the threshold,
the evidence (which raw JSON fields it comes from) and why. A criterion whose input is absent is
incomplete, with the reason; `evaluate` keeps the ones the profile requires incomplete (failing
closed) and makes the others skip, applies the profile's WARN bands and counts a pass that needed
a retest as the profile says (harness.judge.acceptance.adjust), gives every FAIL its recommended
action (harness.judge.recommend) and names a busy host beside a criterion that failed on a step it
disturbed (harness.judge.contention). Which probe brings which criterion
is its registry entry's (harness/registry/): the caller hands them in.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from harness.analysis.actions import Recommendation
from harness.analysis.verdict import Verdict
from harness.judge import contention, engine, recommend
from harness.judge.acceptance import adjust
from harness.judge.acceptance.profile import Profile
from harness.judge.engine import Result, Value
from harness.judge.facts import BundleFacts


@dataclass(frozen=True)
class Judging:
    """One criterion's results in the making: its name, title and evidence said once, then each result
    by its verdict with what differs (why, the measured value, the threshold and, for a FAIL, the
    recommended action where the criterion knows it; harness.judge.recommend gives the rest)."""

    name: str
    title: str
    evidence: str = ""

    def verdict(
        self,
        status: Verdict,
        why: str,
        measured: Value | None = None,
        threshold: Value | None = None,
        action: Recommendation | None = None,
    ) -> Result:
        return Result(self.name, self.title, status, measured, threshold, self.evidence, why, action=action)

    def incomplete(self, why: str, measured: Value | None = None, threshold: Value | None = None) -> Result:
        return self.verdict(Verdict.INCOMPLETE, why, measured, threshold)

    def passed(self, why: str, measured: Value | None = None, threshold: Value | None = None) -> Result:
        return self.verdict(Verdict.PASS, why, measured, threshold)

    def failed(
        self,
        why: str,
        measured: Value | None = None,
        threshold: Value | None = None,
        action: Recommendation | None = None,
    ) -> Result:
        return self.verdict(Verdict.FAIL, why, measured, threshold, action)

    def judged(
        self,
        ok: bool,
        why: str,
        measured: Value | None = None,
        threshold: Value | None = None,
        action: Recommendation | None = None,
    ) -> Result:
        """PASS when OK, else FAIL (with ACTION)."""
        return self.verdict(Verdict.PASS if ok else Verdict.FAIL, why, measured, threshold, None if ok else action)


def fmt(value: float, digits: int = 4) -> str:
    return f"{value:.{digits}g}" if abs(value) < 10**digits else f"{value:.0f}"


def share_threshold(share: float, reference, unit: str, what: str, label: str) -> Value:
    """SHARE of the known-good REFERENCE as a threshold in UNIT (WHAT: which known-good; LABEL: the
    figure in a few words, as report.md names it beside its known-good)."""
    floor = share * reference.value
    return Value(
        floor,
        unit,
        f"at least {share:.0%} of the known-good {fmt(reference.value)} {unit} ({what}) = {fmt(floor)} {unit}",
        reference=reference.value,
        share=share,
        label=label,
    )


def at_least(
    name: str, title: str, measured: Value, threshold: Value, evidence: str, ok: bool | None = None, source: str = ""
) -> Result:
    """The result of MEASURED held to THRESHOLD (pass at or above it; OK where a shared rule decides),
    its why naming both, and SOURCE (the rule's origin) after them."""
    ok = measured.value >= threshold.value if ok is None else ok
    why = (
        f"{fmt(measured.value)} {measured.unit} is {'at or above' if ok else 'below'} "
        f"{fmt(threshold.value)} {threshold.unit}" + (f" ({source})" if source else "")
    )
    return Judging(name, title, evidence).judged(ok, why, measured, threshold)


NOT_MEASURED_REQUIRED = "not measured, and the profile requires it: "
NOT_MEASURED_NOT_REQUIRED = "not measured, and the profile does not require it: "


def apply_required(results: Iterable[Result], required: Iterable[str]) -> list[Result]:
    """Mark required criteria. One not measured stays INCOMPLETE when the profile requires it (the
    acceptance fails closed: exit 5) and is SKIP when it does not, each saying so."""
    needed = set(required)
    out = []
    for r in results:
        if r.status != Verdict.INCOMPLETE:
            out.append(replace(r, required=r.name in needed))
        elif r.name in needed:
            out.append(replace(r, required=True, why=NOT_MEASURED_REQUIRED + r.why))
        else:
            out.append(replace(r, status=Verdict.SKIP, why=NOT_MEASURED_NOT_REQUIRED + r.why))
    return out


def evaluate(facts: BundleFacts, profile: Profile, criteria: Sequence[engine.Criterion]) -> list[Result]:
    """CRITERIA (the registry's acceptance criteria, in run order) judged against PROFILE: the ones
    it requires applied, its WARN bands, and a pass that needed a retest counted as it says."""
    results = []
    for criterion in criteria:  # each result knows the steps it was judged from (a retest names them)
        results += [replace(r, steps=r.steps or criterion.steps) for r in engine.evaluate((criterion,), facts, profile)]
    present = {r.name for r in results}
    # A required criterion this bundle gave no row for (a GEMM dtype the profile has no share or
    # known-good for, a GPU-against-GPU figure on one GPU) still gets one: it was not measured.
    for name in profile.required:
        if name not in present:
            results.append(
                Judging(name, f"Required by the profile: {name}").incomplete(
                    "this bundle gives no result for it (the profile states no share or "
                    "known-good for it, or nothing here measured it)"
                )
            )
    adjusted = adjust.retests(adjust.warn_bands(apply_required(results, profile.required), profile), facts, profile)
    # a failure on a step the host's other work disturbed says so
    return contention.beside(recommend.attach(adjusted, facts), facts)
