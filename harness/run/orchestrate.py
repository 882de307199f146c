"""`dossier run`: each lab step as its own probe process, recorded, then one signed bundle.

Orchestration only: runners start processes, `harness.run.outcome.judge` validates, `assemble`
builds and signs the bundle, `harness.bundle.write` puts it in place atomically. A failed step
is recorded and the run goes on; nothing is written until every step is done.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from harness import registry
from harness.analysis import repeatability
from harness.present.plotting import BackgroundPlots
from harness.probes.contract import parse_loading, utc_now
from harness.registry.steps import HostStep, NotReady, ProbeStep, RunState, Step, StepArgs, StepSetupFailed
from harness.run import destination, provenance
from harness.run.display import RunDisplay, shown_command
from harness.run.outcome import Completed, judge
from harness.run.plan import LAB_PLAN
from harness.run.records import COMPLETED, FAILED, NOT_RUN, Attempt, RunRecord, StepRecord
from harness.runners.interface import STOP_GRACE_S, LineCallback, ProbeInvocation, Runner
from harness.schemas import violations
from harness.signing.keys import SigningKey


@dataclass(frozen=True)
class RunOptions:
    """One frozen configuration for a run, passed down."""

    output_dir: Path
    name: str | None = None
    runner_choice: str = "auto"
    skip: tuple[str, ...] = ()
    # The run's own flags (runner and probe options, e.g. ("--image", "cuda")), recorded so the
    # report's reproduce command repeats them; the key keeps its first name for existing bundles.
    runner_options: tuple[tuple[str, ...], ...] = ()
    # What `dossier run` resolved for each probe before any ran (ProbeSpec.prepare_run), by probe.
    prepared: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    retest: int = 0  # a failed probe step is run again up to this many times (--retest N)


def probe_missing(runner: Runner, probe: str) -> str | None:
    """Why the runner cannot run PROBE (an image built from an older harness, a test package), or None."""
    has_probe = getattr(runner, "has_probe", None)
    if callable(has_probe):
        return None if has_probe(probe) else f"the {runner.name} runner has no probe {probe}"
    package = getattr(runner, "package", "harness.probes")
    if importlib.util.find_spec(f"{package}.{probe}") is None:
        return f"{package.replace('.', '/')}/{probe}.py is not in this build"
    return None


def step_fields(step: Step) -> dict[str, Any]:
    """What a StepRecord takes from its plan step: names, kind, schema, analysis, plots, and the
    probe (a probe step) or the inputs and function (a host step)."""
    common: dict[str, Any] = dict(
        step=step.step,
        title=step.title,
        lab_step=step.lab_step,
        kind=step.kind,
        schema=step.schema,
        analysis=step.analysis,
        plots=step.plots,
    )
    if isinstance(step, ProbeStep):
        common["probe"] = step.probe
    else:
        common.update(needs=step.needs, function=step.function)
    return common


def _lowest_priority_thread() -> None:
    """Linux nice values are per thread: this one only gets CPU the probes leave idle."""
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)
    except (AttributeError, OSError):
        pass


class EarlyArguments:
    """Arguments of independent steps, prepared by one nice-19 thread from the run's start."""

    def __init__(self, plan: Sequence[Step], runner: Runner, skip: Sequence[str], prepared: Mapping[str, Any]) -> None:
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="prepare", initializer=_lowest_priority_thread)
        self._futures: dict[str, Future] = {
            step.step: self._pool.submit(step.arguments, RunState(prepared))
            for step in plan
            if isinstance(step, ProbeStep)
            and step.independent
            and step.step not in skip
            and probe_missing(runner, step.probe) is None
        }

    def arguments(self, step: ProbeStep, state: RunState) -> StepArgs:
        future = self._futures.pop(step.step, None)
        return future.result() if future is not None else step.arguments(state)

    def close(self) -> None:
        for future in self._futures.values():
            future.cancel()
        self._pool.shutdown(wait=False, cancel_futures=True)


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


