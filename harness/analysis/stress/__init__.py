"""The stress probe's analysis (harness/probes/stress/): `telemetry` the NVML samples (power against
the limit, when the cap engaged, clock-event reasons), `figures` every headline recomputed from the raw
per-GEMM times and counts, the checks judged, and where stated figures differ."""

from __future__ import annotations

from typing import Any

from harness.analysis.stress import checks, figures
from harness.analysis.stress.declared import FIGURES
from harness.analysis.stress.figures import headlines


def discrepancies(document: dict[str, Any]) -> list[str]:
    """Every stated figure that differs from its recomputation (`figures`), and every raw record the
    probe could not have written for its settings (`checks`)."""
    return figures.figure_discrepancies(document) + checks.record_discrepancies(document)


__all__ = ["FIGURES", "discrepancies", "headlines"]
