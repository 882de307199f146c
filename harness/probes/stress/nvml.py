"""NVML during a stress run: lean telemetry samples on a thread, XID and ECC events through an
NVML event set on a waiting thread, and the error counters before and after.

Standard library and nvidia-ml-py only. Every read that fails is NVML's own reason
({"unavailable": "NVMLError_NotSupported: Not Supported"}), never a default. Times are seconds
on one axis per worker (`t_s`: time.monotonic() minus the worker's time zero), the same axis
the GEMM buckets and the memory test use.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from harness.probes.contract import attempt, describe_exception, unavailable
from harness.probes.devices import ecc_facts, watts
from harness.probes.nvml import field_value

# Event types asked for (nvml.h nvmlEventType*): a critical XID and the two ECC events.
EVENT_TYPES: dict[str, int] = {
    "xid_critical_error": 0x8,
    "single_bit_ecc_error": 0x1,
    "double_bit_ecc_error": 0x2,
}
EVENT_WAIT_MS = 250  # how long one nvmlEventSetWait blocks before the thread looks at its stop flag
NVML_FI_DEV_MEMORY_TEMP = 82  # nvml.h: HBM temperature (C)
NVML_FI_DEV_POWER_AVERAGE = 185  # nvml.h: board power averaged over one second (mW; Ampere and newer)


def field_values(pynvml: Any, handle: Any) -> dict[str, Any]:
    """HBM temperature and one-second average power in one nvmlDeviceGetFieldValues call; each
    field that NVML refuses carries its own return code's reason."""
    try:
        found = pynvml.nvmlDeviceGetFieldValues(handle, [NVML_FI_DEV_MEMORY_TEMP, NVML_FI_DEV_POWER_AVERAGE])
    except Exception as exc:  # noqa: BLE001 - NVML's refusal is the recorded reason
        why = unavailable(describe_exception(exc))
        return {"memory_temperature_c": why, "power_average_w": why}
    temperature, power = (field_value(pynvml, value) for value in found)
    return {
        "memory_temperature_c": temperature,
        "power_average_w": round(power / 1000.0, 3) if isinstance(power, (int, float)) else power,
    }


def read_sample(pynvml: Any, handle: Any, t_s: float) -> dict[str, Any]:
    """One sample: clocks, power (nvmlDeviceGetPowerUsage, and the one-second average field),
    temperatures, clock-event reasons."""
    return {
        "t_s": round(t_s, 4),
        "sm_clock_mhz": attempt(pynvml.nvmlDeviceGetClockInfo, handle, pynvml.NVML_CLOCK_SM),
        "memory_clock_mhz": attempt(pynvml.nvmlDeviceGetClockInfo, handle, pynvml.NVML_CLOCK_MEM),
        "power_w": watts(attempt(pynvml.nvmlDeviceGetPowerUsage, handle)),
        "gpu_temperature_c": attempt(pynvml.nvmlDeviceGetTemperature, handle, pynvml.NVML_TEMPERATURE_GPU),
        **field_values(pynvml, handle),
        "clock_event_reasons_mask": attempt(pynvml.nvmlDeviceGetCurrentClocksEventReasons, handle),
    }


class Telemetry:
    """Samples one device every `interval_s` until stopped; `drain()` hands over new samples."""

    def __init__(self, pynvml: Any, handle: Any, interval_s: float, time_zero: float) -> None:
        self.pynvml, self.handle, self.interval_s, self.time_zero = pynvml, handle, interval_s, time_zero
        self._samples: list[dict[str, Any]] = []
        self._taken = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="stress-telemetry", daemon=True)

    def _take(self) -> None:
        sample = read_sample(self.pynvml, self.handle, time.monotonic() - self.time_zero)
        with self._lock:
            self._samples.append(sample)

    def _loop(self) -> None:
        next_at = time.monotonic()
        while not self._stop.is_set():
            self._take()
            next_at += self.interval_s
            self._stop.wait(max(0.0, next_at - time.monotonic()))

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        self._take()  # one sample at the end, always

    def drain(self) -> list[dict[str, Any]]:
        """Samples taken since the last drain."""
        with self._lock:
            new = self._samples[self._taken :]
            self._taken = len(self._samples)
        return new


class EventWatcher:
    """XID and ECC events of one device through an NVML event set, on a waiting thread."""

    def __init__(self, pynvml: Any, handle: Any, time_zero: float, on_event: Callable[[dict[str, Any]], None]) -> None:
        self.pynvml, self.handle, self.time_zero, self.on_event = pynvml, handle, time_zero, on_event
        self.event_set: Any = None
        self.registered: list[str] = []
        self.not_supported: list[str] = []
        self.wait_error: str | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="stress-nvml-events", daemon=True)

    def start(self) -> dict[str, Any]:
        """Register the events; what was registered, or {"unavailable": NVML's reason}."""
        pynvml = self.pynvml
        try:
            supported = pynvml.nvmlDeviceGetSupportedEventTypes(self.handle)
            wanted = {name: bit for name, bit in EVENT_TYPES.items() if supported & bit}
            self.not_supported = sorted(set(EVENT_TYPES) - set(wanted))
            if not wanted:
                return unavailable(
                    f"NVML supports none of {', '.join(EVENT_TYPES)} on this device "
                    f"(supported event mask {supported:#x})"
                )
            self.event_set = pynvml.nvmlEventSetCreate()
            pynvml.nvmlDeviceRegisterEvents(self.handle, sum(wanted.values()), self.event_set)
        except Exception as exc:  # noqa: BLE001 - NVML's refusal is the recorded reason
            self._free()
            return unavailable(describe_exception(exc))
        self.registered = sorted(wanted)
        self._thread.start()
        return {"registered_event_types": self.registered, "not_supported_event_types": self.not_supported}

    def _loop(self) -> None:
        pynvml = self.pynvml
        while not self._stop.is_set():
            try:
                data = pynvml.nvmlEventSetWait_v2(self.event_set, EVENT_WAIT_MS)
            except pynvml.NVMLError as exc:
                if getattr(exc, "value", None) == pynvml.NVML_ERROR_TIMEOUT:
                    continue
                self.wait_error = describe_exception(exc)
                return
            self.on_event(self.describe(data))

    def describe(self, data: Any) -> dict[str, Any]:
        kind = int(data.eventType)
        names = [name for name, bit in EVENT_TYPES.items() if kind & bit] or [f"unknown_{kind:#x}"]
        event = {
            "t_s": round(time.monotonic() - self.time_zero, 4),
            "event_type": "+".join(names),
            "event_type_mask": kind,
            "event_data": int(data.eventData),
        }
        if kind & EVENT_TYPES["xid_critical_error"]:
            event["xid"] = int(data.eventData)
        return event

    def stop(self) -> str | None:
        """Stop waiting; the reason waiting broke off early, if it did."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        self._free()
        return self.wait_error

    def _free(self) -> None:
        if self.event_set is not None:
            try:
                self.pynvml.nvmlEventSetFree(self.event_set)
            except Exception:  # noqa: BLE001 - freeing must not mask the run's result
                pass
            self.event_set = None


def error_counters(pynvml: Any, handle: Any) -> dict[str, Any]:
    """ECC counts (volatile and aggregate, corrected and uncorrected) and row remaps, as health reads them."""
    return ecc_facts(pynvml, handle)


def power_limit_w(pynvml: Any, handle: Any) -> Any:
    return watts(attempt(pynvml.nvmlDeviceGetEnforcedPowerLimit, handle))
