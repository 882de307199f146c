"""The inputs a baseline is drawn from (harness.judge.acceptance.baseline.build): each verified bundle
(Input) read once into the little the draft is made of (read: a Reading of its figures, GPUs,
configuration and digests), and the one SKU they are all of (resolve_sku; mixed SKUs are refused)."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from harness import catalogue
from harness.bundle.view import BundleView
from harness.errors import UsageError
from harness.judge.acceptance.baseline.figures import BaselineFigure, figures_of
from harness.judge.acceptance.baseline.observed import Observed, observe
from harness.judge.facts import BundleFacts


@dataclass(frozen=True)
class Input:
    """One verified input bundle."""

    name: str
    sha256: str
    signer_keyid: str
    view: BundleView

    @property
    def facts(self) -> BundleFacts:
        return BundleFacts(self.view)


@dataclass(frozen=True)
class Reading:
    """What the profile takes from one input (`read`): plain data, small."""

    name: str
    sha256: str
    signer_keyid: str
    sku: str | None  # the SKU key (`_sku_of`), None when the input has none
    sku_problem: str | None  # why it has none: no GPU, or GPUs of two SKUs
    gpus: list[dict[str, Any]]  # its health.json devices[]
    figures: dict[BaselineFigure, float]
    observed: Observed


def _gpu_records(facts: BundleFacts) -> list[dict[str, Any]]:
    document = facts.document("health") or {}
    devices = document.get("devices")
    return [d for d in devices if isinstance(d, dict)] if isinstance(devices, list) else []


def _sku_of(name: str, facts: BundleFacts, records: list[dict[str, Any]]) -> tuple[str | None, str | None]:
    """(the SKU key of one input: its catalogue SKU, or its PCI device id when the catalogue lacks it,
    or None and why it has none)."""
    heads = facts.figures("health").values or {}
    if not records:
        return None, (
            f"{name}: no GPU in its health.json ({facts.step_why('health') if not heads else 'NVML lists none'}): "
            "a baseline is of a GPU SKU"
        )
    keys = set()
    by_uuid = {d.get("uuid"): d.get("sku_id") for d in heads.get("devices") or []}
    for record in records:
        sku = by_uuid.get(record.get("uuid"))
        pci = record.get("pci_device_id")
        keys.add(
            sku or (f"pci {catalogue.normalise_device_id(pci):#06x}" if isinstance(pci, (str, int)) else "unknown")
        )
    if len(keys) > 1:
        return None, f"{name} holds GPUs of more than one SKU ({', '.join(sorted(keys))}): a baseline is of one SKU"
    return keys.pop(), None


def read(item: Input) -> Reading:
    """Everything the draft takes from one input (pass 1)."""
    facts = item.facts
    records = _gpu_records(facts)
    sku, problem = _sku_of(item.name, facts, records)
    return Reading(item.name, item.sha256, item.signer_keyid, sku, problem, records, figures_of(facts), observe(facts))


def resolve_sku(inputs: Sequence[Reading], asked: str | None) -> tuple[str, dict[str, Any]]:
    """(the profile's SKU id, the GPUs' identity); mixed SKUs, or a --sku that is not theirs, exit 2."""
    for item in inputs:
        if item.sku_problem:
            raise UsageError(item.sku_problem)
    found = {item.name: (item.sku, item.gpus) for item in inputs}
    keys = {key for key, _ in found.values()}
    if len(keys) > 1:
        listed = "; ".join(f"{name}: {key}" for name, (key, _) in found.items())
        raise UsageError(
            f"the bundles are of more than one SKU ({listed}): a baseline is of one SKU",
            hint="make one baseline per SKU, from that SKU's bundles only",
        )
    key = keys.pop()
    assert key is not None  # an input without a SKU has its sku_problem, refused above
    records = [r for _, rs in found.values() for r in rs]
    ids = sorted(
        {
            f"{catalogue.normalise_device_id(r['pci_device_id']):#06x}"
            for r in records
            if isinstance(r.get("pci_device_id"), (str, int))
        }
    )
    memory = [r["memory_total_mib"] for r in records if isinstance(r.get("memory_total_mib"), (int, float))]
    names = sorted({r["name"] for r in records if isinstance(r.get("name"), str)})
    identity = {
        "pci_device_ids": ids,
        "memory_total_mib": statistics.median(memory) if memory else None,
        "name": ", ".join(names),
        "source": f"raw/health.json devices[] of the {len(inputs)} input bundle(s), {len(records)} GPU(s)",
    }
    if key.startswith("pci ") or key == "unknown":
        if not asked:
            raise UsageError(
                f"the bundles' GPUs ({identity['name']}, PCI device id {', '.join(ids)}) are not in the "
                "catalogue: name the SKU",
                hint="pass --sku NAME (lowercase, e.g. b200-sxm-180gb)",
            )
        if catalogue.by_id(asked):
            raise UsageError(
                f"--sku {asked} is a catalogue SKU, but these GPUs were not identified as it "
                f"(PCI device id {', '.join(ids)})"
            )
        return asked, identity
    if asked and asked != key:
        raise UsageError(
            f"--sku {asked}, but the bundles' GPUs are {key}", hint=f"leave --sku out, or pass --sku {key}"
        )
    return key, identity
