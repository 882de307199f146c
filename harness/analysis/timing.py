"""How calls are timed as bursts (harness.probes.timing.Bursts: the roofline's GEMMs, its launch floor
and fusion chain), and the figures recomputed from the windows it records. Standard library only.

The rules are the lead's measurements on the lent H200 SXM (2026-12-01 12:15 UTC, a fresh machine,
`OUT=$OUT bash bench/gpu_causes.sh`: bench/roofline_causes.py, three passes; raw windows kept in
tests/fixtures/roofline/causes-h200.json):
- timing every call with its own pair of CUDA events measures the host's launch path for any call
  under ~40 us (an empty kernel read 16-25 us that way) and leaves the GPU idle at ~1500 MHz:
  square-256 1.2 TFLOPS per call against 2.0-2.2 in windows;
- WINDOWS (one event pair around N back-to-back calls, ~25 ms of calls) after a warm-up repeat
  within 0.3-0.7% for most shapes at ~1965 MHz;
- the power cap engages 70-100 ms into a heavy GEMM from idle (800 TFLOPS at 1980 MHz, then
  680-700 at ~1500 MHz) and the clock takes 0.2-0.4 s to come back once it stops; a ~60 ms warm-up
  run straight into the first window capped that window (square-8192 714-752 TFLOPS against
  777-785 in windows 2 and 3, gate_up-prefill-8192 699-771 against ~800) while 25 ms windows
  separated by 50 ms idle (twice their length) held ~800;
- a CUDA graph replay of the same calls gives the kernels alone: square-256 8.8-11.6 TFLOPS
  (~3 us a call) against 2.1 eager (~16 us a call): the difference is the host's launch cost.

So every shape is timed as bursts at full clock: a warm-up by time, then WINDOWS windows, each burst
(the warm-up too) followed by idle GAP_RATIO times its length, so the limiter never engages
mid-sweep and "burst" means the same thing for every shape and every run.
"""

from __future__ import annotations

import math
import statistics
from typing import Any

from harness.analysis.units import is_number

TIMING_SOURCE = (
    "the lead's call on the lent H200 SXM, 2026-12-01 12:15 UTC, bench/gpu_causes.sh "
    "(bench/roofline_causes.py, 3 passes; tests/fixtures/roofline/causes-h200.json)"
)

WARMUP_S = 0.02  # warm-up by time per shape (and per dtype: a new dtype's first call took 110-138 ms)
WARMUP_MIN_CALLS = 3
WINDOW_S = 0.02  # one timed window: ~20 ms of back-to-back calls (25 ms windows repeated within 0.3-0.7%)
WINDOWS = 3
MIN_CALLS_PER_WINDOW = 1  # a call longer than the window is timed alone (fp32 8192^3: ~22 ms)
MAX_CALLS_PER_WINDOW = 20000
GAP_RATIO = 2.0  # idle after each burst, as a multiple of the burst's length (50 ms after 25 ms held ~800 TFLOPS)
GPU_GAP_RATIO, CPU_GAP_RATIO = GAP_RATIO, 0.0  # a CPU has no power limiter to let recover
LAUNCH_BOUND_S = 20e-6  # an eager call under 20 us: its rate is the host's launch rate
GRAPH_CALLS = 50  # calls captured in one CUDA graph
GRAPH_WINDOW_S = 0.002  # one graph window: replays until ~2 ms of kernels (50 calls of 3 us are only 150 us)
PREHEAT_S = 0.1  # a medium GEMM before the sweep, so the first shapes do not start from the idle clock
PREHEAT_SHAPE = (2048, 2048, 2048)

