"""What a criterion reads from a bundle: each step's recomputed figures or why there are none,
and the steps' documents.

Figures always come from harness.analysis.NAME.headlines (recomputed from the raw JSON), never
from a document's own summary.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from harness.analysis.figure import Figure
from harness.analysis.verdict import StepStatus
from harness.bundle.view import BundleFormatError, BundleView

# A figure declared by a probe: (the probe, its analysis, the declaration), as the registry lists them.
Declared = tuple[str, str | None, Figure]
V = TypeVar("V")  # a typed view of a step's figures


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

    def viewed(self, step: str, view: Callable[[dict[str, Any]], V]) -> V | None:
        """VIEW (a typed view's from_headlines, harness/analysis/NAME/view.py) of the step's recomputed
        figures (the bundle view recomputes them once; the view is built, and checked, at each call); None
        when there are none (the step did not complete, or they could not be recomputed)."""
        values = self.figures(step).values
        return view(values) if values is not None else None

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

    def figure_data(self, probe: str, analysis: str | None, figure: Figure) -> list[tuple[str, Any]]:
        """(step, its data) for each step a declared figure is read from: its own step (the probe's, or the
        figure's `step`), or with `every_step` every completed step its analysis reads; the data are the
        step's recomputed headlines, or its document for a figure of source "document"; a step that did
        not complete gives none."""
        if figure.every_step and analysis:
            steps = [
                e["step"]
                for e in self.view.steps
                if e.get("analysis") == analysis and e.get("status") == StepStatus.COMPLETED
            ]
        else:
            steps = [figure.step or probe]
        found = []
        for step in steps:
            data = self.document(step) if figure.source == "document" else self.figures(step).values
            if data is not None:
                found.append((step, data))
        return found

    def declared(self) -> list[Declared]:
        """Every figure the analyses of this bundle's completed steps declare (harness/analysis/NAME/declared.py,
        each analysis package's FIGURES), each once: what a baseline is made of, with no registry at hand
        (the probe of a figure is its analysis's name, as every registry entry names its analysis)."""
        names = []
        for entry in self.view.steps:
            name = entry.get("analysis")
            if entry.get("status") == StepStatus.COMPLETED and isinstance(name, str) and name not in names:
                names.append(name)
        found: list[Declared] = []
        for name in names:
            try:
                module = self.view.analysis(name)
            except BundleFormatError:  # an analysis this build does not know declares nothing here
                continue
            found += [(name, name, figure) for figure in getattr(module, "FIGURES", ())]
        return found
