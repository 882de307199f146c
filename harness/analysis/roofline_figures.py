"""The roofline document's figures recomputed from its raw data. Standard library only.

The raw data are the per-call times (`times_s`) of every measured GEMM and of both versions of the
fusion chain, the shapes, the dtype widths and the roofs. Every time-derived figure the document
states (each `median_s`, the achieved rates, the explanations, the fusion comparison, the CPU roofs
measured on a CPU, the summary) is recomputed from them here: a stated median is compared with
the median of its per-call times, never used in place of it.
"""

from __future__ import annotations

import math
import statistics
from typing import Any

from harness import catalogue
from harness.analysis import roofline as rl
from harness.analysis import roofline_checks

MEASURED = roofline_checks.MEASURED


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def median_of(times: Any) -> float | None:
    """The median of a list of per-call times, or None when there is no such list."""
    # set(map(type, ...)) first: the same answer for parsed JSON at C speed (verify asks ~200 times a bundle)
    if isinstance(times, list) and times and (set(map(type, times)) <= {int, float}
                                              or all(_is_number(t) for t in times)):
        return statistics.median(times)
    return None


def _differs(stated: Any, recomputed: Any) -> bool:
    if isinstance(stated, int) and isinstance(recomputed, int):  # counts and byte totals: exact
        return stated != recomputed
    if _is_number(stated) and _is_number(recomputed):
        return not math.isclose(stated, recomputed, rel_tol=rl.REL_TOL, abs_tol=0.0)
    return stated != recomputed


def _roofs_known(document: dict[str, Any]) -> bool:
    roofs = document.get("roofs", {})
    return _is_number(roofs.get("peak_tflops")) and _is_number(roofs.get("bandwidth_gbps"))


def _measured(document: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for s in document.get("measurements", {}).get("shapes", []) if s.get("status") == "measured"]