SPREAD_SCOPE = {
    "windows": "across the timed windows of one shape in one run, tens of milliseconds apart",
    "graph": "across the CUDA-graph windows of one shape in one run, milliseconds apart",
    "run_to_run": "across separate dossiers (separate processes and machine starts): the catalogue's "
    "measured run-to-run spread for this SKU, recorded in the bundle at run time",
}
RULE = (
    f"each shape: its first call alone (lazy loading, heuristics), a warm-up of at least {WARMUP_S * 1e3:g} ms "
    f"and {WARMUP_MIN_CALLS} calls, then {WINDOWS} windows of about {WINDOW_S * 1e3:g} ms, each one pair of "
    f"CUDA events around back-to-back calls (the call's time = the window's time / its calls); on a GPU every "
    f"burst (the warm-up too) is followed by idle {GAP_RATIO:g} times its length so that the power limiter never "
    f"engages and every shape is a burst at full clock; the shape's time is the median of its window means; "
    f"on a GPU a shape whose eager call is under {2 * LAUNCH_BOUND_S * 1e6:g} us is also replayed from a CUDA "
    f"graph (the kernels' own time), and one whose kernels take under {LAUNCH_BOUND_S * 1e6:g} us is "
    f"launch-bound: its headline is that kernel-only rate, its eager rate the host's launch rate"
)

# What a shape's headline rate is timed from. From probe contract 4 on (the document's
# timing.launch_bound_headline says so) a launch-bound shape is headlined by its kernel-only time, as
# kernel benchmarks time small kernels; every other shape, and every shape of a document before, by its
# eager windows. Contract 4 replays every shape whose eager call is under GRAPH_BELOW_S and calls a
# replayed shape launch-bound when its KERNELS take under LAUNCH_BOUND_S: the eager time moves run to
# run (o-decode-1 read 19.3, 17.6 and 22.6 us in the three H200 runs, so an eager rule replayed and
# headlined it in two runs of three) while the kernels' time repeats (12.7-12.8 us).
KERNEL_ONLY, EAGER = "kernel_only", "eager"
GRAPH_BELOW_S = 2 * LAUNCH_BOUND_S
LAUNCH_BOUND_HEADLINE_WHY = (
    "a launch-bound shape's headline is its kernel-only rate (the same calls replayed from a CUDA graph: what the GPU "
    "does); its eager rate is the host's launch rate for an eager caller on this host, host-dependent and noisy run "
    "to run: on the H200 (2026-12-01 13:20 UTC, bench/gpu_roofline_repeat.sh, three probe processes) the eager rates "
    "of square-256, square-1024, o-decode-1, o-decode-64 and awkward-1000 varied 15-47% while their kernel-only "
    "rates repeated within 0.2-1.2%"
)


def calls_per_window(per_call_s: float, window_s: float = WINDOW_S) -> int:
    """How many back-to-back calls fill one window, from the warm-up's time per call."""
    if not per_call_s > 0:
        return MIN_CALLS_PER_WINDOW
    return max(MIN_CALLS_PER_WINDOW, min(MAX_CALLS_PER_WINDOW, math.ceil(window_s / per_call_s)))


def gap_after(burst_s: float, ratio: float) -> float:
    """Idle after a burst of BURST_S seconds (warm-up or window) so the power limiter recovers."""
    return max(0.0, ratio * burst_s)


def window_means(windows: Any) -> list[float] | None:
    """Each window's time per call (its seconds / its calls), or None when the windows are malformed."""
    if not isinstance(windows, list) or not windows:
        return None
    means = []
    for window in windows:
        seconds, calls = (window.get("seconds"), window.get("calls")) if isinstance(window, dict) else (None, None)
        if not (
            is_number(seconds) and seconds > 0 and isinstance(calls, int) and not isinstance(calls, bool) and calls > 0
        ):
            return None
        means.append(seconds / calls)
    return means


def per_call_s(windows: Any) -> float | None:
    """A timed thing's time per call: the median of its window means."""
    means = window_means(windows)
    return statistics.median(means) if means else None


def spread(values: list[float]) -> float | None:
    """(max - min) / median, the spread every document and the report use; None for fewer than two."""
    if len(values) < 2:
        return None
    middle = statistics.median(values)
    return (max(values) - min(values)) / middle if middle else None


