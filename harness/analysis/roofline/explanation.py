"""A measured GEMM explained: where it landed against its roof and why, in words built only from
numbers in the document (the measured time, the measured empty-launch floor, the tile model's waves
and padding, the alignment of the rows, and the SM clocks NVML saw: harness.analysis.roofline.causes).
Standard library only. The same function runs in the probe and in `dossier verify`.
"""

from __future__ import annotations

from typing import Any

from harness.analysis import timing
from harness.analysis.roofline import causes as rules
from harness.analysis.roofline import model as rl
from harness.analysis.units import is_number

NEAR_ROOF = 0.80  # within 20% of the attainable rate counts as "near the roof"


def _mib(nbytes: float) -> str:
    return f"{nbytes / 2**20:.1f} MiB"


def explain(prediction: dict[str, Any], measurement: dict[str, Any], context: dict[str, Any]) -> dict[str, Any]:
    """Why a measured GEMM landed where it did, from the measured facts only.

    prediction: m, n, k, flops, min_bytes, ai_flop_per_byte, bound, attainable_tflops.
    measurement: median_s (the eager time per call) and, optionally, clocks {sm_clock_mhz_median,
    clock_event_reasons}, graph (a CUDA-graph replay), and rate_basis with headline_s: a kernel-only
    headline (probe contract 4 on) is explained from the kernels' own time, the eager rate said beside it.
    context: peak_tflops, bandwidth_gbps, in_bytes, out_bytes, path, launch_floor_s, kernel_floor_s, and
    on a GPU sm_count, tile_m, tile_n, max_sm_clock_mhz (each a number or unavailable).
    """
    kernel_only = measurement.get("rate_basis") == timing.KERNEL_ONLY
    seconds = measurement["headline_s"] if kernel_only else measurement["median_s"]
    achieved = rl.gemm_flops(prediction["m"], prediction["n"], prediction["k"]) / seconds / 1e12
    fraction = achieved / prediction["attainable_tflops"]
    bound, near = prediction["bound"], fraction >= NEAR_ROOF
    parts = [_headline(prediction, context, seconds, kernel_only)]
    causes = [] if near else rules.causes(prediction, measurement, context, seconds, kernel_only)
    if near:
        parts += _near_roof(bound, fraction, measurement, context)
    elif causes:
        parts.append(f"Below {NEAR_ROOF:.0%} of attainable because: " + "; ".join(c["detail"] for c in causes) + ".")
        if bound == "compute":
            parts.append("The bound removes the memory excuse; it does not certify the kernel.")
    else:
        parts.append(
            f"Below {NEAR_ROOF:.0%} of attainable and unexplained: "
            + rules.ruled_out(prediction, context, seconds, measurement, kernel_only)
            + "."
        )
    if kernel_only:
        parts.append(_eager_caller(prediction, measurement["median_s"], seconds))
    parts.append(f"Path: {context['path']}.")
    return {
        "verdict": ("near_" if near else "below_") + bound + "_roof",
        "causes": causes,
        "explained": near or bool(causes),
        "text": " ".join(parts),
    }


def _headline(prediction: dict[str, Any], context: dict[str, Any], seconds: float, kernel_only: bool) -> str:
    """The bound, the rate at the time explained and its share of the roof that bounds it."""
    achieved = rl.gemm_flops(prediction["m"], prediction["n"], prediction["k"]) / seconds / 1e12
    effective_gbps = prediction["min_bytes"] / seconds / 1e9
    fraction = achieved / prediction["attainable_tflops"]
    ai = prediction["ai_flop_per_byte"]
    ridge = rl.ridge_flop_per_byte(context["peak_tflops"], context["bandwidth_gbps"])
    if prediction["bound"] == "memory":
        head = (
            f"Memory-bound (AI {ai:.1f} < ridge {ridge:.1f} FLOP/B): it moved at least "
            f"{_mib(prediction['min_bytes'])} at {effective_gbps:.0f} GB/s, {fraction:.0%} of the "
            f"{context['bandwidth_gbps']:.0f} GB/s roof ({achieved:.3g} TFLOPS)."
        )
    else:
        head = (
            f"Compute-side (AI {ai:.1f} >= ridge {ridge:.1f} FLOP/B): {achieved:.3g} TFLOPS, "
            f"{fraction:.0%} of the {context['peak_tflops']:.4g} TFLOPS peak."
        )
    if kernel_only:
        head = f"Kernel-only (the calls replayed from a CUDA graph, {seconds * 1e6:.2f} us a call): " + head
    return head


def _near_roof(bound: str, fraction: float, measurement: dict[str, Any], context: dict[str, Any]) -> list[str]:
    """Near its roof, and where it beat the roof, what that says about the roof (and the cache)."""
    parts = [f"Near its roof (>= {NEAR_ROOF:.0%} of attainable)."]
    if fraction > 1:
        roof = "bandwidth" if bound == "memory" else "peak"
        parts.append(
            f"It beats the {roof} roof by {fraction - 1:.0%}: the roof's {roof} figure is "
            f"below what this access pattern reached."
        )
        cache = context.get("cache_mib")
        if measurement.get("cache_defeated") is False and is_number(cache):
            parts.append(
                f"Its inputs rotated over only {measurement['rotated_mib']:.0f} MiB, under twice "
                f"the {cache:.0f} MiB cache, so part of them came from cache."
            )
    return parts


def _eager_caller(prediction: dict[str, Any], eager: float, seconds: float) -> str:
    """Beside a kernel-only headline: the rate an eager caller on this host gets."""
    flops = rl.gemm_flops(prediction["m"], prediction["n"], prediction["k"])
    return (
        f"Called eagerly it is launch-bound: an eager caller on this host gets "
        f"{flops / eager / 1e12:.3g} TFLOPS ({eager * 1e6:.1f} us a call, "
        f"{(eager - seconds) * 1e6:.1f} us of it the host's launch path), the host's launch rate: "
        f"host-dependent and noisy run to run, so the headline is the kernels' own."
    )


def context_of(document: dict[str, Any]) -> dict[str, Any]:
    """What `explain` reads of a roofline document besides the GEMM: its roofs, widths, path and device facts."""
    facts, roofs, precision = document["device_facts"], document["roofs"], document["precision"]
    return {
        "peak_tflops": roofs["peak_tflops"],
        "bandwidth_gbps": roofs["bandwidth_gbps"],
        "in_bytes": precision["input_bytes"],
        "out_bytes": precision["output_bytes"],
        "path": precision["path"],
        "launch_floor_s": facts.get("launch_floor_s"),
        "sm_count": facts.get("sm_count"),
        "tile_m": facts.get("tile_m"),
        "tile_n": facts.get("tile_n"),
        "max_sm_clock_mhz": facts.get("max_sm_clock_mhz"),
        "cache_mib": facts.get("cache_mib"),
        "kernel_floor_s": facts.get("kernel_floor_s"),
        "contract_version": document.get("contract_version", 1),  # which causes the document's probe knew
    }
