"""Why the bandwidth probe does this much work on this device: the probe's `sizing` line."""

from __future__ import annotations

from typing import Any

from harness.analysis.bandwidth import figures as analysis
from harness.probes.bandwidth.device import BUFFERS, SAFE_FRACTION
from harness.probes.bandwidth.points import DTYPE_NAME, MAX_ITERATIONS, MIN_ITERATIONS, WARMUP_ITERATIONS
from harness.probes.bandwidth.repeats import AGAIN_BUDGET_S, AGAIN_FACTOR, MIN_SAMPLES, SAMPLE_INTERVAL_S


def sizing(
    device: str,
    repeats: int,
    facts: dict[str, Any],
    sizes: list[float],
    budget: float,
    repeat_budget: float,
    safe_mib: float,
) -> str:
    largest = max(sizes)
    common = (
        f"sweep {' '.join(f'{s:g}' for s in sizes)} MiB per buffer; {BUFFERS} {DTYPE_NAME} buffers "
        f"of the largest size ({BUFFERS * largest:g} MiB) stay within {SAFE_FRACTION:.0%} of the "
        f"{facts['free'] / 2**20:.0f} MiB free at start (largest safe size {safe_mib:.0f} MiB); "
        f"each point is timed for about {budget:g} s ({MIN_ITERATIONS}-{MAX_ITERATIONS} iterations "
        f"after {WARMUP_ITERATIONS} warm-up), each of the {repeats} repeats for about "
        f"{repeat_budget:g} s (if they vary by {analysis.REPEAT_SPREAD_MAX:.0%} or more, measured once more "
        f"{AGAIN_FACTOR:g} x longer, within {AGAIN_BUDGET_S[device]:g} s)"
    )
    if device == "cpu":
        return (
            f"device=cpu ({facts['name']}, {facts['torch_threads']} torch threads): host memory, "
            f"sized small for 2-core CI runners by default, a repeat by default long enough (1 s, about 100 "
            f"iterations of the 128 MiB copy) that a time slice lost to another process moves its median little; "
            f"{common}."
        )
    return (
        f"{facts['name']} ({facts['where']}): {common}, long enough for at least {MIN_SAMPLES} NVML "
        f"samples at {SAMPLE_INTERVAL_S * 1000:.0f} ms during the middle repeat."
    )
