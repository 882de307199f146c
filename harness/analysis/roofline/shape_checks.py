"""A roofline document's shapes against their recomputation: each prediction on the document's roofs,
each measured GEMM's rates, rotation and explanation from its times, and the order the predictions
and the timings were recorded in. Standard library only."""

from __future__ import annotations

from typing import Any

from harness.analysis import timing
from harness.analysis.roofline import checks as roofline_checks
from harness.analysis.roofline import model as rl
from harness.analysis.roofline import reading, timing_checks, timings
from harness.analysis.roofline.explanation import context_of, explain
from harness.analysis.units import is_number


def prediction_discrepancies(document: dict[str, Any]) -> list[str]:
    found = []
    for label, stated in reading.predictions(document).items():
        again = reading.prediction(document, label)
        found += [
            f"prediction {label}: {key} {stated.get(key)} != {again[key]}"
            for key in ("flops", "min_bytes", "ai_flop_per_byte", "bound", "attainable_tflops")
            if reading.differs(stated.get(key), again[key])
        ]
    return found


def measurement_discrepancies(document: dict[str, Any], shape: dict[str, Any]) -> list[str]:
    """One measured GEMM: its median, rates, rotation and explanation from its per-call times."""
    label = shape["label"]
    if label not in reading.predictions(document):
        return [f"measurement {label} has no prediction"]
    found = timing_checks.timed_discrepancies(f"measurement {label}", shape, timings.kernel_headline(document))
    if found and timings.seconds_of(shape) is None:
        return found
    if "windows" in shape and isinstance(document.get("timing"), dict):  # sized and spaced by the stated rule
        found += roofline_checks.window_discrepancies(f"measurement {label}", shape, document["timing"])
    p, timed = reading.prediction(document, label), timings.as_timed(document, shape)
    seconds = timed["headline_s"]
    recomputed = {
        "achieved_tflops": p["flops"] / seconds / 1e12,
        "effective_gbps": p["min_bytes"] / seconds / 1e9,
        "fraction_of_attainable": p["flops"] / seconds / 1e12 / p["attainable_tflops"],
    }
    if timings.kernel_headline(document):  # contract 4 on: what the headline is timed from, stated and recomputed
        recomputed.update(rate_basis=timed["rate_basis"], headline_s=seconds)
        if timed["rate_basis"] == timing.KERNEL_ONLY:
            recomputed["eager_tflops"] = p["flops"] / timed["median_s"] / 1e12
    found += [
        f"measurement {label}: {key} {shape.get(key)} != {value} (from the per-call times)"
        for key, value in recomputed.items()
        if reading.differs(shape.get(key), value)
    ]
    if "eager_tflops" in shape and "eager_tflops" not in recomputed:
        found.append(f"measurement {label}: eager_tflops is stated but its headline is not kernel-only")
    found += _rotation_discrepancies(document, shape, p)
    if (
        timings.windowed(document)
        and document.get("device") == "cuda"
        and "graph" not in shape
        and (
            timed["median_s"] < timing.GRAPH_BELOW_S if timings.kernel_headline(document) else shape.get("launch_bound")
        )
    ):
        limit = timing.GRAPH_BELOW_S if timings.kernel_headline(document) else timing.LAUNCH_BOUND_S
        found.append(
            f"measurement {label}: an eager call under {limit * 1e6:g} us on a GPU but no CUDA-graph replay "
            "(or why none) is recorded"
        )
    again, stated = explain(p, timed, context_of(document)), shape.get("explanation", {})
    found += [
        f"measurement {label}: explanation {key} differs from the recomputation"
        for key in ("verdict", "explained", "text", "causes")
        if stated.get(key) != again[key]
    ]
    return found


def _rotation_discrepancies(document: dict[str, Any], shape: dict[str, Any], p: dict[str, Any]) -> list[str]:
    """rotated_mib = input sets x the bytes of one (aligned) set; cache_defeated = twice the cache."""
    if not all(is_number(shape.get(k)) for k in ("input_sets", "rotated_mib")):
        return []
    in_bytes = document["precision"]["input_bytes"]
    rotated = shape["input_sets"] * rl.input_set_bytes(p["m"], p["n"], p["k"], in_bytes)
    found = []
    if reading.differs(shape["rotated_mib"], rotated / 2**20):
        found.append(
            f"measurement {shape['label']}: rotated_mib {shape['rotated_mib']} but "
            f"{shape['input_sets']} input sets of this shape are {rotated / 2**20} MiB"
        )
    cache = document["device_facts"].get("cache_mib")
    if is_number(cache) and "cache_defeated" in shape and shape["cache_defeated"] != (rotated >= 2 * cache * 2**20):
        found.append(
            f"measurement {shape['label']}: cache_defeated {shape['cache_defeated']} but "
            f"{rotated / 2**20:g} MiB rotated against twice the {cache:g} MiB cache says otherwise"
        )
    return found


def order_discrepancies(document: dict[str, Any]) -> list[str]:
    """The predictions (every dtype's) must be recorded before the first GEMM is timed."""
    predicted = document.get("predictions", {}).get("recorded_at")
    found = []
    for view in reading.dtype_documents(document).values():
        for shape in view.get("measurements", {}).get("shapes", []):
            at = shape.get("measured_at")
            if predicted and at and at < predicted:  # RFC 3339 UTC strings order as text
                found.append(f"measurement {shape['label']} at {at} precedes the prediction at {predicted}")
    events = [e["event"] for e in document.get("timeline", [])]
    if (
        "predictions recorded" in events
        and "first GEMM timed" in events
        and events.index("first GEMM timed") < events.index("predictions recorded")
    ):
        found.append("timeline: a GEMM was timed before the predictions were recorded")
    return found
