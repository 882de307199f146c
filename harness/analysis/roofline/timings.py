"""The roofline's windowed timing figures, recomputed from the raw windows (`windows`: calls and
seconds of each, from probe contract 3 on; `times_s`, one time per call, before): a record's time per
call, a shape's headline time and what it is timed from (kernel-only or eager, by the document's rule),
the fusion chain's times, and each shape's burst window with its rates. Standard library only."""

from __future__ import annotations

import math
import statistics
from typing import Any

from harness.analysis import timing
from harness.analysis.roofline import model as rl
from harness.analysis.roofline import reading
from harness.analysis.units import is_number


def median_of(times: Any) -> float | None:
    """The median of a list of per-call times, or None when there is no such list."""
    # set(map(type, ...)) first: the same answer for parsed JSON at C speed (verify asks ~200 times a bundle)
    if (
        isinstance(times, list)
        and times
        and (set(map(type, times)) <= {int, float} or all(is_number(t) for t in times))
    ):
        return statistics.median(times)
    return None


def windowed(document: dict[str, Any]) -> bool:
    """Timed in windows (probe contract 3 on, which requires `timing`): the burst best is then taken over
    the fixed burst-best shapes."""
    timing_record = document.get("timing")
    return isinstance(timing_record, dict) and timing_record.get("method") == "windows"


def kernel_headline(document: dict[str, Any]) -> bool:
    """The document follows the kernel-only rule (probe contract 4 on, stated in timing.launch_bound_headline):
    a launch-bound shape replayed from a CUDA graph is headlined by its kernels' own time. Documents before
    headline every shape by its eager time, and are read so."""
    return windowed(document) and document["timing"].get("launch_bound_headline") == timing.KERNEL_ONLY


def seconds_of(timed: dict[str, Any]) -> float | None:
    """Eager time per call of a timed record: the median of its window means (contract 3 on), else the
    median of its per-call times."""
    if "windows" in timed:
        return timing.per_call_s(timed.get("windows"))
    return median_of(timed.get("times_s"))


def headline_of(document: dict[str, Any], shape: dict[str, Any]) -> tuple[float | None, str]:
    """A measured shape's headline time per call and what it is timed from (timing.KERNEL_ONLY or
    timing.EAGER), by the document's rule."""
    if "windows" in shape:
        return timing.headline(shape, kernel_headline(document))
    return seconds_of(shape), timing.EAGER


def as_timed(document: dict[str, Any], shape: dict[str, Any]) -> dict[str, Any]:
    """The measurement with its times recomputed from its windows (or per-call times): the eager median_s,
    and the headline time and what it is timed from."""
    headline_s, basis = headline_of(document, shape)
    return {**shape, "median_s": seconds_of(shape), "headline_s": headline_s, "rate_basis": basis}


def fusion_medians(fusion: Any) -> tuple[float | None, float | None]:
    """(unfused, fused) time per call of the fusion chain, recomputed; None where not timed."""
    if not isinstance(fusion, dict):
        return None, None
    unfused, fused = (seconds_of(fusion[v]) if isinstance(fusion.get(v), dict) else None for v in ("unfused", "fused"))
    return unfused, fused


BURST_RULE = (
    "every roofline rate is a burst: one shape's calls timed in short windows (tens of milliseconds, "
    "idle between them so the power cap does not engage) at the clock the card held then; the sustained "
    "rate under a long load is the stress probe's steady state (docs/stress.md)"
)


