"""What a criterion reads from a bundle: each step's recomputed figures or why there are none,
and the steps' documents.

Figures always come from harness.analysis.NAME.headlines (recomputed from the raw JSON), never
from a document's own summary.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from harness.analysis.verdict import StepStatus
from harness.bundle.view import BundleView


@dataclass(frozen=True)
class StepFigures:
    """One step's headline figures (None when absent) and why they are absent ("" when present)."""

    step: str
    values: dict[str, Any] | None
    why: str

    @property
    def present(self) -> bool:
        return self.values is not None


@dataclass(frozen=True)
class BundleFacts:
    view: BundleView

    def status(self, step: str) -> str:
        return self.view.status(step)

    def step_why(self, step: str) -> str:
        entry = self.view.step(step)
        if entry is None:
            return f"the bundle has no {step} step"
        return f"the {step} step {entry['status'].replace('_', ' ')}: {entry.get('why') or 'no reason recorded'}"

    def figures(self, step: str) -> StepFigures:
        if self.view.status(step) != StepStatus.COMPLETED:
            return StepFigures(step, None, self.step_why(step))
        figures = self.view.figures(step)
        return StepFigures(step, figures.values, figures.error or "")

    def figures_by_analysis(self, analysis: str) -> list[StepFigures]:
        """Every completed step analysed by harness.analysis.ANALYSIS (e.g. one roofline per dtype)."""
        return [
            self.figures(e["step"])
            for e in self.view.steps
            if e.get("analysis") == analysis and e.get("status") == StepStatus.COMPLETED
        ]

    def document(self, step: str) -> dict[str, Any] | None:
        if self.view.status(step) != StepStatus.COMPLETED:
            return None
        document = self.view.documents.get(step)
        return document if isinstance(document, dict) else None

    def output(self, step: str) -> str:
        entry = self.view.step(step) or {}
        return entry.get("output") or f"raw/{step}.json"
