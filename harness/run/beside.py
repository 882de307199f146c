"""Steps run beside a later one (ProbeStep.beside): work that needs no GPU, on the host's CPUs, while a step
that loads only the GPU leaves them idle.

The precision step computes on the CPU (its figures are the same bits on any device by design) beside the
stress step, whose load is the GPU's: when the loop reaches such a step in its place and its `beside_when`
finds the host idle during the other step (a GPU run: health counted a GPU visible to CUDA), the step waits;
once the other step's probe reports its first measured progress (`##progress` with done >= 1: the stress
probe's first one-second bucket, so its burst second runs alone), its probe starts in a thread, quietly,
with fewer threads than the host has CPUs and a lower priority (ProbeInvocation.nice), and its record goes
in its own place in the plan. Where the other step never reports progress (skipped, not ready, failed
early) the waiting step runs right after it; where the host would not be idle it runs in its place. Only
for runners whose processes run on this host (`host_pids`: the local runner); the record's `inputs` say
what it ran beside and how (`ran_beside`).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from typing import Any

from harness.registry.steps import NotReady, ProbeStep, RunState, Step, StepArgs, StepSetupFailed
from harness.run.display import parse_progress
from harness.run.outcome import Completed, judge
from harness.run.records import COMPLETED, FAILED, NOT_RUN, StepRecord, step_fields
from harness.runners.interface import STOP_GRACE_S, LineCallback, ProbeInvocation, Runner

NICE = 10  # a step beside another yields the CPU to it
RESERVED_CPUS = 4  # left to the step it runs beside: its probe, its worker per GPU, a reading under its load


def beside_threads(cpus: int | None = None) -> int:
    """Threads for a step beside another: the host's CPUs less RESERVED_CPUS, at least one."""
    if cpus is None:
        cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, cpus - RESERVED_CPUS)


class Beside:
    """The plan's steps that run beside a later step, their threads and their records."""

    def __init__(
        self,
        plan: Sequence[Step],
        runner: Runner,
        skip: Sequence[str],
        arguments: Callable[[ProbeStep, RunState], StepArgs],
        threads: int | None = None,
    ) -> None:
        place = {s.step: i for i, s in enumerate(plan)}
        shared = bool(getattr(runner, "host_pids", False))
        self.runner, self.arguments = runner, arguments
        self.threads = beside_threads() if threads is None else threads
        self.declared = {
            s.step: s
            for s in plan
            if isinstance(s, ProbeStep)
            and s.beside is not None
            and shared
            and place.get(s.beside, -1) > place[s.step]
            and s.step not in skip
        }
        self.waiting: dict[str, ProbeStep] = {}  # deferred, for the step named by their `beside`
        self.running: dict[str, threading.Thread] = {}
        self.records: dict[str, StepRecord] = {}

    def defer(self, step: Step, state: RunState) -> bool:
        """Whether STEP, reached in its place, waits for the step it runs beside (the host idle then)."""
        declared = self.declared.get(step.step)
        if declared is None or declared.beside_when(state) is not None:
            return False
        self.waiting[step.step] = declared
        return True

    def listener(self, running: str, state: RunState, show: LineCallback) -> LineCallback:
        """RUNNING's stderr callback: SHOW, and its waiting steps started on its first measured progress."""
        if not any(s.beside == running for s in self.waiting.values()):
            return show

        def on_line(line: str) -> None:
            progress = parse_progress(line)
            if progress is not None and progress["done"] >= 1:
                self.start(running, state)
            show(line)

        return on_line

    def start(self, running: str, state: RunState) -> None:
        for name, step in list(self.waiting.items()):
            if step.beside == running and name not in self.running:
                thread = threading.Thread(target=self._run, args=(step, state), name=f"beside-{name}", daemon=True)
                self.running[name] = thread
                thread.start()

    def invocation(self, step: ProbeStep, prepared: StepArgs) -> ProbeInvocation:
        return ProbeInvocation(
            step.probe,
            prepared.args,
            prepared.timeout_s or step.timeout_s,
            env={"OMP_NUM_THREADS": str(self.threads)},
            mounts=prepared.mounts,
            nice=NICE,
        )

    def how(self, step: ProbeStep) -> str:
        return (
            f"{step.beside}: started at its first measured second (its first progress line), on the host's "
            f"CPUs with {self.threads} thread(s) (OMP_NUM_THREADS) at nice {NICE}, while the {step.beside} step "
            "loaded the GPU(s); recorded in its own place"
        )

    def _run(self, step: ProbeStep, state: RunState) -> None:
        base = step_fields(step)
        try:
            prepared = self.arguments(step, state)
        except NotReady as exc:
            self.records[step.step] = StepRecord(**base, status=NOT_RUN, why=str(exc))
            return
        except StepSetupFailed as exc:
            self.records[step.step] = StepRecord(**base, status=FAILED, why=str(exc))
            return
        except Exception as exc:  # noqa: BLE001 - recorded as the step's failure; the run goes on
            why = f"preparing its arguments raised {type(exc).__name__}: {exc}"
            self.records[step.step] = StepRecord(**base, status=FAILED, why=why)
            return
        outcome = judge(self.runner.run(self.invocation(step, prepared)), schema=step.schema)
        inputs = {**prepared.inputs, "ran_beside": self.how(step)}
        extra: dict[str, Any] = dict(run=outcome.run, inputs=inputs, checkpoint=prepared.checkpoint)
        if isinstance(outcome, Completed):
            self.records[step.step] = StepRecord(**base, **extra, status=COMPLETED, document=outcome.document)
        else:
            violations = tuple(str(v) for v in outcome.schema_violations[:20])
            self.records[step.step] = StepRecord(
                **base, **extra, status=FAILED, why=outcome.reason, schema_violations=violations
            )

    def settle(
        self, running: str | None, run_now: Callable[[ProbeStep], StepRecord], state: RunState
    ) -> list[StepRecord]:
        """After RUNNING ended (None: the plan ended), each step that waited for it, recorded: the record of
        its run beside RUNNING (its document added to STATE), or, where it never started, RUN_NOW's."""
        done = []
        for name, step in list(self.waiting.items()):
            if running is not None and step.beside != running:
                continue
            del self.waiting[name]
            thread = self.running.pop(name, None)
            if thread is not None:
                thread.join()
            record = self.records.pop(name, None)
            if record is None:
                record = run_now(step)
            elif record.status == COMPLETED and record.document is not None:
                state.add(name, dict(record.document), step.analysis)
            done.append(record)
        return done

    def close(self) -> None:
        """On an interrupt: wait a little for a step running beside (its probe ends on its own)."""
        for thread in self.running.values():
            thread.join(timeout=STOP_GRACE_S)
