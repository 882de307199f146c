"""What a registry entry declares for comparing two bundles: the facts set side by side (DiffField)
and the figures judged run against run (DiffFigure). `dossier diff` and `dossier reproduce` read the
same declarations (harness.registry.comparisons), so a figure is compared, and judged, one way.

A figure's kind says how two runs of it are judged (harness.analysis.repeatability's noise model):
`steady`, `burst` and `launch_bound` are rates, reproduced when mine is within the figure's run-to-run
tolerance of theirs; `count` (fault counts) and `exact` (identity, contract verdicts, digests, the
precision step's figures) only when equal.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from harness.analysis.repeatability import EQUAL_KINDS
from harness.analysis.repeatability import KINDS as RATE_KINDS

KINDS = (*RATE_KINDS, *EQUAL_KINDS)
# Which figures a difference of environment can explain (DiffField.explains): rates only, or results too.
RATES = RATE_KINDS
RESULTS = (*RATE_KINDS, "exact")
EVERYTHING = KINDS

SECTIONS = ("hardware", "software", "configuration", "activity")
SOURCES = ("headlines", "document", "facts")


@dataclass(frozen=True)
class DiffField:
    """A fact `dossier diff` sets side by side in its SECTION (hardware, software, configuration of the
    GPUs, activity: other processes), read from the recomputed headlines of STEP (default: the entry's own
    step), or with source="document" its raw document, or with source="facts" the whole bundle
    (harness.judge.facts.BundleFacts). EXPLAINS names the figure kinds a difference in it can move:
    `dossier reproduce` lists such differences first, as the likely why of a figure that did not
    reproduce (a driver for results, a foreign process for rates); an empty EXPLAINS is a fact only."""

    section: str
    name: str
    read: Callable[[Any], Any]
    step: str | None = None
    source: str = "headlines"
    explains: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.section not in SECTIONS or self.source not in SOURCES or set(self.explains) - set(KINDS):
            raise ValueError(
                f"diff field {self.name}: section {self.section!r}, source {self.source!r}, explains {self.explains!r}"
            )


@dataclass(frozen=True)
class Row:
    """One bundle's side of one figure."""

    probe: str  # the registry entry that declares it
    figure: str  # the figure id, PROBE.FIGURE
    name: str  # as people read it
    unit: str
    kind: str
    noise: str  # the id the noise model knows it by
    value: Any
    spread: float | None  # the within-run spread the probe measured (fraction), None where none
    conditions: Any  # what must be equal on both sides for the values to be comparable
    per_device: bool
    step: str  # the step it was read from


@dataclass(frozen=True)
class DiffFigure:
    """A measured figure `dossier diff` sets as a ratio and `dossier reproduce` judges, declared once.

    One row per figure: NAME in UNIT (people's words), FIGURE its id (PROBE.FIGURE; default PROBE.NAME
    with spaces as underscores), KIND how it is judged (a kind, or a function of the item: a roofline
    shape is steady, burst or launch-bound by its call time), NOISE the id the noise model knows it by
    (default: the figure id; a function of the item where several rows share one: every GPU's pinned
    copy is transfer.h2d_pinned_gbps). READ gives its value from the recomputed headlines of STEP (default: the
    entry's own step; source="document": the raw document), SPREAD the fraction the probe measured as its
    own within-run spread (it widens the tolerance), CONDITIONS what must be equal for the values to be
    comparable at all (the kernel, a timing method, a library build, a tensor's sha256). With EACH, one
    row per (label, item) it lists: the braces of NAME, FIGURE and NOISE take the label, READ, SPREAD,
    CONDITIONS and KIND get the item. EVERY_STEP reads every completed step analysed by the entry's
    analysis (the roofline's per-dtype steps of bundles before format 5); a figure two steps give is
    taken from the first. PER_DEVICE False marks a figure that does not depend on the GPU it ran on (the
    precision step's quantizer outputs): comparable across SKUs."""

    name: str
    unit: str
    read: Callable[[Any], Any]
    spread: Callable[[Any], Any] | None = None
    step: str | None = None
    each: Callable[[Any], Iterable[tuple[str, Any]]] | None = None
    figure: str = ""
    kind: str | Callable[[Any], str] = "steady"
    noise: str | Callable[[Any], str] = ""
    conditions: Callable[[Any], Any] | None = None
    source: str = "headlines"
    per_device: bool = True
    every_step: bool = False

    def __post_init__(self) -> None:
        if self.source not in ("headlines", "document") or (isinstance(self.kind, str) and self.kind not in KINDS):
            raise ValueError(f"diff figure {self.name}: source {self.source!r}, kind {self.kind!r}")

    def figure_id(self, probe: str) -> str:
        return self.figure or f"{probe}.{self.name.replace(' ', '_')}"

    def rows(self, probe: str, step: str, data: Any) -> list[Row]:
        """Each row this declaration gives for one step's headlines (or document) DATA."""
        items = self.each(data) if self.each else [("", data)]
        rows = []
        for label, item in items:
            figure = self.figure_id(probe).format(label)
            kind = self.kind(item) if callable(self.kind) else self.kind
            if kind not in KINDS:
                raise ValueError(f"diff figure {figure}: kind {kind!r}")
            spread = self.spread(item) if self.spread else None
            noise = self.noise(item) if callable(self.noise) else (self.noise or self.figure_id(probe)).format(label)
            rows.append(
                Row(
                    probe,
                    figure,
                    self.name.format(label),
                    self.unit,
                    kind,
                    noise,
                    self.read(item),
                    spread if isinstance(spread, (int, float)) and not isinstance(spread, bool) else None,
                    self.conditions(item) if self.conditions else None,
                    self.per_device,
                    step,
                )
            )
        return rows


def numbered(items: Mapping[Any, Any] | None) -> list[tuple[str, Any]]:
    """(str(key), value) for a mapping's items in order: the EACH of a figure per GPU or per curve."""
    return [(str(key), value) for key, value in (items or {}).items()]
