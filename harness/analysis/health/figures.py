"""Headlines of health.json, recomputed from its facts, and where the document disagrees.

The contracts are re-judged from the facts (harness.analysis.health.contracts) and each
device's SKU is re-identified from its PCI device id, memory and default power limit with
the catalogue, so a document whose stated verdicts were edited, or that was judged by an
older catalogue, shows up in `discrepancies`. Standard library only.
"""

from __future__ import annotations

from typing import Any

from harness import catalogue
from harness.analysis.health.contracts import evaluate
from harness.analysis.units import number_or_none, unavailable_reason
from harness.analysis.verdict import Verdict


def _value(value: Any) -> Any:
    """A fact, or None where the document says it is unavailable."""
    return None if unavailable_reason(value) is not None else value


def recomputed_sku(device: dict[str, Any]) -> str | None:
    pci = device.get("pci_device_id")
    if not isinstance(pci, str):
        return None
    return catalogue.identify(
        pci,
        number_or_none(device.get("memory_total_mib")),
        number_or_none(device.get("power", {}).get("default_limit_w")),
    ).sku_id


def headlines(document: dict[str, Any]) -> dict[str, Any]:
    software = document.get("software", {})
    devices = document.get("devices")
    devices = devices if isinstance(devices, list) else []
    contracts = evaluate(document)
    return {
        "driver_version": _value(software.get("driver_version")),
        "cuda_driver_version": _value(software.get("cuda_driver_version")),
        "torch_version": _value(software.get("torch_version")),
        "torch_cuda_build": _value(software.get("torch_cuda_build")),
        "device_count": len(devices),
        "devices": [
            {
                "index": d.get("nvml_index"),
                "name": _value(d.get("name")),
                "sku_id": recomputed_sku(d),
                "uuid": _value(d.get("uuid")),
            }
            for d in devices
        ],
        "contracts_failed": [c["name"] for c in contracts if c["status"] == Verdict.FAIL],
        "contracts": {c["name"]: c["status"] for c in contracts},
        "mode": document.get("mode"),
    }


def discrepancies(document: dict[str, Any]) -> list[str]:
    found = []
    stated = {c.get("name"): c for c in document.get("contracts", []) if isinstance(c, dict)}
    recomputed: dict[Any, dict[str, str]] = {c["name"]: c for c in evaluate(document)}  # looked up by stated names
    if [c.get("name") for c in document.get("contracts", []) if isinstance(c, dict)] != list(recomputed):
        found.append(
            f"contracts: {len(document.get('contracts', []))} stated, not the {len(recomputed)} the facts "
            "give, each once, in order"
        )
    for name in sorted(set(stated) | set(recomputed), key=str):
        said, again = stated.get(name) or {}, recomputed.get(name) or {}
        if said.get("status") != again.get("status"):
            found.append(
                f"contract {name}: document says {said.get('status')!r}, the facts give {again.get('status')!r}"
            )
        elif said != again:
            keys = sorted(k for k in set(said) | set(again) if said.get(k) != again.get(k))
            found.append(f"contract {name}: {', '.join(keys)} differ from what the facts give")
    found += load_discrepancies(document)
    devices = document.get("devices")
    devices = devices if isinstance(devices, list) else []
    for device in devices:
        said_sku = (device.get("sku") or {}).get("id")
        again_sku = recomputed_sku(device)
        if said_sku != again_sku:
            found.append(
                f"GPU{device.get('nvml_index')} SKU: document says {said_sku!r}, the catalogue gives {again_sku!r}"
            )
    count = document.get("nvml_device_count")
    if isinstance(count, int) and count != len(devices):
        found.append(f"nvml_device_count {count} but {len(devices)} device record(s)")
    from harness.analysis.health import checks as health_checks

    return found + health_checks.discrepancies(document)


def load_discrepancies(document: dict[str, Any]) -> list[str]:
    """The load's work counts from its rounds: 2 n^3 FLOP per GEMM, each copy read and written."""
    load = document.get("load")
    if not isinstance(load, dict) or not isinstance(load.get("devices"), list):
        return []
    found = []
    for device in load["devices"]:
        rounds, n = device.get("rounds"), device.get("gemm_n")
        if not isinstance(rounds, int) or not isinstance(n, int) or number_or_none(device.get("copy_mib")) is None:
            continue
        where = f"load GPU{device.get('nvml_index')}"
        if device.get("gemm_flop") != 2 * n**3 * rounds:
            found.append(
                f"{where} gemm_flop {device.get('gemm_flop')} but {rounds} rounds of a {n}^3 GEMM are "
                f"{2 * n**3 * rounds}"
            )
        moved = 2 * round(device["copy_mib"] * 2**20) * rounds
        if device.get("copy_bytes_moved") != moved:
            found.append(
                f"{where} copy_bytes_moved {device.get('copy_bytes_moved')} but {rounds} copies of "
                f"{device['copy_mib']:g} MiB read and write {moved}"
            )
    return found


ONE_GPU = (
    "1 GPU visible to CUDA (the health step's count, {source}): all-reduce needs at least 2; the normal "
    "and P2P-disabled curves need two ranks on two GPUs, and a one-GPU curve would be simulated, so no "
    "all-reduce process was started and none is recorded"
)


def visible_gpus(document: dict[str, Any]) -> tuple[int, str] | None:
    """(how many GPUs a probe's torch.cuda.device_count() will see, where that count comes from) as the
    health step counted them: its CUDA view (honouring CUDA_VISIBLE_DEVICES), else NVML's devices; None
    when neither was read."""
    count = document.get("torch_device_count")
    if isinstance(count, int) and not isinstance(count, bool):
        return count, f"{document.get('device_view_source') or 'CUDA'}".split(";")[0]
    devices = document.get("devices")
    if isinstance(devices, list) and not document.get("cuda_visible_devices"):
        return len(devices), "NVML's device list"
    return None


UUID_TAIL = 8  # hex digits of a GPU's UUID that name a host: as many as `nvidia-smi -L` users quote


def gpu_tail(document: Any) -> str | None:
    """The last UUID_TAIL hex digits of the first GPU's UUID in a health DOCUMENT (what tells two
    hosts called `vm` apart on a page or in a file name), or None without a GPU or a readable UUID."""
    devices = document.get("devices") if isinstance(document, dict) else None
    for device in devices if isinstance(devices, list) else []:
        uuid = _value(device.get("uuid")) if isinstance(device, dict) else None
        digits = "".join(c for c in uuid if c in "0123456789abcdefABCDEF") if isinstance(uuid, str) else ""
        if len(digits) >= UUID_TAIL:
            return digits[-UUID_TAIL:].lower()
    return None


def host_label(hostname: Any, document: Any) -> str:
    """The host as a page and a file name say it: its hostname and the first GPU's UUID tail
    ("vm-8c891dc9"); the hostname alone without a GPU ("host" when it was not read)."""
    name = hostname if isinstance(hostname, str) and hostname else "host"
    tail = gpu_tail(document)
    return f"{name}-{tail}" if tail else name