def _predictions(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {p["label"]: p for p in document.get("predictions", {}).get("shapes", [])}


def _prediction(document: dict[str, Any], label: str) -> dict[str, Any]:
    """The shape's prediction recomputed on the document's roofs and widths."""
    roofs, precision, shape = document["roofs"], document["precision"], _predictions(document)[label]
    return {**shape, **rl.classify(shape["m"], shape["n"], shape["k"], precision["input_bytes"],
                                   precision["output_bytes"], roofs["peak_tflops"], roofs["bandwidth_gbps"])}


def _as_timed(shape: dict[str, Any]) -> dict[str, Any]:
    """The measurement with its median recomputed from its per-call times."""
    return {**shape, "median_s": median_of(shape.get("times_s"))}


def fusion_medians(fusion: Any) -> tuple[float | None, float | None]:
    """(unfused, fused) medians of the fusion chain's per-call times; None where not timed."""
    if not isinstance(fusion, dict):
        return None, None
    return tuple(median_of(fusion[v].get("times_s")) if isinstance(fusion.get(v), dict) else None
                 for v in ("unfused", "fused"))


BURST_RULE = ("every roofline rate is a burst: the median call of one shape's short timed window (milliseconds "
              "to a few hundred), at whatever clock the card held then; the sustained rate under a long load is "
              "the stress probe's steady state (docs/stress.md)")
# The names the probe's summary has given the best GEMM rate: `burst_best_tflops` now, `best_tflops` in
# documents made before it was named a burst (the committed H200 bundles); both are the same figure.
BEST_SUMMARY_KEYS = ("burst_best_tflops", "best_tflops")


def burst_window(shape: dict[str, Any]) -> dict[str, Any]:
    """How a shape's rate was measured: the window its timed calls filled (the sum of their times, ms),
    the median SM clock NVML sampled inside it, and whether the power cap was engaged then."""
    times = shape.get("times_s") if isinstance(shape.get("times_s"), list) else []
    clocks = shape.get("clocks")
    window = {"label": shape.get("label"), "window_ms": math.fsum(t for t in times if _is_number(t)) * 1e3,
              "timed_calls": len(times)}
    if not isinstance(clocks, dict) or "unavailable" in clocks:
        why = clocks["unavailable"] if isinstance(clocks, dict) else "no clock samples recorded"
        return {**window, "sm_clock_mhz": None, "power_cap": {"unavailable": why}}
    samples = clocks.get("sm_clock_mhz_samples")
    clock = median_of(samples) if isinstance(samples, list) else clocks.get("sm_clock_mhz_median")
    reasons = clocks.get("clock_event_reasons") if isinstance(clocks.get("clock_event_reasons"), list) else []
    return {**window, "sm_clock_mhz": clock if _is_number(clock) else None,
            "power_cap": "engaged (sw_power_cap)" if "sw_power_cap" in reasons else "not engaged"}


def burst_windows(document: dict[str, Any]) -> list[dict[str, Any]]:
    """Every measured shape's burst rate (FLOPs / the median of its timed calls) and its window."""
    rows = []
    for shape in _measured(document):
        median = median_of(shape.get("times_s"))
        p = _predictions(document).get(shape["label"], {})
        dims = [p.get(d) for d in "mnk"]
        rate = rl.gemm_flops(*dims) / median / 1e12 if median and all(_is_number(d) for d in dims) else None
        rows.append({**burst_window(shape), "burst_tflops": rate})
    return rows


def _window_of(document: dict[str, Any], label: Any) -> dict[str, Any] | None:
    """The best shape's window, clock and cap state (its label and rate are best_shape and
    burst_best_tflops beside it)."""
    window = next((w for w in burst_windows(document) if w["label"] == label), None)
    return None if window is None else {k: v for k, v in window.items() if k not in ("label", "burst_tflops")}


def headlines(document: dict[str, Any]) -> dict[str, Any]:
    """Headline figures recomputed from the document's roofs, shapes and per-call times."""
    roofs = document["roofs"]
    known = _roofs_known(document)
    classifications, best, best_shape, explained = {}, None, None, []
    if known:
        for label in _predictions(document):
            classifications[label] = _prediction(document, label)["bound"]
        for shape in _measured(document):
            p, timed = _prediction(document, shape["label"]), _as_timed(shape)
            tflops = p["flops"] / timed["median_s"] / 1e12
            if best is None or tflops > best:
                best, best_shape = tflops, shape["label"]
            explained.append(rl.explain(p, timed, rl.context_of(document))["explained"])
    unfused_s, fused_s = fusion_medians(document.get("fusion"))
    if (document.get("fusion") or {}).get("outputs_match") is not True:
        fused_s = None  # a fused version whose outputs differ from the eager chain's is no speedup
    return {
        "device": document["device"], "dtype": document["dtype"],
        "bandwidth_gbps": roofs["bandwidth_gbps"] if known else None,
        "peak_tflops": roofs["peak_tflops"] if known else None,
        "ridge_flop_per_byte": rl.ridge_flop_per_byte(roofs["peak_tflops"], roofs["bandwidth_gbps"]) if known else None,
        "classifications": classifications,
        "burst_best_tflops": best, "best_shape": best_shape,
        "burst_best_window": _window_of(document, best_shape),
        "all_explained": bool(explained) and all(explained),
        "fusion_speedup": unfused_s / fused_s if unfused_s and fused_s else None,
    }


def discrepancies(document: dict[str, Any]) -> list[str]:
    """Where the document's stated figures differ from the recomputation, or order is broken."""
    found: list[str] = []
    head = headlines(document)
    stated_ridge = document["roofs"].get("ridge_flop_per_byte")
    if head["ridge_flop_per_byte"] is not None and _differs(stated_ridge, head["ridge_flop_per_byte"]):
        found.append(f"roofs.ridge_flop_per_byte {stated_ridge} != {head['ridge_flop_per_byte']}")
    found += cpu_roof_discrepancies(document) + sample_discrepancies(document) + catalogue_peak_discrepancies(document)
    if _roofs_known(document):
        found += _prediction_discrepancies(document)
        for shape in _measured(document):
            found += measurement_discrepancies(document, shape)
    found += _order_discrepancies(document)
    found += fusion_discrepancies(document) + roofline_checks.discrepancies(document)
    summary = document.get("summary", {})
    for key in (*BEST_SUMMARY_KEYS, "best_shape", "all_explained", "fusion_speedup", "classifications"):
        again = head["burst_best_tflops"] if key in BEST_SUMMARY_KEYS else head[key]
        if key in summary and _differs(summary[key], again):
            found.append(f"summary.{key} {summary[key]!r} != recomputed {again!r}")
    return found


def _prediction_discrepancies(document: dict[str, Any]) -> list[str]:
    found = []
    for label, stated in _predictions(document).items():
        again = _prediction(document, label)
        found += [f"prediction {label}: {key} {stated.get(key)} != {again[key]}"
                  for key in ("flops", "min_bytes", "ai_flop_per_byte", "bound", "attainable_tflops")
                  if _differs(stated.get(key), again[key])]
    return found


def timed_discrepancies(where: str, timed: dict[str, Any]) -> list[str]:
    """A stated median and call count against the per-call times they summarise."""
    times, median = timed.get("times_s"), median_of(timed.get("times_s"))
    if median is None:
        return [f"{where}: no per-call times_s to recompute median_s from"]
    found = []
    if _differs(timed.get("median_s"), median):
        found.append(f"{where}: median_s {timed.get('median_s')} but the median of its {len(times)} "
                     f"per-call times_s is {median}")
    if timed.get("iterations") != len(times):
        found.append(f"{where}: iterations {timed.get('iterations')} but times_s holds {len(times)} calls")
    return found


def measurement_discrepancies(document: dict[str, Any], shape: dict[str, Any]) -> list[str]:
    """One measured GEMM: its median, rates, rotation and explanation from its per-call times."""
    label = shape["label"]
    if label not in _predictions(document):
        return [f"measurement {label} has no prediction"]
    found = timed_discrepancies(f"measurement {label}", shape)
    if found and median_of(shape.get("times_s")) is None:
        return found
    p, timed = _prediction(document, label), _as_timed(shape)
    seconds = timed["median_s"]
    recomputed = {"achieved_tflops": p["flops"] / seconds / 1e12,
                  "effective_gbps": p["min_bytes"] / seconds / 1e9,
                  "fraction_of_attainable": p["flops"] / seconds / 1e12 / p["attainable_tflops"]}
    found += [f"measurement {label}: {key} {shape.get(key)} != {value} (from the per-call times)"
              for key, value in recomputed.items() if _differs(shape.get(key), value)]
    found += _rotation_discrepancies(document, shape, p)
    again, stated = rl.explain(p, timed, rl.context_of(document)), shape.get("explanation", {})
    found += [f"measurement {label}: explanation {key} differs from the recomputation"
              for key in ("verdict", "explained", "text", "causes") if stated.get(key) != again[key]]
    return found


def _rotation_discrepancies(document: dict[str, Any], shape: dict[str, Any], p: dict[str, Any]) -> list[str]:
    """rotated_mib = input sets x the bytes of one (aligned) set; cache_defeated = twice the cache."""
    if not all(_is_number(shape.get(k)) for k in ("input_sets", "rotated_mib")):
        return []
    in_bytes = document["precision"]["input_bytes"]
    rotated = shape["input_sets"] * rl.input_set_bytes(p["m"], p["n"], p["k"], in_bytes)
    found = []
    if _differs(shape["rotated_mib"], rotated / 2**20):
        found.append(f"measurement {shape['label']}: rotated_mib {shape['rotated_mib']} but "
                     f"{shape['input_sets']} input sets of this shape are {rotated / 2**20} MiB")
    cache = document["device_facts"].get("cache_mib")
    if _is_number(cache) and "cache_defeated" in shape and shape["cache_defeated"] != (rotated >= 2 * cache * 2**20):
        found.append(f"measurement {shape['label']}: cache_defeated {shape['cache_defeated']} but "
                     f"{rotated / 2**20:g} MiB rotated against twice the {cache:g} MiB cache says otherwise")
    return found


def _order_discrepancies(document: dict[str, Any]) -> list[str]:
    """The prediction must be recorded before the first GEMM is timed."""
    predicted = document.get("predictions", {}).get("recorded_at")
    found = []
    for shape in document.get("measurements", {}).get("shapes", []):
        at = shape.get("measured_at")
        if predicted and at and at < predicted:  # RFC 3339 UTC strings order as text
            found.append(f"measurement {shape['label']} at {at} precedes the prediction at {predicted}")
    events = [e["event"] for e in document.get("timeline", [])]
    if "predictions recorded" in events and "first GEMM timed" in events \
            and events.index("first GEMM timed") < events.index("predictions recorded"):
        found.append("timeline: a GEMM was timed before the predictions were recorded")
    return found


def fusion_discrepancies(document: dict[str, Any]) -> list[str]:
    """The fusion chain's byte accounting, medians, rates and comparison, from its per-call times."""
    fusion = document.get("fusion")
    if not isinstance(fusion, dict) or "unavailable" in fusion:
        return []
    accounting = rl.fusion_accounting(fusion["elements"], fusion["element_bytes"], fusion["unfused_kernels"],
                                      fusion["flops_per_element"])
    found = [f"fusion.{key} {fusion.get(key)} != {value}" for key, value in accounting.items()
             if _differs(fusion.get(key), value)]
    if fusion.get("chain") == rl.FUSION_CHAIN["text"]:
        for key, value in (("unfused_kernels", rl.FUSION_CHAIN["kernels"]),
                           ("flops_per_element", rl.FUSION_CHAIN["flops_per_element"])):
            if fusion.get(key) != value:
                found.append(f"fusion.{key} {fusion.get(key)} but the chain {fusion['chain']!r} has {value}")
    width = rl.DTYPE_WIDTHS.get(fusion.get("dtype"), (None,))[0]
    if width is not None and fusion["element_bytes"] != width:
        found.append(f"fusion.element_bytes {fusion['element_bytes']} but {fusion['dtype']} is {width} bytes")
    timed = {}
    for version in ("unfused", "fused"):
        record = fusion.get(version)
        if not isinstance(record, dict) or "unavailable" in record:
            continue
        problems = timed_discrepancies(f"fusion.{version}", record)
        found += problems
        seconds = median_of(record.get("times_s"))
        if seconds is None:
            continue
        timed[version] = seconds
        for key, value in (("achieved_gbps", accounting[f"{version}_bytes"] / seconds / 1e9),
                           ("achieved_tflops", accounting["flops"] / seconds / 1e12)):
            if _differs(record.get(key), value):
                found.append(f"fusion.{version}.{key} {record.get(key)} != {value} (from the per-call times)")
    return found + _fusion_comparison_discrepancies(document, fusion, accounting, timed)


def _fusion_comparison_discrepancies(document: dict[str, Any], fusion: dict[str, Any],
                                     accounting: dict[str, Any], timed: dict[str, float]) -> list[str]:
    stated = fusion.get("comparison")
    if len(timed) < 2 or not _roofs_known(document):
        return ["fusion.comparison is stated but cannot be recomputed"] if stated is not None else []
    rates = {v: {**fusion[v], "median_s": timed[v], "achieved_gbps": accounting[f"{v}_bytes"] / timed[v] / 1e9}
             for v in timed}
    again = rl.fusion_comparison({**fusion, **accounting, **rates}, document["roofs"]["peak_tflops"],
                                 document["roofs"]["bandwidth_gbps"])
    if not isinstance(stated, dict):
        return ["fusion.comparison is missing although both versions were timed"]
    return [f"fusion.comparison.{key} {stated.get(key)!r} != {value!r}" for key, value in again.items()
            if _differs(stated.get(key), value)]


def cpu_roof_discrepancies(document: dict[str, Any]) -> list[str]:
    """On a CPU the probe measures the roofs it was not given: each from its own recorded times."""
    measured, roofs = document.get("cpu_roofs"), document.get("roofs", {})
    if not isinstance(measured, dict):
        return []
    found = []
    if "copy_times_s" in measured:
        seconds = median_of(measured["copy_times_s"])
        copy = 2 * measured["copy_buffer_mib"] * 2**20 / seconds / 1e9 if seconds else None
        if _differs(measured.get("copy_gbps"), copy):
            found.append(f"cpu_roofs.copy_gbps {measured.get('copy_gbps')} != {copy} (from copy_times_s)")
        if str(roofs.get("bandwidth_source", "")).startswith(MEASURED) and _differs(roofs.get("bandwidth_gbps"), copy):
            found.append(f"roofs.bandwidth_gbps {roofs.get('bandwidth_gbps')} is not the copy measured here ({copy})")
    trials = measured.get("gemm_trials")
    if isinstance(trials, list) and trials:
        for trial in trials:
            median = median_of(trial.get("times_s"))  # the times are kept from probe contract 2 on
            if median is not None and _differs(trial["median_s"], median):
                found.append(f"cpu_roofs.gemm_trials[{trial['size']}].median_s {trial['median_s']} but the median "
                             f"of its times_s is {median}")
            rate = 2 * trial["size"] ** 3 / trial["median_s"] / 1e12
            if _differs(trial.get("tflops"), rate):
                found.append(f"cpu_roofs.gemm_trials[{trial['size']}].tflops {trial.get('tflops')} != {rate}")
        best = max(trials, key=lambda t: 2 * t["size"] ** 3 / t["median_s"])
        rate = 2 * best["size"] ** 3 / best["median_s"] / 1e12
        if _differs(measured.get("gemm_peak_tflops"), rate) or measured.get("gemm_peak_size") != best["size"]:
            found.append(f"cpu_roofs.gemm_peak_tflops {measured.get('gemm_peak_tflops')} at "
                         f"{measured.get('gemm_peak_size')} is not the best trial ({rate} at {best['size']})")
        if str(roofs.get("peak_source", "")).startswith(MEASURED) and _differs(roofs.get("peak_tflops"), rate):
            found.append(f"roofs.peak_tflops {roofs.get('peak_tflops')} is not the GEMM peak measured here ({rate})")
    return found


def sample_discrepancies(document: dict[str, Any]) -> list[str]:
    """Medians of samples the document keeps (probe contract 2 on): the empty-kernel floor and each
    shape's SM clock."""
    found = []
    facts = document.get("device_facts", {})
    floor = median_of(facts.get("launch_floor_times_s"))
    if floor is not None and _differs(facts.get("launch_floor_s"), floor):
        found.append(f"device_facts.launch_floor_s {facts.get('launch_floor_s')} but the median of "
                     f"launch_floor_times_s is {floor}")
    for shape in _measured(document):
        clocks = shape.get("clocks")
        samples = clocks.get("sm_clock_mhz_samples") if isinstance(clocks, dict) else None
        if not isinstance(samples, list):
            continue
        median = median_of(samples)
        if clocks.get("samples") != len(samples) or _differs(clocks.get("sm_clock_mhz_median"), median):
            found.append(f"measurement {shape['label']}: clocks state {clocks.get('samples')} samples, median "
                         f"{clocks.get('sm_clock_mhz_median')} MHz, but sm_clock_mhz_samples give {len(samples)}, "
                         f"{median} MHz")
    return found


def catalogue_peak_discrepancies(document: dict[str, Any]) -> list[str]:
    """A compute roof the document says came from the catalogue is the catalogue's dense figure."""
    roofs, sku_id = document.get("roofs", {}), document.get("device_facts", {}).get("sku_id")
    if not str(roofs.get("peak_source", "")).startswith("catalogue") or not isinstance(sku_id, str):
        return []
    peak = ((catalogue.by_id(sku_id) or {}).get("published", {}).get("dense_tflops", {})).get(document.get("dtype"))
    if _differs(roofs.get("peak_tflops"), peak):
        return [f"roofs.peak_tflops {roofs.get('peak_tflops')} but the catalogue's dense {document.get('dtype')} "
                f"figure for {sku_id} is {peak}"]
    return []
