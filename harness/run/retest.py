"""`dossier retest FAILED`'s plan: the failed bundle's own plan (harness.run.replay: its steps, their
recorded argv, its runner), with only the steps to retest run and every other step left out as with
`--skip`, plus the steps those read: a host step's inputs (`needs`) and the steps a probe step's
derived options are taken from (the roofline's memory roof from the bandwidth step). A step run
`during` another (health under the stress step's load) does not bring that step: it takes its
reading under its own load, as `dossier run` does where no other step's load can be read under.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from harness.bundle.view import BundleView
from harness.registry.steps import HostStep, NotReady, RunState, Step
from harness.run.replay import Replay, derive


class _Asked(dict[str, Any]):
    """A documents mapping that holds nothing and remembers every step it was asked for."""

    def __init__(self) -> None:
        super().__init__()
        self.asked: set[str] = set()

    def __contains__(self, step: object) -> bool:
        self.asked.add(str(step))
        return False


class _AskingState(RunState):
    """A run with no step completed, that records which steps a step's arguments read."""

    def __init__(self) -> None:
        super().__init__()
        self.asked = _Asked()
        self.documents = self.asked

    def document(self, step: str, why_needed: str) -> dict[str, Any]:
        self.asked.asked.add(step)
        raise NotReady(f"needs {why_needed} from the {step} step")


def reads(step: Step) -> set[str]:
    """The earlier steps STEP needs: a host step's inputs, the steps its derived options come from."""
    if isinstance(step, HostStep):
        return set(step.needs)
    if not step.derived:
        return set()
    state = _AskingState()
    try:
        step.arguments(state)
    except NotReady:
        pass
    return state.asked.asked


def closure(plan: Sequence[Step], wanted: Iterable[str]) -> tuple[str, ...]:
    """WANTED and every step of PLAN they read, transitively, in the plan's order."""
    by_id = {s.step: s for s in plan}
    found: set[str] = set()
    todo = [w for w in wanted if w in by_id]
    while todo:
        step = todo.pop()
        if step in found:
            continue
        found.add(step)
        todo += [r for r in reads(by_id[step]) if r in by_id and r not in found]
    return tuple(s.step for s in plan if s.step in found)


def retest_plan(
    view: BundleView, wanted: Iterable[str], origin: str, given: Mapping[str, Any] | None, device: str | None
) -> tuple[Replay, tuple[str, ...]]:
    """The failed bundle's plan with only WANTED (and what they read) run; and those steps."""
    replay = derive(view, origin, given, device)
    run = tuple(s for s in closure(replay.plan, wanted) if s not in replay.skip)
    left_out = tuple(s.step for s in replay.plan if s.step not in run)
    return dataclasses.replace(replay, skip=left_out), run
