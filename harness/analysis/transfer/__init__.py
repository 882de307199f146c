"""The transfer probe's analysis (harness/probes/transfer/): `series` one copy series (points,
plateau, latency, link ceiling), `links` the degraded-link and broken-P2P rules, `figures` the headlines
of a whole document and where its stated figures differ."""

from harness.analysis.transfer.figures import headlines
from harness.analysis.transfer.figures import discrepancies

__all__ = ["discrepancies", "headlines"]
