"""`dossier retest`'s judgement: after a repair, did the very thing that failed pass? (issue 39)

The steps that failed in FAILED (its failed criteria's steps, and its failed steps) are run again into a
RETEST bundle, and judged against the node's own earlier good bundle GOOD with the reproduce rule
(harness.judge.reproduction.engine.compare, the entry point `dossier reproduce` uses), restricted to the
retested steps' figures. RESOLVED: every comparable figure of those steps reproduced GOOD, at least one
was comparable, and none of FAILED's failed criteria fails on RETEST. UNRESOLVED otherwise, naming the
figures that did not reproduce and the criteria that still fail.

The action: NONE when RESOLVED; when UNRESOLVED, FAILED's recommended action on a first retest (the repair
it asked for did not hold), and one step more severe for each earlier UNRESOLVED retest of the same
FAILED bundle (harness.analysis.actions.escalate): a second UNRESOLVED escalates.

Signed as an in-toto Statement v1 in the style of the reproduction statement: the subjects are the three
bundle files (failed/NAME, retest/NAME, good/NAME, each with the sha256 of its bytes), the predicate the
verdict, the figures (as the reproduction statement records them), the criteria, the action and how it
was reached.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from harness.analysis import actions
from harness.analysis.actions import Action, Recommendation
from harness.analysis.verdict import Verdict
from harness.judge.acceptance.outcome import BundleRef
from harness.judge.engine import Result
from harness.judge.reproduction.engine import Judgement
from harness.judge.reproduction.statement import bundle_ref
from harness.signing.statement import StatementError, statement, subject, verify_statement

PREDICATE_TYPE = "https://rig-dossier.dev/attestation/retest/v1"
RESOLVED, UNRESOLVED = "RESOLVED", "UNRESOLVED"
FAILED, RETEST, GOOD = "failed", "retest", "good"
BACK_IN_SERVICE = Recommendation(
    Action.NONE, "retest.resolved", "the retested steps reproduced the node's good bundle: return it to service"
)


@dataclass(frozen=True)
class Retest:
    """One retest judged."""

    steps: tuple[str, ...]  # the steps run again
    failed_criteria: tuple[str, ...]  # FAILED's failed criteria (and steps) that chose them
    still_failing: tuple[str, ...]  # of those, the ones RETEST fails too
    judgement: Judgement  # GOOD against RETEST, the retested steps' figures
    before: Recommendation  # FAILED's recommended action
    earlier_unresolved: int  # UNRESOLVED retests of the same FAILED bundle before this one

    @property
    def unreproduced(self) -> list[str]:
        return [f.figure for f in self.judgement.named(Verdict.FAIL)]

    @property
    def reproduced(self) -> list[str]:
        return [f.figure for f in self.judgement.named(Verdict.PASS)]

    @property
    def resolved(self) -> bool:
        return self.judgement.result == Verdict.PASS and not self.still_failing

    @property
    def word(self) -> str:
        return RESOLVED if self.resolved else UNRESOLVED

    @property
    def action(self) -> Recommendation:
        if self.resolved:
            return BACK_IN_SERVICE
        action: Action = self.before.action if self.before.action != Action.NONE else Action.RERUN_IDLE
        for _ in range(self.earlier_unresolved):
            action = actions.escalate(action)
        if not self.earlier_unresolved:
            return Recommendation(
                action,
                "retest.unresolved",
                f"the retest did not resolve it ({self.why}); FAILED asked: {self.before.why}",
            )
        return Recommendation(
            action,
            "retest.escalated",
            f"UNRESOLVED on retest {self.earlier_unresolved + 1} of the same failure ({self.why}): "
            f"{self.before.action} did not hold, so the next action up ({action.what})",
        )

    @property
    def why(self) -> str:
        parts = []
        if self.unreproduced:
            parts.append(f"not reproduced: {', '.join(self.unreproduced)}")
        if self.still_failing:
            parts.append(f"still failing: {', '.join(self.still_failing)}")
        if not self.reproduced and not self.unreproduced:
            parts.append(f"no figure of {', '.join(self.steps)} could be compared: {self.judgement.why}")
        return "; ".join(parts) or f"reproduced: {', '.join(self.reproduced)}"


def failed_criteria(results: Iterable[Result]) -> dict[str, tuple[str, ...]]:
    """Each failed criterion (a lab criterion's result, or a failed step's line) -> the steps it read."""
    return {r.name: tuple(r.steps) for r in results if r.status == Verdict.FAIL}


def still_failing(before: Iterable[str], after: Iterable[tuple[str, Verdict]]) -> tuple[str, ...]:
    """Those of BEFORE (failed criteria and steps) that fail again on the retest: AFTER is its verdict's
    lines as (name, verdict)."""
    failed = {name for name, verdict in after if verdict == Verdict.FAIL}
    return tuple(name for name in before if name in failed)


def earlier(statements: Iterable[Mapping[str, Any]], failed_sha256: str) -> int:
    """How many of STATEMENTS (earlier retest statements, verified) retested FAILED and said UNRESOLVED."""
    count = 0
    for stmt in statements:
        subjects = {s["name"].split("/", 1)[0]: s["digest"]["sha256"] for s in stmt.get("subject") or []}
        if subjects.get(FAILED) == failed_sha256 and (stmt.get("predicate") or {}).get("verdict") == UNRESOLVED:
            count += 1
    return count


def retest_statement(
    retest: Retest,
    refs: Mapping[str, BundleRef],
    formats: Mapping[str, Any],
    durations: Mapping[str, Any],
    tool: Mapping[str, Any],
) -> dict[str, Any]:
    """The statement (unsigned): the three bundles as subjects, the retest as predicate."""
    predicate = {
        "verdict": retest.word,
        "why": retest.why,
        "steps": list(retest.steps),
        "failed_criteria": list(retest.failed_criteria),
        "still_failing": list(retest.still_failing),
        "figures": [f.to_json() for f in retest.judgement.figures],
        "not_reproduced": retest.unreproduced,
        "reproduced": retest.reproduced,
        "reproduction": {
            "result": retest.judgement.result.value,
            "why": retest.judgement.why,
            "noise_model": retest.judgement.model.to_json(),
        },
        "action": retest.action.to_json(),
        "failed_action": retest.before.to_json(),
        "earlier_unresolved": retest.earlier_unresolved,
        "durations_s": dict(durations),
        **{role: bundle_ref(refs[role], formats.get(role)) for role in (FAILED, RETEST, GOOD)},
        "tool": dict(tool),
    }
    return statement(
        [subject(f"{role}/{refs[role].name}", refs[role].sha256) for role in (FAILED, RETEST, GOOD)],
        PREDICATE_TYPE,
        predicate,
    )


def verify(data: bytes, trusted: Ed25519PublicKey) -> dict[str, Any]:
    """An earlier retest statement, verified (signature, predicate type, one subject per role); raises
    StatementError naming why."""
    stmt = verify_statement(data, trusted, PREDICATE_TYPE)
    roles = sorted(s["name"].split("/", 1)[0] for s in stmt["subject"])
    if roles != sorted((FAILED, RETEST, GOOD)):
        raise StatementError(f"the subjects are {roles}, not one failed/, retest/ and good/ bundle")
    return stmt


def shown(retest: Retest, figures: Sequence[Any] = ()) -> list[str]:
    """The lines a person reads: each figure that did not reproduce, then the verdict and the action."""
    lines = [f"NOT REPRODUCED {f.figure}: {f.why}" for f in retest.judgement.named(Verdict.FAIL)]
    lines += [f"STILL FAILING {name}" for name in retest.still_failing]
    lines.append(f"{retest.word}: {retest.why}")
    lines.append(f"action: {retest.action.shown()}: {retest.action.why}")
    return lines
