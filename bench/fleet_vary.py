"""How bench/fleet_synth.py varies one node's probe documents, each kept consistent with the
analysis that verify recomputes it with (see fleet_synth's docstring for what varies and why).

Each function takes a base document and the node's factor(s) and returns a new document: the raw
measured times (or counts) scaled, every stated figure recomputed by the harness's own analysis
functions, so `dossier verify` finds no discrepancy in a synthetic node bundle.
"""

from __future__ import annotations

import copy
import statistics
from typing import Any

from harness.analysis.bandwidth import figures as bw
from harness.analysis.health.contracts import evaluate as health_contracts
from harness.analysis.roofline import figures as rf
from harness.analysis.roofline import model as rl
from harness.analysis.roofline import reading, timings
from harness.analysis.roofline.explanation import context_of, explain
from harness.probes import bandwidth as bandwidth_probe

THERMAL = ("sw_thermal_slowdown", 0x20)  # the NVML clock event reason a throttling GPU reports


def _point(point: dict[str, Any], kernel: str, factor: float, cache: Any, empty_s: float) -> dict[str, Any]:
    times = [t / factor for t in point["iteration_times_s"]]
    again = bandwidth_probe.point_record(
        point["size_mib"], point["elements"], kernel, times, cache if isinstance(cache, int) else None, empty_s
    )
    return {**point, **again, "warmup_iterations": point["warmup_iterations"]}


def vary_bandwidth(document: dict[str, Any], factor: float) -> dict[str, Any]:
    """Every HBM time / FACTOR; points, plateau, repeats and reference as the probe builds them."""
    doc = copy.deepcopy(document)
    kernel, cache, empty_s = doc["kernel"], doc["cache"]["size_bytes"], doc["launch"]["empty_launch_s"]
    doc["sweep"] = [_point(p, kernel, factor, cache, empty_s) for p in doc["sweep"]]
    points = [
        {"size_mib": p["size_mib"], "gbps": p["median_gbps"], "marks": p["marks"], "why": p["why"]}
        for p in doc["sweep"]
    ]
    found, top = bw.plateau(points), max(points, key=lambda p: p["gbps"])
    doc["plateau"].update(
        reached=found["reached"],
        sizes_mib=found["sizes_mib"] if found["reached"] else [],
        gbps=found["gbps"],
        why=found["why"],
        maximum={**doc["plateau"]["maximum"], "size_mib": top["size_mib"], "gbps": top["gbps"]},
        off_plateau=bw.explain_off_plateau(points, found["gbps"], found["sizes_mib"] if found["reached"] else []),
    )
    repeats = doc["repeats"]
    repeats["runs"] = [_point(r, kernel, factor, cache, empty_s) for r in repeats["runs"]]
    repeats["medians_gbps"] = [r["median_gbps"] for r in repeats["runs"]]
    repeats["spread"] = bw.spread(repeats["medians_gbps"])
    repeats["verdict"] = bw.repeat_verdict(repeats["spread"])
    repeats["trusted"] = repeats["verdict"] == "pass"
    ref = doc["reference"]
    if ref.get("known_good_gbps") and found["gbps"] is not None:
        ref["known_good_ratio"] = found["gbps"] / ref["known_good_gbps"]
    if ref.get("spec_gbps") and found["gbps"] is not None:
        ref["spec_ratio"] = found["gbps"] / ref["spec_gbps"]
    return doc


def vary_roofline(document: dict[str, Any], factor: float, roof_gbps: float | None, clock: float) -> dict[str, Any]:
    """GEMM times / FACTOR, the memory roof ROOF_GBPS (the node's bandwidth median, as `dossier run`
    passes it: '%.6g'), the SM clock x CLOCK; every stated figure recomputed by the analysis."""
    doc = copy.deepcopy(document)
    if roof_gbps is not None and isinstance(doc["roofs"].get("bandwidth_gbps"), (int, float)):
        doc["roofs"]["bandwidth_gbps"] = float(f"{roof_gbps:.6g}")
        if "--bandwidth-gbps" in doc.get("argv", []):
            doc["argv"][doc["argv"].index("--bandwidth-gbps") + 1] = f"{roof_gbps:.6g}"
    roofs = doc["roofs"]
    if not reading.roofs_known(doc):
        return doc
    roofs["ridge_flop_per_byte"] = rl.ridge_flop_per_byte(roofs["peak_tflops"], roofs["bandwidth_gbps"])
    doc["predictions"]["shapes"] = [reading.prediction(doc, p["label"]) for p in doc["predictions"]["shapes"]]
    for shape in reading.measured(doc):
        shape["times_s"] = [t / factor for t in shape["times_s"]]
        shape["median_s"] = statistics.median(shape["times_s"])
        _slow_clock(shape.get("clocks"), clock)
        p = reading.prediction(doc, shape["label"])
        shape.update(
            achieved_tflops=p["flops"] / shape["median_s"] / 1e12,
            effective_gbps=p["min_bytes"] / shape["median_s"] / 1e9,
            fraction_of_attainable=p["flops"] / shape["median_s"] / 1e12 / p["attainable_tflops"],
        )
        shape["explanation"] = explain(p, shape, context_of(doc))
    _restate_fusion(doc)
    head = rf.headlines(doc)
    doc["summary"].update({k: head[k] for k in doc["summary"] if k in head})
    for key in rf.BEST_SUMMARY_KEYS:  # the best rate's older summary name (the committed bundles' best_tflops)
        if key in doc["summary"]:
            doc["summary"][key] = head["burst_best_tflops"]
    return doc


