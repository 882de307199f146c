"""The roofline's analysis (harness/probes/roofline/): `model` classifies a GEMM before it runs and
explains it after (the roofline model), `figures` recomputes the document's figures from the per-call
times and lists where stated ones differ, `gemm_shapes` names the shapes measured."""

from harness.analysis.roofline.declared import FIGURES
from harness.analysis.roofline.figures import discrepancies, headlines

__all__ = ["FIGURES", "discrepancies", "headlines"]
