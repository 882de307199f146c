"""A roofline document's fusion chain against its recomputation: the bytes each version moves, their
times and rates from their windows (or per-call times), and the comparison of the two. Standard
library only."""

from __future__ import annotations

from typing import Any

from harness.analysis.roofline import model as rl
from harness.analysis.roofline import reading, timing_checks, timings


def fusion_discrepancies(document: dict[str, Any]) -> list[str]:
    """The fusion chain's byte accounting, medians, rates and comparison, from its per-call times."""
    fusion = document.get("fusion")
    if not isinstance(fusion, dict) or "unavailable" in fusion:
        return []
    accounting = rl.fusion_accounting(
        fusion["elements"], fusion["element_bytes"], fusion["unfused_kernels"], fusion["flops_per_element"]
    )
    found = [
        f"fusion.{key} {fusion.get(key)} != {value}"
        for key, value in accounting.items()
        if reading.differs(fusion.get(key), value)
    ]
    if fusion.get("chain") == rl.FUSION_CHAIN["text"]:
        for key, value in (
            ("unfused_kernels", rl.FUSION_CHAIN["kernels"]),
            ("flops_per_element", rl.FUSION_CHAIN["flops_per_element"]),
        ):
            if fusion.get(key) != value:
                found.append(f"fusion.{key} {fusion.get(key)} but the chain {fusion['chain']!r} has {value}")
    width = rl.DTYPE_WIDTHS[fusion["dtype"]][0] if fusion.get("dtype") in rl.DTYPE_WIDTHS else None
    if width is not None and fusion["element_bytes"] != width:
        found.append(f"fusion.element_bytes {fusion['element_bytes']} but {fusion['dtype']} is {width} bytes")
    timed = {}
    for version in ("unfused", "fused"):
        record = fusion.get(version)
        if not isinstance(record, dict) or "unavailable" in record:
            continue
        problems = timing_checks.timed_discrepancies(f"fusion.{version}", record)
        found += problems
        seconds = timings.seconds_of(record)
        if seconds is None:
            continue
        timed[version] = seconds
        for key, value in (
            ("achieved_gbps", accounting[f"{version}_bytes"] / seconds / 1e9),
            ("achieved_tflops", accounting["flops"] / seconds / 1e12),
        ):
            if reading.differs(record.get(key), value):
                found.append(f"fusion.{version}.{key} {record.get(key)} != {value} (from the per-call times)")
    return found + _fusion_comparison_discrepancies(document, fusion, accounting, timed)


def _fusion_comparison_discrepancies(
    document: dict[str, Any], fusion: dict[str, Any], accounting: dict[str, Any], timed: dict[str, float]
) -> list[str]:
    stated = fusion.get("comparison")
    if len(timed) < 2 or not reading.roofs_known(document):
        return ["fusion.comparison is stated but cannot be recomputed"] if stated is not None else []
    rates = {
        v: {**fusion[v], "median_s": timed[v], "achieved_gbps": accounting[f"{v}_bytes"] / timed[v] / 1e9}
        for v in timed
    }
    again = rl.fusion_comparison(
        {**fusion, **accounting, **rates}, document["roofs"]["peak_tflops"], document["roofs"]["bandwidth_gbps"]
    )
    if not isinstance(stated, dict):
        return ["fusion.comparison is missing although both versions were timed"]
    return [
        f"fusion.comparison.{key} {stated.get(key)!r} != {value!r}"
        for key, value in again.items()
        if reading.differs(stated.get(key), value)
    ]
