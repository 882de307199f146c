"""The figures a baseline is made of: for every figure a probe declares with an acceptance view
(harness.analysis.figure.Accept: its known-good kind, key, criterion and share), the value the criterion
judges, per bundle.

Each is read the way the criterion reads it, from the same recomputed headlines (the bandwidth plateau of
the kernel measured, each dtype's roofline burst best, its own dtype's and each dtype check's, the stress
run's lowest steady rate, the slowest GPU's pinned host copies, the slowest NVLink peer read, the
all-reduce bus bandwidth at the largest message per world size), so the profile's known-good figure is the
median of exactly what acceptance will hold a candidate to (tests/commands/test_baseline.py checks that the
two agree). A figure also names where it goes in the profile: its known-good entry and the share threshold
that makes its fail line.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.judge.facts import BundleFacts


@dataclass(frozen=True, order=True)
class Figure:
    """One judged figure: the criterion, its known-good slot (field, key), its share slot (threshold
    key, the part of a per-part share or None), its figure id and kind in the noise model
    (harness.analysis.noise: the run-to-run tolerance that floors its threshold) and unit."""

    criterion: str
    known_good: tuple[str, str]
    share: tuple[str, str | None]
    figure: str
    kind: str
    unit: str


def figures_of(facts: BundleFacts) -> dict[Figure, float]:
    """Every figure this bundle measured that acceptance holds to a known-good unit, keyed by what it is:
    the declared figures of its steps' analyses (BundleFacts.declared) with an acceptance view."""
    found: dict[Figure, float] = {}
    for probe, analysis, declared in facts.declared():
        accept = declared.accept
        if accept is None:
            continue
        for step, data in facts.figure_data(probe, analysis, declared):
            rows = {r.noise: r for r in declared.rows(probe, step, data)} if accept.read is None else {}
            for key, value in declared.accepted(probe, step, data).items():
                row = next((r for r in rows.values() if accept.key(r.item) == key), None)
                noise, kind = (row.noise, row.kind) if row else (accept.noise, "steady")
                figure = Figure(
                    accept.criterion_of(key),
                    (accept.known_good.field, str(key)),
                    (accept.share, str(key) if accept.share_per_key else None),
                    noise,
                    kind,
                    declared.unit,
                )
                found.setdefault(figure, value)
    return found
