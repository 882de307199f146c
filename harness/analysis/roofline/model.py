"""Roofline arithmetic: classify a GEMM before it runs, explain it after. Standard library only.

Formulas (Williams, Waterman, Patterson, "Roofline", CACM 2009):
    FLOPs            = 2 M N K                      (one multiply and one add per term)
    fewest bytes     = (M K + K N) x in_width + M N x out_width   (A, B read once, C written once)
    intensity (AI)   = FLOPs / fewest bytes          (FLOP/B)
    ridge            = peak / bandwidth              (FLOP/B)
    attainable       = min(peak, AI x bandwidth)
    bound            = "memory" when AI < ridge, else "compute"

The explanation after the run is built only from numbers in the document: the measured time,
the measured empty-launch floor, the tile model's waves and padding, the alignment of the rows,
and the SM clocks NVML saw. The same function runs in the probe and in `dossier verify`.
"""

from __future__ import annotations

import math
from typing import Any

from harness.analysis import timing
from harness.analysis.units import is_number

NEAR_ROOF = 0.80  # within 20% of the attainable rate counts as "near the roof"
LAUNCH_SHARE = 0.25  # an empty launch at >= 25% of the measured time is a cause
WAVE_EFFICIENCY = 0.90  # under 90% of SM-slots doing work in the last wave is a cause
# From probe contract 5 a memory-bound shape of one partial wave (under WAVE_EFFICIENCY of the SMs
# given a tile) is explained as under-filled: the lent H200's square-512 bf16 GEMM, 8 tiles of
# 128x256 on 132 SMs, ran at 9% of the memory roof kernel-only in all five runs of 2026-12-01 (its
# empty-kernel floor 24%, just under LAUNCH_SHARE) and no cause named it. Documents of contract 4 or
# older keep the causes they were stated with.
UNDER_FILLED_FROM = 5
# ... and only where the rate agrees with it: at most twice the busy SMs' even share of the roof. A
# higher rate means the library spread the work over more SMs than the assumed tile gives (split-K,
# as cuBLAS does for decode shapes: qkv-decode-64 drew 75% of the roof with 24 assumed tiles).
UNDER_FILLED_DRAW = 2.0
PADDING_SHARE = 0.02  # 2% or more of the computed output tiles being padding is a cause
CLOCK_SHARE = 0.95  # a median SM clock under 95% of the maximum is a cause
ALIGN_BYTES = 16  # tensor-core GEMM kernels want 16-byte aligned rows
POWER_REASONS = ("sw_power_cap", "hw_slowdown", "sw_thermal_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown")
REL_TOL = 1e-9

# Bytes per element of the inputs and of the output as the probe runs each dtype.
# fp8 runs through torch._scaled_mm with a bf16 output; tf32 keeps fp32 storage.
DTYPE_WIDTHS = {
    "bf16": (2, 2),
    "fp16": (2, 2),
    "fp8": (1, 2),
    "tf32": (4, 4),
    "fp32": (4, 4),
}


# The probe's input sets: each operand view starts on a 256-element boundary in its pool.
OPERAND_ALIGN_ELEMENTS = 256


