"""The roofline document's headline figures recomputed from its raw data, and every place a stated
figure differs. Standard library only.

The raw data are the timed windows (`windows`: calls and seconds of each, from probe contract 3 on;
`times_s`, one time per call, before) of every measured GEMM, of its CUDA-graph replay and of both
versions of the fusion chain, the shapes, the dtype widths and the roofs, for the run's dtype and
for each dtype check (`dtype_checks`). Every time-derived figure the document states (each
`median_s`, spread, launch-bound flag, the achieved rates, the explanations, the fusion comparison,
the CPU roofs measured on a CPU, the summary) is recomputed from them: a stated median is compared
with the median of its window means (or per-call times), never used in place of it.

Here: the headlines (the burst best by its rule, the classifications, every shape explained) and the
discrepancies gathered; the readings are `reading`'s, the timing figures `timings`', and the checks
of the times (`timing_checks`), the shapes (`shape_checks`), the fusion chain (`fusion_checks`) and
the CPU's and catalogue's roofs (`roof_checks`) beside them; `checks` holds the evidence checks.
"""

from __future__ import annotations

from typing import Any

from harness.analysis import timing
from harness.analysis.memo import per_document
from harness.analysis.roofline import checks as roofline_checks
from harness.analysis.roofline import (
    fusion_checks,
    gemm_shapes,
    reading,
    roof_checks,
    shape_checks,
    timing_checks,
    timings,
)
from harness.analysis.roofline import model as rl
from harness.analysis.roofline.explanation import context_of, explain
from harness.analysis.units import is_number

BURST_BEST_RULE = (
    "burst best: the best median-of-windows rate over the fixed burst-best shapes "
    "(on a GPU 4096x4096x8192, 4096x8192x8192 and 8192x8192x8192, mamf-finder's best shapes on the "
    "H200; on a CPU 1024x1024x1024), the same shapes and timing every run and in every dtype"
)


LEGACY_BEST_RULE = (
    "burst best: the best median call over every shape the run measured (documents before probe "
    "contract 3, per-call timing)"
)


BEST_OVER = {True: "the fixed burst-best shapes", False: "every shape (per-call timing)"}


# The names the probe's summary has given the best GEMM rate: `burst_best_tflops` now, `best_tflops` in
# documents made before it was named a burst (the committed H200 bundles); both are the same figure.
BEST_SUMMARY_KEYS = ("burst_best_tflops", "best_tflops")


def best_rule(document: dict[str, Any]) -> str:
    """The rule the document's burst best follows, in words."""
    return BURST_BEST_RULE if timings.windowed(document) else LEGACY_BEST_RULE


def _best_over(document: dict[str, Any]) -> list[dict[str, Any]]:
    """The shapes the burst best is taken over: the fixed shapes (contract 3 on), else every measured one."""
    shapes = reading.measured(document)
    if not timings.windowed(document):
        return shapes
    predictions = reading.predictions(document)
    device = str(document.get("device"))

    def reference(shape: dict[str, Any]) -> bool:
        dims = predictions.get(shape["label"], {})
        return gemm_shapes.is_reference(dims.get("m"), dims.get("n"), dims.get("k"), device)

    return [s for s in shapes if reference(s)]


def _window_of(document: dict[str, Any], label: Any) -> dict[str, Any] | None:
    """The best shape's window, clock and cap state (its label and rate are best_shape and
    burst_best_tflops beside it)."""
    window = next((w for w in timings.burst_windows(document) if w["label"] == label), None)
    return None if window is None else {k: v for k, v in window.items() if k not in ("label", "burst_tflops")}


def _rate(document: dict[str, Any], shape: dict[str, Any]) -> float | None:
    """The shape's headline rate (FLOPs / its headline time per call)."""
    return timings.tflops(document, shape, timings.headline_of(document, shape)[0])


@per_document
def headlines(document: dict[str, Any]) -> dict[str, Any]:
    """Headline figures recomputed from the document's roofs, shapes and timings (and each dtype check's)."""
    heads = _dtype_headlines(document)
    unfused_s, fused_s = timings.fusion_medians(document.get("fusion"))
    if (document.get("fusion") or {}).get("outputs_match") is not True:
        fused_s = None  # a fused version whose outputs differ from the eager chain's is no speedup
    heads["fusion_speedup"] = unfused_s / fused_s if unfused_s and fused_s else None
    if timings.windowed(document):
        rows = timings.burst_windows(document)
        spreads = [r["window_spread"] for r in rows if is_number(r.get("window_spread"))]
        heads["max_window_spread"] = max(spreads) if spreads else None
        heads["launch_bound_shapes"] = [r["label"] for r in rows if r.get("launch_bound")]
        heads["launch_bound_headline"] = timing.KERNEL_ONLY if timings.kernel_headline(document) else timing.EAGER
    checks = reading.dtype_documents(document)
    if len(checks) > 1:  # each dtype check's burst best (its shape and window: dtype_headlines)
        heads["dtype_burst_best_tflops"] = {
            dtype: _dtype_headlines(view)["burst_best_tflops"]
            for dtype, view in checks.items()
            if dtype != document["dtype"]
        }
    return heads


