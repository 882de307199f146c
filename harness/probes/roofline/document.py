"""What the roofline document states, by the analysis rules `dossier verify` recomputes it with
(harness.analysis.roofline, harness.analysis.timing), so the document and its verification cannot
drift apart: a dtype's precision, the timing rule, a shape's prediction and what is stated of each
timed shape (its times, rates and explanation)."""

from __future__ import annotations

from types import ModuleType
from typing import Any

from harness.analysis import timing as timing_rules
from harness.analysis.roofline import gemm_shapes
from harness.analysis.roofline import model as analysis
from harness.analysis.roofline.explanation import explain
from harness.probes.contract import unavailable
from harness.probes.roofline.nvml import NVML_REFRESH


def precision_record(side: ModuleType, dtype: str, device: str) -> dict[str, Any]:
    """The dtype's torch types, element widths and GEMM path on DEVICE (SIDE: the probe's torch side, gemms)."""
    in_bytes, out_bytes = analysis.DTYPE_WIDTHS[dtype]
    return {
        "input_dtype": str(side.TORCH_DTYPES[dtype]),
        "output_dtype": "torch.bfloat16" if dtype == "fp8" else str(side.TORCH_DTYPES[dtype]),
        "input_bytes": in_bytes,
        "output_bytes": out_bytes,
        "path": side.path_description(dtype, device),
    }


def timing_record(gap_ratio: float, device: str) -> dict[str, Any]:
    """How every shape was timed, with the evidence the lengths come from."""
    r = timing_rules
    return {
        "method": "windows",
        "rule": r.RULE,
        "source": r.TIMING_SOURCE,
        "warmup_s": r.WARMUP_S,
        "warmup_min_calls": r.WARMUP_MIN_CALLS,
        "window_s": r.WINDOW_S,
        "windows": r.WINDOWS,
        "gap_ratio": gap_ratio,
        "gap_why": (
            "idle after each burst so the power limiter recovers between windows and shapes"
            if gap_ratio
            else "a CPU has no power limiter: no idle gaps"
        ),
        "launch_bound_s": r.LAUNCH_BOUND_S,
        "launch_bound_headline": r.KERNEL_ONLY,
        "launch_bound_headline_why": r.LAUNCH_BOUND_HEADLINE_WHY,
        "graph": (
            {"calls": r.GRAPH_CALLS, "window_s": r.GRAPH_WINDOW_S, "below_s": r.GRAPH_BELOW_S}
            if device == "cuda"
            else unavailable("CUDA graphs need a GPU")
        ),
        "spread_scope": dict(r.SPREAD_SCOPE),
        "nvml": NVML_REFRESH,
    }


def predict(
    shape: gemm_shapes.Shape, roofs: dict[str, Any], known: bool, in_bytes: int, out_bytes: int
) -> dict[str, Any]:
    """A shape's prediction on the roofs (KNOWN: both are numbers); without a compute roof, its FLOPs, bytes
    and intensity, and why there is no bound or attainable rate."""
    if known:
        return {
            **shape.as_dict(),
            **analysis.classify(
                shape.m, shape.n, shape.k, in_bytes, out_bytes, roofs["peak_tflops"], roofs["bandwidth_gbps"]
            ),
        }
    flops = analysis.gemm_flops(shape.m, shape.n, shape.k)
    nbytes = analysis.gemm_min_bytes(shape.m, shape.n, shape.k, in_bytes, out_bytes)
    why = unavailable("no compute roof for this dtype on this device")
    return {
        **shape.as_dict(),
        "flops": flops,
        "min_bytes": nbytes,
        "ai_flop_per_byte": flops / nbytes,
        "bound": why,
        "attainable_tflops": why,
    }


def stated(
    record: dict[str, Any], prediction: dict[str, Any], context: dict[str, Any], rotation: dict[str, Any], clocks: Any
) -> dict[str, Any]:
    """What the document states of one timed shape (RECORD: its first call, warm-up, windows and any CUDA-graph
    replay): the eager time per call (median_s) and its spread, the launch-bound flag, the headline time and
    what it is timed from (kernel-only for a launch-bound shape replayed from a CUDA graph, else eager), the
    rates at the headline time, the eager rate beside a kernel-only headline (the host's launch rate), and
    the explanation."""
    figures = timing_rules.timing_figures(record, kernel_headline=True)
    eager, headline = figures["per_call_s"], figures["headline_s"]
    tflops = prediction["flops"] / headline / 1e12
    entry = {
        **record,
        "median_s": eager,
        "window_spread": figures["window_spread"],
        "launch_bound": bool(figures["launch_bound"]),
        **rotation,
        "rate_basis": figures["rate_basis"],
        "headline_s": headline,
        "achieved_tflops": tflops,
        "effective_gbps": prediction["min_bytes"] / headline / 1e9,
        "fraction_of_attainable": tflops / prediction["attainable_tflops"],
        "clocks": clocks,
    }
    if figures["rate_basis"] == timing_rules.KERNEL_ONLY:
        entry["eager_tflops"] = prediction["flops"] / eager / 1e12
    entry["explanation"] = explain(prediction, entry, context)
    return entry
