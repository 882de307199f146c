"""The GPU reference catalogue (harness/data/gpus.json) and SKU identification.

Standard library only: probes use it inside plain CUDA images. The catalogue's format is
schemas/catalogue.schema.json. A known-good result is comparable only for the same SKU,
capacity and form factor: `identify` says which SKU a device is, from its PCI device id,
memory size and power limit, and why.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CATALOGUE_PATH = Path(__file__).resolve().parent / "data" / "gpus.json"
MEMORY_TOLERANCE = 0.06  # NVML reports usable memory, a few percent under the marketed size


@functools.cache
def load(path: Path = CATALOGUE_PATH) -> dict[str, Any]:
    return json.loads(path.read_text())


def rule(name: str) -> float:
    """A rule every SKU is judged by (the catalogue's `rules`: written once, with its source)."""
    return load()["rules"][name]["value"]


def rule_source(name: str) -> str:
    return load()["rules"][name]["source"]


def acceptance_defaults() -> dict[str, float]:
    """The acceptance thresholds the rules give every SKU's profile (its own block may override them)."""
    return {r["acceptance"]: r["value"] for r in load()["rules"].values() if "acceptance" in r}


def skus() -> list[dict[str, Any]]:
    return load()["skus"]


def by_id(sku_id: str) -> dict[str, Any] | None:
    return next((s for s in skus() if s["id"] == sku_id), None)


def node_check_rules() -> dict[str, Any]:
    """What `dossier check` fails a node on beyond its plain facts: the fatal XIDs and two bounds, each
    with its source (the catalogue's `node_check`)."""
    return load()["node_check"]


@dataclass(frozen=True)
class Identification:
    """Which catalogue SKU a device is (sku is None when none matches), and the evidence."""

    sku: dict[str, Any] | None
    evidence: str

    @property
    def sku_id(self) -> str | None:
        return self.sku["id"] if self.sku else None


def normalise_device_id(pci_device_id: str | int) -> int:
    """0x233510DE (NVML's combined id), '0x2335' or 0x2335 -> 0x2335."""
    value = int(pci_device_id, 16) if isinstance(pci_device_id, str) else int(pci_device_id)
    return value >> 16 if value > 0xFFFF else value


def identify(pci_device_id: str | int, memory_total_mib: float | None, power_limit_w: float | None) -> Identification:
    """Match a device to one SKU by PCI device id, then memory size, then power limit."""
    device = normalise_device_id(pci_device_id)
    candidates = [s for s in skus() if device in {int(i, 16) for i in s["pci_device_ids"]}]
    if not candidates:
        return Identification(None, f"PCI device id {device:#06x} is not in the catalogue")
    if memory_total_mib is not None:
        sized = [
            s
            for s in candidates
            if abs(memory_total_mib / 1024 - s["memory_gib"]) <= MEMORY_TOLERANCE * s["memory_gib"]
        ]
        if not sized:
            return Identification(
                None,
                f"PCI device id {device:#06x} matches "
                f"{', '.join(s['id'] for s in candidates)} but none has "
                f"{memory_total_mib / 1024:.1f} GiB",
            )
        candidates = sized
    if len(candidates) > 1 and power_limit_w is not None:
        candidates = [s for s in candidates if power_limit_w <= s["power_limit_w"] * 1.001] or candidates
    if len(candidates) > 1:
        return Identification(None, "ambiguous: " + ", ".join(s["id"] for s in candidates))
    sku = candidates[0]
    parts = [f"PCI device id {device:#06x}"]
    if memory_total_mib is not None:
        parts.append(f"{memory_total_mib:.0f} MiB")
    if power_limit_w is not None:
        parts.append(f"power limit {power_limit_w:g} W (SKU max {sku['power_limit_w']:g} W)")
    return Identification(sku, f"{sku['name']} ({sku['form_factor']}): " + ", ".join(parts))


def datasheet_bandwidth_gbps(sku_id: str | None) -> float | None:
    """The SKU's published memory bandwidth (GB/s), the most its memory can move; None if unknown."""
    sku = by_id(sku_id) if sku_id else None
    value = (sku or {}).get("published", {}).get("memory_bandwidth_gbps")
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def comparable(sku_a: str | None, sku_b: str | None) -> tuple[bool, str]:
    """A known-good result compares only within one SKU, capacity and form factor."""
    if sku_a is None or sku_b is None:
        return False, "the device's SKU is unknown, so no known-good result applies"
    if sku_a != sku_b:
        a, b = by_id(sku_a), by_id(sku_b)
        why = f"{sku_a} is not {sku_b}"
        if a and b:
            why += (
                f" ({a['form_factor']} {a['memory_gib']} GiB vs {b['form_factor']} "
                f"{b['memory_gib']} GiB): a different capacity or form factor is not interchangeable"
            )
        return False, why
    return True, f"same SKU ({sku_a})"


def primary_known_good(
    sku: dict[str, Any], metric: str, *, kernel: str | None = None, dtype: str | None = None
) -> dict[str, Any] | None:
    """The known-good entry comparisons use for one metric and kernel (or dtype), if recorded."""
    for entry in sku.get("known_good", []):
        if (
            entry["metric"] == metric
            and entry.get("primary")
            and (kernel is None or entry.get("kernel") == kernel)
            and (dtype is None or entry.get("dtype") == dtype)
        ):
            return entry
    return None


def repeatability_bounds() -> dict[str, Any]:
    """The catalogue's repeatability block: the spread statistic, the bound per figure kind, their source."""
    return load().get("repeatability", {})


def run_to_run(sku_id: str | None) -> dict[str, Any] | None:
    """The SKU's measured run-to-run spreads (sources and figures), or None when none is recorded."""
    sku = by_id(sku_id) if sku_id else None
    return (sku or {}).get("run_to_run")


def noise_campaign(sku_id: str | None) -> dict[str, Any]:
    """The SKU's noise campaign (harness.analysis.noise: per figure the run-to-run spread on one GPU and
    over the SKU's units, with the campaign's source and measured false-alarm rate), or {} when none."""
    sku = by_id(sku_id) if sku_id else None
    return (sku or {}).get("noise_campaign") or {}