def run_probe_step(
    step: ProbeStep,
    runner: Runner,
    state: RunState,
    display: RunDisplay,
    early: EarlyArguments | None = None,
    retest: int = 0,
    companions: Companions | None = None,
) -> StepRecord:
    """The step's probe run, judged; a failed run is run again up to RETEST times, every earlier
    attempt kept in the record (its why, argv, exit code, stdout and stderr)."""
    base = step_fields(step)
    try:
        prepared = early.arguments(step, state) if early else step.arguments(state)
    except NotReady as exc:
        display.skip(step.step, str(exc))
        return StepRecord(**base, status=NOT_RUN, why=str(exc))
    except StepSetupFailed as exc:
        display.skip(step.step, f"failed before starting: {exc}")
        return StepRecord(**base, status=FAILED, why=str(exc))
    except Exception as exc:  # noqa: BLE001 - a bug preparing one step must not end the run
        why = f"preparing its arguments raised {type(exc).__name__}: {exc}"
        display.skip(step.step, f"failed before starting: {why}")
        return StepRecord(**base, status=FAILED, why=why)
    timeout_s = prepared.timeout_s if prepared.timeout_s is not None else step.timeout_s
    invocation = ProbeInvocation(step.probe, prepared.args, timeout_s, mounts=prepared.mounts)
    earlier: list[Attempt] = []
    for attempt in range(1, retest + 2):
        title = step.title if attempt == 1 else f"{step.title} (attempt {attempt} of {retest + 1})"
        display.begin(step.step, title, shown_command(runner, step.probe, prepared.args), again=attempt > 1)
        listen = companions.listener(step.step, state, display.stderr_line) if companions else display.stderr_line
        outcome = judge(runner.run(invocation, on_stderr_line=listen), schema=step.schema)
        extra: dict[str, Any] = dict(
            run=outcome.run, inputs=dict(prepared.inputs), checkpoint=prepared.checkpoint, attempts=tuple(earlier)
        )
        if isinstance(outcome, Completed):
            state.add(step.step, outcome.document, step.analysis)
            display.end(
                step.step,
                COMPLETED if attempt == 1 else f"completed on attempt {attempt} of {retest + 1}",
                outcome.document.get("sizing", ""),
            )
            return StepRecord(**base, **extra, status=COMPLETED, document=outcome.document)
        violations_seen = tuple(str(v) for v in outcome.schema_violations[:20])
        if attempt <= retest:
            display.end(step.step, "FAILED", f"{outcome.reason}; running it again ({attempt + 1} of {retest + 1})")
            earlier.append(Attempt(attempt, outcome.run, outcome.reason, violations_seen))
            continue
        display.end(step.step, "FAILED", outcome.reason + (f" (on every attempt: {attempt})" if retest else ""))
        return StepRecord(**base, **extra, status=FAILED, why=outcome.reason, schema_violations=violations_seen)
    raise AssertionError("unreachable: the last attempt returns")


def run_host_step(step: HostStep, state: RunState, display: RunDisplay) -> StepRecord:
    base = step_fields(step)
    try:
        document = registry.host_function(step.function)(*step.inputs(state))
    except NotReady as exc:
        display.skip(step.step, str(exc))
        return StepRecord(**base, status=NOT_RUN, why=str(exc))
    except Exception as exc:  # noqa: BLE001 - a host computation's failure is recorded, the run goes on
        why = f"{step.function} raised {type(exc).__name__}: {exc}"
        display.skip(step.step, why)
        return StepRecord(**base, status=FAILED, why=why)
    found = violations(step.schema, document)
    if found:
        why = f"its document does not match schemas/{step.schema}.schema.json ({len(found)} violation(s))"
        display.host(step.step, f"FAILED - {why}")
        return StepRecord(
            **base, status=FAILED, why=why, document=document, schema_violations=tuple(str(v) for v in found[:20])
        )
    state.add(step.step, document, step.analysis)
    display.host(step.step, "completed on the host")
    return StepRecord(**base, status=COMPLETED, document=document)


