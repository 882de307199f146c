"""NVML clock-event ("throttle") reasons: the bit table and its decoding. Standard library only.

Shared by the probes (harness/probes/nvml.py re-exports it) and by the analyses that decode the
raw masks a document keeps.
"""

from __future__ import annotations

# Clock-event reason bits, from nvml.h (nvmlClocksEventReason*).
CLOCK_EVENT_REASONS: dict[int, str] = {
    0x1: "gpu_idle",
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
}
# The reasons that are a fault, not the expected limiter of a full-power load (a software power
# cap is expected and named, never failed).
HARDWARE_SLOWDOWNS = ("hw_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown", "sw_thermal_slowdown")


def decode_clock_event_reasons(mask: int) -> list[str]:
    """Names of the set bits; an unknown bit is named by its hex value, never dropped."""
    names = [name for bit, name in CLOCK_EVENT_REASONS.items() if mask & bit]
    unknown = mask & ~sum(CLOCK_EVENT_REASONS)
    if unknown:
        names += [f"unknown_{1 << i:#x}" for i in range(64) if unknown & (1 << i)]
    return names
