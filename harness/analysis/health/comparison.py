"""What `dossier diff` and `dossier reproduce` set side by side from a health document: each GPU's
configuration (power limit, clocks, ECC, MIG, persistence, compute mode), its link, its identity,
and the libraries the run used. Each reader gives one line per GPU ("GPU0: ..."), a field NVML could
not read as its reason, so that two bundles' values compare as text.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from harness.analysis.health.contract_facts import gpus
from harness.analysis.units import unavailable_reason

Reader = Callable[[dict[str, Any]], list[str]]


def _shown(value: Any) -> str:
    reason = unavailable_reason(value)
    return f"unreadable ({reason})" if reason else str(value)


def per_gpu(describe: Callable[[dict[str, Any]], str]) -> Reader:
    """A reader of one line per GPU of a health document: "GPU<nvml index>: DESCRIBE(device)"."""

    def read(document: dict[str, Any]) -> list[str]:
        devices, _ = gpus(document)
        return [f"GPU{d.get('nvml_index')}: {describe(d)}" for d in devices if isinstance(d, dict)]

    return read


def _part(device: dict[str, Any], group: str) -> dict[str, Any]:
    value = device.get(group)
    return value if isinstance(value, dict) else {}


def power_limit(device: dict[str, Any]) -> str:
    power = _part(device, "power")
    return f"enforced {_shown(power.get('enforced_limit_w'))} W, default {_shown(power.get('default_limit_w'))} W"


def application_clocks(device: dict[str, Any]) -> str:
    clocks = _part(device, "clocks")
    return ", ".join(
        f"{kind} {_shown(clocks.get(f'applications_{kind}_mhz'))} MHz (default "
        f"{_shown(clocks.get(f'default_applications_{kind}_mhz'))})"
        for kind in ("graphics", "memory")
    )


def max_clocks(device: dict[str, Any]) -> str:
    clocks = _part(device, "clocks")
    return f"SM {_shown(clocks.get('sm_max_mhz'))} MHz, memory {_shown(clocks.get('memory_max_mhz'))} MHz"


def ecc(device: dict[str, Any]) -> str:
    found = device.get("ecc")
    if unavailable_reason(found):
        return _shown(found)
    part = _part(device, "ecc")
    return f"{_shown(part.get('mode_current'))} (pending {_shown(part.get('mode_pending'))})"


def mode(name: str) -> Callable[[dict[str, Any]], str]:
    def describe(device: dict[str, Any]) -> str:
        return _shown(_part(device, "modes").get(name))

    return describe


def mig(device: dict[str, Any]) -> str:
    modes = _part(device, "modes")
    return f"{_shown(modes.get('mig_current'))} (pending {_shown(modes.get('mig_pending'))})"


def pcie_max(device: dict[str, Any]) -> str:
    pcie = device.get("pcie")
    if unavailable_reason(pcie) or not isinstance(pcie, dict):
        return _shown(pcie)
    return f"Gen{_shown(pcie.get('max_gen'))} x{_shown(pcie.get('max_width'))}"


def libraries(document: dict[str, Any]) -> list[str]:
    """The libraries the probes loaded beside torch (cuDNN, NCCL), as health.json's software recorded them."""
    software = document.get("software")
    software = software if isinstance(software, dict) else {}
    return [
        f"{name} {_shown(software.get(key))}"
        for name, key in (("cuDNN", "cudnn_version"), ("NCCL", "nccl_version"))
        if key in software
    ]