def _slow_clock(clocks: Any, factor: float) -> None:
    if factor == 1.0 or not isinstance(clocks, dict):
        return
    if isinstance(clocks.get("sm_clock_mhz_samples"), list):
        clocks["sm_clock_mhz_samples"] = [round(s * factor) for s in clocks["sm_clock_mhz_samples"]]
        clocks["sm_clock_mhz_median"] = statistics.median(clocks["sm_clock_mhz_samples"])
    elif isinstance(clocks.get("sm_clock_mhz_median"), (int, float)):
        clocks["sm_clock_mhz_median"] = round(clocks["sm_clock_mhz_median"] * factor)
    if isinstance(clocks.get("clock_event_reasons"), list) and THERMAL[0] not in clocks["clock_event_reasons"]:
        clocks["clock_event_reasons"] = [*clocks["clock_event_reasons"], THERMAL[0]]


def _restate_fusion(doc: dict[str, Any]) -> None:
    fusion = doc.get("fusion")
    if not isinstance(fusion, dict) or not isinstance(fusion.get("comparison"), dict):
        return
    accounting = rl.fusion_accounting(
        fusion["elements"], fusion["element_bytes"], fusion["unfused_kernels"], fusion["flops_per_element"]
    )
    timed = dict(zip(("unfused", "fused"), timings.fusion_medians(fusion), strict=True))
    rates = {
        v: {**fusion[v], "median_s": s, "achieved_gbps": accounting[f"{v}_bytes"] / s / 1e9} for v, s in timed.items()
    }
    fusion["comparison"] = rl.fusion_comparison(
        {**fusion, **accounting, **rates}, doc["roofs"]["peak_tflops"], doc["roofs"]["bandwidth_gbps"]
    )


def vary_health_load(document: dict[str, Any], pcie_width: int | None, clock: float) -> dict[str, Any]:
    """The PCIe link width and SM clock under load; the contracts re-judged from the facts."""
    doc = copy.deepcopy(document)
    for device in doc.get("devices") or []:
        pcie = device.get("pcie")
        if pcie_width is not None and isinstance(pcie, dict) and "current_width" in pcie:
            pcie["current_width"] = pcie_width
        if clock != 1.0:
            clocks = device.get("clocks") or {}
            for key in ("sm_current_mhz", "graphics_current_mhz"):
                if isinstance(clocks.get(key), int):
                    clocks[key] = round(clocks[key] * clock)
            reasons = device.get("clock_event_reasons")
            if isinstance(reasons, dict) and isinstance(reasons.get("mask"), int):
                reasons["mask"] |= THERMAL[1]
                reasons["names"] = sorted(set(reasons.get("names") or []) | {THERMAL[0]})
    load = doc.get("load")
    if clock != 1.0 and isinstance(load, dict):
        for record in load.get("devices") or []:
            for sample in record.get("samples") or []:
                if isinstance(sample.get("sm_clock_mhz"), int):
                    sample["sm_clock_mhz"] = round(sample["sm_clock_mhz"] * clock)
                    sample["clock_event_reasons_mask"] = int(sample.get("clock_event_reasons_mask") or 0) | THERMAL[1]
                    sample["clock_event_reasons"] = sorted(set(sample.get("clock_event_reasons") or []) | {THERMAL[0]})
    if isinstance(doc.get("contracts"), list):
        doc["contracts"] = health_contracts(doc)
    return doc


def vary_stress(document: dict[str, Any], factor: float) -> dict[str, Any]:
    """Every bucket's GEMM times and span / FACTOR (each rate x FACTOR); figures and summary recomputed."""
    from harness.analysis.stress import figures as stress

    doc = copy.deepcopy(document)
    flop = doc["settings"]["flop_per_gemm"]
    for record in doc.get("devices", []):
        for bucket in stress.buckets_of(record):
            bucket["gemm_ms"] = [t / factor for t in bucket["gemm_ms"]]
            bucket["span_ms"] = bucket["span_ms"] / factor
            bucket["figures"] = stress.bucket_figures(bucket, stress.samples_of(record), flop)
    doc["summary"] = stress.headlines(doc)
    return doc


def vary_transfer(document: dict[str, Any], factor: float) -> dict[str, Any]:
    """Every copy time / FACTOR; every stated figure, explanation and verdict stated again from them
    as the probe states them (harness.analysis.transfer.checks.state_figures)."""
    from harness.analysis.transfer import checks as transfer_checks

    doc = copy.deepcopy(document)
    for s in doc.get("series", []):
        for point in s["points"]:
            point["copy_times_s"] = [t / factor for t in point["copy_times_s"]]
    return transfer_checks.state_figures(doc)