LEGACY_BURST_RULE = (
    "every roofline rate is a burst: the median call of one shape's short timed window (milliseconds "
    "to a few hundred, each call timed alone), at whatever clock the card held then; the sustained "
    "rate under a long load is the stress probe's steady state (docs/stress.md)"
)


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def burst_window(shape: dict[str, Any], basis: str = timing.EAGER) -> dict[str, Any]:
    """How a shape's headline rate was measured: its window (ms: the median window's length in contract 3,
    the CUDA-graph windows' for a kernel-only headline, the sum of the timed calls before), the calls in
    it, the median SM clock NVML gave around the shape's windows, and whether the power cap was flagged then."""
    if "windows" in shape:
        timed = timing.graph_windows(shape.get("graph")) if basis == timing.KERNEL_ONLY else shape["windows"]
        windows = [w for w in timed if isinstance(w, dict)] if isinstance(timed, list) else []
        seconds = [w["seconds"] for w in windows if is_number(w.get("seconds"))]
        calls = [w["calls"] for w in windows if isinstance(w.get("calls"), int)]
        window = {
            "label": shape.get("label"),
            "window_ms": (_median(seconds) or 0.0) * 1e3,
            "timed_calls": sum(calls),
            "windows": len(windows),
        }
        readings = [w.get(k) for w in windows for k in ("nvml_before", "nvml_after")]
        powers = [r["power_instant_w"] for r in readings if isinstance(r, dict) and is_number(r.get("power_instant_w"))]
        window["power_instant_w"] = _median(powers)
    else:
        times = shape.get("times_s")
        times = times if isinstance(times, list) else []
        plain = set(map(type, times)) <= {int, float}  # parsed JSON times: summed at C speed
        window = {
            "label": shape.get("label"),
            "window_ms": math.fsum(times if plain else (t for t in times if is_number(t))) * 1e3,
            "timed_calls": len(times),
        }
    clocks = shape.get("clocks")
    if not isinstance(clocks, dict) or "unavailable" in clocks:
        why = clocks["unavailable"] if isinstance(clocks, dict) else "no clock samples recorded"
        return {**window, "sm_clock_mhz": None, "power_cap": {"unavailable": why}}
    samples = clocks.get("sm_clock_mhz_samples")
    clock = median_of(samples) if isinstance(samples, list) else clocks.get("sm_clock_mhz_median")
    reasons = clocks.get("clock_event_reasons")
    reasons = reasons if isinstance(reasons, list) else []
    return {
        **window,
        "sm_clock_mhz": clock if is_number(clock) else None,
        "power_cap": "flagged (sw_power_cap)" if "sw_power_cap" in reasons else "not flagged",
    }


def tflops(document: dict[str, Any], shape: dict[str, Any], seconds: float | None) -> float | None:
    p = reading.predictions(document).get(shape["label"], {})
    dims: list[Any] = [p.get(d) for d in "mnk"]  # numbers where _is_number says so, below
    return rl.gemm_flops(*dims) / seconds / 1e12 if seconds and all(is_number(d) for d in dims) else None


def burst_windows(document: dict[str, Any]) -> list[dict[str, Any]]:
    """Every measured shape's headline burst rate (FLOPs / its headline time per call) and its window,
    and (contract 3 on) what the rate is timed from (rate_basis), the spread across its windows, the
    launch-bound flag and, where the calls were replayed from a CUDA graph, both rates: kernel-only (the
    GPU's) and eager (the host's launch rate for an eager caller on this host), and the host's launch
    cost per call."""
    rows = []
    for shape in reading.measured(document):
        headline_s, basis = headline_of(document, shape)
        row = burst_window(shape, basis)
        row["burst_tflops"] = tflops(document, shape, headline_s)
        if "windows" in shape:
            figures = timing.timing_figures(shape, kernel_headline(document))
            kernel, host = figures["kernel_s"], figures["host_launch_s"]
            spread = figures["graph_spread"] if basis == timing.KERNEL_ONLY else figures["window_spread"]
            row.update(
                rate_basis=basis,
                launch_bound=figures["launch_bound"],
                window_spread=spread,
                kernel_tflops=tflops(document, shape, kernel) if kernel else None,
                eager_tflops=tflops(document, shape, figures["per_call_s"]) if kernel else None,
                eager_spread=figures["window_spread"] if kernel else None,
                host_launch_us=host * 1e6 if host is not None else None,
            )
        rows.append(row)
    return rows
