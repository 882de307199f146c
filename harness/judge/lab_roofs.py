"""The lab's roofline criterion's checks of its roofs (harness.judge.lab.judge_roofline): the memory roof
is the bandwidth step's measured sustained median (harness.analysis.cross_checks), the dense peak the
catalogue's for the SKU the bandwidth step identified and the roofline's dtype."""

from __future__ import annotations

import math

from harness import catalogue
from harness.analysis import cross_checks
from harness.analysis.bandwidth.view import BandwidthFigures
from harness.analysis.roofline.view import RooflineFigures
from harness.analysis.units import value_text
from harness.judge.facts import BundleFacts


def _peak_from_catalogue(bandwidth: BandwidthFigures | None, dtype: str) -> float | None:
    sku = catalogue.by_id(bandwidth.sku_id) if bandwidth is not None and bandwidth.sku_id else None
    if not sku:
        return None
    return sku.get("published", {}).get("dense_tflops", {}).get(dtype)


def checks(facts: BundleFacts, r: RooflineFigures) -> tuple[list[str], list[str]]:
    """The evidence lines and the problems of the roofs: the memory roof is the bandwidth step's
    measured sustained median, the dense peak the catalogue's for the dtype."""
    lines: list[str] = []
    problems = [] if r.classified else ["no GEMM was classified"]
    bandwidth = facts.viewed("bandwidth", BandwidthFigures.from_headlines)
    median = bandwidth.repeat_median_gbps if bandwidth is not None else None
    if median is not None:
        same = cross_checks.roof_is_sustained_median(r.bandwidth_gbps, median)
        lines.append(
            f"The memory roof is the measured sustained median {value_text('x_gbps', median)} (recomputed "
            f"from the bandwidth step's repeat times): {'yes' if same else 'no'}."
        )
        problems += [] if same else ["the memory roof is not the measured sustained median"]
    else:
        lines.append(
            "The bandwidth step's sustained median is not in this bundle, so the memory roof cannot "
            "be shown to be the measured one."
        )
        problems.append("the memory roof cannot be shown to be the measured one")
    peak = _peak_from_catalogue(bandwidth, str(r.dtype))
    if peak is not None and r.peak_tflops is not None:
        same = math.isclose(peak, r.peak_tflops, rel_tol=1e-6)
        lines.append(
            f"The dense peak is the catalogue's {value_text('x_tflops', peak)} for {r.dtype}: {'yes' if same else 'no'}."
        )
        problems += [] if same else [f"the dense peak is not the catalogue's for {r.dtype}"]
    else:
        lines.append(
            "The catalogue has no dense peak for this device: the peak used is the probe's own (see raw/roofline.json)."
        )
    return lines, problems
