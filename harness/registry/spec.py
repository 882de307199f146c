"""What a registry entry declares about one probe (harness/registry/NAME.py holds the entry).

A ProbeSpec names the probe (module harness.probes.NAME, schema schemas/NAME.schema.json), its
options (the probe module's OPTIONS), and everything the host does with it: `command` for
`dossier NAME`; `steps` for `dossier run` (each with its arguments and its place in the order);
`analysis` (harness.analysis.NAME: headlines and discrepancies, for the report, verify,
acceptance and the fleet), `plots` (harness.present.plots.NAME) and `table`
(harness.present.tables.NAME) for the report; `lab_criteria` (judged in report.md),
`acceptance_criteria` (judged by `dossier accept`), `diff_fields` (`dossier diff` and `dossier
reproduce`: the facts set side by side) and `figures`: every headline figure, declared once beside the
probe's analysis (harness/analysis/NAME/declared.py, harness.analysis.figure.Figure), which `dossier
diff` and `dossier reproduce` judge run against run, `dossier fleet collect` compares across nodes
(each figure's `fleet` views, as FleetMetric here) and acceptance and `dossier baseline` hold to a
known-good unit (each figure's `accept`).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from harness.analysis.figure import Figure
from harness.judge.engine import Criterion
from harness.judge.reproduction.declare import DiffField
from harness.probes.contract import Option
from harness.registry.steps import HostStep, ProbeStep, StepArgs

Prepare = Callable[[argparse.Namespace, list[str]], StepArgs]
Finish = Callable[[argparse.Namespace, dict[str, Any]], "str | None"]


@dataclass(frozen=True)
class CommandSpec:
    """`dossier NAME`: its help, default output file and timeout, and the host's own part.

    `host_options` are the command's options that never reach the probe (e.g. precision's
    --checkpoint). `prepare(args, argv)` runs before the probe: it checks what only the host can
    check (a checkpoint) and may change the probe's arguments (given the probe options' argv).
    `finish(args, document)` runs after the validated JSON, the plots and the table are written:
    summary lines on stderr and the exit-1 rule (raise harness.errors.CheckFailed); what it returns
    (a few words with the counts, or None) is said in the command's answer line, which comes before
    and after its lines (`verdict: PASS: health.json: 1 GPU(s), ... (exit 0)`). The command
    writes the entry's plots beside the JSON (`--plot STEM` elsewhere, `--no-plot` none) when the
    entry has plots, and its table to `--markdown PATH` (default: the JSON's path with .md) when
    `writes_table`: harness.commands.probe does both, the same way for every probe."""

    help: str
    description: str
    output: str
    timeout_s: float
    host_options: tuple[Option, ...] = ()
    prepare: Prepare | None = None
    finish: Finish | None = None
    writes_table: bool = False


@dataclass(frozen=True)
class FleetMetric:
    """A figure's node-level view as `dossier fleet collect` reads it (docs/fleet.md): made by the registry
    from each Figure's `fleet` views (harness.registry.fleet_metrics), never declared on its own.

    `read` gets the recomputed headlines (harness.analysis.ANALYSIS.headlines) of the node's raw/STEP.json,
    or with source="document" the document itself, and returns a number (a state may be a string), or
    {"unavailable": why}. The kind says how nodes are compared (harness/analysis/fleet.py): "rate" (median
    and MAD per SKU, outliers, a distribution plot unless headline=False), "count" (zero expected), "state"
    (what most nodes report), "digest" (a result's digest within one SKU and software stack)."""

    name: str  # the unit is in the name (fleet.json metrics, the outlier table)
    unit: str
    description: str
    read: Callable[[Mapping[str, Any]], Any]
    kind: str = "rate"
    step: str | None = None  # the step whose document it reads (default: the entry's name)
    source: str = "headlines"  # "headlines" (recomputed by the step's analysis) or "document"
    headline: bool = True  # a rate plotted in the fleet report


@dataclass(frozen=True)
class ProbeSpec:
    """One probe, declared once."""

    name: str  # module harness.probes.NAME, `dossier NAME`, raw/NAME.json of its main step
    title: str  # what it measures, in words
    lab: str  # the lab step it implements, e.g. "M1T1"
    options: tuple[Option, ...]  # the probe module's OPTIONS
    command: CommandSpec
    schema: str = ""  # schemas/SCHEMA.schema.json (default: NAME)
    analysis: str | None = None  # harness.analysis.ANALYSIS
    plots: str | None = None  # harness.present.plots.PLOTS: render(document, stem) -> paths
    table: str | None = None  # harness.present.tables.TABLE: render(document) -> Markdown
    steps: tuple[ProbeStep | HostStep, ...] = ()  # what `dossier run` runs for it
    lab_criteria: tuple[Criterion, ...] = ()
    acceptance_criteria: tuple[Criterion, ...] = ()
    diff_fields: tuple[DiffField, ...] = ()  # what `dossier diff` and `dossier reproduce` set side by side
    figures: tuple[Figure, ...] = ()  # every headline figure, declared once (its analysis's declared.FIGURES)
    # `dossier run`'s options for this probe (offered as `dossier NAME` offers them), and what the
    # run resolves from them before any probe starts (refusing bad input with exit 2): its result
    # is handed to the steps as RunState.prepared[NAME].
    run_options: tuple[Option, ...] = ()
    prepare_run: Callable[[argparse.Namespace], Any] | None = None

    def __post_init__(self) -> None:
        if not self.schema:
            object.__setattr__(self, "schema", self.name)

    @property
    def host_options(self) -> tuple[Option, ...]:
        """The probe's options that `dossier NAME` offers too."""
        return tuple(o for o in self.options if o.host)
