"""A roofline document read: its measured shapes, their predictions recomputed on its roofs, one view
of it per dtype (its own, then each dtype check's), and how a stated figure is held to its
recomputation. Standard library only."""

from __future__ import annotations

import math
from typing import Any

from harness.analysis.roofline import model as rl
from harness.analysis.units import is_number


def differs(stated: Any, recomputed: Any) -> bool:
    """A stated figure against its recomputation: counts exactly, other numbers within model.REL_TOL."""
    if isinstance(stated, int) and isinstance(recomputed, int):  # counts and byte totals: exact
        return stated != recomputed
    if is_number(stated) and is_number(recomputed):
        return not math.isclose(stated, recomputed, rel_tol=rl.REL_TOL, abs_tol=0.0)
    return stated != recomputed


def roofs_known(document: dict[str, Any]) -> bool:
    """Both roofs are numbers (else no attainable rate is predicted, and nothing is explained)."""
    roofs = document.get("roofs", {})
    return is_number(roofs.get("peak_tflops")) and is_number(roofs.get("bandwidth_gbps"))


def measured(document: dict[str, Any]) -> list[dict[str, Any]]:
    """The shapes the document measured (not those skipped or failed)."""
    return [s for s in document.get("measurements", {}).get("shapes", []) if s.get("status") == "measured"]


def predictions(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The stated predictions by shape label."""
    return {p["label"]: p for p in document.get("predictions", {}).get("shapes", [])}


def prediction(document: dict[str, Any], label: str) -> dict[str, Any]:
    """The shape's prediction recomputed on the document's roofs and widths."""
    roofs, precision, shape = document["roofs"], document["precision"], predictions(document)[label]
    return {
        **shape,
        **rl.classify(
            shape["m"],
            shape["n"],
            shape["k"],
            precision["input_bytes"],
            precision["output_bytes"],
            roofs["peak_tflops"],
            roofs["bandwidth_gbps"],
        ),
    }


def dtype_documents(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The document as one roofline document per dtype: its own, then each dtype check's (its precision,
    roofs, predictions and measurements with the run's device facts, timing and timeline)."""
    found = {document["dtype"]: document}
    checks = document.get("dtype_checks")
    for check in checks if isinstance(checks, list) else []:
        if isinstance(check, dict) and isinstance(check.get("dtype"), str):
            view = {k: v for k, v in document.items() if k not in ("dtype_checks", "summary", "fusion", "cpu_roofs")}
            tile = check.get("tile")
            tile = tile if isinstance(tile, dict) else {}
            found[check["dtype"]] = {
                **view,
                **check,
                "device_facts": {**document.get("device_facts", {}), **tile},
                "fusion": {"unavailable": "fusion runs in the main dtype"},
            }
    return found
