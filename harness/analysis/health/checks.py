"""A health document's derived facts against the facts they are derived from (issue 28).

Standard library only. The health probe reads facts (NVML, torch, the kernel, `nvidia-smi topo -m`)
and derives a few more from them as it writes the document; harness.analysis.health recomputes the
contracts and each device's SKU id, and this module the rest: the SKU record (name, form factor,
evidence) from the catalogue, the topology matrix parsed again from the raw text, each device's row
of it and its torch index, the torch-to-NVML device mapping, which processes the harness started,
and the clock-event reason names of every mask (the device reading and the load's samples).
"""

from __future__ import annotations

from typing import Any

from harness import catalogue
from harness.analysis.clock_events import decode_clock_event_reasons
from harness.analysis.device_mapping import map_torch_to_nvml
from harness.analysis.topology import gpu_links, parse_topo_matrix
from harness.analysis.units import number_or_none


def sku_record(pci_device_id: Any, memory_total_mib: Any, power_limit_w: Any) -> dict[str, Any]:
    """The catalogue SKU of a device (id null when none matches) and the evidence for it."""
    if not isinstance(pci_device_id, str):
        why = pci_device_id.get("unavailable") if isinstance(pci_device_id, dict) else pci_device_id
        return {"id": None, "name": None, "form_factor": None, "evidence": f"PCI device id unreadable: {why}"}

    found = catalogue.identify(pci_device_id, number_or_none(memory_total_mib), number_or_none(power_limit_w))
    sku = found.sku or {}
    return {
        "id": found.sku_id,
        "name": sku.get("name"),
        "form_factor": sku.get("form_factor"),
        "evidence": found.evidence,
    }


def _names(where: str, record: Any, mask_key: str, names_key: str) -> list[str]:
    if (
        not isinstance(record, dict)
        or not isinstance(record.get(mask_key), int)
        or isinstance(record.get(mask_key), bool)
    ):
        return []
    again = decode_clock_event_reasons(record[mask_key])
    return (
        []
        if record.get(names_key) == again
        else [f"{where}: {record.get(names_key)} but mask {record[mask_key]} names {again}"]
    )


def _device_discrepancies(document: dict[str, Any], device: dict[str, Any]) -> list[str]:
    where = f"GPU{device.get('nvml_index')}"
    found = []
    sku = sku_record(
        device.get("pci_device_id"), device.get("memory_total_mib"), (device.get("power") or {}).get("default_limit_w")
    )
    if device.get("sku") != sku:
        found.append(f"{where} sku {device.get('sku')} but the catalogue gives {sku}")
    found += _names(f"{where} clock_event_reasons.names", device.get("clock_event_reasons"), "mask", "names")
    matrix = (document.get("topology") or {}).get("matrix")
    label = f"GPU{device.get('nvml_index')}"
    if (
        isinstance(matrix, dict)
        and label in (matrix.get("rows") or {})
        and "topology_links" in device
        and device["topology_links"] != gpu_links(matrix, label)
    ):
        found.append(f"{where} topology_links are not its row of the topology matrix")
    mapping = document.get("device_mapping")
    if isinstance(mapping, list) and "torch_index" in device:
        mapped = [m.get("torch_index") for m in mapping if m.get("nvml_index") == device.get("nvml_index")]
        stated = device["torch_index"]
        if (mapped and stated != mapped[0]) or (
            not mapped and not (isinstance(stated, dict) and "unavailable" in stated)
        ):
            found.append(f"{where} torch_index {stated!r} but the device mapping gives {mapped[:1] or 'none'}")
    pids = document.get("harness_pids")
    pids = pids if isinstance(pids, list) else []
    processes = device.get("processes")
    for process in processes if isinstance(processes, list) else []:
        if isinstance(process, dict) and process.get("started_by_harness") != (process.get("pid") in pids):
            found.append(
                f"{where} process {process.get('pid')}: started_by_harness {process['started_by_harness']} but "
                f"the harness's pids are {pids}"
            )
    return found


def discrepancies(document: dict[str, Any]) -> list[str]:
    found = []
    topology = document.get("topology") or {}
    raw, matrix = topology.get("raw_text"), topology.get("matrix")
    if isinstance(raw, str) and isinstance(matrix, dict) and "unavailable" not in matrix:
        try:
            again = parse_topo_matrix(raw)
        except ValueError as exc:
            again = {"unavailable": str(exc)}
        if matrix != again:
            found.append("topology.matrix is not what topology.raw_text parses to")
    devices = document.get("devices")
    devices = devices if isinstance(devices, list) else []
    torch_devices = document.get("torch_devices")
    if (
        isinstance(torch_devices, list)
        and devices
        and "device_mapping" in document
        and document["device_mapping"] != map_torch_to_nvml(torch_devices, devices)
    ):
        found.append("device_mapping is not the mapping of torch_devices onto devices (by UUID, then PCI bus id)")
    for device in devices:
        if isinstance(device, dict):
            found += _device_discrepancies(document, device)
    load = document.get("load")
    for record in (load.get("devices") or []) if isinstance(load, dict) else []:
        for i, sample in enumerate(record.get("samples") or [] if isinstance(record, dict) else []):
            found += _names(
                f"load GPU{record.get('nvml_index')} sample {i} clock_event_reasons",
                sample,
                "clock_event_reasons_mask",
                "clock_event_reasons",
            )
    return found
