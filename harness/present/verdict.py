"""A dossier's verdict, said so a buyer can act on it: at the top of report.md and at the end of
`dossier run`.

What passed, what failed, what could not be judged and why, in the one vocabulary
(harness.analysis.verdict) and in sentences: every criterion the report judges (the lab's, then
transfers, stress and the rates against a known-good unit beyond it), named by what it judges
("Memory bandwidth", the criterion's name only a reference beside it), and every step that failed
without a criterion saying so (a step no criterion reads). The overall verdict is `overall` of them
all; `dossier run` exits with its exit code (FAIL 1, INCOMPLETE 5, else 0). The rates against the
known-good (harness.judge.known_good) are set out as a table beside it, so a run far under its SKU's
known-good cannot read as healthy. Rendered from the bundle's own data only, so `dossier verify`
re-renders it. Each FAIL names its recommended action and the rule that chose
it (harness.judge.recommend), and the block ends with the run's: the most severe of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from harness import registry
from harness.analysis import actions, device_rules
from harness.analysis.actions import Recommendation
from harness.analysis.units import is_number
from harness.analysis.verdict import StepStatus, Verdict, answer_line, counted, overall
from harness.bundle.view import BundleView
from harness.judge import action_words, contention, known_good, recommend
from harness.judge.acceptance.criteria import fmt
from harness.judge.engine import Result, evaluate
from harness.judge.facts import BundleFacts

ORDER = (Verdict.FAIL, Verdict.INCOMPLETE, Verdict.WARN, Verdict.SKIP)  # each said with why; PASS named
WHY_LIMIT = 300  # characters of a why in the block (the criterion's evidence below has it whole)
HEADINGS = {
    Verdict.FAIL: "Failed",
    Verdict.INCOMPLETE: "Could not be judged, and required (incomplete)",
    Verdict.WARN: "Passed with a warning",
    Verdict.SKIP: "Not judged here (skipped)",
}
OVERALL_WORDS = {
    Verdict.PASS: "PASSED",
    Verdict.WARN: "PASSED, WITH WARNINGS",
    Verdict.FAIL: "FAILED",
    Verdict.INCOMPLETE: "is INCOMPLETE",
    Verdict.SKIP: "judged nothing",
}


@dataclass(frozen=True)
class Line:
    verdict: Verdict
    name: str
    why: str
    label: str = ""
    action: Recommendation | None = None  # on a FAIL

    @property
    def named(self) -> str:
        """'Memory bandwidth (`bandwidth`)': what it judges, its name as a reference."""
        return f"{self.label} (`{self.name}`)" if self.label and self.label != self.name else f"`{self.name}`"


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

    def counts(self) -> str:
        """'3 failed, 6 passed, 2 skipped'."""
        return counted(line.verdict for line in self.lines)

    def answer(self, what: str = "") -> str:
        """The run's answer line: `verdict: FAIL: 3 failed, 6 passed; action: RERUN_IDLE (exit 1)`, the
        run's recommended action where a failure recommends one."""
        action = self.recommendation.action
        said = None if action == actions.Action.NONE else str(action)
        return answer_line(self.overall, f"{what}: {self.counts()}" if what else self.counts(), self.exit_code, said)

    def block(self) -> list[str]:
        """The lines `dossier run` ends with: each verdict other than PASS with its why, then the criteria that passed."""
        lines = [
            f"{line.verdict.shown} {line.label or line.name}: {_short(line.why)}"
            + (f" -> {line.action.shown()}" if line.verdict == Verdict.FAIL and line.action else "")
            for verdict in ORDER
            for line in self.lines
            if line.verdict == verdict
        ]
        passed = [line.label or line.name for line in self.lines if line.verdict == Verdict.PASS]
        if passed:
            lines.append(f"PASS {', '.join(passed)}")
        action = self.recommendation
        if action.action != actions.Action.NONE:
            lines.append(f"action: {action.shown()}: {_short(action.why)}")
            if self.driver:
                lines.append(f"the driver's own recovery action: {_short(self.driver)}")
        return lines

    def sentence(self) -> str:
        """The verdict in one sentence: what it is, how many of each, and the exit code it gives."""
        judged = [line for line in self.lines if line.verdict != Verdict.SKIP]
        failed = [line.label or line.name for line in self.lines if line.verdict == Verdict.FAIL]
        incomplete = [line.label or line.name for line in self.lines if line.verdict == Verdict.INCOMPLETE]
        if self.overall == Verdict.FAIL:
            said = f"{len(failed)} of the {len(judged)} criteria judged failed: {_listed(failed)}"
        elif self.overall == Verdict.INCOMPLETE:
            said = f"nothing failed, but {len(incomplete)} required could not be judged: {_listed(incomplete)}"
        elif self.overall in (Verdict.PASS, Verdict.WARN):
            said = f"every one of the {len(judged)} criteria judged passed"
        else:
            said = "no criterion could be judged"
        skipped = len(self.lines) - len(judged)
        rest = f"; {skipped} could not be judged here, each said below with why" if skipped else ""
        return f"This run {OVERALL_WORDS[self.overall]}: {said}{rest}. It exits {self.exit_code} ({self.counts()})."

    def groups(self) -> list[dict[str, Any]]:
        """The verdict section's groups: failed, incomplete, warned, skipped (each line with why), in that order."""
        return [
            {"heading": HEADINGS[verdict], "lines": [line for line in self.lines if line.verdict == verdict]}
            for verdict in ORDER
            if any(line.verdict == verdict for line in self.lines)
        ]

    def passed(self) -> list[Line]:
        return [line for line in self.lines if line.verdict == Verdict.PASS]

    def known_good(self) -> Result | None:
        """The rates against the known-good (harness.judge.known_good), when judged."""
        return next((r for r in self.results if r.name == known_good.NAME), None)


