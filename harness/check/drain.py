"""Taking a sick node out of Slurm's service and giving back only our own: NHC's rule.

`--drain`: a node whose check fails (or cannot be judged: a check that cannot see must not keep
a node in service) is drained with the reason `dossier check: ACTION: CHECK: what`, led by the
recommended action. A node already
drained by someone else keeps their reason; one drained by us gets the current reason.
`--resume-own`: a healthy node drained with our prefix is resumed; one an admin drained (any
other reason) is never touched. The Slurm calls are harness/fleet/slurm.py's.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.analysis.actions import Action as Advice
from harness.analysis.verdict import Verdict
from harness.check.judge import Finding
from harness.fleet import slurm

REASON_PREFIX = "dossier check: "
MAX_REASON = 200  # characters of the drain reason (the whole finding stays in the check's own output)


@dataclass(frozen=True)
class Action:
    node: str
    did: str  # drained, reason updated, resumed, left drained, nothing
    why: str

    def to_json(self) -> dict[str, str]:
        return {"node": self.node, "did": self.did, "why": self.why}

    def line(self) -> str:
        return f"{self.node}: {self.did}: {self.why}"


def reason_for(finding: Finding, action: str | None = None) -> str:
    """`dossier check: ACTION: CHECK: what`: the recommended action first (ACTION, the node's, else the
    finding's own), so an operator reading `sinfo -R` sees what to do."""
    word = action or str(finding.action.action)
    led = "" if word == Advice.NONE else f"{word}: "
    text = f"{REASON_PREFIX}{led}{finding.name}: {' '.join(finding.message.split())}"
    return text if len(text) <= MAX_REASON else text[: MAX_REASON - 3] + "..."


def drained(state: str) -> bool:
    return "DRAIN" in state.upper()


def apply(
    node: str,
    verdict: Verdict,
    problem: Finding | None,
    drain: bool,
    resume_own: bool,
    drain_reason: str | None = None,
) -> Action:
    """What --drain / --resume-own do to NODE for this verdict (PROBLEM: the finding a drain names;
    DRAIN_REASON: the reason to drain with, when not reason_for(PROBLEM))."""
    state, reason = slurm.node_state(node)
    ours = reason is not None and reason.startswith(REASON_PREFIX)
    if problem is not None and drain:
        wanted = drain_reason or reason_for(problem)
        if drained(state) and not ours:
            return Action(node, "left drained", f"already drained by someone else ({reason}); their reason is kept")
        if drained(state) and reason == wanted:
            return Action(node, "left drained", f"already drained for the same reason: {reason}")
        slurm.update_node(node, "drain", wanted)
        return Action(node, "reason updated" if drained(state) else "drained", wanted)
    if problem is None and resume_own and drained(state):
        if not ours:
            return Action(node, "left drained", f"drained by someone else ({reason}): only our own drains are resumed")
        slurm.update_node(node, "resume")
        return Action(node, "resumed", f"healthy again; it was drained with: {reason}")
    return Action(node, "nothing", f"state {state}" + (f", reason {reason}" if reason else ""))
