"""Why a GEMM below its roof landed there: each cause one named rule over the measured facts only.
Standard library only.

A rule reads one `Case` (the GEMM's prediction, its measurement, the run's context, the time it is
explained from and the tile model) and names its cause with the numbers that show it, or None. The
rules run in `RULES`' order and every one that applies is named; when none does on a compute-bound
GEMM, the kernel's own efficiency is named by elimination, only where every one of those facts was
measured. What the rules checked and found nothing in, with their numbers, is `ruled_out`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from harness.analysis import timing
from harness.analysis.roofline import model as rl
from harness.analysis.units import is_number

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
POWER_REASONS = ("sw_power_cap", "hw_slowdown", "sw_thermal_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown")

Cause = dict[str, str]


def tile_model(prediction: dict[str, Any], context: dict[str, Any]) -> dict[str, Any] | None:
    """The output tiles over the SMs (model.tiling), where the context gives an SM count and a tile."""
    if not all(is_number(context.get(key)) for key in ("sm_count", "tile_m", "tile_n")):
        return None
    return rl.tiling(
        prediction["m"], prediction["n"], int(context["tile_m"]), int(context["tile_n"]), int(context["sm_count"])
    )


def floor_of(context: dict[str, Any], kernel_only: bool) -> tuple[Any, str]:
    """The empty kernel a time is compared with, timed as that time was: replayed from a CUDA graph for a
    kernel-only time (kernel_floor_s), eagerly otherwise (launch_floor_s); and its name in words."""
    if kernel_only:
        return context.get("kernel_floor_s"), "an empty kernel replayed from a CUDA graph"
    return context.get("launch_floor_s"), "the empty launch"


@dataclass(frozen=True)
class Case:
    """One measured GEMM as the rules read it: SECONDS is the time it is explained from (the kernels' own
    when KERNEL_ONLY, else the eager call's), MODEL its tile model (None where there is none)."""

    prediction: dict[str, Any]
    measurement: dict[str, Any]
    context: dict[str, Any]
    seconds: float
    kernel_only: bool
    model: dict[str, Any] | None

    @property
    def compute_bound(self) -> bool:
        return self.prediction["bound"] == "compute"


def launch_cost(case: Case) -> Cause | None:
    """The fixed cost of a call: a kernel-only time against an empty kernel replayed the same way; an
    eager time against its own kernels replayed from a CUDA graph where they were, else against the
    measured empty launch."""
    if case.kernel_only:
        return _kernel_floor(case)
    graph = case.measurement.get("graph")
    host, kernel = timing.host_launch_s(case.seconds, graph), timing.kernel_s(graph)
    if host is not None and kernel is not None:
        return _launch_path(case.seconds, host, kernel)
    return _empty_launch(case)


def _kernel_floor(case: Case) -> Cause | None:
    floor, seconds = floor_of(case.context, kernel_only=True)[0], case.seconds
    if not (is_number(floor) and floor >= LAUNCH_SHARE * seconds):
        return None
    return {
        "cause": "kernel_floor",
        "detail": (
            f"the GPU's fixed cost per kernel: the kernel alone takes {seconds * 1e6:.2f} us, only "
            f"{seconds / floor:.1f}x an empty kernel replayed the same way ({floor * 1e6:.2f} us)"
        ),
    }


def _launch_path(seconds: float, host: float, kernel: float) -> Cause | None:
    if host < LAUNCH_SHARE * seconds:
        return None
    return {
        "cause": "launch_overhead",
        "detail": (
            f"launch overhead: the eager call takes {seconds * 1e6:.1f} us, its kernel alone {kernel * 1e6:.1f} us "
            f"(replayed from a CUDA graph), so {host * 1e6:.1f} us of each call is the host's launch path"
        ),
    }


def _empty_launch(case: Case) -> Cause | None:
    floor, seconds = floor_of(case.context, kernel_only=False)[0], case.seconds
    if not (is_number(floor) and floor >= LAUNCH_SHARE * seconds):
        return None
    return {
        "cause": "launch_overhead",
        "detail": (
            f"launch overhead: the median {seconds * 1e6:.1f} us is only {seconds / floor:.1f}x the "
            f"measured empty-launch time of {floor * 1e6:.1f} us"
        ),
    }


def wave_quantization(case: Case) -> Cause | None:
    """A compute-bound GEMM whose last wave of output tiles leaves SM-slots idle."""
    model = case.model
    if not (model and case.compute_bound and model["wave_efficiency"] < WAVE_EFFICIENCY):
        return None
    return {
        "cause": "wave_quantization",
        "detail": (
            f"wave quantization: {model['output_tiles']} output tiles of {model['tile_m']}x{model['tile_n']} "
            f"(assumed) over {model['sm_count']} SMs are {model['waves_exact']:.2f} waves, run as "
            f"{model['waves']} with the last wave {model['last_wave_utilisation']:.0%} full, so "
            f"{1 - model['wave_efficiency']:.0%} of the SM-slots idle"
        ),
    }


def under_filled(case: Case) -> Cause | None:
    """A memory-bound GEMM of one partial wave that drew what so few busy SMs draw (contract 5 on)."""
    model, prediction, context = case.model, case.prediction, case.context
    roof_share = prediction["min_bytes"] / case.seconds / 1e9 / context["bandwidth_gbps"]
    if not (
        model
        and prediction["bound"] == "memory"
        and context.get("contract_version", 1) >= UNDER_FILLED_FROM
        and model["waves"] == 1
        and model["wave_efficiency"] < WAVE_EFFICIENCY
        and roof_share <= UNDER_FILLED_DRAW * model["wave_efficiency"]
    ):
        return None
    return {
        "cause": "under_filled",
        "detail": (
            f"too few tiles to fill the GPU: {model['output_tiles']} output tiles of {model['tile_m']}x"
            f"{model['tile_n']} (assumed) keep {model['output_tiles']} of {model['sm_count']} SMs busy "
            f"({model['wave_efficiency']:.0%}), and it drew {roof_share:.0%} of the memory roof, which "
            f"was measured with every SM streaming: what so few SMs draw"
        ),
    }


def tile_padding(case: Case) -> Cause | None:
    """A compute-bound GEMM whose tiles compute PADDING_SHARE or more of waste."""
    model, m, n = case.model, case.prediction["m"], case.prediction["n"]
    if not (model and case.compute_bound and model["padding_share"] >= PADDING_SHARE):
        return None
    return {
        "cause": "tile_padding",
        "detail": (
            f"tile padding: {m}x{n} pads to {model['padded_m']}x{model['padded_n']}, so "
            f"{model['padding_share']:.1%} of the computed output is waste"
        ),
    }


def alignment(case: Case) -> Cause | None:
    """Rows that are not a multiple of model.ALIGN_BYTES (only where there is a tile model: a GPU)."""
    if not case.model:
        return None
    p, context = case.prediction, case.context
    bad = rl.unaligned_dims(p["m"], p["n"], p["k"], context["in_bytes"], context["out_bytes"])
    if not bad:
        return None
    return {
        "cause": "alignment",
        "detail": (
            "unaligned rows: " + ", ".join(bad) + f" are not multiples of {rl.ALIGN_BYTES} B, which "
            "keeps the GEMM off the aligned tensor-core kernels"
        ),
    }


def clocks(case: Case) -> Cause | None:
    """An SM clock under CLOCK_SHARE of the maximum, or a power or thermal clock-event reason."""
    readings, max_mhz = case.measurement.get("clocks"), case.context.get("max_sm_clock_mhz")
    if not isinstance(readings, dict) or "unavailable" in readings:
        return None
    median, reasons = readings.get("sm_clock_mhz_median"), readings.get("clock_event_reasons", [])
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


def kernel_efficiency(case: Case) -> Cause | None:
    """By elimination, with every check's number: full clocks with no cap, efficient waves, no
    padding, a small launch share. What is left is the kernel's own efficiency against the
    datasheet's theoretical peak. Only when every one of those facts was measured."""
    readings, model = case.measurement.get("clocks"), case.model
    (floor, floor_name), max_mhz = floor_of(case.context, case.kernel_only), case.context.get("max_sm_clock_mhz")
    if not (
        model
        and isinstance(readings, dict)
        and is_number(readings.get("sm_clock_mhz_median"))
        and is_number(max_mhz)
        and is_number(floor)
    ):
        return None
    return {
        "cause": "kernel_efficiency",
        "detail": (
            f"the kernel's own efficiency: the SM clock stayed at {readings['sm_clock_mhz_median']:.0f} of "
            f"{max_mhz:.0f} MHz with no power or thermal reason, {model['waves_exact']:.2f} waves ran at "
            f"{model['wave_efficiency']:.0%} wave efficiency with {model['padding_share']:.1%} padding, and "
            f"{floor_name} is {floor / case.seconds:.1%} of the time, so what is left is the library kernel "
            f"against the datasheet peak, a theoretical rate no kernel fully reaches"
        ),
    }


RULES: tuple[Callable[[Case], Cause | None], ...] = (
    launch_cost,
    wave_quantization,
    under_filled,
    tile_padding,
    alignment,
    clocks,
)


def causes(
    prediction: dict[str, Any],
    measurement: dict[str, Any],
    context: dict[str, Any],
    seconds: float,
    kernel_only: bool = False,
) -> list[Cause]:
    """Every cause the rules name, in their order; none on a compute-bound GEMM: the kernel's own
    efficiency, where every fact it is named by was measured."""
    case = Case(prediction, measurement, context, seconds, kernel_only, tile_model(prediction, context))
    found = [cause for cause in (rule(case) for rule in RULES) if cause]
    if not found and case.compute_bound:
        residual = kernel_efficiency(case)
        if residual:
            found.append(residual)
    return found


def ruled_out(
    prediction: dict[str, Any],
    context: dict[str, Any],
    seconds: float,
    measurement: dict[str, Any],
    kernel_only: bool = False,
) -> str:
    """The checks that found nothing, with their numbers."""
    notes = []
    floor, floor_name = floor_of(context, kernel_only)
    if is_number(floor):
        notes.append(f"{floor_name} ({floor * 1e6:.1f} us) is {floor / seconds:.2%} of the time")
    elif kernel_only:
        notes.append("the GPU's own cost per kernel was not measured (no empty kernel replayed from a CUDA graph)")
    model = tile_model(prediction, context)
    if model:
        notes.append(
            f"{model['waves_exact']:.2f} waves of {model['tile_m']}x{model['tile_n']} tiles "
            f"({model['wave_efficiency']:.0%} wave efficiency), {model['padding_share']:.1%} padding"
        )
    else:
        notes.append("no tile model on this device")
    readings = measurement.get("clocks")
    if isinstance(readings, dict) and is_number(readings.get("sm_clock_mhz_median")):
        notes.append(f"SM clock median {readings['sm_clock_mhz_median']:.0f} MHz with no power or thermal reason")
    return "; ".join(notes)
