"""What NVML says: driver/CUDA/NVML versions and, per device, every field of health.json.

Standard library and nvidia-ml-py only. Each read goes through `attempt`, so a field NVML
cannot answer carries NVML's own error (e.g. "NVMLError_NotSupported: Not Supported").
"""

from __future__ import annotations

import os
from typing import Any

from harness.analysis.actions import DRIVER_WORDS
from harness.analysis.health.checks import sku_record
from harness.probes.contract import attempt, unavailable
from harness.probes.nvml import decode_clock_event_reasons, field_value, processes

COMPUTE_MODES = {0: "default", 1: "exclusive_thread", 2: "prohibited", 3: "exclusive_process"}
VIRTUALIZATION_MODES = {0: "none", 1: "passthrough", 2: "vgpu", 3: "host_vgpu", 4: "host_vsga"}
ENABLE_STATE = {0: "disabled", 1: "enabled"}
NVML_FI_DEV_GET_GPU_RECOVERY_ACTION = 230  # nvml.h (nvidia-ml-py 13.615's pynvml defines the same)


def text(value: Any) -> Any:
    """NVML strings arrive as str or bytes depending on the binding's version."""
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


def named(value: Any, names: dict[int, str]) -> Any:
    """An NVML enum value as its name; an unknown number stays visible as 'unknown_N'."""
    return names.get(value, f"unknown_{value}") if isinstance(value, int) else value


def mib(value_bytes: Any) -> Any:
    return round(value_bytes / 2**20, 1) if isinstance(value_bytes, int) else value_bytes


def watts(milliwatts: Any) -> Any:
    return round(milliwatts / 1000.0, 3) if isinstance(milliwatts, int) else milliwatts


def system_facts(pynvml: Any) -> dict[str, Any]:
    """Driver, CUDA driver and NVML versions, as NVML reports them."""
    cuda = attempt(pynvml.nvmlSystemGetCudaDriverVersion)
    return {
        "driver_version": attempt(lambda: text(pynvml.nvmlSystemGetDriverVersion())),
        "cuda_driver_version": (f"{cuda // 1000}.{cuda % 1000 // 10}" if isinstance(cuda, int) else cuda),
        "nvml_version": attempt(lambda: text(pynvml.nvmlSystemGetNVMLVersion())),
    }


def device_facts(pynvml: Any, handle: Any, nvml_index: int) -> dict[str, Any]:
    """Every per-device field NVML can answer for one device (topology matrix row added later)."""
    pci = attempt(pynvml.nvmlDeviceGetPciInfo_v3, handle)
    pci_ok = hasattr(pci, "pciDeviceId")
    memory = attempt(pynvml.nvmlDeviceGetMemoryInfo, handle)
    power = power_facts(pynvml, handle)
    facts: dict[str, Any] = {
        "nvml_index": nvml_index,
        "uuid": attempt(lambda: text(pynvml.nvmlDeviceGetUUID(handle))),
        "name": attempt(lambda: text(pynvml.nvmlDeviceGetName(handle))),
        "board_part_number": attempt(lambda: text(pynvml.nvmlDeviceGetBoardPartNumber(handle))),
        "vbios_version": attempt(lambda: text(pynvml.nvmlDeviceGetVbiosVersion(handle))),
        "pci_bus_id": text(pci.busId) if pci_ok else pci,
        "pci_device_id": f"{pci.pciDeviceId:#010x}" if pci_ok else pci,
        "pci_subsystem_id": f"{pci.pciSubSystemId:#010x}" if pci_ok else pci,
        "memory_total_mib": mib(memory.total) if hasattr(memory, "total") else memory,
        "memory_used_mib": mib(memory.used) if hasattr(memory, "used") else memory,
        "pcie": pcie_facts(pynvml, handle),
        "nvlink": nvlink_facts(pynvml, handle),
        "cpu_affinity": cpu_affinity(pynvml, handle),
        "numa_affinity": numa_affinity(pynvml, handle),
        "numa_node_id": attempt(pynvml.nvmlDeviceGetNumaNodeId, handle),
        "processes": processes(pynvml, handle),
        "clocks": clock_facts(pynvml, handle),
        "power": power,
        "temperature_c": attempt(pynvml.nvmlDeviceGetTemperature, handle, pynvml.NVML_TEMPERATURE_GPU),
        "performance_state": attempt(lambda: f"P{pynvml.nvmlDeviceGetPerformanceState(handle)}"),
        "clock_event_reasons": clock_event_reasons(pynvml, handle),
        "ecc": ecc_facts(pynvml, handle),
        "modes": mode_facts(pynvml, handle),
        "recovery_action": recovery_action(pynvml, handle),
    }
    facts["sku"] = identify(facts["pci_device_id"], facts["memory_total_mib"], power["default_limit_w"])
    return facts


