"""The figures compared across nodes, read from one node's verified bundle.

Every metric is a registry entry's fleet metric (harness/registry/spec.py FleetMetric): read
from the probe's own recomputed headlines (its harness.analysis module, as `dossier verify`
does) or from the raw document itself, never from a probe's stated summary. Nothing here knows
a probe: a metric a node did not measure is `{"unavailable": why}`, never a default.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness import registry
from harness.bundle.view import BundleView
from harness.probes.contract import describe_exception, unavailable
from harness.registry.spec import FleetMetric


def metric_kinds() -> dict[str, str]:
    """metric name -> kind, in registry order."""
    return {m.name: m.kind for _, m in registry.fleet_metrics()}


def metric_table() -> dict[str, dict[str, Any]]:
    """What fleet.json says of each metric: unit, kind, the probe and step it comes from, description."""
    return {
        m.name: {
            "unit": m.unit,
            "kind": m.kind,
            "probe": probe,
            "step": m.step or probe,
            "description": m.description,
            "headline": m.kind == "rate" and m.headline,
        }
        for probe, m in registry.fleet_metrics()
    }


def _value(value: Any, probe: str, metric: FleetMetric) -> Any:
    if isinstance(value, (int, float, str)) and not isinstance(value, bool):
        return value
    if isinstance(value, dict) and "unavailable" in value:
        return value
    return unavailable(f"{probe} measured no {metric.description} ({value!r})")


def headline(view: BundleView, probe: str, metric: FleetMetric) -> Any:
    """The metric's value for one node, or why it has none."""
    step = metric.step or probe
    document = view.documents.get(step)
    if document is None:
        return unavailable(f"{step} did not run on this node (no document for it in the bundle)")
    try:
        if metric.source == "document":
            return _value(metric.read(document), probe, metric)
        figures = view.figures(step)
        if figures.values is None:
            return unavailable(f"{step} headlines could not be recomputed: {figures.error}")
        return _value(metric.read(figures.values), probe, metric)
    except Exception as exc:  # noqa: BLE001 - a bad document is recorded, not fatal to the fleet
        return unavailable(f"{step}: {metric.name} could not be read: {describe_exception(exc)}")


def node_metrics(view: BundleView) -> dict[str, Any]:
    """Every compared figure for one node."""
    return {m.name: headline(view, probe, m) for probe, m in registry.fleet_metrics()}


def node_skus(view: BundleView) -> list[str]:
    """The catalogue SKUs health identified on the node (empty on a CPU-only node)."""
    values = view.figures("health").values if "health" in view.documents else None
    devices = (values or {}).get("devices") or []
    return sorted({d["sku_id"] for d in devices if isinstance(d, Mapping) and d.get("sku_id")})


STACK_FIELDS = (
    ("driver", "driver_version"),
    ("CUDA driver", "cuda_driver_version"),
    ("torch", "torch_version"),
    ("torch CUDA build", "torch_cuda_build"),
)


def node_stack(view: BundleView) -> str | None:
    """The software a result digest depends on, as health recorded it (driver, CUDA driver, torch and its
    CUDA build); None when health did not run or any of them is unreadable."""
    software = (view.documents.get("health") or {}).get("software") if "health" in view.documents else None
    if not isinstance(software, Mapping):
        return None
    values = [(label, software.get(key)) for label, key in STACK_FIELDS]
    if not all(isinstance(value, str) for _, value in values):
        return None
    return ", ".join(f"{label} {value}" for label, value in values)
