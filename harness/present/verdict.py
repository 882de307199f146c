"""A dossier's verdict in one short block: at the top of report.md and at the end of `dossier run`.

What passed, what failed, what could not be judged and why, in the one vocabulary
(harness.analysis.verdict): every criterion the report judges (the lab's, then transfers and
stress beyond it), and every step that failed without a criterion saying so (a step no criterion
reads). The overall verdict is `overall` of them all; `dossier run` exits with its exit code (FAIL 1,
INCOMPLETE 5, else 0). Each FAIL names its recommended action and the rule that chose it
(harness.judge.recommend), and the block ends with the run's: the most severe of them. Rendered from
the bundle's own data only, so `dossier verify` re-renders it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from harness import registry
from harness.analysis import actions, device_rules
from harness.analysis.actions import Recommendation
from harness.analysis.verdict import StepStatus, Verdict, overall
from harness.bundle.view import BundleView
from harness.judge import action_words, contention, recommend
from harness.judge.engine import Result, evaluate
from harness.judge.facts import BundleFacts

ORDER = (Verdict.FAIL, Verdict.INCOMPLETE, Verdict.WARN, Verdict.SKIP)  # each said with why; PASS named
WHY_LIMIT = 300  # characters of a why in the block (the criterion's evidence below has it whole)


@dataclass(frozen=True)
class Line:
    verdict: Verdict
    name: str
    why: str
    action: Recommendation | None = None  # on a FAIL


@dataclass(frozen=True)
class RunVerdict:
    overall: Verdict
    lines: tuple[Line, ...]
    results: tuple[Result, ...]  # the criteria, judged (the report lists them with their evidence)
    driver: str = ""  # what the driver itself recommends for each GPU (health.json), shown beside ours

    @property
    def exit_code(self) -> int:
        return self.overall.exit_code

    @property
    def recommendation(self) -> Recommendation:
        """The run's action: the most severe of its failed lines' (the first of equals)."""
        return actions.overall(line.action for line in self.lines if line.verdict == Verdict.FAIL)

    def block(self) -> list[str]:
        """The block's lines: each verdict other than PASS with its why, then the criteria that passed."""
        lines = [
            f"{line.verdict.shown} {line.name}: {_short(line.why)}"
            + (f" -> {line.action.shown()}" if line.verdict == Verdict.FAIL and line.action else "")
            for verdict in ORDER
            for line in self.lines
            if line.verdict == verdict
        ]
        passed = [line.name for line in self.lines if line.verdict == Verdict.PASS]
        if passed:
            lines.append(f"PASS {', '.join(passed)}")
        action = self.recommendation
        if action.action != actions.Action.NONE:
            lines.append(f"action: {action.shown()}: {_short(action.why)}")
            if self.driver:
                lines.append(f"the driver's own recovery action: {_short(self.driver)}")
        return lines


def _short(text: str) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= WHY_LIMIT else flat[:WHY_LIMIT].rsplit(" ", 1)[0] + " …"


def judged(view: BundleView) -> list[Result]:
    """Every criterion the report judges, in the report's order, each FAIL with its action; one that
    failed on a step the host's other work disturbed says so first (harness.judge.contention)."""
    facts, criteria = BundleFacts(view), registry.lab_criteria()
    return contention.beside(recommend.attach(evaluate(criteria, facts), facts, criteria), facts)


def run_verdict(view: BundleView, results: Sequence[Result] | None = None) -> RunVerdict:
    """The bundle's verdict: its criteria (RESULTS, when already judged) and the failed steps no criterion reads."""
    results = list(judged(view) if results is None else results)
    lines = [Line(r.status, r.name, r.why, r.action) for r in results]
    read = {step for criterion in registry.lab_criteria() for step in criterion.steps}
    for entry in view.steps:
        if entry.get("status") == StepStatus.FAILED and entry.get("step") not in read:
            why = f"the step failed: {entry.get('why')}"
            lines.append(Line(Verdict.FAIL, str(entry.get("step")), why, action_words.STEP_FAILED))
    health = view.documents.get("health")
    listed = health.get("devices") if isinstance(health, dict) else None
    devices = [d for d in listed if isinstance(d, dict)] if isinstance(listed, list) else []
    driver = device_rules.driver_said(devices) if devices else ""
    return RunVerdict(overall([line.verdict for line in lines]), tuple(lines), tuple(results), driver)
