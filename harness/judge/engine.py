"""The one criteria engine: a Criterion judges a bundle's facts against thresholds into Results.

The report's lab criteria (harness.judge.lab, no thresholds: the lab's rules are constants of the
analysis modules) and the acceptance criteria (harness.judge.acceptance, thresholds: a SKU's
profile) are both tuples of Criterion, judged by `evaluate`. A criterion whose judge raises on
this bundle's data fails with the reason, never a traceback (verify re-renders the same).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from harness.analysis.actions import Action, Recommendation
from harness.analysis.verdict import Verdict
from harness.judge.facts import BundleFacts

NOT_FAILED = Recommendation(Action.NONE, "none", "this criterion did not fail")


@dataclass(frozen=True)
class Value:
    """A figure with its unit and the same in plain words. A threshold that is a share of a
    known-good figure also says which (`reference`, in the same unit), the share (`share`) and what
    the figure is in a few words (`label`: "bf16 GEMM burst"), so report.md can set the measured
    figure beside its known-good."""

    value: Any
    unit: str
    text: str
    reference: float | None = None
    share: float | None = None
    label: str = ""


@dataclass(frozen=True)
class Result:
    """One judged criterion (a criterion may give several: one GEMM result per dtype).

    `status` is the Verdict; `measured` and `threshold` the figure and the bar it was held to
    (acceptance); `evidence` names the raw JSON fields the measured value comes from; `why` says
    why this verdict; `findings` are the lines the report lists under the criterion; `steps` are
    the steps whose commands and plots are the evidence; `required` marks a criterion the
    acceptance profile requires; `action` is what to do after a FAIL (harness.analysis.actions: the
    criterion's own where it knows it, else harness.judge.recommend's rule for it); `rows` are the results a criterion that sums up
    others was judged from (the known-good rates), which report.md sets out as a table.
    """

    name: str
    title: str
    status: Verdict
    measured: Value | None = None
    threshold: Value | None = None
    evidence: str = ""
    why: str = ""
    required: bool = False
    findings: tuple[str, ...] = ()
    steps: tuple[str, ...] = ()
    action: Recommendation | None = None
    rows: tuple[Result, ...] = ()  # the results a summary criterion was judged from (report.md: a table)

    @property
    def recommendation(self) -> Recommendation:
        """The action after this result: its own on a FAIL, else NONE."""
        return self.action if self.status == Verdict.FAIL and self.action is not None else NOT_FAILED

    def to_json(self) -> dict[str, Any]:
        """As `dossier accept --json` and the acceptance document write it."""

        def value(v: Value | None) -> dict[str, Any] | None:
            return None if v is None else {"value": v.value, "unit": v.unit, "text": v.text}

        return {
            "name": self.name,
            "title": self.title,
            "status": self.status,
            "measured": value(self.measured),
            "threshold": value(self.threshold),
            "evidence": self.evidence,
            "why": self.why,
            "required": self.required,
            "action": self.recommendation.to_json(),
        }


Judge = Callable[["BundleFacts", Any], list[Result]]


@dataclass(frozen=True)
class Criterion:
    """A named criterion: `judge(facts, thresholds)` gives its Result(s).

    `steps` are the steps whose data it reads; the report and acceptance list criteria in the
    order the run completes their evidence (the plan position of the last of `steps`). `label` is
    what report.md calls it in a few words ("Memory bandwidth"; the name is only a reference)."""

    name: str
    title: str
    steps: tuple[str, ...]
    judge: Judge
    label: str = ""


def could_not_judge(criterion: Criterion, exc: BaseException) -> Result:
    why = f"could not be judged from this bundle's data: {type(exc).__name__}: {exc}"
    return Result(criterion.name, criterion.title, Verdict.FAIL, why=why, findings=(why,), steps=criterion.steps)


def evaluate(criteria: Iterable[Criterion], facts: BundleFacts, thresholds: Any = None) -> list[Result]:
    """Every criterion's results, in order; a judge that raises fails its criterion, naming why."""
    results: list[Result] = []
    for criterion in criteria:
        try:
            results += criterion.judge(facts, thresholds)
        except Exception as exc:  # noqa: BLE001 - shown as the criterion's evidence, never raised
            results.append(could_not_judge(criterion, exc))
    return results
