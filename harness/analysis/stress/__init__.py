"""The stress probe's analysis (harness/probes/stress/): `telemetry` the NVML samples (power against
the limit, when the cap engaged, clock-event reasons), `figures` every headline recomputed from the raw
per-GEMM times and counts, the checks judged, and where stated figures differ."""

from harness.analysis.stress.figures import headlines
from harness.analysis.stress.figures import discrepancies

__all__ = ["discrepancies", "headlines"]