identify = sku_record  # the catalogue SKU record; verify derives it again the same way


def recovery_action(pynvml: Any, handle: Any) -> Any:
    """What the driver itself recommends for the GPU (NVML_FI_DEV_GET_GPU_RECOVERY_ACTION): its code and
    the name nvidia-ml-py gives it, or NVML's reason where the driver does not publish it."""
    found = attempt(pynvml.nvmlDeviceGetFieldValues, handle, [NVML_FI_DEV_GET_GPU_RECOVERY_ACTION])
    if isinstance(found, dict):
        return found
    code = field_value(pynvml, found[0])
    if not isinstance(code, int):
        return code if isinstance(code, dict) else unavailable(f"NVML gave {code!r}, not a recovery action code")
    word = DRIVER_WORDS.get(code)
    return {"code": code, "driver": word if word else unavailable(f"code {code} has no name in nvidia-ml-py 13.615")}


def pcie_facts(pynvml: Any, handle: Any) -> dict[str, Any]:
    return {
        "current_gen": attempt(pynvml.nvmlDeviceGetCurrPcieLinkGeneration, handle),
        "max_gen": attempt(pynvml.nvmlDeviceGetMaxPcieLinkGeneration, handle),
        "gpu_max_gen": attempt(pynvml.nvmlDeviceGetGpuMaxPcieLinkGeneration, handle),
        "current_width": attempt(pynvml.nvmlDeviceGetCurrPcieLinkWidth, handle),
        "max_width": attempt(pynvml.nvmlDeviceGetMaxPcieLinkWidth, handle),
    }


def nvlink_facts(pynvml: Any, handle: Any) -> Any:
    """State of each NVLink; the first link's error stands for all when NVLink is unsupported."""
    links = []
    for link in range(getattr(pynvml, "NVML_NVLINK_MAX_LINKS", 18)):
        state = attempt(pynvml.nvmlDeviceGetNvLinkState, handle, link)
        if not isinstance(state, int):
            if link == 0:
                return state  # e.g. NVMLError_NotSupported: a single GPU in a VM has no NVLink
            break  # past the device's last link NVML answers InvalidArgument/NotSupported
        remote: Any = attempt(pynvml.nvmlDeviceGetNvLinkRemotePciInfo, handle, link) if state else None
        links.append(
            {
                "link": link,
                "active": bool(state),
                "remote_pci_bus_id": (
                    text(remote.busId)
                    if hasattr(remote, "busId")
                    else remote
                    if remote is not None
                    else unavailable("link inactive: no remote end")
                ),
            }
        )
    return links


def cpu_affinity(pynvml: Any, handle: Any) -> Any:
    """The CPUs close to the device, as a Linux cpulist string ('0-15,32-47')."""
    words = (os.cpu_count() or 1) // 64 + 1
    mask = attempt(pynvml.nvmlDeviceGetCpuAffinity, handle, words)
    return cpulist(mask) if not isinstance(mask, dict) else mask


def numa_affinity(pynvml: Any, handle: Any) -> Any:
    """The NUMA nodes close to the device's memory, as a cpulist-style string ('0')."""
    scope = getattr(pynvml, "NVML_AFFINITY_SCOPE_NODE", 0)
    mask = attempt(pynvml.nvmlDeviceGetMemoryAffinity, handle, 4, scope)
    return cpulist(mask) if not isinstance(mask, dict) else mask


def cpulist(words: Any) -> str:
    """64-bit mask words (least significant first) -> '0-15,32' (empty mask -> '')."""
    bits = [w * 64 + b for w, word in enumerate(words) for b in range(64) if int(word) >> b & 1]
    ranges: list[str] = []
    start = prev = None
    for bit in bits + [None]:
        if prev is not None and bit == prev + 1:
            prev = bit
            continue
        if start is not None:
            ranges.append(str(start) if start == prev else f"{start}-{prev}")
        start = prev = bit
    return ",".join(ranges)


