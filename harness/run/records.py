"""What a dossier run recorded: one StepRecord per lab step, one RunRecord for the run.

These are the inputs of bundle assembly: the same records always give the same bundle bytes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from harness.analysis.verdict import StepStatus
from harness.registry.steps import ProbeStep, Step
from harness.runners.interface import ProbeRun

COMPLETED, FAILED, NOT_RUN = StepStatus.COMPLETED, StepStatus.FAILED, StepStatus.NOT_RUN


@dataclass(frozen=True)
class Attempt:
    """An earlier attempt of a step run again with `dossier run --retest N`: it failed, and why; its
    process record (argv, times, exit code, stdout and stderr) is kept in the bundle."""

    attempt: int  # from 1
    run: ProbeRun
    why: str
    schema_violations: tuple[str, ...] = ()


@dataclass(frozen=True)
class StepRecord:
    """One step's outcome: completed (document), failed (why, raw output) or not run (why)."""

    step: str
    title: str
    lab_step: str
    kind: str  # "probe" or "host"
    status: str
    schema: str
    probe: str | None = None
    analysis: str | None = None
    plots: str | None = None
    why: str | None = None
    run: ProbeRun | None = None
    document: Mapping[str, Any] | None = None
    inputs: Mapping[str, Any] = field(default_factory=dict)
    checkpoint: Mapping[str, Any] | None = None
    schema_violations: tuple[str, ...] = ()
    needs: tuple[str, ...] = ()
    function: str | None = None
    plot_files: Mapping[str, bytes] | None = None  # rendered during the run (None: render at assembly)
    plot_note: str | None = None
    attempts: tuple[Attempt, ...] = ()  # earlier failed attempts (dossier run --retest); this record is the last


@dataclass(frozen=True)
class RunRecord:
    """Everything a bundle is made from."""

    steps: tuple[StepRecord, ...]
    runner: Mapping[str, Any]  # {"name", "why"}
    tool: Mapping[str, Any]
    host: Mapping[str, Any]
    options: Mapping[str, Any]  # the `dossier run` options that shape the run
    started_at: str
    finished_at: str
    # the SKU's run-to-run spreads from the catalogue at run time (harness.analysis.repeatability), or why none
    repeatability: Mapping[str, Any] | None = None
    # host-contention.json: the host read while each probe step ran (harness.run.host_load); None: not sampled
    contention: Mapping[str, Any] | None = None


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
