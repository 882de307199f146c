"""The transfer probe's analysis (harness/probes/transfer/): `series` one copy series (points,
plateau, latency, link ceiling), `links` the degraded-link and broken-P2P rules, `figures` the headlines
of a whole document and where its stated figures differ."""

from __future__ import annotations

from typing import Any

from harness.analysis.transfer import checks, figures
from harness.analysis.transfer.declared import FIGURES
from harness.analysis.transfer.figures import headlines


def discrepancies(document: dict[str, Any]) -> list[str]:
    """Where the raw records disagree (`checks`) and the stated figures differ from their recomputation,
    named figure by figure (`figures`), then, when those agree, any other stated part (`checks`)."""
    found = checks.record_discrepancies(document) + figures.figure_discrepancies(document)
    return found + ([] if found else checks.stated_discrepancies(document))


__all__ = ["FIGURES", "discrepancies", "headlines"]
