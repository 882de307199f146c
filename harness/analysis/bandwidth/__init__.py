"""The bandwidth sweep's analysis (harness/probes/bandwidth/): `figures` counts bytes, classifies
points, finds the plateau, judges the repeats and diagnoses them, and recomputes the headlines;
`checks` lists where a document's stated figures differ from that recomputation."""

from harness.analysis.bandwidth.checks import discrepancies
from harness.analysis.bandwidth.declared import FIGURES
from harness.analysis.bandwidth.figures import headlines

__all__ = ["FIGURES", "discrepancies", "headlines"]
