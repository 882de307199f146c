"""The stress probe's NVML samples read back: per-bucket telemetry, the clock-event reason
histogram, when the power cap engaged, and power against the enforced limit.

Standard library only. A sample is {t_s, sm_clock_mhz, memory_clock_mhz, power_w, power_average_w,
gpu_temperature_c, memory_temperature_c, clock_event_reasons_mask}; any field may be
{"unavailable": reason}, and such a value is left out of every figure (never read as zero).
"""

from __future__ import annotations

import bisect
import functools
import statistics
from collections.abc import Sequence
from typing import Any, cast

from harness import catalogue
from harness.analysis.clock_events import decode_clock_event_reasons
from harness.analysis.memo import per_document
from harness.analysis.units import number_or_none

# sw_power_cap is how a GPU held at its power limit is supposed to behave under a GEMM burn.
EXPECTED_REASONS = ("sw_power_cap",)
# These mean the board or its cooling forced the clocks down: a stress run that shows one fails.
FLAGGED_REASONS = ("hw_slowdown", "sw_thermal_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown")
FLAGGED_RULE = (
    "fails on any sample showing hw_slowdown, sw_thermal_slowdown, hw_thermal_slowdown or "
    "hw_power_brake_slowdown during the GEMM phase or the memory test; sw_power_cap is expected "
    "and named, not failed (a GPU at its power limit is meant to cap its clocks)"
)

# Issue 16 asks "power target reached" at >= 0.9 of the enforced limit. DCGM's targeted_power plugin
# passes when the MAXIMUM board power it saw reaches target_power_min_ratio (default 0.75) of its
# target (DCGM docs, reference/diagnostics/plugins/targeted-power; TargetedPower_wrapper.cpp
# TP_STR_TARGET_POWER_MIN_RATIO 0.75). We judge the same statistic (the maximum sampled power) at
# the stricter 0.9, because DCGM's 0.75 would pass a board that sags a quarter below its
# limit; the median is reported beside it, and whether DCGM's floor was met.
POWER_TARGET_RATIO = catalogue.rule("stress_power_target_min_share")  # its source is the catalogue's
DCGM_TARGETED_POWER_MIN_RATIO = 0.75
# Which power reading the power figures use: the one-second average where NVML gives it (Ampere and
# newer), else nvmlDeviceGetPowerUsage, which on the lent H200 (driver 580) matched nvidia-smi's
# instant_power_draw: 573 W against a 689 W one-second average in the same nvidia-smi -q under a GEMM.
POWER_SOURCES = (
    ("power_average_w", "NVML_FI_DEV_POWER_AVERAGE (board power averaged over one second)"),
    ("power_w", "nvmlDeviceGetPowerUsage (on the lent H200 this matched the instantaneous reading)"),
)
POWER_RULE = (
    f"power target reached when the maximum power sample of the GEMM phase is at least "
    f"{POWER_TARGET_RATIO:g} x the enforced power limit (issue 16's target; DCGM targeted_power "
    f"judges the same maximum at {DCGM_TARGETED_POWER_MIN_RATIO:g} x its target); samples are the "
    f"one-second average where NVML gives it, else nvmlDeviceGetPowerUsage"
)


def between(samples: Sequence[dict[str, Any]], start_s: float, end_s: float) -> list[dict[str, Any]]:
    """Samples with start_s <= t_s < end_s (in their order). Samples in time order, as the sampler
    appends them, are cut by bisection (a stress run asks once per bucket); any other order is scanned."""
    times = _times(samples)
    if times is None:
        return [s for s in samples if start_s <= s["t_s"] < end_s]
    return list(samples[bisect.bisect_left(times, start_s) : bisect.bisect_left(times, end_s)])


@per_document
def _times(samples: Sequence[dict[str, Any]]) -> list[float] | None:
    """The samples' t_s when they are numbers in non-decreasing order, else None (once per sample list
    while a bundle is checked: harness/analysis/memo.py)."""
    times = [s["t_s"] for s in samples]
    ordered = all(type(t) in (int, float) for t in times) and all(
        a <= b for a, b in zip(times, times[1:], strict=False)
    )
    return times if ordered else None


def values(samples: Sequence[dict[str, Any]], key: str) -> list[float]:
    found = [s.get(key) for s in samples]
    if set(map(type, found)) <= _NUMBERS:  # every sample has a number (not a bool): the common case, at C speed
        return cast(list[float], found)  # the type test just above is the proof
    return [v for v in map(number_or_none, found) if v is not None]


_NUMBERS = frozenset({int, float})


def reasons_of(sample: dict[str, Any]) -> list[str]:
    mask = number_or_none(sample.get("clock_event_reasons_mask"))
    return list(_decoded(int(mask))) if mask is not None else []


@functools.lru_cache(maxsize=256)
def _decoded(mask: int) -> tuple[str, ...]:
    """A mask's reason names, decoded once per distinct mask (a run holds a handful among thousands of samples)."""
    return tuple(decode_clock_event_reasons(mask))


