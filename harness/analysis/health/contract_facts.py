"""What every health contract is made of: reading health.json's facts (the NVML devices, a field's
unavailable reason, a device's label) and the contract record itself
({"name", "status": a Verdict as health.json records it, "evidence", "remedy"}). Standard library only."""

from __future__ import annotations

from typing import Any

from harness.analysis.units import unavailable_reason
from harness.analysis.verdict import Verdict, recorded


def contract(name: str, status: Verdict, evidence: str, remedy: str) -> dict[str, str]:
    """A contract as health.json records it (SKIP is the schema's "not-applicable")."""
    return {"name": name, "status": recorded(status), "evidence": evidence, "remedy": remedy}


def verdict(
    name: str,
    remedy: str,
    problems: list[str],
    notes: list[str],
    unsupported: list[str] | None = None,
    feature: str | None = None,
) -> dict[str, str]:
    """FAIL naming the problems, else PASS with the notes (and the devices that lack `feature`);
    SKIP when `feature` is given and no device supports it."""
    unsupported = unsupported or []
    if feature is not None and not problems and not notes:
        return contract(name, Verdict.SKIP, f"{feature} not supported: " + "; ".join(unsupported), remedy)
    return contract(
        name, Verdict.FAIL if problems else Verdict.PASS, "; ".join(problems or notes + unsupported), remedy
    )


def gpus(facts: dict[str, Any]) -> tuple[list[dict[str, Any]], str | None]:
    """The NVML devices, or ([], why there are none)."""
    devices = facts.get("devices")
    reason = unavailable_reason(devices)
    if reason is not None:
        return [], f"no GPU: {reason}"
    if not devices:
        return [], "no GPU: NVML lists no device"
    return devices, None


def label(device: dict[str, Any]) -> str:
    return f"GPU{device.get('nvml_index')}"


def torch_imported(facts: dict[str, Any]) -> bool:
    """Whether the facts are torch's own answers; documents from before the field existed imported torch."""
    return facts.get("torch_imported", True) is not False


def version_tuple(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split(".")[:2])
