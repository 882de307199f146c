"""What `dossier check` reads of a node, in about a second and without torch: NVML and the kernel's files.

The package is the face the host's `dossier check` imports (as it imports harness.probes.nvml);
`python -m harness.probes.check` prints a reading. Standard library and nvidia-ml-py only. The
reading is one JSON document, schemas/check-reading.schema.json: every GPU as `dossier health`
reads it (the same NVML reads, harness/probes/devices.py, so a health.json's devices and a
reading's are judged alike) plus its retired pages, the NVIDIA
GPUs on the PCI bus, the kernel module's version and the driver's lines in the kernel log.
`dossier check --save-reading F` keeps it and `dossier check --reading F` judges it again: the
live reader and a replay give the judge the same document. Every field is a value or
{"unavailable": reason}; nothing is judged here.
"""

from __future__ import annotations

import socket
import time
from typing import Any

from harness.probes.check.identity import identities
from harness.probes.check.kernel import kernel_log, kernel_module, pci_gpus, uptime_s
from harness.probes.contract import attempt, describe_exception, unavailable, utc_now
from harness.probes.devices import device_facts, system_facts
from harness.probes.nvml import NvmlSession

KIND = "rig-dossier node reading"
FORMAT_VERSION = 1
# nvmlPageRetirementCause_t (nvml.h): NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS, ..._DOUBLE_BIT_ECC_ERROR
MULTIPLE_SINGLE_BIT_ECC, DOUBLE_BIT_ECC = 0, 1


def retired_pages(pynvml: Any, handle: Any) -> Any:
    """Pages retired for double-bit and for repeated single-bit ECC errors, and whether a retirement
    waits for the next driver load (GPUs that remap rows instead answer NotSupported)."""
    double = attempt(pynvml.nvmlDeviceGetRetiredPages, handle, DOUBLE_BIT_ECC)
    if isinstance(double, dict):
        return double
    single = attempt(pynvml.nvmlDeviceGetRetiredPages, handle, MULTIPLE_SINGLE_BIT_ECC)
    pending = attempt(pynvml.nvmlDeviceGetRetiredPagesPendingStatus, handle)
    return {
        "double_bit_ecc": len(double),
        "multiple_single_bit_ecc": len(single) if isinstance(single, list) else single,
        "pending": bool(pending) if isinstance(pending, int) else pending,
    }


def gpus(nvml: NvmlSession) -> tuple[Any, Any]:
    """(driver, CUDA and NVML versions; every GPU's facts), or why NVML gives none."""
    if not nvml.ok:
        return unavailable(str(nvml.reason)), unavailable(str(nvml.reason))
    handles = attempt(nvml.handles)
    if isinstance(handles, dict):
        return system_facts(nvml.pynvml), handles
    devices = []
    for index, handle in enumerate(handles):
        try:
            facts = device_facts(nvml.pynvml, handle, index)
        except Exception as exc:  # noqa: BLE001 - one GPU's failure is that GPU's reading, not the node's end
            facts = {"nvml_index": index, "unreadable": describe_exception(exc)}
        facts["retired_pages"] = retired_pages(nvml.pynvml, handle)
        devices.append(facts)
    return system_facts(nvml.pynvml), devices


def read() -> dict[str, Any]:
    """The node's reading, now."""
    started = time.monotonic()
    reading: dict[str, Any] = {
        "kind": KIND,
        "format_version": FORMAT_VERSION,
        "taken_at": utc_now(),
        "hostname": attempt(socket.gethostname),
        "uptime_s": uptime_s(),
        "kernel_module": kernel_module(),
        "pci_gpus": pci_gpus(),
        "kernel_log": kernel_log(),
    }
    with NvmlSession() as nvml:
        reading["nvml"], reading["devices"] = gpus(nvml)
    reading["read_seconds"] = round(time.monotonic() - started, 3)
    return reading


def identify_gpus() -> Any:
    """Every GPU's identity for a vendor ticket (serial, VBIOS, InfoROM: harness/probes/check/identity.py), now."""
    with NvmlSession() as nvml:
        return identities(nvml)
