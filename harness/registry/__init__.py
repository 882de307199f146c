"""The probe registry: every probe declared once, in its own entry (harness/registry/NAME.py).

PROBES is the one list. The CLI builds `dossier NAME` from it; `dossier run`'s plan is its
entries' steps in order (`lab_plan`); the report's criteria (`lab_criteria`), verify's analysis
and host-function lookups (`analysis_module`, `host_function`), acceptance's criteria
(`acceptance_criteria`), the figures every layer judges (`figures`: the comparison of two bundles,
`dossier diff` and `dossier reproduce`; the fleet's metrics, `fleet_metrics`; the known-good kinds,
`known_good_kinds`) and the facts set side by side (`diff_fields`) all read it. A name the
registry does not know is a bug in this build or a bundle from another one: never imported.
tests/house/test_registry.py resolves every name an entry gives (modules, schemas, plot and table
modules, host functions), so a missing one fails a test, never a user's run.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable, Iterable
from types import ModuleType
from typing import Any

from harness.analysis.figure import Figure, KnownGood
from harness.judge import known_good
from harness.judge.engine import Criterion
from harness.registry import allreduce, bandwidth, health, precision, roofline, stress, transfer
from harness.registry.spec import DiffField, FleetMetric, ProbeSpec
from harness.registry.steps import HostStep, Step

PROBES: tuple[ProbeSpec, ...] = (
    health.SPEC,
    bandwidth.SPEC,
    roofline.SPEC,
    precision.SPEC,
    allreduce.SPEC,
    transfer.SPEC,
    stress.SPEC,
)

ANALYSIS_PACKAGE = "harness.analysis"
PLOTS_PACKAGE = "harness.present.plots"
TABLES_PACKAGE = "harness.present.tables"


# Names that bundles of earlier builds recorded in commands.json, and what this build calls the same
# code: bundle formats 1 to 4 name the health-diff step's function by its module before the
# analysis had a folder per probe (issue 26). Signed bundles are never rewritten: a recorded name is
# looked up here first, then in the entries, and never imported as given.
RECORDED_NAMES = {"harness.analysis.health_diff:diff": "harness.analysis.health.diff:diff"}


class NotInRegistry(LookupError):
    """A name (probe, analysis, plot, host function) that no registry entry gives."""


def find(name: object) -> ProbeSpec | None:
    """The registered probe NAME, or None."""
    return next((entry for entry in PROBES if entry.name == name), None)


def spec(name: str) -> ProbeSpec:
    """The registered probe NAME; raises NotInRegistry."""
    found = find(name)
    if found is None:
        raise NotInRegistry(f"no probe {name!r} in the registry ({', '.join(p.name for p in PROBES)})")
    return found


def lab_plan() -> tuple[Step, ...]:
    """What `dossier run` runs: every entry's steps, sorted by their order."""
    return tuple(sorted((step for entry in PROBES for step in entry.steps), key=lambda step: step.order))


def step_ids(plan: Iterable[Step] | None = None) -> list[str]:
    return [s.step for s in (lab_plan() if plan is None else plan)]


def _in_run_order(criteria: Iterable[Criterion]) -> tuple[Criterion, ...]:
    """Criteria in the order the run completes their evidence: by the plan position of the last
    step each reads (entries' order breaks ties)."""
    position = {step: i for i, step in enumerate(step_ids())}
    return tuple(sorted(criteria, key=lambda c: max(position[s] for s in c.steps)))


def lab_criteria() -> tuple[Criterion, ...]:
    """The criteria report.md judges: the lab's success criteria and those beyond it, from every
    entry, and every headline rate against its known-good (harness.judge.known_good: acceptance's
    rate criteria, against the catalogue's profile of the bundle's SKU)."""
    rated = tuple(
        step.step
        for entry in PROBES
        if any(figure.accept is not None for figure in entry.figures)
        for step in entry.steps
    )
    against = known_good.criterion(known_good_kinds(), acceptance_criteria(), rated)
    return _in_run_order([*(c for entry in PROBES for c in entry.lab_criteria), *((against,) if rated else ())])


