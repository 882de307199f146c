"""The all-reduce's analysis (harness/probes/allreduce/): `figures` fits the curves (alpha-beta knee,
half-plateau size, ring prediction) and recomputes the headlines, `checks` lists where stated figures
differ, `evidence` the topology evidence for a curve, `nccl_log` reads NCCL's own log lines."""

from harness.analysis.allreduce.checks import discrepancies
from harness.analysis.allreduce.declared import FIGURES
from harness.analysis.allreduce.figures import headlines

__all__ = ["FIGURES", "discrepancies", "headlines"]
