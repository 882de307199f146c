"""Headlines of health.json, recomputed from its facts, and where the document disagrees.

The contracts are re-judged from the facts (harness.analysis.health_contracts) and each
device's SKU is re-identified from its PCI device id, memory and default power limit with
the catalogue, so a document whose stated verdicts were edited, or that was judged by an
older catalogue, shows up in `discrepancies`. Standard library only.
"""

from __future__ import annotations

from typing import Any

from harness import catalogue
from harness.analysis.health_contracts import evaluate, unavailable_reason


def _value(value: Any) -> Any:
    """A fact, or None where the document says it is unavailable."""
    return None if unavailable_reason(value) is not None else value


def _number(value: Any) -> float | None:
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def recomputed_sku(device: dict[str, Any]) -> str | None:
    pci = device.get("pci_device_id")
    if not isinstance(pci, str):
        return None
    return catalogue.identify(pci, _number(device.get("memory_total_mib")),
                              _number(device.get("power", {}).get("default_limit_w"))).sku_id


def headlines(document: dict[str, Any]) -> dict[str, Any]:
    software = document.get("software", {})
    devices = document.get("devices") if isinstance(document.get("devices"), list) else []
    contracts = evaluate(document)
    return {
        "driver_version": _value(software.get("driver_version")),
        "cuda_driver_version": _value(software.get("cuda_driver_version")),
        "torch_version": _value(software.get("torch_version")),
        "torch_cuda_build": _value(software.get("torch_cuda_build")),
        "device_count": len(devices),
        "devices": [{"index": d.get("nvml_index"), "name": _value(d.get("name")),
                     "sku_id": recomputed_sku(d), "uuid": _value(d.get("uuid"))} for d in devices],
        "contracts_failed": [c["name"] for c in contracts if c["status"] == "fail"],
        "contracts": {c["name"]: c["status"] for c in contracts},
        "mode": document.get("mode"),
    }


def discrepancies(document: dict[str, Any]) -> list[str]:
    found = []
    stated = {c.get("name"): c.get("status") for c in document.get("contracts", []) if isinstance(c, dict)}
    recomputed = headlines(document)["contracts"]
    for name in sorted(set(stated) | set(recomputed)):
        if stated.get(name) != recomputed.get(name):
            found.append(f"contract {name}: document says {stated.get(name)!r}, "
                         f"the facts give {recomputed.get(name)!r}")
    devices = document.get("devices") if isinstance(document.get("devices"), list) else []
    for device in devices:
        said = (device.get("sku") or {}).get("id")
        again = recomputed_sku(device)
        if said != again:
            found.append(f"GPU{device.get('nvml_index')} SKU: document says {said!r}, "
                         f"the catalogue gives {again!r}")
    count = document.get("nvml_device_count")
    if isinstance(count, int) and count != len(devices):
        found.append(f"nvml_device_count {count} but {len(devices)} device record(s)")
    return found
