"""Causes of repeat-to-repeat variance that a bandwidth run's NVML samples show (clock drops, power cap,
thermal slowdown, other processes on the device). Standard library only."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

CLOCK_DROP_FRACTION = 0.10  # a sampled clock more than 10% under the highest sampled clock
POWER_NEAR_LIMIT = 0.97  # drawing at least 97% of the enforced power limit

POWER_REASONS = {"sw_power_cap", "hw_power_brake_slowdown"}
THERMAL_REASONS = {"sw_thermal_slowdown", "hw_thermal_slowdown", "hw_slowdown"}


def _numbers(samples: Sequence[dict[str, Any]], key: str) -> list[float]:
    return [s[key] for s in samples if isinstance(s.get(key), (int, float)) and not isinstance(s.get(key), bool)]


def diagnose(samples: Sequence[dict[str, Any]], own_pids: Sequence[int], power_limit_w: float | None) -> dict[str, Any]:
    """Causes of repeat-to-repeat variance visible in NVML samples.

    Samples are harness.probes.nvml.sample() dicts. Returns {causes: [{kind, evidence}], summary}.
    """
    causes = []
    for key, label in (("sm_clock_mhz", "SM clock"), ("memory_clock_mhz", "memory clock")):
        clocks = _numbers(samples, key)
        if clocks and min(clocks) < (1 - CLOCK_DROP_FRACTION) * max(clocks):
            causes.append(
                {"kind": "clock_drop", "evidence": f"{label} fell from {max(clocks):g} to {min(clocks):g} MHz"}
            )
    reasons = {r for s in samples if isinstance(s.get("clock_event_reasons"), list) for r in s["clock_event_reasons"]}
    power = _numbers(samples, "power_w")
    if reasons & POWER_REASONS:
        causes.append(
            {
                "kind": "power_cap",
                "evidence": "clock-event reason(s) "
                + ", ".join(sorted(reasons & POWER_REASONS))
                + (f"; power up to {max(power):g} W" if power else ""),
            }
        )
    elif power and power_limit_w and max(power) >= POWER_NEAR_LIMIT * power_limit_w:
        causes.append(
            {"kind": "power_cap", "evidence": f"power reached {max(power):g} W of the {power_limit_w:g} W limit"}
        )
    if reasons & THERMAL_REASONS:
        temps = _numbers(samples, "temperature_c")
        causes.append(
            {
                "kind": "thermal",
                "evidence": "clock-event reason(s) "
                + ", ".join(sorted(reasons & THERMAL_REASONS))
                + (f"; temperature up to {max(temps):g} C" if temps else ""),
            }
        )
    others = _other_processes(samples, own_pids)
    if others:
        causes.append({"kind": "other_process", "evidence": "other process(es) on the device: " + ", ".join(others)})
    if causes:
        summary = "; ".join(f"{c['kind']}: {c['evidence']}" for c in causes)
    else:
        summary = (
            f"no cause visible in {len(samples)} NVML samples (steady clocks, no power or thermal "
            "reason, no other process): look outside the device (host contention, a noisy "
            "neighbour on a shared bus) before trusting any number"
        )
    return {"causes": causes, "summary": summary}


def _other_processes(samples: Sequence[dict[str, Any]], own_pids: Sequence[int]) -> list[str]:
    seen: dict[int, str] = {}
    for s in samples:
        if not isinstance(s.get("processes"), list):
            continue
        for proc in s["processes"]:
            if proc["pid"] in own_pids:
                continue
            name = proc.get("name")
            name = name if isinstance(name, str) else "name not visible"
            used = proc.get("used_memory_mib")
            seen[proc["pid"]] = f"pid {proc['pid']} ({name}" + (
                f", {used:g} MiB)" if isinstance(used, (int, float)) else ")"
            )
    return [seen[pid] for pid in sorted(seen)]