def _listed(names: list[str]) -> str:
    return " and ".join(names) if len(names) < 3 else "; ".join(names[:-1]) + " and " + names[-1]


def _short(text: str) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= WHY_LIMIT else flat[:WHY_LIMIT].rsplit(" ", 1)[0] + " …"


def step_titles() -> dict[str, str]:
    """What each step of the plan measured ("HBM bandwidth"), by step name."""
    return {step.step: step.title for step in registry.lab_plan()}


def labels() -> dict[str, str]:
    """Each criterion's label by name, and each step's title by step (for a failed step no criterion reads)."""
    return {**step_titles(), **{c.name: c.label for c in registry.lab_criteria() if c.label}}


def judged(view: BundleView) -> list[Result]:
    """Every criterion the report judges, in the report's order, each FAIL with its action; one that
    failed on a step the host's other work disturbed says so first (harness.judge.contention)."""
    facts, criteria = BundleFacts(view), registry.lab_criteria()
    return contention.beside(recommend.attach(evaluate(criteria, facts), facts, criteria), facts)


def run_verdict(view: BundleView, results: Sequence[Result] | None = None) -> RunVerdict:
    """The bundle's verdict: its criteria (RESULTS, when already judged) and the failed steps no criterion reads."""
    results = list(judged(view) if results is None else results)
    words = labels()
    lines = [Line(r.status, r.name, r.why, words.get(r.name, ""), r.action) for r in results]
    read = {step for criterion in registry.lab_criteria() for step in criterion.steps}
    for entry in view.steps:
        if entry.get("status") == StepStatus.FAILED and entry.get("step") not in read:
            step = str(entry.get("step"))
            why = f"the step failed: {entry.get('why')}"
            lines.append(Line(Verdict.FAIL, step, why, words.get(step, ""), action_words.STEP_FAILED))
    health = view.documents.get("health")
    listed = health.get("devices") if isinstance(health, dict) else None
    devices = [d for d in listed if isinstance(d, dict)] if isinstance(listed, list) else []
    driver = device_rules.driver_said(devices) if devices else ""
    return RunVerdict(overall([line.verdict for line in lines]), tuple(lines), tuple(results), driver)


def rate_rows(result: Result | None) -> list[dict[str, str]]:
    """The known-good criterion's rates as the verdict section's table: each rate, measured,
    known-good, its share of it, the share asked, and its verdict."""
    rows = []
    for r in result.rows if result is not None else ():
        t = r.threshold
        if t is None or not t.reference:
            continue
        measured = r.measured.value if r.measured is not None else None
        if not is_number(measured):
            said, share = (r.measured.text if r.measured else "not measured"), "-"
        else:
            said, share = f"{fmt(measured)} {t.unit}", f"{measured / t.reference:.1%}"
        rows.append(
            {
                "label": t.label,
                "measured": said,
                "known_good": f"{fmt(t.reference)} {t.unit}",
                "share": share,
                "asked": f"at least {t.share:.0%}" if t.share is not None else "-",
                "verdict": r.status.shown,
            }
        )
    return rows
