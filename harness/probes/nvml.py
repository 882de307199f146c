"""NVML access shared by probes: a session, device handles, telemetry samples, a sampler.

Public (the probe contract allows the host to import it: the runner asks NvmlSession whether
this host has a GPU). Standard library and nvidia-ml-py only. Every read that fails becomes
{"unavailable": "<NVMLError name>: <message>"}, the library's own reason.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from harness.analysis.clock_events import CLOCK_EVENT_REASONS, decode_clock_event_reasons  # noqa: F401 - re-exported
from harness.analysis.device_mapping import nvml_index_by_uuid
from harness.probes.contract import attempt, describe_exception, unavailable, utc_now


class NvmlSession:
    """`with NvmlSession() as nvml:`; nvml.pynvml is None and nvml.reason says why when NVML is absent."""

    def __init__(self) -> None:
        self.pynvml: Any = None
        self.reason: str | None = None

    def __enter__(self) -> NvmlSession:
        try:
            import pynvml  # nvidia-ml-py
        except ImportError as exc:
            self.reason = f"nvidia-ml-py not installed: {exc}"
            return self
        try:
            pynvml.nvmlInit()
        except pynvml.NVMLError as exc:
            self.reason = _nvml_init_reason(exc)
            return self
        except Exception as exc:  # noqa: BLE001 - e.g. an OSError when the library is missing
            self.reason = f"NVML library not found: {exc}"
            return self
        self.pynvml = pynvml
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self.pynvml is not None:
            try:
                self.pynvml.nvmlShutdown()
            except Exception:  # noqa: BLE001 - shutting down must not mask the real error
                pass

    @property
    def ok(self) -> bool:
        return self.pynvml is not None

    def handles(self) -> list[Any]:
        count = self.pynvml.nvmlDeviceGetCount()
        return [self.pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(count)]


def handle_by_uuid(nvml: NvmlSession, uuid: str) -> Any:
    """The NVML handle of the device whose UUID is `uuid` (torch's spelling or NVML's).

    CUDA renumbers devices (CUDA_VISIBLE_DEVICES, fastest-first order), so the UUID is the only
    safe link between a torch device and an NVML handle; never a guess by position.
    """
    if not nvml.ok:
        return unavailable(nvml.reason or "NVML unavailable")
    try:
        handles = nvml.handles()
        uuids = {}
        for index, handle in enumerate(handles):
            found = nvml.pynvml.nvmlDeviceGetUUID(handle)
            uuids[index] = found.decode() if isinstance(found, bytes) else found
    except Exception as exc:  # noqa: BLE001 - NVML's own error is the reason
        return unavailable(describe_exception(exc))
    at = nvml_index_by_uuid(uuid, uuids)
    return handles[at] if at is not None else unavailable(f"no NVML device has torch's UUID {uuid!r}")


def _nvml_init_reason(exc: Exception) -> str:
    text = f"{type(exc).__name__}: {exc}"
    if "LibraryNotFound" in type(exc).__name__ or "Library Not Found" in str(exc):
        return f"NVML library not found: {text} (no NVIDIA driver installed?)"
    if "DriverNotLoaded" in type(exc).__name__:
        return f"no NVIDIA driver: {text}"
    return text


def processes(pynvml: Any, handle: Any) -> Any:
    """Compute and graphics processes on a device: pid, name where visible, used memory."""
    found: dict[int, dict[str, Any]] = {}
    errors = []
    for kind, getter in (
        ("compute", "nvmlDeviceGetComputeRunningProcesses"),
        ("graphics", "nvmlDeviceGetGraphicsRunningProcesses"),
    ):
        try:
            entries = getattr(pynvml, getter)(handle)
        except Exception as exc:  # noqa: BLE001 - NVML's refusal is recorded, the other kind is still read
            errors.append(f"{kind}: {type(exc).__name__}: {exc}")
            continue
        for entry in entries:
            used = entry.usedGpuMemory
            found[entry.pid] = {
                "pid": entry.pid,
                "kind": kind,
                "name": _process_name(entry.pid),
                "used_memory_mib": (
                    round(used / 2**20, 1)
                    if isinstance(used, int) and used < 2**63
                    else unavailable("NVML does not report this process's memory")
                ),
            }
    if errors and not found and len(errors) == 2:
        return unavailable("; ".join(errors))
    return sorted(found.values(), key=lambda p: p["pid"])


def _process_name(pid: int) -> Any:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            cmdline = fh.read().split(b"\0")
        return cmdline[0].decode("utf-8", "replace") or unavailable("empty command line")
    except OSError as exc:
        return unavailable(f"not visible from this process namespace: {type(exc).__name__}: {exc}")


def sample(pynvml: Any, handle: Any) -> dict[str, Any]:
    """One telemetry sample: clocks, power, temperature, clock-event reasons, processes."""
    reasons = attempt(pynvml.nvmlDeviceGetCurrentClocksEventReasons, handle)
    return {
        "at": utc_now(),
        "monotonic_s": time.monotonic(),
        "sm_clock_mhz": attempt(pynvml.nvmlDeviceGetClockInfo, handle, pynvml.NVML_CLOCK_SM),
        "memory_clock_mhz": attempt(pynvml.nvmlDeviceGetClockInfo, handle, pynvml.NVML_CLOCK_MEM),
        "power_w": attempt(lambda: pynvml.nvmlDeviceGetPowerUsage(handle) / 1000.0),
        "temperature_c": attempt(pynvml.nvmlDeviceGetTemperature, handle, pynvml.NVML_TEMPERATURE_GPU),
        "clock_event_reasons_mask": reasons,
        "clock_event_reasons": (decode_clock_event_reasons(reasons) if isinstance(reasons, int) else reasons),
        "processes": processes(pynvml, handle),
    }


NVML_VALUE_READERS = {0: "dVal", 1: "uiVal", 2: "ulVal", 3: "ullVal", 4: "sllVal", 5: "siVal"}


def field_value(pynvml: Any, value: Any) -> Any:
    """One nvmlDeviceGetFieldValues result as a number, or NVML's own reason for refusing it."""
    if value.nvmlReturn != 0:
        return unavailable(describe_exception(pynvml.NVMLError(value.nvmlReturn)))
    reader = NVML_VALUE_READERS.get(value.valueType)
    if reader is None:
        return unavailable(f"NVML returned value type {value.valueType} for field {value.fieldId}")
    return getattr(value.value, reader)


class Sampler:
    """Samples one device every `interval_s` on a background thread until stopped."""

    def __init__(self, pynvml: Any, handle: Any, interval_s: float = 0.05) -> None:
        self.pynvml, self.handle, self.interval_s = pynvml, handle, interval_s
        self.samples: list[dict[str, Any]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="nvml-sampler", daemon=True)

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.samples.append(sample(self.pynvml, self.handle))
            self._stop.wait(self.interval_s)

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join()
        self.samples.append(sample(self.pynvml, self.handle))  # one sample at the end, always
