"""The roofline's analysis (harness/probes/roofline/): `model` classifies a GEMM before it runs,
`explanation` explains it after (its causes, each a named rule: `causes`), `figures` recomputes the
headlines (the document read by `reading`, its timing figures by `timings`) and gathers where stated
figures differ (`timing_checks`, `shape_checks`, `fusion_checks`, `roof_checks`; the evidence:
`checks`), `gemm_shapes` names the shapes measured, `unexplained` the GEMMs the model leaves unexplained."""

from harness.analysis.roofline.declared import FIGURES
from harness.analysis.roofline.figures import discrepancies, headlines

__all__ = ["FIGURES", "discrepancies", "headlines"]
