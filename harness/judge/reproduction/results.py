"""What a reproduction judgement holds: each fact side by side, each figure judged, and the whole.

The whole is judged on the figures that decide (harness.analysis.figure: role `decides`) only; the
informing figures are judged alone and shown apart, "moved, does not decide", never counted in the
verdict. `rule` says how the deciding figures were held together: the verdict's designed false-alarm rate,
how many deciding rates shared it, which case the noise came from (the same machine start and GPUs by
UUID, or another start or unit of the SKU), the campaign it was measured on and what that campaign measured of the rule itself.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from harness.analysis.figure import DECIDES, EQUAL_KINDS, is_number
from harness.analysis.noise import NoiseModel
from harness.analysis.verdict import Verdict, overall
from harness.judge.reproduction.declare import SECTIONS
from harness.judge.reproduction.environment import Identity

REPRODUCED, NOT_REPRODUCED, NOT_COMPARABLE = "reproduced", "not_reproduced", "not_comparable"
WORDS = {Verdict.PASS: REPRODUCED, Verdict.FAIL: NOT_REPRODUCED, Verdict.SKIP: NOT_COMPARABLE}
# An informing figure's words: it is shown, never decides.
MOVED, WITHIN = "moved", "within_noise"


def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


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
        return canonical(self.theirs) == canonical(self.mine)

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
    """One figure judged: both values, their ratio, the tolerance and its source, the verdict and why, and
    whether it decides (ROLE) or informs (ROLE_WHY says why not)."""

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
    measured: bool | None  # the noise measured (a campaign) or a stated default; None: not judged
    noisy: bool
    verdict: Verdict
    why: str
    likely_why: tuple[str, ...] = ()
    role: str = DECIDES
    role_why: str = ""
    noise_class: str = "device"

    @property
    def decides(self) -> bool:
        return self.role == DECIDES

    @property
    def ratio(self) -> float | None:
        """mine / theirs, for a rate (a count or an exact figure is compared by equality)."""
        if self.kind not in EQUAL_KINDS and is_number(self.theirs) and is_number(self.mine) and self.theirs:
            return self.mine / self.theirs
        return None

    @property
    def word(self) -> str:
        if not self.decides and self.verdict != Verdict.SKIP:
            return WITHIN if self.verdict == Verdict.PASS else MOVED
        return WORDS[self.verdict]

    def to_json(self) -> dict[str, Any]:
        return {
            "probe": self.probe,
            "figure": self.figure,
            "name": self.name,
            "unit": self.unit,
            "kind": self.kind,
            "role": self.role,
            "role_why": self.role_why,
            "noise_class": self.noise_class,
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
class Rule:
    """How the deciding figures were held together in one judgement."""

    false_alarm: float  # the designed chance that a clean re-run is called not reproduced, at most
    family: int  # the deciding rates judged, which share it (Bonferroni)
    case: str  # the same machine start and GPUs, or another start or GPU of the SKU (harness.analysis.noise)
    unmeasured: int  # deciding rates judged with a stated default: outside the stated rate
    campaign: Mapping[str, Any]  # the campaign's source and what it measured of the rule

    def to_json(self) -> dict[str, Any]:
        return {
            "false_alarm": self.false_alarm,
            "family": self.family,
            "case": self.case,
            "unmeasured_deciding_rates": self.unmeasured,
            "campaign": dict(self.campaign),
        }

    @property
    def text(self) -> str:
        """The rule in a sentence, for people."""
        source = self.campaign.get("source") or {}
        measured = self.campaign.get("false_alarms") or {}
        said = (
            f"designed false-alarm rate {self.false_alarm:.0%} over {self.family} deciding rate(s) ({self.case}), "
            + (
                f"noise measured by campaign {source.get('id')} ({source.get('runs')} clean dossiers, "
                f"{source.get('machine_starts')} machine starts, {source.get('gpus')} GPUs, {source.get('dates')})"
                if source
                else "no noise campaign for this SKU: every rate judged with a stated default"
            )
        )
        if measured:
            said += (
                f"; measured there: {measured.get('not_reproduced')} of {measured.get('pairs')} clean pairs "
                "not reproduced"
            )
            if measured.get("out_of_sample_pairs"):  # the blind test: each pair judged without its own starts
                said += (
                    f" ({measured.get('out_of_sample_not_reproduced')} of {measured['out_of_sample_pairs']} "
                    "judged without their own machine starts)"
                )
        if self.unmeasured:
            said += f"; {self.unmeasured} deciding rate(s) judged with a stated default, outside that rate"
        return said


@dataclass(frozen=True)
class Judgement:
    """Every figure of THEIRS and MINE judged, the facts side by side, and the verdict of the whole."""

    theirs: Identity
    mine: Identity
    figures: tuple[FigureResult, ...]
    fields: tuple[FieldResult, ...]
    model: NoiseModel
    rule: Rule
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

    @property
    def deciding(self) -> list[FigureResult]:
        return [f for f in self.figures if f.decides]

    @property
    def informing(self) -> list[FigureResult]:
        return [f for f in self.figures if not f.decides]

    def named(self, verdict: Verdict) -> list[FigureResult]:
        """The deciding figures with VERDICT."""
        return [f for f in self.deciding if f.verdict == verdict]

    def moved(self) -> list[FigureResult]:
        """The informing figures that moved beyond their own noise (shown, never deciding)."""
        return [f for f in self.informing if f.verdict == Verdict.FAIL]

    @property
    def result(self) -> Verdict:
        """PASS reproduced, FAIL not reproduced, SKIP not comparable (nothing that decides could be compared)."""
        judged = [f.verdict for f in self.deciding if f.verdict != Verdict.SKIP]
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
            return "no figure that decides could be compared"
        if failed:
            return f"{len(failed)} of {len(failed) + len(passed)} comparable deciding figures did not reproduce"
        return f"all {len(passed)} comparable deciding figures reproduced"

    def counts(self) -> dict[str, int]:
        """The deciding figures by verdict, and the informing ones apart."""
        counts = {WORDS[v]: len(self.named(v)) for v in (Verdict.PASS, Verdict.FAIL, Verdict.SKIP)}
        informing = self.informing
        counts["informing"] = len(informing)
        counts["informing_moved"] = len(self.moved())
        return counts

    def to_json(self) -> dict[str, Any]:
        return {
            "verdict": self.word,
            "result": self.result.value,
            "why": self.why,
            "counts": self.counts(),
            "rule": {**self.rule.to_json(), "text": self.rule.text},
            "identity": {"theirs": self.theirs.to_json(), "mine": self.mine.to_json(), "comparable": self.comparable},
            "figures": [f.to_json() for f in self.figures],
            "differences": [d.to_json() for d in self.differences],
            "fields": [f.to_json() for f in self.fields],
            "noise_model": self.model.to_json(),
            "not_honoured": dict(self.unhonoured),
            "notes": list(self.notes),
        }
