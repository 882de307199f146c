"""`dossier run`: each lab step as its own probe process, recorded, then one signed bundle.

Orchestration only: runners start processes, `harness.outcome.judge` validates, `assemble`
builds and signs the bundle, `harness.bundle.write` puts it in place atomically. A failed step
is recorded and the run goes on; nothing is written until every step is done.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness import provenance
from harness.assemble import assemble
from harness.bundle import layout
from harness.bundle.write import write_atomically
from harness.display import RunDisplay
from harness.errors import UsageError
from harness.outcome import Completed, judge
from harness.plotting import BackgroundPlots
from harness.probes._contract import utc_now
from harness.records import COMPLETED, FAILED, NOT_RUN, RunRecord, StepRecord
from harness.runners.interface import ProbeInvocation, Runner
from harness.schemas import SCHEMA_DIR, violations
from harness.signing.keys import SigningKey
from harness.steps import LAB_PLAN, HostStep, NotReady, ProbeStep, RunState, Step, StepSetupFailed


@dataclass(frozen=True)
class RunOptions:
    """One frozen configuration for a run, passed down."""

    output_dir: Path
    name: str | None = None
    runner_choice: str = "auto"
    skip: tuple[str, ...] = ()


def probe_missing(runner: Runner, probe: str) -> str | None:
    """Why the runner cannot run PROBE in this build, or None."""
    has_probe = getattr(runner, "has_probe", None)
    if callable(has_probe):
        return None if has_probe(probe) else f"the {runner.name} runner has no probe {probe}"
    package = getattr(runner, "package", "harness.probes")
    if importlib.util.find_spec(f"{package}.{probe}") is None:
        return f"{package.replace('.', '/')}/{probe}.py is not in this build"
    return None


def step_missing(runner: Runner | None, step: Step) -> str | None:
    """Why STEP cannot run in this build (probe, analysis or schema absent), or None."""
    if isinstance(step, ProbeStep) and runner is not None:
        why = probe_missing(runner, step.probe)
        if why:
            return why
    if isinstance(step, HostStep):
        module = step.function.split(":")[0]
        if importlib.util.find_spec(module) is None:
            return f"{module.replace('.', '/')}.py is not in this build"
    if step.analysis and importlib.util.find_spec(f"harness.analysis.{step.analysis}") is None:
        return f"harness/analysis/{step.analysis}.py is not in this build"
    if not (SCHEMA_DIR / f"{step.schema}.schema.json").exists():
        return f"schemas/{step.schema}.schema.json is not in this build"
    return None


def _base(step: Step) -> dict[str, Any]:
    common = dict(step=step.step, title=step.title, lab_step=step.lab_step, kind=step.kind,
                  schema=step.schema, analysis=step.analysis, plots=step.plots)
    if isinstance(step, ProbeStep):
        common["probe"] = step.probe
    else:
        common.update(needs=step.needs, function=step.function)
    return common


def _mounts(paths: tuple[str, ...]) -> dict[str, Any]:
    """ProbeInvocation's mounts (read-only host paths for container runners), where it has them."""
    if paths and "mounts" in {f.name for f in dataclasses.fields(ProbeInvocation)}:
        return {"mounts": paths}
    return {}


def run_probe_step(step: ProbeStep, runner: Runner, state: RunState, display: RunDisplay) -> StepRecord:
    base = _base(step)
    try:
        prepared = step.arguments(state)
    except NotReady as exc:
        display.skip(step.step, str(exc))
        return StepRecord(**base, status=NOT_RUN, why=str(exc))
    except StepSetupFailed as exc:
        display.skip(step.step, f"failed before starting: {exc}")
        return StepRecord(**base, status=FAILED, why=str(exc))
    invocation = ProbeInvocation(step.probe, prepared.args, step.timeout_s, **_mounts(prepared.mounts))
    package = getattr(runner, "package", "harness.probes")
    command = shlex.join(["python", "-m", f"{package}.{step.probe}", *prepared.args])
    display.begin(step.step, step.title, command)
    outcome = judge(runner.run(invocation, on_stderr_line=display.stderr_line), schema=step.schema)
    extra = dict(run=outcome.run, inputs=dict(prepared.inputs), checkpoint=prepared.checkpoint)
    if isinstance(outcome, Completed):
        state.add(step.step, outcome.document, step.analysis)
        display.end(step.step, "completed", outcome.document.get("sizing", ""))
        return StepRecord(**base, **extra, status=COMPLETED, document=outcome.document)
    display.end(step.step, "FAILED", outcome.reason)
    return StepRecord(**base, **extra, status=FAILED, why=outcome.reason,
                      schema_violations=tuple(str(v) for v in outcome.schema_violations[:20]))


