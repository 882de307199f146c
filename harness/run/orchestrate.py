"""`dossier run`: each lab step as its own probe process, recorded, then one signed bundle.

Orchestration only: runners start processes, `harness.run.outcome.judge` validates, `assemble`
builds and signs the bundle, `harness.bundle.write` puts it in place atomically. A failed step
is recorded and the run goes on; nothing is written until every step is done.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeGuard, cast

from harness import registry
from harness.analysis import repeatability
from harness.present.plotting import BackgroundPlots
from harness.probes.contract import utc_now
from harness.registry.steps import HostStep, NotReady, ProbeStep, RunState, Step, StepArgs, StepSetupFailed
from harness.run import destination, host_load, provenance
from harness.run.beside import Beside
from harness.run.companions import Companions, probe_missing
from harness.run.display import RunDisplay, shown_command
from harness.run.outcome import Completed, judge
from harness.run.plan import LAB_PLAN
from harness.run.prestart import Prestarts
from harness.run.records import COMPLETED, FAILED, NOT_RUN, Attempt, RunRecord, StepRecord, step_fields
from harness.runners.interface import ProbeInvocation, Runner
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


def run_probe_step(
    step: ProbeStep,
    runner: Runner,
    state: RunState,
    display: RunDisplay,
    early: EarlyArguments | None = None,
    retest: int = 0,
    companions: Companions | None = None,
    beside: Beside | None = None,
    prestarts: Prestarts | None = None,
) -> StepRecord:
    """The step's probe run, judged; a failed run is run again up to RETEST times, every earlier
    attempt kept in the record (its why, argv, exit code, stdout and stderr)."""
    base = step_fields(step)
    prepared = _arguments(step, state, display, early)
    if isinstance(prepared, StepRecord):  # not ready, or its preparation failed: no process starts
        if prestarts:
            prestarts.drop(step.step)
        return prepared
    warm = prestarts.take(step.step) if prestarts else None
    if prestarts:
        prestarts.begin(step.step, state)  # the next steps' processes start behind this one
    timeout_s = prepared.timeout_s if prepared.timeout_s is not None else step.timeout_s
    invocation = ProbeInvocation(step.probe, prepared.args, timeout_s, mounts=prepared.mounts)
    earlier: list[Attempt] = []
    for attempt in range(1, retest + 2):
        title = step.title if attempt == 1 else f"{step.title} (attempt {attempt} of {retest + 1})"
        display.begin(step.step, title, shown_command(runner, step.probe, prepared.args), again=attempt > 1)
        listen = companions.listener(step.step, state, display.stderr_line) if companions else display.stderr_line
        listen = beside.listener(step.step, state, listen) if beside else listen
        ahead = {"warm": warm} if warm is not None and attempt == 1 else {}
        outcome = judge(runner.run(invocation, on_stderr_line=listen, **ahead), schema=step.schema)
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


def _arguments(
    step: ProbeStep, state: RunState, display: RunDisplay, early: EarlyArguments | None
) -> StepArgs | StepRecord:
    """The step's arguments, or its record where they cannot be had (not ready: not run; else failed)."""
    base = step_fields(step)
    try:
        return early.arguments(step, state) if early else step.arguments(state)
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
    host: host_load.HostLoad | None = None,
) -> tuple[StepRecord, ...]:
    """Every step in order; each failure recorded, never stopping the run.

    Independent steps' arguments are prepared, and completed steps' plots rendered, in the
    background at the lowest CPU priority while the probes run; HOST, when given, reads the host
    while each probe step runs in its place (harness.run.host_load).
    """
    state = RunState(prepared, registry.analysis_module)
    records: list[StepRecord | None] = []
    places: dict[str, int] = {}  # a step waiting to run beside a later one: its place in RECORDS
    early = EarlyArguments(plan, runner, skip, state.prepared)
    companions = Companions(plan, runner, skip)
    beside = Beside(plan, runner, skip, early.arguments)
    prestarts = Prestarts(plan, runner, lambda s: s.step not in skip and probe_missing(runner, s.probe) is None)

    def run_now(step: Step) -> StepRecord:
        run = functools.partial(
            run_step, step, runner, state, display, skip, early, retest, companions, beside, prestarts
        )
        return run_sampled(step, host, companions, run)

    with BackgroundPlots() as plots:

        def keep(record: StepRecord) -> None:
            if record.status == COMPLETED and record.document is not None:
                plots.submit(record.plots, record.step, record.document, repeatability.bundle_sku(state.documents))
            if record.step in places:
                records[places[record.step]] = record
                display.host(record.step, f"{record.status}, run beside a later step ({record.title.lower()})")
            else:
                records.append(record)

        try:
            for step in plan:
                if _waits_beside(step, runner, beside, state):
                    places[step.step] = len(records)
                    records.append(None)
                    display.note(f"    {step.step}: waits to run beside the {step.beside} step, on the host's CPUs")
                    continue
                keep(run_now(step))
                for later in beside.settle(step.step, run_now, state):
                    keep(later)
            for later in beside.settle(None, run_now, state):
                keep(later)
        finally:
            early.close()
            companions.close()
            beside.close()
            prestarts.close()
        return tuple(_with_plots(record, plots) for record in records if record is not None)


def _waits_beside(step: Step, runner: Runner, beside: Beside, state: RunState) -> TypeGuard[ProbeStep]:
    """Whether STEP's probe waits to run beside a later step (harness.run.beside) rather than in its place."""
    return isinstance(step, ProbeStep) and probe_missing(runner, step.probe) is None and beside.defer(step, state)


def run_sampled(
    step: Step, host: host_load.HostLoad | None, companions: Companions, run: Callable[[], StepRecord]
) -> StepRecord:
    """RUN()'s record of STEP, the host read meanwhile when STEP's probe runs in its own place (not a
    host step, not one taken during another step's load); the window is kept when a process ran."""
    if host is None or not isinstance(step, ProbeStep) or step.step in companions.threads:
        return run()
    with host.window(step.step) as window:
        record = run()
    if record.run is not None:
        host.keep(window)
    return record


def run_step(
    step: Step,
    runner: Runner,
    state: RunState,
    display: RunDisplay,
    skip: Sequence[str],
    early: EarlyArguments,
    retest: int = 0,
    companions: Companions | None = None,
    beside: Beside | None = None,
    prestarts: Prestarts | None = None,
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
    return run_probe_step(step, runner, state, display, early, retest, companions, beside, prestarts)


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
    load = host_load.HostLoad(getattr(runner, "probe_pids", tuple))
    with display:
        steps = run_steps(plan, runner, display, options.skip, options.prepared, options.retest, load)
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
        contention=load.document(),
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
