"""What `dossier run` runs, as data: probe steps and host steps, and the run's state they read.

A probe step runs `python -m harness.probes.PROBE ARGS` through the runner; a host step computes
a document on the host from earlier documents (a function the registry names). A step whose
arguments need an earlier result that is missing raises NotReady and is recorded as not run,
with why. Each registry entry declares its steps with an `order`: `dossier run`'s plan is every
entry's steps sorted by it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any


class NotReady(Exception):
    """The step cannot run: something it needs does not exist yet (the message says what)."""


class StepSetupFailed(Exception):
    """Preparing the step failed for a real reason (e.g. the checkpoint could not be fetched)."""


@dataclass(frozen=True)
class StepArgs:
    """A probe's arguments, the inputs they came from, and checkpoint provenance if any."""

    args: tuple[str, ...] = ()
    inputs: Mapping[str, Any] = field(default_factory=dict)
    checkpoint: Mapping[str, Any] | None = None
    mounts: tuple[str, ...] = ()  # host paths a container runner must mount read-only
    timeout_s: float | None = None  # this run's timeout when it depends on what earlier steps found (else the step's)


class RunState:
    """The documents completed so far, by step, their recomputed headline figures, and what
    `dossier run` prepared for each probe before any ran (ProbeSpec.prepare_run), by probe."""

    def __init__(
        self, prepared: Mapping[str, Any] | None = None, analyses: Callable[[str], ModuleType] | None = None
    ) -> None:
        """ANALYSES: an analysis name -> its module (the registry's `analysis_module`, which `dossier
        run` hands in: the steps are declared by the registry's entries, so they never import it)."""
        self.documents: dict[str, dict[str, Any]] = {}
        self.analysis_names: dict[str, str] = {}
        # what a running step's probe said of its load (contract.loading: pids, what, remaining_s), by step:
        # a step declared `during` it takes its reading under that load
        self.loads: dict[str, dict[str, Any]] = {}
        self.prepared: Mapping[str, Any] = dict(prepared or {})
        self._analyses = analyses

    def add(self, step: str, document: dict[str, Any], analysis: str | None) -> None:
        self.documents[step] = document
        if analysis:
            self.analysis_names[step] = analysis

    def document(self, step: str, why_needed: str) -> dict[str, Any]:
        if step not in self.documents:
            raise NotReady(f"needs {why_needed} from the {step} step, which did not complete")
        return self.documents[step]

    def headlines(self, step: str, why_needed: str) -> dict[str, Any]:
        document = self.document(step, why_needed)
        if self._analyses is None:
            raise NotReady(f"needs {why_needed} from the {step} step, and no analysis was given to recompute it")
        return self._analyses(self.analysis_names.get(step, step)).headlines(document)


@dataclass(frozen=True)
class ProbeStep:
    step: str  # the step's id: raw/STEP.json, logs/STEP.*, plots/STEP/
    probe: str  # module name under the runner's probe package
    title: str
    lab_step: str
    schema: str
    analysis: str | None
    plots: str | None
    timeout_s: float
    arguments: Callable[[RunState], StepArgs] = lambda state: StepArgs()
    # True when `arguments` needs no earlier step: it is then prepared in the background from
    # the run's start (e.g. fetching and hashing a checkpoint while other probes run).
    independent: bool = False
    order: int = 0  # its place in `dossier run` (the plan is every entry's steps sorted by order)
    # The step whose load this one is taken under, while it runs: `dossier run` starts this step's probe
    # when that step's probe says its load is on (contract.loading), where the runner's processes share
    # the host's process ids (the local runner), and records it in its own place in the plan; elsewhere,
    # or when no such line came, it runs in its place with `arguments` seeing no load.
    during: str | None = None
    # Options whose values `arguments` takes from earlier steps of the same run (the roofline's memory roof
    # from the bandwidth step): `dossier reproduce` runs another bundle's recorded argv with these taken from
    # this run's own earlier steps, as `arguments` takes them.
    derived: tuple[str, ...] = ()
    # The later step this one runs beside, on the host's CPUs while that step loads only the GPU
    # (harness.run.beside): where `beside_when` returns None (the host is idle during that step) the step
    # waits in its place and starts once that step's probe reports its first measured progress; where it
    # returns why not, the step runs in its place.
    beside: str | None = None
    beside_when: Callable[[RunState], str | None] = lambda state: "no condition declared"
    # Modules a process started ahead of this step imports while the step before it measures (`dossier
    # run`'s prestart, harness.run.prestart): the probe's own package always, these too (torch).
    warm_imports: tuple[str, ...] = ()
    # How `dossier reproduce` re-makes this step from another bundle's record of it where its argv cannot run
    # as recorded (the precision step names a file by a path of theirs: fetched here by its sha256). Called
    # with their commands.json entry and the reproduce command's options; returns the arguments function and
    # what this host cannot honour, said before any probe runs. None: their argv, `derived` taken from here.
    replay: (
        Callable[[Mapping[str, Any], Mapping[str, Any]], tuple[Callable[[RunState], StepArgs], list[str]]] | None
    ) = None

    kind = "probe"


@dataclass(frozen=True)
class HostStep:
    step: str
    title: str
    lab_step: str
    schema: str
    needs: tuple[str, ...]
    function: str  # "module:function", a registry-named host function called with the needed documents
    analysis: str | None = None
    plots: str | None = None
    order: int = 0

    kind = "host"

    def inputs(self, state: RunState) -> list[dict[str, Any]]:
        """The documents FUNCTION is called with (NotReady when one did not complete)."""
        return [state.document(need, f"the {need} document") for need in self.needs]


Step = ProbeStep | HostStep
