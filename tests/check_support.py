"""Node readings for `dossier check` built from the real H200 captures in tests/fixtures/h200/check/
(see its README: taken by the lead on the lent H200, 2026-12-01, reads only).

The capture records every NVML call a quick check makes, with its value or the NVML error it
raised; `node_state_nvml` answers the same calls from it (tests/h200_capture.py's CapturedNvml),
so the reader's own code (harness.probes.check.gpus, which calls `dossier health`'s
device reads) builds the reading from what the card answered. The kernel side comes from the
same capture: the `dmesg` lines of the NVIDIA driver (through the reader's own dmesg parser) and
the GPU sysfs listed. A call the capture did not record raises NotCaptured, so its field is
{"unavailable": "NotCaptured: ..."}, never invented.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from harness.probes import check as check_reading
from harness.probes.check.kernel import kernel_log_from_dmesg
from tests.h200_capture import GRAPHICS, MEM, SM, ByArgs, CapturedNvml

CAPTURES = Path(__file__).resolve().parent / "fixtures" / "h200" / "check"
CORRECTED, UNCORRECTED, VOLATILE, AGGREGATE = 0, 1, 0, 1
NOT_CAPTURED = {"unavailable": "NotCaptured: /proc/driver/nvidia/version was not recorded with the H200 captures"}


def capture(name: str = "node-idle.json") -> dict[str, Any]:
    return json.loads((CAPTURES / name).read_text())


def _answer(value: Any) -> Any:
    """A recorded value, or the recorded NVML error raised again under its own class name."""
    if isinstance(value, dict) and set(value) == {"error", "message"}:
        return type(value["error"], (Exception,), {})(value["message"])
    return value


def node_state_nvml(recorded: dict[str, Any]) -> CapturedNvml:
    """The capture's single GPU as pynvml answers (handle 0)."""
    nvml, d = recorded["nvml"], recorded["nvml"]["devices"][0]
    pci = d["pci"]
    answers: dict[str, Any] = {
        "nvmlSystemGetDriverVersion": nvml["driver"],
        "nvmlSystemGetNVMLVersion": nvml["nvml_version"],
        "nvmlSystemGetCudaDriverVersion": nvml["cuda_driver"],
        "nvmlDeviceGetCount": nvml["count"],
        "nvmlDeviceGetName": d["name"],
        "nvmlDeviceGetUUID": d["uuid"],
        "nvmlDeviceGetVbiosVersion": d["vbios"],
        "nvmlDeviceGetPciInfo_v3": SimpleNamespace(
            busId=pci["busId"].encode(), pciDeviceId=pci["pciDeviceId"], pciSubSystemId=pci["pciSubSystemId"]
        ),
        "nvmlDeviceGetPersistenceMode": d["persistence_mode"],
        "nvmlDeviceGetComputeMode": d["compute_mode"],
        "nvmlDeviceGetMigMode": d["mig_mode"],
        "nvmlDeviceGetEccMode": d["ecc_mode"],
        "nvmlDeviceGetTotalEccErrors": ByArgs(
            {
                (UNCORRECTED, VOLATILE): d["ecc_uncorrected_volatile"],
                (UNCORRECTED, AGGREGATE): d["ecc_uncorrected_aggregate"],
                (CORRECTED, VOLATILE): d["ecc_corrected_volatile"],
            }
        ),
        "nvmlDeviceGetRemappedRows": tuple(d["remapped_rows"]),
        "nvmlDeviceGetRetiredPages": ByArgs(
            {(0,): _answer(d["retired_pages_sbe"]), (1,): _answer(d["retired_pages_dbe"])}
        ),
        "nvmlDeviceGetRetiredPagesPendingStatus": _answer(d["retired_pages_pending"]),
        "nvmlDeviceGetCurrPcieLinkGeneration": d["pcie_gen_current"],
        "nvmlDeviceGetMaxPcieLinkGeneration": d["pcie_gen_max_device"],
        "nvmlDeviceGetGpuMaxPcieLinkGeneration": d["pcie_gen_max_gpu"],
        "nvmlDeviceGetCurrPcieLinkWidth": d["pcie_width_current"],
        "nvmlDeviceGetMaxPcieLinkWidth": d["pcie_width_max"],
        "nvmlDeviceGetCurrentClocksEventReasons": d["clock_event_reasons"],
        "nvmlDeviceGetPowerManagementDefaultLimit": d["power_limit_default_mw"],
        "nvmlDeviceGetEnforcedPowerLimit": d["power_limit_enforced_mw"],
        "nvmlDeviceGetApplicationsClock": ByArgs({(MEM,): d["app_clock_mem"]}),
        "nvmlDeviceGetDefaultApplicationsClock": ByArgs({(MEM,): d["app_clock_mem_default"]}),
        "nvmlDeviceGetClockInfo": ByArgs({(SM,): d["sm_clock"]}),
        "nvmlDeviceGetMaxClockInfo": ByArgs({(SM,): d["sm_clock_max"]}),
        "nvmlDeviceGetTemperature": ByArgs({(0,): d["temperature"]}),
        "nvmlDeviceGetPowerUsage": round(d["power_w"] * 1000),
        "nvmlDeviceGetComputeRunningProcesses": [
            SimpleNamespace(pid=p["pid"], usedGpuMemory=p["usedGpuMemory"]) for p in d["processes_compute"]
        ],
        "nvmlDeviceGetNvLinkState": ByArgs({(link["link"],): _answer(link["state"]) for link in d["nvlink"]}),
    }
    assert GRAPHICS not in (SM, MEM)  # the capture read SM and memory clocks only: graphics stays NotCaptured
    return CapturedNvml(answers, "the node-state capture")


class CapturedSession:
    """An NvmlSession that answers from a capture (one GPU, handle 0)."""

    def __init__(self, pynvml: CapturedNvml) -> None:
        self.pynvml, self.reason, self.ok = pynvml, None, True

    def handles(self) -> list[int]:
        return list(range(self.pynvml.nvmlDeviceGetCount()))


def reading(name: str = "node-idle.json") -> dict[str, Any]:
    """The reading `dossier check` would have taken on the H200 when the capture was made."""
    recorded = capture(name)
    nvml, devices = check_reading.gpus(CapturedSession(node_state_nvml(recorded)))
    dmesg = recorded["kernel_log"]["dmesg"]
    log = kernel_log_from_dmesg("\n".join(dmesg["nvidia_lines"]), f"dmesg, captured ({name})")
    log["records_read"] = dmesg["lines"]  # the capture kept the driver's lines and counted all of them
    pci = [
        {"address": address, "device_id": entry["device"], "class": entry["class"]}
        for address, entry in recorded["sysfs_pci"].items()
        if entry["class"].startswith(("0x0300", "0x0302"))
    ]
    return {
        "kind": check_reading.KIND,
        "format_version": check_reading.FORMAT_VERSION,
        "taken_at": recorded["taken_at"].replace("Z", ".000000Z"),
        "hostname": recorded["uname"][1],
        "uptime_s": {"unavailable": "NotCaptured: /proc/uptime was not recorded with the H200 captures"},
        "kernel_module": NOT_CAPTURED,
        "pci_gpus": pci,
        "kernel_log": log,
        "nvml": nvml,
        "devices": devices,
    }


def changed(base: dict[str, Any], edit) -> dict[str, Any]:
    """A deep copy of BASE with one recorded fact changed by EDIT(copy): a fail path names what it changes."""
    copied = copy.deepcopy(base)
    edit(copied)
    return copied
