"""Did MINE reproduce THEIRS: every figure the probes declare, judged with the noise model.

For each figure either bundle states (harness.analysis.figure rows, by figure id):
1. not comparable (SKIP, with why) when one side does not state it (its step did not complete, its
   format does not record it, or it was unavailable there), when MINE's step ran where this host could
   not honour their plan (a different image), when the GPUs are of another SKU (a figure that depends on
   the device), when its conditions differ (a timing method, a tensor, a library build, the time per
   point), or when a value is not a number where a rate is expected;
2. else a count or an exact figure is reproduced (PASS) only when both are equal;
3. else a rate is reproduced when |mine / theirs - 1| <= its tolerance (harness.analysis.noise): the
   campaign's noise for the case judged (the same GPU, by UUID, or another unit of the SKU) at the share of
   the verdict's false-alarm rate it gets: the deciding rates share it (Bonferroni over the K of them
   judged here), an informing rate is judged alone; not reproduced (FAIL) otherwise.

The whole (results.Judgement) is decided by the deciding figures only: not comparable (SKIP) when the
identities differ or no deciding figure could be compared, else not reproduced (FAIL) when any deciding
figure was not, else reproduced (PASS). Informing figures are shown apart: "moved, does not decide".

The facts set side by side (DiffField) that differ are the environment differences; those that can
move a figure of a kind (their `explains`) are listed first, in the order of their sections
(hardware, software, configuration, activity), and named as the likely why of each figure of that
kind that did not reproduce. A foreign process never makes a figure not comparable: it is a likely why.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from harness.analysis.figure import DECIDES, EQUAL_KINDS, RATE_KINDS, Figure, Row, by_noise, is_number
from harness.analysis.noise import OTHER_UNIT, SAME_UNIT, NoiseModel, noise_model
from harness.analysis.verdict import StepStatus, Verdict
from harness.bundle.view import BundleView
from harness.judge.facts import BundleFacts
from harness.judge.reproduction import environment
from harness.judge.reproduction.declare import SECTIONS, DiffField
from harness.judge.reproduction.results import (
    NOT_COMPARABLE,
    NOT_REPRODUCED,
    REPRODUCED,
    FieldResult,
    FigureResult,
    Judgement,
    Rule,
    canonical,
)

__all__ = ["NOT_COMPARABLE", "NOT_REPRODUCED", "REPRODUCED", "FigureResult", "Judgement", "compare"]

WIDEST_FIRST = ("launch_bound", "burst", "steady")  # of two sides' rate kinds, the one with the wider bound

# (probe, its analysis, the declaration) and (probe, the declaration): what the registry declares.
Figures = Sequence[tuple[str, str | None, Figure]]
Fields = Sequence[tuple[str, DiffField]]


def rows(facts: BundleFacts, figures: Figures, notes: list[str], side: str) -> dict[str, Row]:
    """figure id -> this bundle's row, for every declared figure it states (the first step's where two do)."""
    found: dict[str, Row] = {}
    for probe, analysis, figure in figures:
        for step, data in facts.figure_data(probe, analysis, figure):
            try:
                for row in figure.rows(probe, step, data):
                    found.setdefault(row.figure, row)
            except Exception as exc:  # noqa: BLE001 - a document this build cannot read is a note, never a crash
                notes.append(f"{side}: {figure.name} could not be read from {step} ({type(exc).__name__}: {exc})")
    return found


def rates_of(view: BundleView, figures: Figures) -> dict[str, tuple[Any, str]]:
    """Every rate a bundle states, by noise id (the slowest GPU's where several share one), with its kind:
    what bench/repeatability.py compares across dossiers."""
    return by_noise(rows(BundleFacts(view), figures, [], "").values())


def read_fields(facts: BundleFacts, fields: Fields) -> list[Any]:
    values = []
    for probe, declared in fields:
        step = declared.step or probe
        try:
            if declared.source == "facts":
                values.append(declared.read(facts))
            elif declared.source == "document":
                document = facts.document(step)
                values.append(None if document is None else declared.read(document))
            else:
                heads = facts.figures(step).values
                values.append(None if heads is None else declared.read(heads))
        except Exception as exc:  # noqa: BLE001 - shown as the reason, never a crash
            values.append({"unavailable": f"could not be read ({type(exc).__name__}: {exc})"})
    return values


def _unavailable(value: Any) -> bool:
    return isinstance(value, dict) and "unavailable" in value


def _absent(facts: BundleFacts, side: str, row: Row | None, step: str) -> str:
    if facts.view.status(step) != StepStatus.COMPLETED:
        return f"{side} does not state it: {facts.step_why(step)}"
    if row is None:
        return f"{side} does not state it (its {step} step records no such figure: another format, or another run)"
    if _unavailable(row.value):
        return f"{side} measured none: {row.value['unavailable']}"
    return f"{side} measured none: " + (
        "no value (not measured, or not applicable there)" if row.value is None else f"{row.value!r} is not a number"
    )


def _role(theirs: Row | None, mine: Row | None) -> str:
    """Decides when either side's declaration says so (a role can differ between builds)."""
    sides = [r for r in (theirs, mine) if r is not None]
    return DECIDES if any(r.role == DECIDES for r in sides) else sides[0].role


def _kind(theirs: Row | None, mine: Row | None) -> str:
    kinds = {r.kind for r in (theirs, mine) if r is not None}
    if len(kinds) == 1:
        return kinds.pop()
    return next((k for k in (*EQUAL_KINDS, *WIDEST_FIRST) if k in kinds), sorted(kinds)[0])


class _Judge:
    def __init__(
        self,
        theirs: BundleFacts,
        mine: BundleFacts,
        model: NoiseModel,
        comparable: str | None,
        unhonoured: Mapping[str, str],
        same_unit: bool,
    ) -> None:
        self.theirs, self.mine, self.model = theirs, mine, model
        self.comparable_why = comparable  # None when the identities agree, else why they do not
        self.unhonoured = unhonoured
        self.same_unit = same_unit
        self.family = 1  # the deciding rates judged together (set before judging, `family_of`)

    def not_comparable(self, t: Row | None, m: Row | None) -> str | None:
        row = t or m
        assert row is not None
        kind = _kind(t, m)
        if t is None or t.value is None or _unavailable(t.value) or (isinstance(t.value, dict) and kind in RATE_KINDS):
            return _absent(self.theirs, "THEIRS", t, row.step)
        if m is None or m.value is None or _unavailable(m.value) or (isinstance(m.value, dict) and kind in RATE_KINDS):
            return _absent(self.mine, "MINE", m, m.step if m else row.step)
        if m.step in self.unhonoured:
            return f"their plan was not honoured here: {self.unhonoured[m.step]}"
        if row.per_device and self.comparable_why:
            return self.comparable_why
        if canonical(t.conditions) != canonical(m.conditions):
            return f"measured under other conditions: theirs {canonical(t.conditions)}, mine {canonical(m.conditions)}"
        if kind in RATE_KINDS and not (is_number(t.value) and is_number(m.value) and t.value):
            return f"not a rate to compare: theirs {t.value!r}, mine {m.value!r}"
        return None

    def figure(self, t: Row | None, m: Row | None) -> FigureResult:
        row = t or m
        assert row is not None
        kind = _kind(t, m)
        role = _role(t, m)
        base: dict[str, Any] = dict(
            probe=row.probe,
            figure=row.figure,
            name=row.name,
            unit=row.unit,
            kind=kind,
            theirs=t.value if t else None,
            mine=m.value if m else None,
            theirs_spread=t.spread if t else None,
            mine_spread=m.spread if m else None,
            role=role,
            role_why="" if role == DECIDES else row.why,
            noise_class=row.noise_class,
        )
        skip = self.not_comparable(t, m)
        if skip:
            return FigureResult(
                **base, tolerance=None, tolerance_source="", measured=None, noisy=False, verdict=Verdict.SKIP, why=skip
            )
        assert t is not None and m is not None  # not_comparable gives a reason when either is missing
        family = self.family if role == DECIDES else 1
        noise = self.model.noise(t.noise, kind, same_unit=self.same_unit, family=family)
        if kind in EQUAL_KINDS:
            same = canonical(t.value) == canonical(m.value)
            verdict = Verdict.PASS if same else Verdict.FAIL
            return FigureResult(
                **base,
                tolerance=0.0,
                tolerance_source=noise.source,
                measured=noise.measured,
                noisy=False,
                verdict=verdict,
                why="equal" if same else "not equal",
            )
        tolerance, source = noise.share, noise.source
        if not noise.measured and (t.spread or m.spread):  # a stated default: widened by the runs' own spreads
            tolerance += (t.spread or 0.0) + (m.spread or 0.0)
            source += f"; widened by the bundles' own within-run spreads ({t.spread or 0:.2%}, {m.spread or 0:.2%})"
        off = m.value / t.value - 1
        within = abs(off) <= tolerance
        return FigureResult(
            **base,
            tolerance=tolerance,
            tolerance_source=source,
            measured=noise.measured,
            noisy=noise.noisy,
            verdict=Verdict.PASS if within else Verdict.FAIL,
            why=f"mine is {off:+.2%} of theirs, {'within' if within else 'outside'} +-{tolerance:.2%}",
        )


def _pairs(rows_theirs: dict[str, Row], rows_mine: dict[str, Row]) -> list[tuple[Row | None, Row | None]]:
    found = []
    for figure_id in [*rows_theirs, *(f for f in rows_mine if f not in rows_theirs)]:
        t, m = rows_theirs.get(figure_id), rows_mine.get(figure_id)
        if (t is None or t.value is None) and (m is None or m.value is None):
            continue
        found.append((t, m))
    return found


def compare(
    theirs: BundleView,
    mine: BundleView,
    figures: Figures,
    fields: Fields,
    unhonoured: Mapping[str, str] | None = None,
    model: NoiseModel | None = None,
) -> Judgement:
    """THEIRS (the reference) and MINE judged figure by figure (the module docstring's rules).

    FIGURES and FIELDS are the registry's declarations (harness.registry.figures, diff_fields); UNHONOURED
    maps MINE's steps to why their plan could not be honoured where MINE ran (their figures from those steps
    are not comparable); MODEL defaults to the noise model of THEIRS's SKU."""
    facts_theirs, facts_mine = BundleFacts(theirs), BundleFacts(mine)
    id_theirs, id_mine = environment.identity(facts_theirs), environment.identity(facts_mine)
    model = model or noise_model(id_theirs.sku_id)
    why = (
        None
        if id_theirs.key == id_mine.key
        else (f"identity differs: THEIRS was measured on {id_theirs.text}, MINE on {id_mine.text}")
    )
    same_unit = bool(id_theirs.units) and id_theirs.units == id_mine.units
    notes: list[str] = []
    pairs = _pairs(rows(facts_theirs, figures, notes, "THEIRS"), rows(facts_mine, figures, notes, "MINE"))
    judge = _Judge(facts_theirs, facts_mine, model, why, unhonoured or {}, same_unit)
    deciding_rates = [
        (t, m)
        for t, m in pairs
        if _role(t, m) == DECIDES and _kind(t, m) in RATE_KINDS and judge.not_comparable(t, m) is None
    ]
    judge.family = max(len(deciding_rates), 1)
    results = [judge.figure(t, m) for t, m in pairs]
    all_fields = [*fields, *(("", f) for f in (*environment.HOST, *environment.RUN))]
    side_by_side = tuple(
        FieldResult(declared.section, declared.name, a, b, declared.explains)
        for (_, declared), a, b in zip(
            all_fields, read_fields(facts_theirs, all_fields), read_fields(facts_mine, all_fields), strict=True
        )
    )
    differ = [f for f in side_by_side if not f.same and f.explains]
    explained = tuple(_likely(r, differ) for r in results)
    unmeasured = sum(1 for r in explained if r.decides and r.kind in RATE_KINDS and r.measured is False)
    rule = Rule(
        model.false_alarm,
        judge.family,
        SAME_UNIT if same_unit else OTHER_UNIT,
        unmeasured,
        {k: model.campaign[k] for k in ("source", "false_alarms") if k in model.campaign},
    )
    return Judgement(id_theirs, id_mine, explained, side_by_side, model, rule, tuple(notes), dict(unhonoured or {}))


def _likely(result: FigureResult, differ: list[FieldResult]) -> FigureResult:
    if result.verdict != Verdict.FAIL:
        return result
    names = tuple(f.field for f in sorted(differ, key=lambda f: SECTIONS.index(f.section)) if result.kind in f.explains)
    return dataclasses.replace(result, likely_why=names)
