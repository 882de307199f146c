"""Which NVML device each torch (CUDA) device is: matched by UUID, else by PCI bus id.

CUDA numbers devices fastest-first unless CUDA_DEVICE_ORDER=PCI_BUS_ID and renumbers them
under CUDA_VISIBLE_DEVICES, while NVML numbers every device in PCI order; only the UUID
(or the PCI location) names the same device on both sides. Standard library only.
"""

from __future__ import annotations

from typing import Any


def normalise_uuid(text: str) -> str:
    """'GPU-EBDC8522-...', 'ebdc8522-...' (torch's form) -> 'GPU-ebdc8522-...' (NVML's form)."""
    text = text.strip()
    prefix, _, rest = text.partition("-")
    if prefix.upper() in ("GPU", "MIG") and rest:
        return f"{prefix.upper()}-{rest.lower()}"
    return f"GPU-{text.lower()}"


def normalise_bus_id(text: str) -> str:
    """'00000000:00:06.0' and '0000:00:06.0' -> '00000000:00:06.0' (NVML's 8-digit domain)."""
    domain, _, rest = text.strip().upper().partition(":")
    return f"{int(domain, 16):08X}:{rest}" if rest else text.strip().upper()


def nvml_index_by_uuid(uuid: Any, nvml_uuids: dict[int, Any]) -> int | None:
    """The NVML index whose UUID names the same device as `uuid` (either spelling), else None.

    `nvml_uuids` maps NVML index -> UUID (an unreadable UUID, any non-string, never matches).
    """
    if not isinstance(uuid, str) or not uuid.strip():
        return None
    want = normalise_uuid(uuid)
    return next(
        (
            index
            for index, candidate in nvml_uuids.items()
            if isinstance(candidate, str) and normalise_uuid(candidate) == want
        ),
        None,
    )


def map_torch_to_nvml(torch_devices: list[dict[str, Any]], nvml_devices: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One entry per torch device: its NVML index and how the match was made.

    An unmatched device gets {"unavailable": why} as its NVML index, never a guess by position.
    """
    uuids = {d["nvml_index"]: d.get("uuid") for d in nvml_devices}
    by_bus = {
        normalise_bus_id(d["pci_bus_id"]): d["nvml_index"] for d in nvml_devices if isinstance(d.get("pci_bus_id"), str)
    }
    mapping = []
    for device in torch_devices:
        uuid, bus = device.get("uuid"), device.get("pci_bus_id")
        entry: dict[str, Any] = {"torch_index": device["torch_index"]}
        if (by_uuid := nvml_index_by_uuid(uuid, uuids)) is not None:
            entry.update(nvml_index=by_uuid, matched_by="uuid")
        elif isinstance(bus, str) and normalise_bus_id(bus) in by_bus:
            entry.update(nvml_index=by_bus[normalise_bus_id(bus)], matched_by="pci_bus_id")
        else:
            entry.update(
                nvml_index={"unavailable": f"no NVML device has UUID {uuid!r} or PCI bus id {bus!r}"}, matched_by="none"
            )
        mapping.append(entry)
    return mapping
