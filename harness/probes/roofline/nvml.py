"""What NVML says around one of the roofline's timed windows: SM clock, power (one-second average and
instant) and clock-event reasons.

Standard library and nvidia-ml-py only. NVML refreshes these readings about every 100 ms on the H200
(NVML_REFRESH): a reading may be older than the ~20 ms window beside it, which the document says.
"""

from __future__ import annotations

from typing import Any

from harness.analysis.clock_events import decode_clock_event_reasons
from harness.probes.contract import attempt, describe_exception, unavailable
from harness.probes.devices import watts
from harness.probes.nvml import field_value

NVML_FI_DEV_POWER_INSTANT = 186  # nvml.h: instantaneous board power (mW); nvmlDeviceGetPowerUsage is a 1 s average here
NVML_REFRESH = (
    "NVML refreshes the SM clock, power and clock-event reasons about every 100 ms on the H200 "
    "(driver 580.159.04: values repeat for ~4 reads 26 ms apart), so a reading beside a ~20 ms "
    "window may be up to 100 ms old"
)


class NvmlReader:
    """What NVML says around a window: SM clock, power (1 s average and instant), clock-event reasons."""

    def __init__(self, pynvml: Any, handle: Any) -> None:
        self.pynvml, self.handle = pynvml, handle

    def read(self) -> dict[str, Any] | None:
        if self.handle is None:
            return None
        p, h = self.pynvml, self.handle
        mask = attempt(p.nvmlDeviceGetCurrentClocksEventReasons, h)
        return {
            "sm_clock_mhz": attempt(p.nvmlDeviceGetClockInfo, h, p.NVML_CLOCK_SM),
            "power_w": watts(attempt(p.nvmlDeviceGetPowerUsage, h)),
            "power_instant_w": self.instant_power(),
            "clock_event_reasons": decode_clock_event_reasons(mask) if isinstance(mask, int) else mask,
        }

    def instant_power(self) -> Any:
        try:
            value = field_value(
                self.pynvml, self.pynvml.nvmlDeviceGetFieldValues(self.handle, [NVML_FI_DEV_POWER_INSTANT])[0]
            )
        except Exception as exc:  # noqa: BLE001 - a driver without the field says so
            return unavailable(describe_exception(exc))
        return round(value / 1000.0, 3) if isinstance(value, (int, float)) else value
