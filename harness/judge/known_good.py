"""The report's known-good criterion (beyond lab M1): every headline rate beside the known-good
figure of its SKU, held to the share a buyer's `dossier accept --profile SKU` holds it to.

Nothing here is a copy of acceptance: the rows are acceptance's own results (harness.judge.acceptance,
the criteria the registry's entries bring) judged against the catalogue's profile of the SKU this
bundle's GPUs are identified as (harness/data/gpus.json, read by harness.judge.acceptance.profile),
kept where the threshold is a share of a known-good figure (engine.Value.reference): memory
bandwidth, each dtype's GEMM burst, the sustained GEMM of the stress run, the pinned transfers, the
all-reduce's bus bandwidth. So a run whose rates are far under a known-good unit's (a contended
machine: everything at ~45%) cannot read as healthy in its report, whatever the lab's own criteria
say of it. Configuration, faults and digests stay acceptance's alone.

In the one vocabulary (harness.analysis.verdict): FAIL when a rate is under its share, WARN within a
profile's band, PASS when every rate judged reaches its share; SKIP on a CPU (no known-good exists
for host memory) and INCOMPLETE on a GPU the catalogue lacks (`dossier accept --profile-file` judges
it against a profile you give).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from harness import catalogue
from harness.analysis.bandwidth.view import BandwidthFigures
from harness.analysis.health.view import HealthFigures
from harness.analysis.verdict import Verdict, overall
from harness.judge.acceptance.criteria import evaluate, fmt
from harness.judge.acceptance.profile import KnownGood, Profile, from_catalogue
from harness.judge.engine import Criterion, Result
from harness.judge.facts import BundleFacts

NAME = "known-good"
LABEL = "Rates against a known-good unit"
TEXT = (
    "Beyond lab M1, known-good: every headline rate reaches the share of a known-good unit of the same "
    "SKU and form factor that acceptance asks (the catalogue's profile)"
)


def identified_sku(facts: BundleFacts) -> str | None:
    """The catalogue SKU the bundle's GPUs are identified as: the bandwidth step's, else the first
    GPU health names with one."""
    bandwidth = facts.viewed("bandwidth", BandwidthFigures.from_headlines)
    if bandwidth is not None and bandwidth.sku_id:
        return bandwidth.sku_id
    health = _health(facts)
    return health.sku_ids[0] if health is not None and health.sku_ids else None


def on_cpu(facts: BundleFacts) -> bool:
    """Whether the run measured no GPU: the bandwidth step ran on the CPU, or health lists no device."""
    bandwidth = facts.viewed("bandwidth", BandwidthFigures.from_headlines)
    if bandwidth is not None and bandwidth.device is not None:
        return bandwidth.on_cpu
    health = _health(facts)
    return health is None or not health.device_count


def _health(facts: BundleFacts) -> HealthFigures | None:
    return facts.viewed("health", lambda values: HealthFigures.from_headlines(values, facts.document("health")))


def catalogue_profile(facts: BundleFacts, kinds: Sequence[KnownGood]) -> Profile | None:
    """The catalogue's acceptance profile of the identified SKU (KINDS: the registry's known-good
    kinds), or None when no SKU was identified or the catalogue lacks it."""
    sku_id = identified_sku(facts)
    sku = catalogue.by_id(sku_id) if sku_id else None
    return from_catalogue(sku, kinds) if sku else None


def rows(facts: BundleFacts, profile: Profile, criteria: Sequence[Criterion]) -> list[Result]:
    """Acceptance's results against PROFILE whose threshold is a share of a known-good figure."""
    return [r for r in evaluate(facts, profile, criteria) if r.threshold is not None and r.threshold.reference]


def row_text(r: Result) -> str:
    """'bf16 GEMM burst: 349.5 TFLOPS, 45.7% of the known-good 765.1 TFLOPS (at least 85% asked): FAIL'."""
    t = r.threshold
    assert t is not None and t.reference  # rows() keeps only these
    measured = r.measured.value if r.measured is not None else None
    if not isinstance(measured, (int, float)):
        said = r.measured.text if r.measured is not None else "not measured"
        return f"{t.label}: {said} (known-good {fmt(t.reference)} {t.unit}): {r.status.shown}"
    return (
        f"{t.label}: {fmt(measured)} {t.unit}, {measured / t.reference:.1%} of the known-good "
        f"{fmt(t.reference)} {t.unit} (at least {t.share:.0%} asked): {r.status.shown}"
    )


def judge(facts: BundleFacts, kinds: Sequence[KnownGood], criteria: Sequence[Criterion]) -> list[Result]:
    """The one result: its verdict, a finding per rate, and the rates themselves (`rows`) for the report's table."""
    profile = catalogue_profile(facts, kinds)
    if profile is None:
        sku = identified_sku(facts)
        if on_cpu(facts):
            verdict, why = Verdict.SKIP, "a CPU run: no known-good figure exists for a CPU's host memory and cores"
        else:
            verdict = Verdict.INCOMPLETE
            why = (
                f"GPU SKU {sku} is not in the catalogue" if sku else "the GPUs were not identified as a catalogue SKU"
            ) + ": no known-good to compare with (`dossier accept --profile-file` judges against one you give)"
        return [Result(NAME, TEXT, verdict, why=why, findings=(why[0].upper() + why[1:] + ".",))]
    found = rows(facts, profile, criteria)
    judged = [r for r in found if r.status != Verdict.SKIP]
    source = f"the catalogue's known-good figures for {profile.name} ({profile.sku_id})"
    findings = [f"Against {source}:", *(row_text(r) for r in found)]  # the first line names the profile
    if not judged:
        why = f"no headline rate of this run has a known-good figure in {source}"
        return [Result(NAME, TEXT, Verdict.SKIP, why=why, findings=(why[0].upper() + why[1:] + ".",))]
    verdict = overall(r.status for r in judged)
    under = [r for r in judged if r.status in (Verdict.FAIL, Verdict.WARN)]
    why = (
        f"{len(under)} of {len(judged)} rates are under the share of the known-good acceptance asks: "
        + ", ".join(_short(r) for r in under)
        + " (each in the table below)"
        if under
        else f"every one of the {len(judged)} rates reaches the share of the known-good acceptance asks"
    )
    return [Result(NAME, TEXT, verdict, why=why, findings=tuple(findings), rows=tuple(found))]


def _short(r: Result) -> str:
    t: Any = r.threshold
    measured = r.measured.value if r.measured is not None else None
    if not isinstance(measured, (int, float)):
        return f"{t.label} not measured"
    return f"{t.label} at {measured / t.reference:.0%}"


def share_text(r: Result) -> str:
    """'bf16 GEMM burst 45.7% of 765.1 TFLOPS, FAIL': a rate's share of its known-good, and its verdict."""
    t: Any = r.threshold
    measured = r.measured.value if r.measured is not None else None
    if not isinstance(measured, (int, float)):
        return f"{t.label} not measured, {r.status.shown}"
    return f"{t.label} {measured / t.reference:.1%} of {fmt(t.reference)} {t.unit}, {r.status.shown}"


def criterion(kinds: Sequence[KnownGood], criteria: Sequence[Criterion], steps: tuple[str, ...]) -> Criterion:
    """The criterion as the registry lists it: KINDS and CRITERIA are its entries' (known_good_kinds,
    acceptance_criteria), STEPS the steps those read."""

    def judged(facts: BundleFacts, thresholds: Any = None) -> list[Result]:
        return judge(facts, kinds, criteria)

    return Criterion(NAME, TEXT, steps, judged, LABEL)
