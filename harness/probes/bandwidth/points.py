"""How the bandwidth probe times a kernel: per-iteration times (harness.probes.timing: CUDA events on
the GPU, perf_counter on the CPU) for about a time budget, the kernels themselves, and one sweep
point's record."""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable
from typing import Any

from harness.analysis.bandwidth import figures as analysis
from harness.probes.contract import ProbeUsageError
from harness.probes.timing import Clock

DTYPE_NAME, ELEMENT_BYTES = "float32", 4
WARMUP_ITERATIONS = 3
MIN_ITERATIONS, MAX_ITERATIONS = 10, 500

Timer = Callable[[Callable[[], Any], int], list[float]]


# --- timing ------------------------------------------------------------------------------------


def per_call(clock: Clock) -> Timer:
    """Per-iteration times of a kernel on CLOCK: one marker pair per iteration, one wait at the end."""
    return lambda fn, n: clock.each(lambda _index: fn(), n)


def timed(
    fn: Callable[[], Any], timer: Timer, budget_s: float, enough: Callable[[], bool] = lambda: True
) -> list[float]:
    """Warm up, size the iteration count to the budget, time; extend until `enough()`."""
    estimate = statistics.median(timer(fn, WARMUP_ITERATIONS))
    n = max(MIN_ITERATIONS, min(MAX_ITERATIONS, math.ceil(budget_s / max(estimate, 1e-9))))
    times = timer(fn, n)
    while not enough() and len(times) < 20 * MAX_ITERATIONS:
        times += timer(fn, max(1, n // 4))
    return times


# --- kernels -----------------------------------------------------------------------------------


def kernel_fn(
    torch: Any, kernel: str, a: Any, b: Any, c: Any, out: Any, scalar: float, read: Any = None
) -> Callable[[], Any]:
    """The torch call for one kernel on prefix views a, b, c (see analysis.KERNELS); READ, the read
    kernel's chosen variant (read_kernels.Variants), where one was chosen."""
    if kernel == "copy":
        return lambda: c.copy_(a)
    if kernel == "read" and read is not None:
        return read.over(a, out)
    if kernel == "read":
        return lambda: torch.sum(a, dim=(0,), out=out)  # torch 2.11 has no out= form without dim
    if kernel == "triad":
        return lambda: torch.add(b, c, alpha=scalar, out=a)
    if kernel == "write":
        return lambda: a.fill_(scalar)
    raise ProbeUsageError(f"unknown kernel {kernel!r}; choose from {', '.join(sorted(analysis.KERNELS))}")


def point_record(
    size_mib: float, elements: int, kernel: str, times: list[float], cache_bytes: float | None, empty_s: float | None
) -> dict[str, Any]:
    buffer_bytes = elements * ELEMENT_BYTES
    nbytes = analysis.bytes_per_iteration(kernel, buffer_bytes)
    median_s = statistics.median(times)
    marks, why = analysis.classify(median_s, nbytes, cache_bytes, empty_s)
    return {
        "size_mib": size_mib,
        "elements": elements,
        "buffer_bytes": buffer_bytes,
        "bytes_per_iteration": nbytes,
        "iterations": len(times),
        "warmup_iterations": WARMUP_ITERATIONS,
        "iteration_times_s": times,
        "median_s": median_s,
        "min_s": min(times),
        "max_s": max(times),
        "median_gbps": analysis.gbps(nbytes, median_s),
        "marks": marks,
        "why": why,
        "bytes_vs_cache": nbytes / cache_bytes if cache_bytes else None,
    }
