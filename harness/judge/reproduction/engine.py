"""Did MINE reproduce THEIRS: every figure the registry declares, judged with the noise model.

For each figure either bundle states (DiffFigure rows, by figure id):
1. not comparable (SKIP, with why) when one side does not state it (its step did not complete, or
   its format does not record it), when MINE's step ran where this host could not honour their plan
   (a different image), when the GPUs are of another SKU (a figure that depends on the device), when
   its conditions differ (a timing method, a tensor, a library build), or when a value is not a
   number where a rate is expected;
2. else a count or an exact figure is reproduced (PASS) only when both are equal;
3. else a rate is reproduced when |mine / theirs - 1| <= tolerance: its run-to-run noise
   (harness.analysis.repeatability.noise_model: measured for the SKU, else a stated default, said
   so) widened by both bundles' own within-run spread; not reproduced (FAIL) otherwise.

The facts set side by side (DiffField) that differ are the environment differences; those that can
move a figure of a kind (their `explains`) are listed first, in the order of their sections
(hardware, software, configuration, activity), and named as the likely why of each figure of that
kind that did not reproduce. A foreign process never makes a figure not comparable: it is a likely why.

The whole: not comparable (SKIP) when the identities differ or nothing both state could be
compared; else not reproduced (FAIL) when any figure was not, else reproduced (PASS).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.analysis.repeatability import EQUAL_KINDS, NoiseModel, noise_model
from harness.analysis.verdict import StepStatus, Verdict, overall
from harness.bundle.view import BundleView
from harness.judge.facts import BundleFacts
from harness.judge.reproduction import environment
from harness.judge.reproduction.declare import SECTIONS, DiffField, DiffFigure, Row
from harness.judge.reproduction.environment import Identity

REPRODUCED, NOT_REPRODUCED, NOT_COMPARABLE = "reproduced", "not_reproduced", "not_comparable"
WORDS = {Verdict.PASS: REPRODUCED, Verdict.FAIL: NOT_REPRODUCED, Verdict.SKIP: NOT_COMPARABLE}
WIDEST_FIRST = ("launch_bound", "burst", "steady")  # of two sides' rate kinds, the one with the wider bound

# (probe, its analysis, the declaration) and (probe, the declaration): what the registry declares.
Figures = Sequence[tuple[str, str | None, DiffFigure]]
Fields = Sequence[tuple[str, DiffField]]


@dataclass(frozen=True)
class FieldResult:
    """One fact side by side."""

    section: str
    field: str
    theirs: Any
    mine: Any
    explains: tuple[str, ...]

    @property
    def same(self) -> bool:
        return _canonical(self.theirs) == _canonical(self.mine)

    def to_json(self) -> dict[str, Any]:
        return {
            "section": self.section,
            "field": self.field,
            "theirs": self.theirs,
            "mine": self.mine,
            "same": self.same,
            "explains": list(self.explains),
        }


@dataclass(frozen=True)
class FigureResult:
    """One figure judged: both values, their ratio, the tolerance and its source, the verdict and why."""

    probe: str
    figure: str
    name: str
    unit: str
    kind: str
    theirs: Any
    mine: Any
    theirs_spread: float | None
    mine_spread: float | None
    tolerance: float | None
    tolerance_source: str
    measured: bool | None  # the noise measured (the SKU's run_to_run) or a stated default; None: not judged
    noisy: bool
    verdict: Verdict
    why: str
    likely_why: tuple[str, ...] = ()

    @property
    def ratio(self) -> float | None:
        """mine / theirs, for a rate (a count or an exact figure is compared by equality)."""
        if self.kind not in EQUAL_KINDS and _number(self.theirs) and _number(self.mine) and self.theirs:
            return self.mine / self.theirs
        return None

    @property
    def word(self) -> str:
        return WORDS[self.verdict]

    def to_json(self) -> dict[str, Any]:
        return {
            "probe": self.probe,
            "figure": self.figure,
            "name": self.name,
            "unit": self.unit,
            "kind": self.kind,
            "theirs": self.theirs,
            "mine": self.mine,
            "ratio": self.ratio,
            "theirs_spread": self.theirs_spread,
            "mine_spread": self.mine_spread,
            "tolerance": self.tolerance,
            "tolerance_source": self.tolerance_source,
            "noise_measured": self.measured,
            "noisy": self.noisy,
            "verdict": self.word,
            "result": self.verdict.value,
            "why": self.why,
            "likely_why": list(self.likely_why),
        }


@dataclass(frozen=True)
class Judgement:
    """Every figure of THEIRS and MINE judged, the facts side by side, and the verdict of the whole."""

    theirs: Identity
    mine: Identity
    figures: tuple[FigureResult, ...]
    fields: tuple[FieldResult, ...]
    model: NoiseModel
    notes: tuple[str, ...] = ()
    unhonoured: Mapping[str, str] = field(default_factory=dict)  # MINE's step -> why their plan was not honoured

    @property
    def comparable(self) -> bool:
        return self.theirs.key == self.mine.key

    @property
    def differences(self) -> tuple[FieldResult, ...]:
        """The facts that differ: those that can explain a figure first, by section, then the rest."""
        differ = [f for f in self.fields if not f.same]
        return tuple(sorted(differ, key=lambda f: (not f.explains, SECTIONS.index(f.section))))

    def named(self, verdict: Verdict) -> list[FigureResult]:
        return [f for f in self.figures if f.verdict == verdict]

    @property
    def result(self) -> Verdict:
        """PASS reproduced, FAIL not reproduced, SKIP not comparable (the whole: nothing could be compared)."""
        judged = [f.verdict for f in self.figures if f.verdict != Verdict.SKIP]
        if not self.comparable or not judged:
            return Verdict.SKIP
        return overall(judged)

    @property
    def word(self) -> str:
        return WORDS[self.result]

    @property
    def why(self) -> str:
        if not self.comparable:
            return (
                f"identity differs: THEIRS was measured on {self.theirs.text}, MINE on {self.mine.text}; "
                "their figures that depend on the device are not comparable"
            )
        failed, passed = self.named(Verdict.FAIL), self.named(Verdict.PASS)
        if not failed and not passed:
            return "no figure both bundles state could be compared"
        if failed:
            return f"{len(failed)} of {len(failed) + len(passed)} comparable figures did not reproduce"
        return f"all {len(passed)} comparable figures reproduced"

    def counts(self) -> dict[str, int]:
        return {WORDS[v]: len(self.named(v)) for v in (Verdict.PASS, Verdict.FAIL, Verdict.SKIP)}

    def to_json(self) -> dict[str, Any]:
        return {
            "verdict": self.word,
            "result": self.result.value,
            "why": self.why,
            "counts": self.counts(),
            "identity": {"theirs": self.theirs.to_json(), "mine": self.mine.to_json(), "comparable": self.comparable},
            "figures": [f.to_json() for f in self.figures],
            "differences": [d.to_json() for d in self.differences],
            "fields": [f.to_json() for f in self.fields],
            "noise_model": self.model.to_json(),
            "not_honoured": dict(self.unhonoured),
            "notes": list(self.notes),
        }


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def _steps(facts: BundleFacts, probe: str, analysis: str | None, figure: DiffFigure) -> list[str]:
    if figure.every_step and analysis:
        return [
            e["step"]
            for e in facts.view.steps
            if e.get("analysis") == analysis and e.get("status") == StepStatus.COMPLETED
        ]
    return [figure.step or probe]


def rows(facts: BundleFacts, figures: Figures, notes: list[str], side: str) -> dict[str, Row]:
    """figure id -> this bundle's row, for every declared figure it states (the first step's where two do)."""
    found: dict[str, Row] = {}
    for probe, analysis, figure in figures:
        for step in _steps(facts, probe, analysis, figure):
            data = facts.document(step) if figure.source == "document" else facts.figures(step).values
            if data is None:
                continue
            try:
                for row in figure.rows(probe, step, data):
                    found.setdefault(row.figure, row)
            except Exception as exc:  # noqa: BLE001 - a document this build cannot read is a note, never a crash
                notes.append(f"{side}: {figure.name} could not be read from {step} ({type(exc).__name__}: {exc})")
    return found


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


def _absent(facts: BundleFacts, side: str, row: Row | None, step: str) -> str:
    if facts.view.status(step) != StepStatus.COMPLETED:
        return f"{side} does not state it: {facts.step_why(step)}"
    if row is None:
        return f"{side} does not state it (its {step} step records no such figure: another format, or another run)"
    return f"{side} measured none: {_value_why(row.value)}"


def _value_why(value: Any) -> str:
    if isinstance(value, dict) and "unavailable" in value:
        return str(value["unavailable"])
    return "no value (not measured, or not applicable there)" if value is None else f"{value!r} is not a number"


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
    ) -> None:
        self.theirs, self.mine, self.model = theirs, mine, model
        self.comparable_why = comparable  # None when the identities agree, else why they do not
        self.unhonoured = unhonoured

    def figure(self, t: Row | None, m: Row | None) -> FigureResult:
        row = t or m
        assert row is not None
        kind = _kind(t, m)
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
        )
        skip = self._not_comparable(t, m, kind, row)
        if skip:
            return FigureResult(
                **base, tolerance=None, tolerance_source="", measured=None, noisy=False, verdict=Verdict.SKIP, why=skip
            )
        assert t is not None and m is not None  # _not_comparable gives a reason when either is missing
        noise = self.model.noise(t.noise, kind)
        if kind in EQUAL_KINDS:
            same = _canonical(t.value) == _canonical(m.value)
            return FigureResult(
                **base,
                tolerance=0.0,
                tolerance_source=noise.source,
                measured=noise.measured,
                noisy=False,
                verdict=Verdict.PASS if same else Verdict.FAIL,
                why="equal" if same else "not equal",
            )
        widening = (t.spread or 0.0) + (m.spread or 0.0)
        tolerance = noise.share + widening
        source = noise.source + (
            f"; widened by the bundles' own within-run spreads ({t.spread or 0:.2%} theirs, {m.spread or 0:.2%} mine)"
            if widening
            else ""
        )
        off = m.value / t.value - 1
        within = abs(off) <= tolerance
        why = f"mine is {off:+.2%} of theirs, {'within' if within else 'outside'} +-{tolerance:.2%}"
        if max(t.spread or 0.0, m.spread or 0.0) > self.model.bound(kind):
            why += (
                f" (widened by a within-run spread over the {kind} bound {self.model.bound(kind):.0%}: that "
                "bundle's own repeats of the figure disagree)"
            )
        return FigureResult(
            **base,
            tolerance=tolerance,
            tolerance_source=source,
            measured=noise.measured,
            noisy=noise.noisy,
            verdict=Verdict.PASS if within else Verdict.FAIL,
            why=why,
        )

    def _not_comparable(self, t: Row | None, m: Row | None, kind: str, row: Row) -> str | None:
        if t is None or t.value is None or (isinstance(t.value, dict) and kind not in EQUAL_KINDS):
            return _absent(self.theirs, "THEIRS", t, row.step)
        if m is None or m.value is None or (isinstance(m.value, dict) and kind not in EQUAL_KINDS):
            return _absent(self.mine, "MINE", m, m.step if m else row.step)
        if m.step in self.unhonoured:
            return f"their plan was not honoured here: {self.unhonoured[m.step]}"
        if row.per_device and self.comparable_why:
            return self.comparable_why
        if _canonical(t.conditions) != _canonical(m.conditions):
            return (
                f"measured under other conditions: theirs {_canonical(t.conditions)}, mine {_canonical(m.conditions)}"
            )
        if kind not in EQUAL_KINDS and not (_number(t.value) and _number(m.value) and t.value):
            return f"not a rate to compare: theirs {t.value!r}, mine {m.value!r}"
        return None


def compare(
    theirs: BundleView,
    mine: BundleView,
    figures: Figures,
    fields: Fields,
    unhonoured: Mapping[str, str] | None = None,
    model: NoiseModel | None = None,
) -> Judgement:
    """THEIRS (the reference) and MINE judged figure by figure (the module docstring's rules).

    FIGURES and FIELDS are the registry's declarations (harness.registry.comparisons); UNHONOURED maps
    MINE's steps to why their plan could not be honoured where MINE ran (their figures from those steps
    are not comparable); MODEL defaults to the noise model of THEIRS's SKU."""
    facts_theirs, facts_mine = BundleFacts(theirs), BundleFacts(mine)
    id_theirs, id_mine = environment.identity(facts_theirs), environment.identity(facts_mine)
    model = model or noise_model(id_theirs.sku_id)
    why = (
        None
        if id_theirs.key == id_mine.key
        else (f"identity differs: THEIRS was measured on {id_theirs.text}, MINE on {id_mine.text}")
    )
    notes: list[str] = []
    rows_theirs = rows(facts_theirs, figures, notes, "THEIRS")
    rows_mine = rows(facts_mine, figures, notes, "MINE")
    judge = _Judge(facts_theirs, facts_mine, model, why, unhonoured or {})
    results = []
    for figure_id in [*rows_theirs, *(f for f in rows_mine if f not in rows_theirs)]:
        t, m = rows_theirs.get(figure_id), rows_mine.get(figure_id)
        if (t is None or t.value is None) and (m is None or m.value is None):
            continue
        results.append(judge.figure(t, m))
    all_fields = [*fields, *(("", f) for f in (*environment.HOST, *environment.RUN))]
    side_by_side = tuple(
        FieldResult(declared.section, declared.name, a, b, declared.explains)
        for (_, declared), a, b in zip(
            all_fields, read_fields(facts_theirs, all_fields), read_fields(facts_mine, all_fields), strict=True
        )
    )
    differ = [f for f in side_by_side if not f.same and f.explains]
    explained = tuple(_likely(r, differ) for r in results)
    return Judgement(id_theirs, id_mine, explained, side_by_side, model, tuple(notes), dict(unhonoured or {}))


def _likely(result: FigureResult, differ: list[FieldResult]) -> FigureResult:
    if result.verdict != Verdict.FAIL:
        return result
    names = tuple(f.field for f in sorted(differ, key=lambda f: SECTIONS.index(f.section)) if result.kind in f.explains)
    return dataclasses.replace(result, likely_why=names)
