"""A roofline document's stated times against the windows or per-call times they summarise: each
timed record's median, spread, launch-bound flag and CUDA-graph time, the empty-kernel floors, and
each shape's SM clocks. Standard library only."""

from __future__ import annotations

from typing import Any

from harness.analysis import timing
from harness.analysis.roofline import reading, timings


def timed_discrepancies(where: str, timed: dict[str, Any], kernel_rule: bool = False) -> list[str]:
    """A stated time per call (and call count, spread, launch-bound flag, graph time) against the
    windows or per-call times they summarise (KERNEL_RULE: the document's kernel-only rule)."""
    if "windows" in timed:
        return _window_discrepancies(where, timed, kernel_rule)
    times = timed.get("times_s")
    median = timings.median_of(times)
    if median is None or not isinstance(times, list):  # a median only of a list
        return [f"{where}: no per-call times_s to recompute median_s from"]
    found = []
    if reading.differs(timed.get("median_s"), median):
        found.append(
            f"{where}: median_s {timed.get('median_s')} but the median of its {len(times)} per-call times_s is {median}"
        )
    if timed.get("iterations") != len(times):
        found.append(f"{where}: iterations {timed.get('iterations')} but times_s holds {len(times)} calls")
    return found


def _window_discrepancies(where: str, timed: dict[str, Any], kernel_rule: bool) -> list[str]:
    figures = timing.timing_figures(timed, kernel_rule)
    if figures["per_call_s"] is None:
        return [f"{where}: no usable windows (calls, seconds) to recompute median_s from"]
    found = [
        f"{where}: window {i} per_call_s {w['per_call_s']} but its {w['calls']} calls took {w['seconds']} s"
        for windows in (timed["windows"], timing.graph_windows(timed.get("graph")) or [])
        for i, w in enumerate(windows)
        if "per_call_s" in w and reading.differs(w["per_call_s"], w["seconds"] / w["calls"])
    ]
    if reading.differs(timed.get("median_s"), figures["per_call_s"]):
        found.append(
            f"{where}: median_s {timed.get('median_s')} but the median of its {figures['windows']} "
            f"window means is {figures['per_call_s']}"
        )
    if "window_spread" in timed and reading.differs(timed["window_spread"], figures["window_spread"]):
        found.append(
            f"{where}: window_spread {timed['window_spread']} != {figures['window_spread']} (from its windows)"
        )
    if "launch_bound" in timed and timed["launch_bound"] != figures["launch_bound"]:
        by_kernel = kernel_rule and figures["kernel_s"] is not None
        seconds, which = (figures["kernel_s"], "kernel-only") if by_kernel else (figures["per_call_s"], "eager")
        found.append(
            f"{where}: launch_bound {timed['launch_bound']} but its {seconds * 1e6:.3g} us {which} "
            f"per call says {figures['launch_bound']} (under {timing.LAUNCH_BOUND_S * 1e6:g} us)"
        )
    graph = timed.get("graph")
    if (
        isinstance(graph, dict)
        and "unavailable" not in graph
        and reading.differs(graph.get("median_s"), figures["kernel_s"])
    ):
        found.append(f"{where}: graph.median_s {graph.get('median_s')} != {figures['kernel_s']} (from its windows)")
    return found


def sample_discrepancies(document: dict[str, Any]) -> list[str]:
    """Medians of samples the document keeps (probe contract 2 on): the empty-kernel floor (its windows
    from contract 3 on) and each shape's SM clock (read around its windows from contract 3 on)."""
    found = []
    facts = document.get("device_facts", {})
    floor = (
        timing.per_call_s(facts.get("launch_floor_windows"))
        if "launch_floor_windows" in facts
        else timings.median_of(facts.get("launch_floor_times_s"))
    )
    source = "launch_floor_windows" if "launch_floor_windows" in facts else "launch_floor_times_s"
    if floor is not None and reading.differs(facts.get("launch_floor_s"), floor):
        found.append(f"device_facts.launch_floor_s {facts.get('launch_floor_s')} but the median of {source} is {floor}")
    kernel_floor = timing.per_call_s(facts.get("kernel_floor_windows"))  # contract 4 on, on a GPU
    if "kernel_floor_windows" in facts and reading.differs(facts.get("kernel_floor_s"), kernel_floor):
        found.append(
            f"device_facts.kernel_floor_s {facts.get('kernel_floor_s')} but the median of "
            f"kernel_floor_windows' means is {kernel_floor}"
        )
    for view in reading.dtype_documents(document).values():
        for shape in reading.measured(view):
            found += _clock_discrepancies(shape)
    return found


def _clock_discrepancies(shape: dict[str, Any]) -> list[str]:
    clocks = shape.get("clocks")
    if "windows" in shape and isinstance(clocks, dict) and "unavailable" not in clocks:
        again = timing.clocks_of(shape["windows"])
        return (
            []
            if again == clocks
            else [
                f"measurement {shape['label']}: clocks {clocks} are not the NVML readings around its windows ({again})"
            ]
        )
    samples = clocks.get("sm_clock_mhz_samples") if isinstance(clocks, dict) else None
    if not isinstance(clocks, dict) or not isinstance(samples, list):
        return []
    median = timings.median_of(samples)
    if clocks.get("samples") != len(samples) or reading.differs(clocks.get("sm_clock_mhz_median"), median):
        return [
            f"measurement {shape['label']}: clocks state {clocks.get('samples')} samples, median "
            f"{clocks.get('sm_clock_mhz_median')} MHz, but sm_clock_mhz_samples give {len(samples)}, "
            f"{median} MHz"
        ]
    return []