def run_steps(
    plan: Sequence[Step],
    runner: Runner,
    display: RunDisplay,
    skip: Sequence[str] = (),
    prepared: Mapping[str, Any] | None = None,
    retest: int = 0,
) -> tuple[StepRecord, ...]:
    """Every step in order; each failure recorded, never stopping the run.

    Independent steps' arguments are prepared, and completed steps' plots rendered, in the
    background at the lowest CPU priority while the probes run.
    """
    state = RunState(prepared, registry.analysis_module)
    records = []
    early = EarlyArguments(plan, runner, skip, state.prepared)
    companions = Companions(plan, runner, skip)
    with BackgroundPlots() as plots:
        try:
            for step in plan:
                record = run_step(step, runner, state, display, skip, early, retest, companions)
                if record.status == COMPLETED and record.document is not None:
                    plots.submit(record.plots, record.step, record.document, repeatability.bundle_sku(state.documents))
                records.append(record)
        finally:
            early.close()
            companions.close()
        return tuple(_with_plots(record, plots) for record in records)


def run_step(
    step: Step,
    runner: Runner,
    state: RunState,
    display: RunDisplay,
    skip: Sequence[str],
    early: EarlyArguments,
    retest: int = 0,
    companions: Companions | None = None,
) -> StepRecord:
    why = (
        f"skipped with --skip {step.step}"
        if step.step in skip
        else (probe_missing(runner, step.probe) if isinstance(step, ProbeStep) else None)
    )
    if why:
        display.skip(step.step, why)
        return StepRecord(**step_fields(step), status=NOT_RUN, why=why)
    if isinstance(step, HostStep):
        return run_host_step(step, state, display)
    taken = companions.taken(step) if companions else None  # only a probe step is taken during another
    if taken is not None:
        if taken.status == COMPLETED and taken.document is not None:
            # a companion's record holds its Completed outcome's document, a dict (Companions._run)
            state.add(step.step, cast("dict[str, Any]", taken.document), step.analysis)
        display.host(
            step.step,
            f"{'completed' if taken.status == COMPLETED else 'FAILED'}, taken during the "
            f"{step.during} step ({step.title.lower()})" + (f" - {taken.why}" if taken.why else ""),
        )
        return taken
    return run_probe_step(step, runner, state, display, early, retest, companions)


def _with_plots(record: StepRecord, plots: BackgroundPlots) -> StepRecord:
    rendered = plots.result(record.step)
    if rendered is None:
        return record
    files, note = rendered
    return dataclasses.replace(record, plot_files=files, plot_note=note)


def collect(
    options: RunOptions,
    runner: Runner,
    runner_why: str,
    plan: Sequence[Step] = LAB_PLAN,
    display: RunDisplay | None = None,
) -> RunRecord:
    """Run the plan and record it (nothing is written)."""
    started = utc_now()
    host = provenance.host_environment()
    display = display or RunDisplay(len(plan))
    with display:
        steps = run_steps(plan, runner, display, options.skip, options.prepared, options.retest)
    documents = {s.step: s.document for s in steps if s.status == COMPLETED and s.document is not None}
    return RunRecord(
        steps=steps,
        runner={"name": runner.name, "why": runner_why},
        tool=provenance.tool_info(),
        host=host,
        options={
            "runner": options.runner_choice,
            "skip": sorted(options.skip),
            "runner_options": [list(pair) for pair in options.runner_options],
            **({"retest": options.retest} if options.retest else {}),
        },
        started_at=started,
        finished_at=utc_now(),
        repeatability=repeatability.declaration(repeatability.bundle_sku(documents)),
    )


def run_dossier(
    options: RunOptions,
    runner: Runner,
    runner_why: str,
    key: SigningKey,
    plan: Sequence[Step] = LAB_PLAN,
    display: RunDisplay | None = None,
) -> Path:
    """Run every step, then assemble, sign and write the bundle; returns its path.

    When the bundle cannot be made or written, every measured result is kept in a recovery
    folder (harness.recovery) and the error names it."""
    record = collect(options, runner, runner_why, plan, display)
    return destination.write_or_keep(record, options.output_dir, options.name, key)