def _median(found: list[float]) -> float | None:
    return statistics.median(found) if found else None


def bucket_telemetry(samples: Sequence[dict[str, Any]], start_s: float, end_s: float) -> dict[str, Any]:
    """What NVML saw during one bucket: median clocks and power, hottest temperatures, reasons seen."""
    inside = between(samples, start_s, end_s)
    gpu_t, mem_t = values(inside, "gpu_temperature_c"), values(inside, "memory_temperature_c")
    return {
        "samples": len(inside),
        "sm_clock_mhz": _median(values(inside, "sm_clock_mhz")),
        "memory_clock_mhz": _median(values(inside, "memory_clock_mhz")),
        "power_w": _median(values(inside, "power_w")),
        "power_average_w": _median(values(inside, "power_average_w")),
        "gpu_temperature_c": max(gpu_t) if gpu_t else None,
        "memory_temperature_c": max(mem_t) if mem_t else None,
        "clock_event_reasons": sorted({r for s in inside for r in reasons_of(s)}),
    }


def reason_histogram(samples: Sequence[dict[str, Any]]) -> dict[str, int]:
    """Samples per clock-event reason (a sample with two reasons counts for both; 'none' when no bit is set)."""
    counts: dict[str, int] = {}
    for sample in samples:
        if number_or_none(sample.get("clock_event_reasons_mask")) is None:
            continue
        for name in reasons_of(sample) or ["none"]:
            counts[name] = counts.get(name, 0) + 1
    return dict(sorted(counts.items()))


def power_source(samples: Sequence[dict[str, Any]]) -> tuple[str, str]:
    """(field, what it is): the first of POWER_SOURCES any sample holds a number for."""
    return next(((key, text) for key, text in POWER_SOURCES if values(samples, key)), POWER_SOURCES[-1])


def power_cap(samples: Sequence[dict[str, Any]], start_s: float, end_s: float, limit_w: float | None) -> dict[str, Any]:
    """When sw_power_cap first showed in the GEMM phase (seconds after it began), or why never."""
    inside = between(samples, start_s, end_s)
    for sample in inside:
        if "sw_power_cap" in reasons_of(sample):
            return {"engaged_after_s": round(sample["t_s"] - start_s, 4), "why_never": None}
    readable = [s for s in inside if number_or_none(s.get("clock_event_reasons_mask")) is not None]
    if not readable:
        return {"engaged_after_s": None, "why_never": "no readable clock-event reasons in the GEMM phase"}
    power = values(inside, power_source(inside)[0])
    drawn = f"; power up to {max(power):g} W" if power else ""
    of_limit = f" of the {limit_w:g} W limit" if power and limit_w else ""
    return {
        "engaged_after_s": None,
        "why_never": f"sw_power_cap in none of {len(readable)} samples over {end_s - start_s:.1f} s{drawn}{of_limit}",
    }


def power_figures(
    samples: Sequence[dict[str, Any]], limit_w: float | None, cap: dict[str, Any], flagged: list[str]
) -> dict[str, Any]:
    """Median and maximum power against the enforced limit, and the power target reached or why not."""
    key, source = power_source(samples)
    power = values(samples, key)
    if not power or not limit_w:
        why = "no NVML power samples" if not power else "the enforced power limit is unreadable"
        return {
            "source": source,
            "limit_w": limit_w,
            "median_w": _median(power),
            "max_w": max(power) if power else None,
            "median_fraction": None,
            "max_fraction": None,
            "target_reached": None,
            "dcgm_floor_met": None,
            "why": why,
        }
    top, median = max(power), statistics.median(power)
    reached = top >= POWER_TARGET_RATIO * limit_w
    return {
        "source": source,
        "limit_w": limit_w,
        "median_w": median,
        "max_w": top,
        "median_fraction": median / limit_w,
        "max_fraction": top / limit_w,
        "target_reached": reached,
        "dcgm_floor_met": top >= DCGM_TARGETED_POWER_MIN_RATIO * limit_w,
        "why": _power_why(reached, top, limit_w, cap, flagged, samples),
    }


def _power_why(
    reached: bool,
    top: float,
    limit_w: float,
    cap: dict[str, Any],
    flagged: list[str],
    samples: Sequence[dict[str, Any]],
) -> str:
    share = f"maximum {top:g} W is {top / limit_w:.1%} of the {limit_w:g} W limit"
    if reached:
        return f"{share} (target {POWER_TARGET_RATIO:.0%})"
    if flagged:
        return f"{share}: clocks were forced down ({', '.join(flagged)}) before the power target"
    if cap.get("engaged_after_s") is not None:
        return (
            f"{share}: sw_power_cap engaged below the target, so the board's own power controller "
            f"held it there (NVML's reading averages over its window)"
        )
    clocks = values(samples, "sm_clock_mhz")
    at = f" with the SM clock at up to {max(clocks):g} MHz" if clocks else ""
    return f"{share}{at} and no power cap: the load did not draw the power the board may use"
