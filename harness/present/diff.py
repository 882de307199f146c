"""`dossier diff A B`: the unsigned view of `dossier reproduce`'s comparison, A as theirs, B as mine.

The judgement is harness.judge.reproduction's, over the registry's declarations (ProbeSpec.diff_fields,
diff_figures; harness.registry.diff_figures): the facts of each bundle side by side (hardware,
software, the GPUs' configuration, other processes seen), and every headline figure as the ratio B/A
with its tolerance (the noise model's) and its verdict: reproduced, not reproduced or not comparable,
with why, the figures that decide first and the informing ones apart (within noise or moved). This is the comparison as data (`--json`);
harness.present.diff_tables prints it for a person.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from harness import registry
from harness.analysis.figure import EQUAL_KINDS
from harness.bundle.view import BundleView
from harness.judge.reproduction.engine import Judgement
from harness.judge.reproduction.engine import compare as judge


@dataclass(frozen=True)
class FieldDiff:
    section: str  # hardware, software, configuration, activity
    field: str
    a: Any
    b: Any

    @property
    def same(self) -> bool:
        return self.a == self.b


@dataclass(frozen=True)
class MetricDiff:
    metric: str
    unit: str
    a: Any
    a_spread: float | None  # fraction, e.g. 0.012 = 1.2 %
    b: Any
    b_spread: float | None
    figure: str = ""  # its id (PROBE.FIGURE)
    kind: str = "steady"
    tolerance: float | None = None  # the share B may differ from A by and still reproduce it
    tolerance_source: str = ""
    verdict: str = "not_comparable"  # reproduced, not_reproduced, not_comparable; informing: within_noise, moved
    why: str = ""
    role: str = "decides"  # decides the verdict, or informs (shown apart, never deciding)

    @property
    def ratio(self) -> float | None:
        """B/A for a rate (a count or an exact figure is compared by equality: none)."""
        if self.kind in EQUAL_KINDS:
            return None
        if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (self.a, self.b)) and self.a:
            return self.b / self.a
        return None


@dataclass(frozen=True)
class Comparison:
    fields: tuple[FieldDiff, ...]
    metrics: tuple[MetricDiff, ...]
    judgement: Judgement

    @property
    def verdict(self) -> str:
        return self.judgement.word

    def to_json(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict,
            "why": self.judgement.why,
            "counts": self.judgement.counts(),
            "rule": {**self.judgement.rule.to_json(), "text": self.judgement.rule.text},
            "identity": {
                "a": self.judgement.theirs.to_json(),
                "b": self.judgement.mine.to_json(),
                "comparable": self.judgement.comparable,
            },
            "fields": [{**asdict(f), "same": f.same} for f in self.fields],
            "metrics": [{**asdict(m), "ratio": m.ratio} for m in self.metrics],
            "noise_model": self.judgement.model.to_json(),
        }


def view_of(judgement: Judgement) -> Comparison:
    """The judgement as A (theirs) and B (mine) side by side."""
    fields = tuple(FieldDiff(f.section, f.field, f.theirs, f.mine) for f in judgement.fields)
    metrics = tuple(
        MetricDiff(
            f.name,
            f.unit,
            f.theirs,
            f.theirs_spread,
            f.mine,
            f.mine_spread,
            f.figure,
            f.kind,
            f.tolerance,
            f.tolerance_source,
            f.word,
            f.why,
            f.role,
        )
        for f in judgement.figures
    )
    return Comparison(fields, metrics, judgement)


def compare(a: BundleView, b: BundleView) -> Comparison:
    """B judged against A by every figure and fact the registry declares."""
    return view_of(judge(a, b, registry.diff_figures(), registry.diff_fields()))