def acceptance_criteria() -> tuple[Criterion, ...]:
    """The criteria `dossier accept` judges, from every entry."""
    return _in_run_order(c for entry in PROBES for c in entry.acceptance_criteria)


def figures() -> tuple[tuple[str, str | None, Figure], ...]:
    """(probe, its analysis, figure) for every headline figure, in entry order: each declared once, beside
    its probe's analysis (harness/analysis/NAME/declared.py)."""
    return tuple((entry.name, entry.analysis, figure) for entry in PROBES for figure in entry.figures)


def diff_figures() -> tuple[tuple[str, str | None, Figure], ...]:
    """(probe, its analysis, figure) for every figure `dossier diff` and `dossier reproduce` judge: all of them."""
    return figures()


def known_good_kinds() -> tuple[KnownGood, ...]:
    """Every kind of known-good figure an acceptance profile holds: those the figures' `accept` views name."""
    kinds: list[KnownGood] = []
    for _, _, figure in figures():
        if figure.accept is not None and figure.accept.known_good not in kinds:
            kinds.append(figure.accept.known_good)
    return tuple(kinds)


def _fleet_metric(probe: str, figure: Figure, view: Any) -> FleetMetric:
    step = figure.step or probe
    return FleetMetric(
        view.name,
        figure.unit,
        view.description,
        lambda data: figure.fleet_value(view, probe, step, data),
        kind=view.kind,
        step=figure.step,
        source=figure.source,
        headline=view.headline,
    )


def fleet_metrics() -> tuple[tuple[str, FleetMetric], ...]:
    """(probe, metric) for every figure `dossier fleet collect` compares across nodes: the figures' `fleet` views."""
    return tuple(
        (probe, _fleet_metric(probe, figure, view)) for probe, _, figure in figures() for view in figure.fleets
    )


def diff_fields() -> tuple[tuple[str, DiffField], ...]:
    """(probe, field) for every fact `dossier diff` and `dossier reproduce` set side by side, in entry order."""
    return tuple((entry.name, field) for entry in PROBES for field in entry.diff_fields)


def analysis_names() -> set[str]:
    return {name for entry in PROBES for name in (entry.analysis, *(s.analysis for s in entry.steps)) if name}


def analysis_module(name: str) -> ModuleType:
    """harness.analysis.NAME, for an analysis an entry names (headlines, discrepancies)."""
    if name not in analysis_names():
        raise NotInRegistry(f"no probe in this build's registry has the analysis {name!r}")
    return importlib.import_module(f"{ANALYSIS_PACKAGE}.{name}")


def plot_names() -> set[str]:
    return {name for entry in PROBES for name in (entry.plots, *(s.plots for s in entry.steps)) if name}


def plot_module_name(name: str) -> str:
    """The importable name of the plot module NAME (render(document, stem) -> paths), found without
    importing it, so that the parent process never pays for matplotlib (tests may stand in one)."""
    if name not in plot_names():
        raise NotInRegistry(f"no probe in this build's registry has the plots {name!r}")
    found = importlib.util.find_spec(f"{PLOTS_PACKAGE}.{name}")
    if found is None:
        raise NotInRegistry(f"{PLOTS_PACKAGE}.{name} is named by the registry but cannot be found")
    return found.name


def table_module(entry: ProbeSpec) -> ModuleType | None:
    """The entry's table module (render(document) -> Markdown), or None."""
    return importlib.import_module(f"{TABLES_PACKAGE}.{entry.table}") if entry.table else None


def host_function_names() -> set[str]:
    return {s.function for entry in PROBES for s in entry.steps if isinstance(s, HostStep)}


def host_function(name: str) -> Callable:
    """The function a host step names ("module:function", or a name an earlier build recorded for
    it: RECORDED_NAMES), only if an entry names it."""
    name = RECORDED_NAMES.get(name, name)
    if name not in host_function_names():
        raise NotInRegistry(f"no host step in this build's registry computes with {name!r}")
    module_name, _, function_name = name.partition(":")
    return getattr(importlib.import_module(module_name), function_name)