def _dtype_headlines(document: dict[str, Any]) -> dict[str, Any]:
    """One dtype's figures: roofs, classifications, the burst best by its rule, every shape explained."""
    roofs = document["roofs"]
    known = reading.roofs_known(document)
    classifications, best, best_shape, explained = {}, None, None, []
    if known:
        for label in reading.predictions(document):
            classifications[label] = reading.prediction(document, label)["bound"]
        for shape in reading.measured(document):
            explained.append(
                explain(
                    reading.prediction(document, shape["label"]),
                    timings.as_timed(document, shape),
                    context_of(document),
                )["explained"]
            )
    for shape in _best_over(document):
        tflops = _rate(document, shape)
        if tflops is not None and (best is None or tflops > best):
            best, best_shape = tflops, shape["label"]
    return {
        "device": document["device"],
        "dtype": document["dtype"],
        "bandwidth_gbps": roofs["bandwidth_gbps"] if known else None,
        "peak_tflops": roofs["peak_tflops"] if known else None,
        "ridge_flop_per_byte": rl.ridge_flop_per_byte(roofs["peak_tflops"], roofs["bandwidth_gbps"]) if known else None,
        "classifications": classifications,
        "burst_best_tflops": best,
        "best_shape": best_shape,
        "burst_best_window": _window_of(document, best_shape),
        "burst_best_over": BEST_OVER[timings.windowed(document)],
        "all_explained": bool(explained) and all(explained),
    }


def dtype_headlines(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """A roofline document's figures by dtype: its own dtype's headlines, then each dtype check's (roofs,
    classifications, burst best with its shape and window, every shape explained). Acceptance judges
    each dtype's burst best against its known-good."""
    own = headlines(document)
    return {
        dtype: own if view is document else {**_dtype_headlines(view), "fusion_speedup": None}
        for dtype, view in reading.dtype_documents(document).items()
    }


def discrepancies(document: dict[str, Any]) -> list[str]:
    """Where the document's stated figures differ from the recomputation, or order is broken."""
    found: list[str] = []
    head = headlines(document)
    found += roof_checks.cpu_roof_discrepancies(document) + timing_checks.sample_discrepancies(document)
    for dtype, view in reading.dtype_documents(document).items():
        where = "" if dtype == document["dtype"] else f"dtype_checks[{dtype}] "
        found += [where + problem for problem in _dtype_discrepancies(view)]
    found += shape_checks.order_discrepancies(document)
    found += fusion_checks.fusion_discrepancies(document) + roofline_checks.discrepancies(document)
    found += roofline_checks.dtype_discrepancies(document, reading.dtype_documents(document))
    summary = document.get("summary", {})
    for key in (*BEST_SUMMARY_KEYS, "best_shape", "all_explained", "fusion_speedup", "classifications"):
        again = head["burst_best_tflops"] if key in BEST_SUMMARY_KEYS else head[key]
        if key in summary and reading.differs(summary[key], again):
            found.append(f"summary.{key} {summary[key]!r} != recomputed {again!r}")
    return found


def _dtype_discrepancies(document: dict[str, Any]) -> list[str]:
    """One dtype's ridge, catalogue peak, predictions and measurements."""
    found = []
    head = _dtype_headlines(document)
    stated_ridge = document["roofs"].get("ridge_flop_per_byte")
    if head["ridge_flop_per_byte"] is not None and reading.differs(stated_ridge, head["ridge_flop_per_byte"]):
        found.append(f"roofs.ridge_flop_per_byte {stated_ridge} != {head['ridge_flop_per_byte']}")
    found += roof_checks.catalogue_peak_discrepancies(document)
    if reading.roofs_known(document):
        found += shape_checks.prediction_discrepancies(document)
        for shape in reading.measured(document):
            found += shape_checks.measurement_discrepancies(document, shape)
    return found