def window_spread(windows: Any) -> float | None:
    """The spread across one shape's windows in one run (SPREAD_SCOPE["windows"])."""
    means = window_means(windows)
    return spread(means) if means else None


def launch_bound(eager_s: float | None) -> bool | None:
    """An eager call under LAUNCH_BOUND_S measures the host's launch rate, not the GPU."""
    return None if eager_s is None else eager_s < LAUNCH_BOUND_S


def replayed_launch_bound(record: dict[str, Any], kernel_headline: bool) -> bool | None:
    """Whether a timed shape is launch-bound: under the kernel-only rule (probe contract 4 on) by its kernels'
    own time where they were replayed from a CUDA graph, else (and before) by its eager time."""
    kernel = kernel_s(record.get("graph"))
    if kernel_headline and kernel is not None:
        return kernel < LAUNCH_BOUND_S
    return launch_bound(per_call_s(record.get("windows")))


def graph_windows(graph: Any) -> list[dict[str, Any]] | None:
    """The CUDA-graph replay's windows (each: replays, the calls they ran, seconds), or None."""
    if not isinstance(graph, dict) or "unavailable" in graph or not isinstance(graph.get("windows"), list):
        return None
    return graph["windows"]


def kernel_s(graph: Any) -> float | None:
    """Per-call time of the kernels alone: the median of the graph windows' means."""
    return per_call_s(graph_windows(graph))


def host_launch_s(eager_s: float | None, graph: Any) -> float | None:
    """Eager minus kernel-only time per call: what the host's launch path adds to each call."""
    kernel = kernel_s(graph)
    return eager_s - kernel if (eager_s is not None and kernel is not None) else None


def headline(record: dict[str, Any], kernel_headline: bool) -> tuple[float | None, str]:
    """A timed shape's headline time per call and what it is timed from (KERNEL_ONLY or EAGER): under the
    kernel-only rule (probe contract 4 on) a launch-bound shape whose calls were replayed from a CUDA graph
    is headlined by the kernels' own time; otherwise by its eager windows."""
    eager, kernel = per_call_s(record.get("windows")), kernel_s(record.get("graph"))
    if kernel_headline and kernel is not None and replayed_launch_bound(record, kernel_headline):
        return kernel, KERNEL_ONLY
    return eager, EAGER


def timing_figures(record: dict[str, Any], kernel_headline: bool = False) -> dict[str, Any]:
    """A windowed record's figures: per-call time, spread across windows, launch-bound, the kernel-only
    time and host launch cost where a graph was replayed, and the headline time under the document's rule."""
    eager = per_call_s(record.get("windows"))
    means = window_means(record.get("windows")) or []
    graph = record.get("graph")
    headline_s, basis = headline(record, kernel_headline)
    return {
        "per_call_s": eager,
        "window_means_s": means,
        "window_spread": spread(means) if means else None,
        "windows": len(means),
        "launch_bound": replayed_launch_bound(record, kernel_headline),
        "kernel_s": kernel_s(graph),
        "graph_spread": window_spread(graph_windows(graph)),
        "host_launch_s": host_launch_s(eager, graph),
        "headline_s": headline_s,
        "rate_basis": basis,
    }


def clocks_of(windows: Any) -> dict[str, Any] | None:
    """The SM clocks and clock-event reasons NVML reported around a shape's windows (None: no readings)."""
    around = [w.get(side) for w in windows or [] if isinstance(w, dict) for side in ("nvml_before", "nvml_after")]
    readings = [r for r in around if isinstance(r, dict) and "unavailable" not in r]
    clocks = [r["sm_clock_mhz"] for r in readings if is_number(r.get("sm_clock_mhz"))]
    if not clocks:
        return None
    reasons = sorted(
        {x for r in readings if isinstance(r.get("clock_event_reasons"), list) for x in r["clock_event_reasons"]}
    )
    return {
        "samples": len(clocks),
        "sm_clock_mhz_samples": clocks,
        "sm_clock_mhz_median": statistics.median(clocks),
        "clock_event_reasons": reasons,
    }
