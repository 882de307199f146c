"""Checks across the steps of one bundle: a figure one step took from another must be what the
other step's raw data give. Standard library only; `dossier verify` and the report use it.

- The roofline's memory roof is the bandwidth step's sustained median (lab M1 step 4: "Feed the
  sustained median into M1T2"), recomputed here from the repeats' per-iteration times, never the
  value commands.json or the roofline document states.
- The bandwidth step measured a device the health step lists: its re-identified SKU is one of the
  SKUs health re-identifies, so the datasheet limit and known-good result it is judged by belong
  to the hardware in the bundle.
- The checkpoint a step's document says it measured is the one the host resolved for the step.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from harness.analysis.bandwidth import checks as bandwidth_checks
from harness.analysis.bandwidth import figures as bandwidth
from harness.analysis.health import figures as health
from harness.analysis.verdict import StepStatus

# The harness passes the median to the roofline probe as "%.6g" (harness/registry/roofline.py): at most
# 5e-6 of it apart; twice that is still far below any real difference.
ROOF_REL_TOL = 1e-5


def sustained_median_gbps(bandwidth_document: Any) -> float | None:
    """The median of the repeat medians, each recomputed from its per-iteration times."""
    try:
        return bandwidth.headlines(bandwidth_document)["repeat_median_gbps"]
    except (KeyError, TypeError, ValueError, ZeroDivisionError):
        return None


def roof_is_sustained_median(roof_gbps: Any, median_gbps: float) -> bool:
    return (
        isinstance(roof_gbps, (int, float))
        and not isinstance(roof_gbps, bool)
        and math.isclose(roof_gbps, median_gbps, rel_tol=ROOF_REL_TOL)
    )


def _completed(steps: list[dict[str, Any]], documents: Mapping[str, Any], analysis: str) -> list[dict[str, Any]]:
    return [
        s
        for s in steps
        if isinstance(s, dict)
        and s.get("analysis") == analysis
        and s.get("status") == StepStatus.COMPLETED
        and s.get("step") in documents
        and isinstance(documents[s["step"]], dict)
    ]


def roofline_roof_discrepancies(steps: list[dict[str, Any]], documents: Mapping[str, Any]) -> list[tuple[str, str]]:
    bandwidth_steps = [s for s in _completed(steps, documents, "bandwidth") if s["step"] == "bandwidth"]
    median = sustained_median_gbps(documents["bandwidth"]) if bandwidth_steps else None
    if median is None:
        return []
    source = (
        f"the bandwidth step's sustained median {median:.6g} GB/s (recomputed from {bandwidth_steps[0].get('output')})"
    )
    found = []
    for step in _completed(steps, documents, "roofline"):
        document = documents[step["step"]]
        checks = document.get("dtype_checks")
        checks = checks if isinstance(checks, list) else []
        for where, part in [("", document)] + [
            (f"dtype_checks[{c.get('dtype')}].", c) for c in checks if isinstance(c, dict)
        ]:
            roof = (part.get("roofs") or {}).get("bandwidth_gbps")
            if isinstance(roof, (int, float)) and not roof_is_sustained_median(roof, median):
                found.append((str(step.get("output")), f"{where}roofs.bandwidth_gbps {roof:.6g} GB/s is not {source}"))
        fed = (step.get("inputs") or {}).get("bandwidth_gbps")
        if fed is not None and not roof_is_sustained_median(fed, median):
            found.append(("commands.json", f"step {step['step']} inputs.bandwidth_gbps {fed!r} is not {source}"))
    return found


def device_discrepancies(steps: list[dict[str, Any]], documents: Mapping[str, Any]) -> list[tuple[str, str]]:
    measured = [s for s in _completed(steps, documents, "bandwidth") if s["step"] == "bandwidth"]
    listed = _completed(steps, documents, "health")
    if not measured or not listed:
        return []
    sku = bandwidth_checks.identified_sku(documents["bandwidth"])
    if sku is None:
        return []
    known = {
        sku_id
        for s in listed
        for d in documents[s["step"]].get("devices") or []
        if isinstance(d, dict) and (sku_id := health.recomputed_sku(d)) is not None
    }
    if not known or sku in known:  # health identified no GPU (e.g. NVML failed there): nothing to compare
        return []
    return [
        (
            str(measured[0].get("output")),
            f"device_identity identifies {sku}, a device no health step lists "
            f"(health re-identifies {', '.join(sorted(known))})",
        )
    ]


def checkpoint_discrepancies(steps: list[dict[str, Any]], documents: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The checkpoint a probe says it measured is the one the host resolved and hashed for its step
    (commands.json's `checkpoint`, which the signed predicate repeats)."""
    found = []
    for step in steps:
        name: Any = step.get("step")  # any JSON: a name no document has finds None
        resolved, document = step.get("checkpoint") if isinstance(step, dict) else None, documents.get(name)
        stated = document.get("checkpoint") if isinstance(document, dict) else None
        if isinstance(resolved, dict) and isinstance(stated, dict) and stated != resolved:
            keys = sorted(k for k in set(stated) | set(resolved) if stated.get(k) != resolved.get(k))
            found.append(
                (
                    str(step.get("output")),
                    f"checkpoint {', '.join(keys)} differ from what the host resolved "
                    f"for step {step.get('step')} (commands.json)",
                )
            )
    return found


def discrepancies(steps: list[dict[str, Any]], documents: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(member, problem) for every figure one step took from another that its source does not give."""
    return (
        roofline_roof_discrepancies(steps, documents)
        + device_discrepancies(steps, documents)
        + checkpoint_discrepancies(steps, documents)
    )
