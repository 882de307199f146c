"""The health step's figures as a judge reads them: one frozen view, checked once.

Built from harness.analysis.health.figures.headlines (the devices, the software facts and the
toolchain contracts re-judged from the raw facts) and the raw health.json beside them, whose
software facts the probe may record as {"unavailable": reason}: such a fact stays unavailable, with
its reason (`unread`), never a default. The whole headlines stay at hand (`values`) for the evidence
lines that print every figure. Standard library only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from harness.analysis.views import Unavailable, listed, mapping
from harness.analysis.views import document as document_of

WHERE = "the health figures"
SOFTWARE = ("driver_version", "cuda_driver_version", "torch_version", "torch_cuda_build")  # health.json's software


@dataclass(frozen=True)
class HealthFigures:
    """The devices named, the contracts that failed, and the software facts the probe could not read."""

    device_count: int
    sku_ids: tuple[str, ...]  # the catalogue SKU each device was re-identified as, those that were, in order
    contracts_failed: tuple[str, ...]
    unread: Mapping[str, str]  # a software fact recorded {"unavailable": reason} -> its reason, in SOFTWARE's order
    values: dict[str, Any]

    @classmethod
    def from_headlines(cls, values: Any, document: Any) -> HealthFigures:
        """The view of recomputed headlines and the raw DOCUMENT they came from (its software facts'
        reasons); refused (DocumentError) where either is not what it should be."""
        values = document_of(values, WHERE)
        software = mapping(document_of(document, "health.json").get("software") or {}, "health.json's software")
        unread = {}
        for key in SOFTWARE:
            missing = Unavailable.of(software.get(key))
            if values.get(key) is None and missing is not None:
                unread[key] = missing.reason
        devices = listed(values, "devices", WHERE)
        skus = [d.get("sku_id") for d in devices if isinstance(d, Mapping)]
        return cls(
            device_count=len(devices),
            sku_ids=tuple(sku for sku in skus if isinstance(sku, str) and sku),
            contracts_failed=tuple(str(name) for name in listed(values, "contracts_failed", WHERE)),
            unread=unread,
            values=values,
        )
