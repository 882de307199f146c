"""What a registry entry declares for comparing two bundles beside its figures: the facts set side by
side (DiffField). The figures judged run against run are declared once, beside each probe's analysis
(harness.analysis.figure.Figure, harness/analysis/NAME/declared.py); `dossier diff` and `dossier
reproduce` read the same declarations (harness.registry.figures, diff_fields), so a figure is compared,
and judged, one way.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from harness.analysis.figure import KINDS, RATE_KINDS

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
