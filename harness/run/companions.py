"""What `dossier run` knows of the steps beside the one running: whether its runner has a step's probe
at all (`probe_missing`), and the steps taken during another step's load (`Companions`: health under
load, read while the stress step's GEMMs run)."""

from __future__ import annotations

import importlib.util
import threading
from collections.abc import Sequence
from typing import Any

from harness.probes.contract import parse_loading
from harness.registry.steps import ProbeStep, RunState, Step
from harness.run.outcome import Completed, judge
from harness.run.records import COMPLETED, FAILED, StepRecord, step_fields
from harness.runners.interface import STOP_GRACE_S, LineCallback, ProbeInvocation, Runner


def probe_missing(runner: Runner, probe: str) -> str | None:
    """Why the runner cannot run PROBE (an image built from an older harness, a test package), or None."""
    has_probe = getattr(runner, "has_probe", None)
    if callable(has_probe):
        return None if has_probe(probe) else f"the {runner.name} runner has no probe {probe}"
    package = getattr(runner, "package", "harness.probes")
    if importlib.util.find_spec(f"{package}.{probe}") is None:
        return f"{package.replace('.', '/')}/{probe}.py is not in this build"
    return None


class Companions:
    """Steps taken during another step's load (ProbeStep.during): each started, in a thread, when the
    running step's probe says its load is on (contract.loading), and recorded in its own place.

    Only where the runner's processes share the host's process ids (`host_pids`: the local runner):
    the reading names the load's pids, which a container would not see; and only for a step placed after
    the step it is taken during (a plan that puts it before, as an older bundle's replayed by `dossier
    reproduce` does, runs it in its place). A companion's probe runs quietly (its progress would move
    the running step's bar); its outcome is shown in its place."""

    def __init__(self, plan: Sequence[Step], runner: Runner, skip: Sequence[str]) -> None:
        self.runner = runner
        shared = bool(getattr(runner, "host_pids", False))
        place = {s.step: i for i, s in enumerate(plan)}
        self.waiting = {
            s.step: s
            for s in plan
            if isinstance(s, ProbeStep)
            and s.during
            and shared
            and place.get(s.during, len(plan)) < place[s.step]
            and s.step not in skip
            and probe_missing(runner, s.probe) is None
        }
        self.threads: dict[str, threading.Thread] = {}
        self.records: dict[str, StepRecord] = {}

    def listener(self, running: str, state: RunState, show: LineCallback) -> LineCallback:
        """The running step's stderr callback: SHOW, and the companions of RUNNING started on its load line."""
        steps = [s for s in self.waiting.values() if s.during == running]
        if not steps:
            return show

        def on_line(line: str) -> None:
            load = parse_loading(line)
            if load is not None and running not in state.loads:
                state.loads[running] = load
                for step in steps:
                    thread = threading.Thread(
                        target=self._run, args=(step, state), name=f"during-{step.step}", daemon=True
                    )
                    self.threads[step.step] = thread
                    thread.start()
            show(line)

        return on_line

    def _run(self, step: ProbeStep, state: RunState) -> None:
        base = step_fields(step)
        try:
            prepared = step.arguments(state)
        except Exception as exc:  # noqa: BLE001 - the step then runs in its own place
            self.records[step.step] = StepRecord(**base, status=FAILED, why=f"preparing it raised {exc}")
            return
        invocation = ProbeInvocation(
            step.probe, prepared.args, prepared.timeout_s or step.timeout_s, mounts=prepared.mounts
        )
        outcome = judge(self.runner.run(invocation), schema=step.schema)
        extra: dict[str, Any] = dict(run=outcome.run, inputs=dict(prepared.inputs), checkpoint=prepared.checkpoint)
        if isinstance(outcome, Completed):
            self.records[step.step] = StepRecord(**base, **extra, status=COMPLETED, document=outcome.document)
        else:
            self.records[step.step] = StepRecord(
                **base,
                **extra,
                status=FAILED,
                why=outcome.reason,
                schema_violations=tuple(str(v) for v in outcome.schema_violations[:20]),
            )

    def taken(self, step: Step) -> StepRecord | None:
        """STEP's record when it was taken during another step (its thread joined), else None."""
        thread = self.threads.pop(step.step, None)
        if thread is None:
            return None
        thread.join()
        return self.records.pop(step.step, None)

    def close(self) -> None:
        """On an interrupt: wait for a companion's probe to end (a reading of a few seconds)."""
        for thread in self.threads.values():
            thread.join(timeout=STOP_GRACE_S)
