"""What a vendor's RMA ticket asks of each GPU, read now through NVML (`dossier evidence`): its
serial number, UUID, board part number, VBIOS, the InfoROM image and object versions, and the row
remapper's histogram (how many banks still have spare rows). Standard library and nvidia-ml-py;
every field a value or {"unavailable": reason} (NVML's own error), never a default."""

from __future__ import annotations

from typing import Any

from harness.probes.contract import attempt, unavailable
from harness.probes.devices import text
from harness.probes.nvml import NvmlSession

# nvmlInforomObject_t (nvml.h): NVML_INFOROM_OEM 0, NVML_INFOROM_ECC 1, NVML_INFOROM_POWER 2
INFOROM_OBJECTS = (("oem", "NVML_INFOROM_OEM", 0), ("ecc", "NVML_INFOROM_ECC", 1), ("power", "NVML_INFOROM_POWER", 2))
HISTOGRAM_FIELDS = ("max", "high", "partial", "low", "none")  # nvmlRowRemapperHistogramValues_t


def inforom(pynvml: Any, handle: Any) -> dict[str, Any]:
    versions: dict[str, Any] = {"image_version": attempt(lambda: text(pynvml.nvmlDeviceGetInforomImageVersion(handle)))}
    for name, constant, value in INFOROM_OBJECTS:
        code = getattr(pynvml, constant, value)
        versions[f"{name}_version"] = attempt(lambda c=code: text(pynvml.nvmlDeviceGetInforomVersion(handle, c)))
    return versions


def remapper_histogram(pynvml: Any, handle: Any) -> Any:
    found = attempt(pynvml.nvmlDeviceGetRowRemapperHistogram, handle)
    if isinstance(found, dict) and "unavailable" in found:
        return found
    return {field: getattr(found, field) for field in HISTOGRAM_FIELDS}


def device_identity(pynvml: Any, handle: Any, index: int) -> dict[str, Any]:
    pci = attempt(pynvml.nvmlDeviceGetPciInfo_v3, handle)
    return {
        "nvml_index": index,
        "uuid": attempt(lambda: text(pynvml.nvmlDeviceGetUUID(handle))),
        "serial": attempt(lambda: text(pynvml.nvmlDeviceGetSerial(handle))),
        "name": attempt(lambda: text(pynvml.nvmlDeviceGetName(handle))),
        "board_part_number": attempt(lambda: text(pynvml.nvmlDeviceGetBoardPartNumber(handle))),
        "vbios_version": attempt(lambda: text(pynvml.nvmlDeviceGetVbiosVersion(handle))),
        "pci_bus_id": text(pci.busId) if hasattr(pci, "busId") else pci,
        "inforom": inforom(pynvml, handle),
        "row_remapper_histogram": remapper_histogram(pynvml, handle),
    }


def identities(nvml: NvmlSession) -> Any:
    """Every GPU's identity, or why NVML gives none."""
    if not nvml.ok:
        return unavailable(str(nvml.reason))
    handles = attempt(nvml.handles)
    if isinstance(handles, dict):
        return handles
    return [device_identity(nvml.pynvml, handle, index) for index, handle in enumerate(handles)]
