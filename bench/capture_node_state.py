"""Capture what a quick node check reads, as the GPU machine answers it (issue 25 fixtures).

Every NVML call a node check makes, with its value or the NVML error name it raised, the kernel
log's NVRM/Xid lines (dmesg, and /dev/kmsg's readability), and the PCIe link files in sysfs.
One JSON document to the path given; nothing is changed on the machine (reads only).

    python3 bench/capture_node_state.py OUT.json
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any


def call(fn, *args) -> Any:
    try:
        value = fn(*args)
    except Exception as exc:  # noqa: BLE001 - the error is the capture
        return {"error": type(exc).__name__, "message": str(exc)}
    if isinstance(value, bytes):
        return value.decode()
    if hasattr(value, "_fields_"):
        return {name: _plain(getattr(value, name)) for name, _ in value._fields_}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return _plain(value)


def _plain(value: Any) -> Any:
    if isinstance(value, bytes):
        return value.decode(errors="replace")
    if hasattr(value, "_fields_"):
        return {name: _plain(getattr(value, name)) for name, _ in value._fields_}
    if isinstance(value, (int, float, str, type(None))):
        return value
    return repr(value)


def nvml_capture() -> dict[str, Any]:
    t0 = time.perf_counter()
    try:
        import pynvml as p

        p.nvmlInit()
    except Exception as exc:  # noqa: BLE001 - no NVML here: that is the capture
        return {"error": type(exc).__name__, "message": str(exc)}
    out: dict[str, Any] = {"init_s": time.perf_counter() - t0}
    out["driver"] = call(p.nvmlSystemGetDriverVersion)
    out["cuda_driver"] = call(p.nvmlSystemGetCudaDriverVersion_v2)
    out["nvml_version"] = call(p.nvmlSystemGetNVMLVersion)
    count = p.nvmlDeviceGetCount()
    out["count"] = count
    devices = []
    for i in range(count):
        h = p.nvmlDeviceGetHandleByIndex(i)
        d: dict[str, Any] = {"index": i}
        for name, fn, args in [
            ("name", p.nvmlDeviceGetName, ()),
            ("uuid", p.nvmlDeviceGetUUID, ()),
            ("pci", p.nvmlDeviceGetPciInfo_v3, ()),
            ("serial", p.nvmlDeviceGetSerial, ()),
            ("persistence_mode", p.nvmlDeviceGetPersistenceMode, ()),
            ("compute_mode", p.nvmlDeviceGetComputeMode, ()),
            ("mig_mode", p.nvmlDeviceGetMigMode, ()),
            ("ecc_mode", p.nvmlDeviceGetEccMode, ()),
            (
                "ecc_uncorrected_volatile",
                p.nvmlDeviceGetTotalEccErrors,
                (p.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, p.NVML_VOLATILE_ECC),
            ),
            (
                "ecc_uncorrected_aggregate",
                p.nvmlDeviceGetTotalEccErrors,
                (p.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, p.NVML_AGGREGATE_ECC),
            ),
            (
                "ecc_corrected_volatile",
                p.nvmlDeviceGetTotalEccErrors,
                (p.NVML_MEMORY_ERROR_TYPE_CORRECTED, p.NVML_VOLATILE_ECC),
            ),
            ("remapped_rows", p.nvmlDeviceGetRemappedRows, ()),
            ("row_remapper_histogram", getattr(p, "nvmlDeviceGetRowRemapperHistogram", None), ()),
            (
                "retired_pages_sbe",
                p.nvmlDeviceGetRetiredPages,
                (p.NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS,),
            ),
            ("retired_pages_dbe", p.nvmlDeviceGetRetiredPages, (p.NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR,)),
            ("retired_pages_pending", p.nvmlDeviceGetRetiredPagesPendingStatus, ()),
            ("pcie_gen_current", p.nvmlDeviceGetCurrPcieLinkGeneration, ()),
            ("pcie_gen_max_device", p.nvmlDeviceGetMaxPcieLinkGeneration, ()),
            ("pcie_gen_max_gpu", getattr(p, "nvmlDeviceGetGpuMaxPcieLinkGeneration", None), ()),
            ("pcie_width_current", p.nvmlDeviceGetCurrPcieLinkWidth, ()),
            ("pcie_width_max", p.nvmlDeviceGetMaxPcieLinkWidth, ()),
            ("pcie_replay_counter", p.nvmlDeviceGetPcieReplayCounter, ()),
            ("clock_event_reasons", p.nvmlDeviceGetCurrentClocksEventReasons, ()),
            ("supported_clock_event_reasons", p.nvmlDeviceGetSupportedClocksEventReasons, ()),
            ("power_limit_mw", p.nvmlDeviceGetPowerManagementLimit, ()),
            ("power_limit_default_mw", p.nvmlDeviceGetPowerManagementDefaultLimit, ()),
            ("power_limit_enforced_mw", p.nvmlDeviceGetEnforcedPowerLimit, ()),
            ("app_clock_sm", p.nvmlDeviceGetApplicationsClock, (p.NVML_CLOCK_SM,)),
            ("app_clock_sm_default", p.nvmlDeviceGetDefaultApplicationsClock, (p.NVML_CLOCK_SM,)),
            ("app_clock_mem", p.nvmlDeviceGetApplicationsClock, (p.NVML_CLOCK_MEM,)),
            ("app_clock_mem_default", p.nvmlDeviceGetDefaultApplicationsClock, (p.NVML_CLOCK_MEM,)),
            ("locked_clocks_min_max", getattr(p, "nvmlDeviceGetGpcClkMinMaxVfOffset", None), ()),
            ("sm_clock", p.nvmlDeviceGetClockInfo, (p.NVML_CLOCK_SM,)),
            ("sm_clock_max", p.nvmlDeviceGetMaxClockInfo, (p.NVML_CLOCK_SM,)),
            ("temperature", p.nvmlDeviceGetTemperature, (p.NVML_TEMPERATURE_GPU,)),
            ("power_w", lambda h: p.nvmlDeviceGetPowerUsage(h) / 1000, ()),
            ("processes_compute", p.nvmlDeviceGetComputeRunningProcesses, ()),
            ("vbios", p.nvmlDeviceGetVbiosVersion, ()),
            ("xid_event_set_supported", lambda h: p.nvmlDeviceGetSupportedEventTypes(h), ()),
        ]:
            if fn is None:
                d[name] = {"error": "AttributeError", "message": "not in this nvidia-ml-py"}
                continue
            d[name] = call(fn, h, *args)
        links = []
        for link in range(18):
            links.append({"link": link, "state": call(p.nvmlDeviceGetNvLinkState, h, link)})
        d["nvlink"] = links
        devices.append(d)
    out["devices"] = devices
    out["total_s"] = time.perf_counter() - t0
    p.nvmlShutdown()
    return out


def kernel_log() -> dict[str, Any]:
    out: dict[str, Any] = {}
    try:
        fd = os.open("/dev/kmsg", os.O_RDONLY | os.O_NONBLOCK)
        os.close(fd)
        out["dev_kmsg"] = "readable"
    except OSError as exc:
        out["dev_kmsg"] = f"{type(exc).__name__}: {exc}"
    for argv in (["dmesg", "--time-format", "iso"], ["dmesg"], ["journalctl", "-k", "--no-pager", "-q"]):
        try:
            t = time.perf_counter()
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=10)
            lines = proc.stdout.splitlines()
            out[" ".join(argv)] = {
                "rc": proc.returncode,
                "s": time.perf_counter() - t,
                "lines": len(lines),
                "stderr": proc.stderr[-500:],
                "nvidia_lines": [x for x in lines if "NVRM" in x or "nvidia" in x.lower() or "Xid" in x][-200:],
                "head": lines[:5],
            }
        except (OSError, subprocess.TimeoutExpired) as exc:
            out[" ".join(argv)] = {"error": f"{type(exc).__name__}: {exc}"}
    return out


def sysfs_pci() -> dict[str, Any]:
    out = {}
    for dev in sorted(Path("/sys/bus/pci/devices").glob("*")):
        try:
            vendor = (dev / "vendor").read_text().strip()
        except OSError:
            continue
        if vendor != "0x10de":
            continue
        entry = {}
        for f in (
            "device",
            "class",
            "current_link_speed",
            "current_link_width",
            "max_link_speed",
            "max_link_width",
            "numa_node",
            "aer_dev_fatal",
            "aer_dev_nonfatal",
        ):
            try:
                entry[f] = (dev / f).read_text().strip()
            except OSError as exc:
                entry[f] = f"{type(exc).__name__}"
        out[dev.name] = entry
    return out


def main() -> int:
    doc = {
        "taken_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "uname": list(os.uname()),
        "nvml": nvml_capture(),
        "kernel_log": kernel_log(),
        "sysfs_pci": sysfs_pci(),
    }
    Path(sys.argv[1]).write_text(json.dumps(doc, indent=1, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