def run_host_step(step: HostStep, state: RunState, display: RunDisplay) -> StepRecord:
    base = _base(step)
    try:
        document = step.compute(state)
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
        display.skip(step.step, why)
        return StepRecord(**base, status=FAILED, why=why, document=document,
                          schema_violations=tuple(str(v) for v in found[:20]))
    state.add(step.step, document, step.analysis)
    display.note(f"    {step.step}: completed on the host")
    return StepRecord(**base, status=COMPLETED, document=document)


def run_steps(plan: Sequence[Step], runner: Runner, display: RunDisplay,
              skip: Sequence[str] = ()) -> tuple[StepRecord, ...]:
    """Every step in order; each failure recorded, never stopping the run.

    A completed step's plots are rendered in the background while the next steps run.
    """
    state = RunState()
    records = []
    with BackgroundPlots() as plots:
        for step in plan:
            why = (f"skipped with --skip {step.step}" if step.step in skip
                   else step_missing(runner, step))
            if why:
                display.skip(step.step, why)
                record = StepRecord(**_base(step), status=NOT_RUN, why=why)
            elif isinstance(step, ProbeStep):
                record = run_probe_step(step, runner, state, display)
            else:
                record = run_host_step(step, state, display)
            if record.status == COMPLETED and record.document is not None:
                plots.submit(record.plots, record.step, record.document)
            records.append(record)
        return tuple(_with_plots(record, plots) for record in records)


def _with_plots(record: StepRecord, plots: BackgroundPlots) -> StepRecord:
    rendered = plots.result(record.step)
    if rendered is None:
        return record
    files, note = rendered
    return dataclasses.replace(record, plot_files=files, plot_note=note)


def collect(options: RunOptions, runner: Runner, runner_why: str, plan: Sequence[Step] = LAB_PLAN,
            display: RunDisplay | None = None) -> RunRecord:
    """Run the plan and record it (nothing is written)."""
    started = utc_now()
    host = provenance.host_environment()
    display = display or RunDisplay(len(plan))
    with display:
        steps = run_steps(plan, runner, display, options.skip)
    return RunRecord(steps=steps, runner={"name": runner.name, "why": runner_why},
                     tool=provenance.tool_info(), host=host,
                     options={"runner": options.runner_choice, "skip": sorted(options.skip)},
                     started_at=started, finished_at=utc_now())


def bundle_path(options: RunOptions, record: RunRecord) -> Path:
    name = options.name
    if not name:
        host = record.host.get("hostname")
        host = host if isinstance(host, str) and host else "host"
        stamp = record.started_at[:19].replace("-", "").replace(":", "")
        name = f"dossier-{host}-{stamp}Z"
    if "/" in name or name.startswith("."):
        raise UsageError(f"--name {name!r} must be a plain file name")
    return options.output_dir / (name if name.endswith(layout.SUFFIX) else name + layout.SUFFIX)


def run_dossier(options: RunOptions, runner: Runner, runner_why: str, key: SigningKey,
                plan: Sequence[Step] = LAB_PLAN, display: RunDisplay | None = None) -> Path:
    """Run every step, then assemble, sign and write the bundle; returns its path."""
    record = collect(options, runner, runner_why, plan, display)
    destination = bundle_path(options, record)
    return write_atomically(assemble(record, key), destination)