def input_set_bytes(m: int, n: int, k: int, in_bytes: int) -> int:
    """Bytes of one rotated input set, A [m,k] and W [n,k], each padded to the view alignment."""

    def aligned(elements: int) -> int:
        return -(-elements // OPERAND_ALIGN_ELEMENTS) * OPERAND_ALIGN_ELEMENTS

    return (aligned(m * k) + aligned(n * k)) * in_bytes


def gemm_flops(m: int, n: int, k: int) -> int:
    return 2 * m * n * k


def gemm_min_bytes(m: int, n: int, k: int, in_bytes: int, out_bytes: int) -> int:
    return (m * k + k * n) * in_bytes + m * n * out_bytes


def ridge_flop_per_byte(peak_tflops: float, bandwidth_gbps: float) -> float:
    return peak_tflops * 1e12 / (bandwidth_gbps * 1e9)


def attainable_tflops(ai: float, peak_tflops: float, bandwidth_gbps: float) -> float:
    return min(peak_tflops, ai * bandwidth_gbps * 1e9 / 1e12)


def classify(
    m: int, n: int, k: int, in_bytes: int, out_bytes: int, peak_tflops: float, bandwidth_gbps: float
) -> dict[str, Any]:
    """The prediction for one GEMM on the given roofs."""
    flops = gemm_flops(m, n, k)
    nbytes = gemm_min_bytes(m, n, k, in_bytes, out_bytes)
    ai = flops / nbytes
    ridge = ridge_flop_per_byte(peak_tflops, bandwidth_gbps)
    return {
        "flops": flops,
        "min_bytes": nbytes,
        "ai_flop_per_byte": ai,
        "bound": "memory" if ai < ridge else "compute",
        "attainable_tflops": attainable_tflops(ai, peak_tflops, bandwidth_gbps),
    }


def tiling(m: int, n: int, tile_m: int, tile_n: int, sm_count: int) -> dict[str, Any]:
    """Output tiles over the SMs: waves, the last wave's fill, and the padding the tiles compute."""
    tiles_m, tiles_n = math.ceil(m / tile_m), math.ceil(n / tile_n)
    tiles = tiles_m * tiles_n
    waves = math.ceil(tiles / sm_count)
    last = tiles - (waves - 1) * sm_count
    padded = tiles_m * tile_m * tiles_n * tile_n
    return {
        "tile_m": tile_m,
        "tile_n": tile_n,
        "output_tiles": tiles,
        "sm_count": sm_count,
        "waves_exact": tiles / sm_count,
        "waves": waves,
        "last_wave_utilisation": last / sm_count,
        "wave_efficiency": tiles / (waves * sm_count),
        "padded_m": tiles_m * tile_m,
        "padded_n": tiles_n * tile_n,
        "padding_share": 1 - (m * n) / padded,
    }


def unaligned_dims(m: int, n: int, k: int, in_bytes: int, out_bytes: int) -> list[str]:
    """Row lengths (A and W rows of K, C rows of N) that are not a multiple of 16 bytes."""
    found = []
    if (k * in_bytes) % ALIGN_BYTES:
        found.append(f"K={k} ({k * in_bytes} B rows of A and B)")
    if (n * out_bytes) % ALIGN_BYTES:
        found.append(f"N={n} ({n * out_bytes} B rows of C)")
    return found


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
    m, n, k = prediction["m"], prediction["n"], prediction["k"]
    kernel_only = measurement.get("rate_basis") == timing.KERNEL_ONLY
    seconds = measurement["headline_s"] if kernel_only else measurement["median_s"]
    achieved = gemm_flops(m, n, k) / seconds / 1e12
    effective_gbps = prediction["min_bytes"] / seconds / 1e9
    fraction = achieved / prediction["attainable_tflops"]
    bound, ai = prediction["bound"], prediction["ai_flop_per_byte"]
    ridge = ridge_flop_per_byte(context["peak_tflops"], context["bandwidth_gbps"])
    if bound == "memory":
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
    near = fraction >= NEAR_ROOF
    causes = [] if near else _causes(prediction, measurement, context, seconds, kernel_only)
    parts = [head]
    if near:
        parts.append(f"Near its roof (>= {NEAR_ROOF:.0%} of attainable).")
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
    elif causes:
        parts.append(f"Below {NEAR_ROOF:.0%} of attainable because: " + "; ".join(c["detail"] for c in causes) + ".")
        if bound == "compute":
            parts.append("The bound removes the memory excuse; it does not certify the kernel.")
    else:
        parts.append(
            f"Below {NEAR_ROOF:.0%} of attainable and unexplained: "
            + _ruled_out(prediction, context, seconds, measurement, kernel_only)
            + "."
        )
    if kernel_only:
        eager = measurement["median_s"]
        parts.append(
            f"Called eagerly it is launch-bound: an eager caller on this host gets "
            f"{gemm_flops(m, n, k) / eager / 1e12:.3g} TFLOPS ({eager * 1e6:.1f} us a call, "
            f"{(eager - seconds) * 1e6:.1f} us of it the host's launch path), the host's launch rate: "
            f"host-dependent and noisy run to run, so the headline is the kernels' own."
        )
    parts.append(f"Path: {context['path']}.")
    return {
        "verdict": ("near_" if near else "below_") + bound + "_roof",
        "causes": causes,
        "explained": near or bool(causes),
        "text": " ".join(parts),
    }


def _tile_model(prediction: dict[str, Any], context: dict[str, Any]) -> dict[str, Any] | None:
    if not all(is_number(context.get(key)) for key in ("sm_count", "tile_m", "tile_n")):
        return None
    return tiling(
        prediction["m"], prediction["n"], int(context["tile_m"]), int(context["tile_n"]), int(context["sm_count"])
    )


def _floor(context: dict[str, Any], kernel_only: bool) -> tuple[Any, str]:
    """The empty kernel a time is compared with, timed as that time was: replayed from a CUDA graph for a
    kernel-only time (kernel_floor_s), eagerly otherwise (launch_floor_s); and its name in words."""
    if kernel_only:
        return context.get("kernel_floor_s"), "an empty kernel replayed from a CUDA graph"
    return context.get("launch_floor_s"), "the empty launch"


def _causes(
    prediction: dict[str, Any],
    measurement: dict[str, Any],
    context: dict[str, Any],
    seconds: float,
    kernel_only: bool = False,
) -> list[dict[str, str]]:
    m, n, k = prediction["m"], prediction["n"], prediction["k"]
    causes = []
    floor, _ = _floor(context, kernel_only)
    host, kernel = timing.host_launch_s(seconds, measurement.get("graph")), timing.kernel_s(measurement.get("graph"))
    if kernel_only:  # the kernels' own time: compared with an empty kernel timed the same way
        if is_number(floor) and floor >= LAUNCH_SHARE * seconds:
            causes.append(
                {
                    "cause": "kernel_floor",
                    "detail": (
                        f"the GPU's fixed cost per kernel: the kernel alone takes {seconds * 1e6:.2f} us, only "
                        f"{seconds / floor:.1f}x an empty kernel replayed the same way ({floor * 1e6:.2f} us)"
                    ),
                }
            )
    elif host is not None and kernel is not None:
        if host >= LAUNCH_SHARE * seconds:
            causes.append(
                {
                    "cause": "launch_overhead",
                    "detail": (
                        f"launch overhead: the eager call takes {seconds * 1e6:.1f} us, its kernel alone {kernel * 1e6:.1f} us "
                        f"(replayed from a CUDA graph), so {host * 1e6:.1f} us of each call is the host's launch path"
                    ),
                }
            )
    elif is_number(floor) and floor >= LAUNCH_SHARE * seconds:
        causes.append(
            {
                "cause": "launch_overhead",
                "detail": (
                    f"launch overhead: the median {seconds * 1e6:.1f} us is only {seconds / floor:.1f}x the "
                    f"measured empty-launch time of {floor * 1e6:.1f} us"
                ),
            }
        )
    model = _tile_model(prediction, context)
    if model and prediction["bound"] == "compute" and model["wave_efficiency"] < WAVE_EFFICIENCY:
        causes.append(
            {
                "cause": "wave_quantization",
                "detail": (
                    f"wave quantization: {model['output_tiles']} output tiles of {model['tile_m']}x{model['tile_n']} "
                    f"(assumed) over {model['sm_count']} SMs are {model['waves_exact']:.2f} waves, run as "
                    f"{model['waves']} with the last wave {model['last_wave_utilisation']:.0%} full, so "
                    f"{1 - model['wave_efficiency']:.0%} of the SM-slots idle"
                ),
            }
        )
    roof_share = prediction["min_bytes"] / seconds / 1e9 / context["bandwidth_gbps"]
    if (
        model
        and prediction["bound"] == "memory"
        and context.get("contract_version", 1) >= UNDER_FILLED_FROM
        and model["waves"] == 1
        and model["wave_efficiency"] < WAVE_EFFICIENCY
        and roof_share <= UNDER_FILLED_DRAW * model["wave_efficiency"]
    ):
        causes.append(
            {
                "cause": "under_filled",
                "detail": (
                    f"too few tiles to fill the GPU: {model['output_tiles']} output tiles of {model['tile_m']}x"
                    f"{model['tile_n']} (assumed) keep {model['output_tiles']} of {model['sm_count']} SMs busy "
                    f"({model['wave_efficiency']:.0%}), and it drew {roof_share:.0%} of the memory roof, which "
                    f"was measured with every SM streaming: what so few SMs draw"
                ),
            }
        )
    if model and prediction["bound"] == "compute" and model["padding_share"] >= PADDING_SHARE:
        causes.append(
            {
                "cause": "tile_padding",
                "detail": (
                    f"tile padding: {m}x{n} pads to {model['padded_m']}x{model['padded_n']}, so "
                    f"{model['padding_share']:.1%} of the computed output is waste"
                ),
            }
        )
    if model:
        bad = unaligned_dims(m, n, k, context["in_bytes"], context["out_bytes"])
        if bad:
            causes.append(
                {
                    "cause": "alignment",
                    "detail": (
                        "unaligned rows: " + ", ".join(bad) + f" are not multiples of {ALIGN_BYTES} B, which "
                        "keeps the GEMM off the aligned tensor-core kernels"
                    ),
                }
            )
    clock = _clock_cause(measurement.get("clocks"), context.get("max_sm_clock_mhz"))
    if clock:
        causes.append(clock)
    if not causes and prediction["bound"] == "compute":
        residual = _kernel_efficiency(prediction, measurement, context, seconds, model, kernel_only)
        if residual:
            causes.append(residual)
    return causes


def _kernel_efficiency(
    prediction: dict[str, Any],
    measurement: dict[str, Any],
    context: dict[str, Any],
    seconds: float,
    model: dict[str, Any] | None,
    kernel_only: bool = False,
) -> dict[str, str] | None:
    """By elimination, with every check's number: full clocks with no cap, efficient waves, no
    padding, a small launch share. What is left is the kernel's own efficiency against the
    datasheet's theoretical peak. Only when every one of those facts was measured."""
    clocks = measurement.get("clocks")
    (floor, floor_name), max_mhz = _floor(context, kernel_only), context.get("max_sm_clock_mhz")
    if not (
        model
        and isinstance(clocks, dict)
        and is_number(clocks.get("sm_clock_mhz_median"))
        and is_number(max_mhz)
        and is_number(floor)
    ):
        return None
    return {
        "cause": "kernel_efficiency",
        "detail": (
            f"the kernel's own efficiency: the SM clock stayed at {clocks['sm_clock_mhz_median']:.0f} of "
            f"{max_mhz:.0f} MHz with no power or thermal reason, {model['waves_exact']:.2f} waves ran at "
            f"{model['wave_efficiency']:.0%} wave efficiency with {model['padding_share']:.1%} padding, and "
            f"{floor_name} is {floor / seconds:.1%} of the time, so what is left is the library kernel "
            f"against the datasheet peak, a theoretical rate no kernel fully reaches"
        ),
    }


def _clock_cause(clocks: Any, max_mhz: Any) -> dict[str, str] | None:
    if not isinstance(clocks, dict) or "unavailable" in clocks:
        return None
    median, reasons = clocks.get("sm_clock_mhz_median"), clocks.get("clock_event_reasons", [])
    capped = [r for r in reasons if r in POWER_REASONS]
    slow = is_number(median) and is_number(max_mhz) and median < CLOCK_SHARE * max_mhz
    if not (slow or capped):
        return None
    detail = "clocks: "
    detail += (
        f"SM clock median {median:.0f} MHz of {max_mhz:.0f} MHz maximum"
        if is_number(median) and is_number(max_mhz)
        else "SM clock not read"
    )
    if capped:
        detail += ", clock-event reasons " + ", ".join(capped) + " active during the run"
    return {"cause": "clocks", "detail": detail}


def _ruled_out(
    prediction: dict[str, Any],
    context: dict[str, Any],
    seconds: float,
    measurement: dict[str, Any],
    kernel_only: bool = False,
) -> str:
    """The checks that found nothing, with their numbers."""
    notes = []
    floor, floor_name = _floor(context, kernel_only)
    if is_number(floor):
        notes.append(f"{floor_name} ({floor * 1e6:.1f} us) is {floor / seconds:.2%} of the time")
    elif kernel_only:
        notes.append("the GPU's own cost per kernel was not measured (no empty kernel replayed from a CUDA graph)")
    model = _tile_model(prediction, context)
    if model:
        notes.append(
            f"{model['waves_exact']:.2f} waves of {model['tile_m']}x{model['tile_n']} tiles "
            f"({model['wave_efficiency']:.0%} wave efficiency), {model['padding_share']:.1%} padding"
        )
    else:
        notes.append("no tile model on this device")
    clocks = measurement.get("clocks")
    if isinstance(clocks, dict) and is_number(clocks.get("sm_clock_mhz_median")):
        notes.append(f"SM clock median {clocks['sm_clock_mhz_median']:.0f} MHz with no power or thermal reason")
    return "; ".join(notes)


# The elementwise chain the probe fuses: four eager kernels, four FLOPs per element (x*2, +1, relu, y*y).
FUSION_CHAIN: dict[str, Any] = {"text": "y = x*2; y = y+1; y = relu(y); y = y*y", "kernels": 4, "flops_per_element": 4}


def fusion_accounting(
    elements: int, element_bytes: int, unfused_kernels: int, flops_per_element: int
) -> dict[str, Any]:
    """HBM bytes each version of an elementwise chain must move, and its intensity.

    Unfused: every kernel reads its input and writes its output once. Fused: one read, one write.
    """
    unfused = 2 * unfused_kernels * elements * element_bytes
    fused = 2 * elements * element_bytes
    flops = flops_per_element * elements
    return {
        "flops": flops,
        "unfused_bytes": unfused,
        "fused_bytes": fused,
        "unfused_ai_flop_per_byte": flops / unfused,
        "fused_ai_flop_per_byte": flops / fused,
    }


def fusion_comparison(fusion: dict[str, Any], peak_tflops: float, bandwidth_gbps: float) -> dict[str, Any]:
    """Both versions on the roofline, and the time fusion saved against the traffic it removed."""
    unfused_s, fused_s = fusion["unfused"]["median_s"], fusion["fused"]["median_s"]
    removed = fusion["unfused_bytes"] - fusion["fused_bytes"]
    at_roof_s = removed / (bandwidth_gbps * 1e9)
    saved = unfused_s - fused_s
    result = {
        "speedup": unfused_s / fused_s,
        "traffic_ratio": fusion["unfused_bytes"] / fusion["fused_bytes"],
        "bytes_removed": removed,
        "time_saved_s": saved,
        "removed_bytes_at_roof_s": at_roof_s,
        "unfused_attainable_tflops": attainable_tflops(fusion["unfused_ai_flop_per_byte"], peak_tflops, bandwidth_gbps),
        "fused_attainable_tflops": attainable_tflops(fusion["fused_ai_flop_per_byte"], peak_tflops, bandwidth_gbps),
    }
    result["text"] = (
        f"Fusion removed {removed / 2**20:.0f} MiB of traffic per call ({result['traffic_ratio']:.1f}x fewer bytes) "
        f"and saved {saved * 1e3:.3g} ms ({result['speedup']:.2f}x faster); at the {bandwidth_gbps:.0f} GB/s roof "
        f"those bytes take {at_roof_s * 1e3:.3g} ms, so the time saved is {saved / at_roof_s:.2f}x what the "
        f"removed traffic costs at the roof. Both versions are memory-bound (AI {fusion['unfused_ai_flop_per_byte']:.3g} and "
        f"{fusion['fused_ai_flop_per_byte']:.3g} FLOP/B): unfused ran at {fusion['unfused']['achieved_gbps']:.0f} "
        f"GB/s, fused at {fusion['fused']['achieved_gbps']:.0f} GB/s."
    )
    return result


# ---------------------------------------------------------------- headlines / verification


def context_of(document: dict[str, Any]) -> dict[str, Any]:
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