def clock_facts(pynvml: Any, handle: Any) -> dict[str, Any]:
    kinds = {"sm": pynvml.NVML_CLOCK_SM, "graphics": pynvml.NVML_CLOCK_GRAPHICS, "memory": pynvml.NVML_CLOCK_MEM}
    clocks: dict[str, Any] = {}
    for name, kind in kinds.items():
        clocks[f"{name}_current_mhz"] = attempt(pynvml.nvmlDeviceGetClockInfo, handle, kind)
        clocks[f"{name}_max_mhz"] = attempt(pynvml.nvmlDeviceGetMaxClockInfo, handle, kind)
    for name in ("graphics", "memory"):
        kind = kinds[name]
        clocks[f"applications_{name}_mhz"] = attempt(pynvml.nvmlDeviceGetApplicationsClock, handle, kind)
        clocks[f"default_applications_{name}_mhz"] = attempt(pynvml.nvmlDeviceGetDefaultApplicationsClock, handle, kind)
    return clocks


def power_facts(pynvml: Any, handle: Any) -> dict[str, Any]:
    return {
        "draw_w": watts(attempt(pynvml.nvmlDeviceGetPowerUsage, handle)),
        "enforced_limit_w": watts(attempt(pynvml.nvmlDeviceGetEnforcedPowerLimit, handle)),
        "default_limit_w": watts(attempt(pynvml.nvmlDeviceGetPowerManagementDefaultLimit, handle)),
    }


def clock_event_reasons(pynvml: Any, handle: Any) -> dict[str, Any]:
    mask = attempt(pynvml.nvmlDeviceGetCurrentClocksEventReasons, handle)
    return {"mask": mask, "names": decode_clock_event_reasons(mask) if isinstance(mask, int) else mask}


def ecc_facts(pynvml: Any, handle: Any) -> dict[str, Any]:
    mode = attempt(pynvml.nvmlDeviceGetEccMode, handle)
    ok = isinstance(mode, (list, tuple))
    counts: dict[str, Any] = {}
    for counter, counter_name in ((pynvml.NVML_VOLATILE_ECC, "volatile"), (pynvml.NVML_AGGREGATE_ECC, "aggregate")):
        for error, error_name in (
            (pynvml.NVML_MEMORY_ERROR_TYPE_CORRECTED, "corrected"),
            (pynvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, "uncorrected"),
        ):
            counts[f"{counter_name}_{error_name}_errors"] = attempt(
                pynvml.nvmlDeviceGetTotalEccErrors, handle, error, counter
            )
    rows = attempt(pynvml.nvmlDeviceGetRemappedRows, handle)
    rows_ok = isinstance(rows, tuple)
    return {
        "mode_current": named(mode[0], ENABLE_STATE) if ok else mode,
        "mode_pending": named(mode[1], ENABLE_STATE) if ok else mode,
        **counts,
        "remapped_rows_corrected": rows[0] if rows_ok else rows,
        "remapped_rows_uncorrected": rows[1] if rows_ok else rows,
        "remapped_rows_pending": bool(rows[2]) if rows_ok else rows,
        "remapped_rows_failure": bool(rows[3]) if rows_ok else rows,
    }


def mode_facts(pynvml: Any, handle: Any) -> dict[str, Any]:
    mig = attempt(pynvml.nvmlDeviceGetMigMode, handle)
    mig_ok = isinstance(mig, (list, tuple))
    return {
        "persistence": named(attempt(pynvml.nvmlDeviceGetPersistenceMode, handle), ENABLE_STATE),
        "compute": named(attempt(pynvml.nvmlDeviceGetComputeMode, handle), COMPUTE_MODES),
        "mig_current": named(mig[0], ENABLE_STATE) if mig_ok else mig,
        "mig_pending": named(mig[1], ENABLE_STATE) if mig_ok else mig,
        "virtualization": named(attempt(pynvml.nvmlDeviceGetVirtualizationMode, handle), VIRTUALIZATION_MODES),
    }
